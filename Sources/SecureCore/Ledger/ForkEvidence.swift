import SecureCrypto

/// Proof that one wallet signed two histories that cannot both be true, or that one of its keys signed what
/// it could not, with the accused wallet's key-event log from its inception (evidence v2). The log is what
/// binds a signing key to a wallet id: a checkpoint names a wallet id and a key, and anyone with a software
/// key can sign one that names any wallet id, so without the log evidence proves nothing about the wallet it
/// names. Every verifier checks that the log is the accused wallet's (its inception hashes to the wallet id
/// the signed parts name) and that each signing key was the wallet's key in force at the size it signed.
/// Evidence v1 carried no log and is refused. See docs/PROTOCOL.md, "Fork evidence encoding".
public struct ForkEvidence: Hashable, Sendable {
    /// What the evidence shows.
    public enum Kind: Hashable, Sendable {
        /// (a) Two signed checkpoints of equal size whose roots or heads differ.
        case conflictingCheckpoints(SignedCheckpoint, SignedCheckpoint)
        /// (b) Two signed checkpoints and one leaf index below both sizes, with inclusion proofs showing
        /// different leaves at that index.
        case conflictingLeaves(ConflictingLeaves)
        /// (c) Two key events with the same sequence number, both signed by the key they put in force.
        case conflictingKeyEvents(KeyEventConflict)
        /// (d) A checkpoint signed by a key after the rotation that retired it.
        case retiredKeySignature(RetiredKeySignature)
        /// (e) A receipt, refusal or measurement signed by a key after the rotation that retired it.
        case retiredKeyStatement(RetiredKeyStatement)
        /// (f) A signed checkpoint whose root the wallet's own later signed history contradicts (type 6).
        case rolledBack(RolledBack)
        /// (g) A signed checkpoint whose committed history, with the wallet's sync claims, does not replay to
        /// its state (type 7, docs/CLEARING.md §2.5; in `ReplayMismatch.swift`).
        case replayMismatch(ReplayMismatch)

        /// The type byte of the encoding.
        public var typeByte: UInt8 {
            switch self {
            case .conflictingCheckpoints: 1
            case .conflictingLeaves: 2
            case .conflictingKeyEvents: 3
            case .retiredKeySignature: 4
            case .retiredKeyStatement: 5
            case .rolledBack: 6
            case .replayMismatch: 7
            }
        }
    }

    /// What the evidence shows.
    public let kind: Kind
    /// The accused wallet's key-event log, verified from its inception: at least up to the events whose keys
    /// signed the parts (and, for types 4 and 5, the rotation that retired the key).
    public let log: KeyEventLog

    /// Evidence of `kind` against the wallet whose log is `log`; nothing is checked until `verify`.
    public init(_ kind: Kind, log: KeyEventLog) {
        self.kind = kind
        self.log = log
    }

    /// The encoding's version byte: 2 (version 1 carried no key-event log and is refused).
    public static let encodingVersion: UInt8 = 2

    /// The wallet the evidence accuses: the one whose log it carries.
    public var accused: WalletID { log.walletID }

    /// The wallet that proven evidence of this type bars from paying its holder: types 1, 2 and 6 show the
    /// wallet signed two histories (a double spend is possible), so the holder takes no more payments from it
    /// until the issuer's clearing settles it. Types 4 and 5 condemn only the retired key's statements (the
    /// key-event log refuses those dated after the retirement, and `Wallet.retiredKeyEvidence` the key in a
    /// session's hello), and type 3 a pair of key events: they bar no wallet.
    public var bannedWallet: WalletID? {
        switch kind {
        case .conflictingCheckpoints, .conflictingLeaves, .rolledBack, .replayMismatch: log.walletID
        case .conflictingKeyEvents, .retiredKeySignature, .retiredKeyStatement: nil
        }
    }

    /// A signed key event: 2 + 180 + 1 + 72 + 1 + 72 bytes at most; 1 KiB as `SignedKeyEvent` allows.
    static let keyEventByteCountMax = 1100

    /// Checks the evidence and says whether it proves a fork, and why or why not. `knownLog` is the accused
    /// wallet's log as the verifier already follows it, if it does: where the carried log extends it the
    /// longer one decides, otherwise the known one, so evidence carrying a shortened log cannot hide a
    /// rotation the verifier knows (a stolen retired key signing two checkpoints after its retirement is
    /// then shown as that, not as a fork of the wallet).
    public func verify(knownLog: KeyEventLog? = nil) -> ForkVerdict {
        let log = Self.deciding(carried: log, known: knownLog)
        switch kind {
        case .conflictingCheckpoints(let first, let second):
            if let refusal = ForkEvidence.checkPair(first, second, log: log) { return refusal }
            let a = first.checkpoint
            let b = second.checkpoint
            guard a.size == b.size else {
                return .notProven(
                    .sizesDiffer, "the checkpoints cover \(a.size) and \(b.size) entries; (a) needs equal sizes")
            }
            guard a.root != b.root || a.head != b.head else {
                return .notProven(.noConflict, "both checkpoints commit to the same root and head at size \(a.size)")
            }
            return .forkProven("the wallet signed two different ledgers of \(a.size) entries")
        case .conflictingLeaves(let leaves):
            return leaves.verify(log: log)
        case .conflictingKeyEvents(let conflict):
            // The initializer refuses a pair that proves nothing, but decoded bytes are checked again here.
            guard KeyEventConflict(conflict.first, conflict.second) != nil else {
                return .notProven(
                    .noConflict, "the key events are not two validly signed events of one key and sequence")
            }
            let sequence = conflict.first.event.sequence
            guard sequence < UInt64(log.events.count),
                [conflict.first.event, conflict.second.event].contains(log.events[Int(sequence)].event)
            else {
                return .notProven(
                    .wrongLog, "neither key event is event \(sequence) of the key-event log the evidence carries")
            }
            return .forkProven("the key in force signed two different key events with sequence \(sequence)")
        case .retiredKeySignature(let late):
            if let refusal = Self.checkRetirement(late, log: log) { return refusal }
            guard late.checkpoint.checkpoint.walletID == log.walletID else {
                return .notProven(.wrongLog, "the late checkpoint names another wallet than the key-event log's")
            }
            guard late.isProven else {
                return .notProven(.noConflict, "the checkpoint is not shown to be signed after its key's retirement")
            }
            return .forkProven(
                "a key retired at ledger position \(late.rotation.event.ledgerPosition) signed a checkpoint "
                    + "of \(late.checkpoint.checkpoint.size) entries")
        case .retiredKeyStatement(let late):
            if let refusal = Self.checkRetirement(late, log: log) { return refusal }
            guard late.isProven else {
                return .notProven(.noConflict, "the statement is not shown to be signed after its key's retirement")
            }
            return .forkProven(
                "a key retired at ledger position \(late.rotation.event.ledgerPosition) signed a statement "
                    + "dated at ledger size \(late.statement.keyDate.ledgerSize)")
        case .rolledBack(let rolledBack):
            return rolledBack.verify(log: log)
        case .replayMismatch(let mismatch):
            return mismatch.verify(log: log)
        }
    }

    /// The log that decides: the verifier's known log of the same wallet, extended by the carried one where
    /// the carried one extends it; the carried one when the verifier knows none.
    static func deciding(carried: KeyEventLog, known: KeyEventLog?) -> KeyEventLog {
        guard var merged = known, merged.walletID == carried.walletID else { return carried }
        // `follow` changes nothing unless the carried log extends the known one through a valid chain.
        _ = merged.follow(carried.events)
        return merged
    }

    /// The two checkpoints of types 1, 2 and 6: the same wallet, the log that wallet's, both signatures
    /// valid, and each signed by the key the log shows in force at its size (two keys across a rotation).
    static func checkPair(_ first: SignedCheckpoint, _ second: SignedCheckpoint, log: KeyEventLog) -> ForkVerdict? {
        let a = first.checkpoint
        let b = second.checkpoint
        guard a.walletID == b.walletID else {
            return .notProven(.differentWallets, "the checkpoints name different wallets")
        }
        guard log.walletID == a.walletID else {
            return .notProven(
                .wrongLog,
                "the key-event log is wallet \(log.walletID.hex)'s: its inception does not hash to the wallet id "
                    + "\(a.walletID.hex) the checkpoints name")
        }
        guard first.isSelfConsistent, second.isSelfConsistent else {
            return .notProven(.badSignature, "a checkpoint's signature does not verify under the wallet key it names")
        }
        for (which, signed) in [("first", first), ("second", second)] {
            let checkpoint = signed.checkpoint
            let use = log.check(signed)
            guard use == .inForce else {
                return .notProven(
                    .keyNotInForce,
                    "the \(which) checkpoint's key (sequence \(checkpoint.keySequence), event position "
                        + "\(checkpoint.keyEventPosition)) was not the wallet's key in force at size "
                        + "\(checkpoint.size) by its key-event log (\(use.summary))")
            }
        }
        return nil
    }

    /// Types 4 and 5: the retired key's event and the rotation that retired it must be the log's own events, the
    /// rotation the next key-bearing event after the retired key's.
    static func checkRetirement(_ late: some RetiredKeyEvidence, log: KeyEventLog) -> ForkVerdict? {
        for signed in [late.retiredEvent, late.rotation] {
            let sequence = signed.event.sequence
            guard sequence < UInt64(log.events.count), log.events[Int(sequence)].event == signed.event else {
                return .notProven(
                    .wrongLog, "key event \(sequence) of the evidence is not the one in the key-event log it carries")
            }
        }
        // The retiring event is the next key-bearing one after the retired key's: clearing delegations between
        // them (an issuer's log) change no key.
        guard log.nextKeyBearing(after: late.retiredEvent.event.sequence)?.event == late.rotation.event else {
            return .notProven(
                .wrongLog,
                "key event \(late.rotation.event.sequence) is not the one that retired the key of event "
                    + "\(late.retiredEvent.event.sequence)")
        }
        return nil
    }

    /// version u8 (2) ‖ type u8 ‖ the accused wallet's key-event log ‖ type-specific fields.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(ForkEvidence.encodingVersion)
        writer.write(kind.typeByte)
        log.encode(into: &writer)
        switch kind {
        case .conflictingCheckpoints(let first, let second):
            first.encode(into: &writer)
            second.encode(into: &writer)
        case .conflictingLeaves(let leaves):
            leaves.encode(into: &writer)
        case .conflictingKeyEvents(let conflict):
            writer.write(prefixed16: conflict.first.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: conflict.second.encoded, max: Self.keyEventByteCountMax)
        case .retiredKeySignature(let late):
            writer.write(prefixed16: late.retiredEvent.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: late.rotation.encoded, max: Self.keyEventByteCountMax)
            late.checkpoint.encode(into: &writer)
        case .retiredKeyStatement(let late):
            writer.write(prefixed16: late.retiredEvent.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: late.rotation.encoded, max: Self.keyEventByteCountMax)
            late.statement.encode(into: &writer)
        case .rolledBack(let rolledBack):
            rolledBack.encode(into: &writer)
        case .replayMismatch(let mismatch):
            mismatch.encode(into: &writer)
        }
        return writer.bytes
    }

    /// The body of types 4 and 5: the retired key's event and the rotation, each prefixed by 16 bits, then the
    /// late checkpoint or statement that `late` reads, made into evidence by `make`. Nil when short; throws
    /// when a key event is malformed.
    private static func decodeRetiredKey<Late>(
        from reader: inout ByteReader, late: (inout ByteReader) throws -> Late?,
        _ make: (SignedKeyEvent, SignedKeyEvent, Late) -> Kind
    ) throws -> Kind? {
        guard let retired = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event"),
            let rotation = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event"),
            let lateOne = try late(&reader)
        else { return nil }
        guard let retiredEvent = try SignedKeyEvent.decode(retired),
            let rotationEvent = try SignedKeyEvent.decode(rotation)
        else { throw FormatError(.invalidValue, "a key event inside retired-key evidence is truncated") }
        return make(retiredEvent, rotationEvent, lateOne)
    }

    /// Decodes evidence that fills `bytes` exactly: nil when short, throws when malformed. Decoding
    /// checks shape and the carried log (verified from its inception); `verify()` decides what the evidence
    /// proves. Version 1 is refused with a reason: it carried no log, so it is never acted on.
    public static func decode(_ bytes: [UInt8]) throws -> ForkEvidence? {
        if bytes.first == 1 {
            throw FormatError(
                .unsupportedVersion,
                "fork evidence version 1 carries no key-event log, so nothing binds its keys to the wallet id it "
                    + "names; it is never acted on (evidence version 2 carries the accused wallet's log)")
        }
        guard bytes.count <= ClearingLimits.evidenceReplayByteCountMax else {
            throw FormatError(.fieldTooLong, "fork evidence of \(bytes.count) bytes is over the 64 MiB limit")
        }
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "fork evidence"), let type = reader.readUInt8() else {
            return nil
        }
        guard (1...7).contains(type) else {
            throw FormatError(.invalidValue, "fork evidence type \(type) is not known")
        }
        guard let log = try KeyEventLog.decode(from: &reader), let kind = try decodeKind(type, from: &reader) else {
            return nil
        }
        try reader.expectEnd("fork evidence")
        return ForkEvidence(kind, log: log)
    }

    /// The type-specific fields of a known `type`: nil when short, throws when malformed.
    private static func decodeKind(_ type: UInt8, from reader: inout ByteReader) throws -> Kind? {
        switch type {
        case 1:
            guard let first = try SignedCheckpoint.decode(from: &reader),
                let second = try SignedCheckpoint.decode(from: &reader)
            else { return nil }
            return .conflictingCheckpoints(first, second)
        case 2:
            return try ConflictingLeaves.decode(from: &reader).map { .conflictingLeaves($0) }
        case 3:
            guard let first = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event"),
                let second = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event")
            else { return nil }
            guard let a = try SignedKeyEvent.decode(first), let b = try SignedKeyEvent.decode(second),
                let conflict = KeyEventConflict(a, b)
            else {
                throw FormatError(.invalidValue, "the key events are not two signed events of one key and sequence")
            }
            return .conflictingKeyEvents(conflict)
        case 4:
            return try decodeRetiredKey(
                from: &reader, late: { try SignedCheckpoint.decode(from: &$0) },
                { .retiredKeySignature(RetiredKeySignature(retiredEvent: $0, rotation: $1, checkpoint: $2)) })
        case 5:
            return try decodeRetiredKey(
                from: &reader, late: { try DatedStatement.decode(from: &$0) },
                { .retiredKeyStatement(RetiredKeyStatement(retiredEvent: $0, rotation: $1, statement: $2)) })
        case 6:
            return try RolledBack.decode(from: &reader).map { .rolledBack($0) }
        case 7:
            return try ReplayMismatch.decode(from: &reader).map { .replayMismatch($0) }
        default:
            preconditionFailure("decodeKind is called with a known type only")
        }
    }
}

/// Evidence (b): the same leaf index proven to hold different leaves under two signed checkpoints.
public struct ConflictingLeaves: Hashable, Sendable {
    /// The first checkpoint.
    public let first: SignedCheckpoint
    /// The second checkpoint.
    public let second: SignedCheckpoint
    /// The leaf index, below both sizes.
    public let index: UInt64
    /// The leaf (an entry encoding) under the first checkpoint.
    public let firstLeaf: [UInt8]
    /// Its inclusion proof against the first checkpoint's root.
    public let firstProof: [Digest32]
    /// The leaf under the second checkpoint.
    public let secondLeaf: [UInt8]
    /// Its inclusion proof against the second checkpoint's root.
    public let secondProof: [Digest32]

    /// A leaf is one entry encoding; this is the largest one the entry limits allow (66,409 bytes).
    public static let leafByteCountMax =
        1 + 8 + LedgerEntry.idByteCount + 1 + 1 + 1 + Money.encodedByteCount
        + 1 + Budget.categoryByteCountMax + 1 + LedgerEntry.counterpartyByteCountMax + 2 + LedgerEntry.noteByteCountMax
        + 8 + 1 + StatementReference.encodedByteCount + 4 + LedgerEntry.payloadByteCountMax
        + Digest32.byteCount

    /// Collects the parts; nothing is checked until `verify()`.
    public init(
        first: SignedCheckpoint, second: SignedCheckpoint, index: UInt64, firstLeaf: [UInt8],
        firstProof: [Digest32], secondLeaf: [UInt8], secondProof: [Digest32]
    ) {
        self.first = first
        self.second = second
        self.index = index
        self.firstLeaf = firstLeaf
        self.firstProof = firstProof
        self.secondLeaf = secondLeaf
        self.secondProof = secondProof
    }

    func verify(log: KeyEventLog) -> ForkVerdict {
        if let refusal = ForkEvidence.checkPair(first, second, log: log) { return refusal }
        let a = first.checkpoint
        let b = second.checkpoint
        guard index < a.size, index < b.size else {
            return .notProven(.indexOutOfRange, "leaf \(index) is not below both sizes \(a.size) and \(b.size)")
        }
        guard firstLeaf != secondLeaf else { return .notProven(.noConflict, "both proofs show the same leaf") }
        for (which, leaf, proof, checkpoint) in [
            ("first", firstLeaf, firstProof, a), ("second", secondLeaf, secondProof, b),
        ] {
            guard
                Merkle.verifyInclusion(
                    leafHash: Merkle.leafHash(leaf), index: index, size: checkpoint.size,
                    proof: proof, root: checkpoint.root)
            else {
                return .notProven(
                    .proofInvalid, "the \(which) inclusion proof does not lead to the \(which) checkpoint's root")
            }
        }
        return .forkProven("the wallet signed two ledgers with different entries at position \(index)")
    }

    func encode(into writer: inout ByteWriter) {
        first.encode(into: &writer)
        second.encode(into: &writer)
        writer.write(index)
        for (leaf, proof) in [(firstLeaf, firstProof), (secondLeaf, secondProof)] {
            writer.write(prefixed32: leaf, max: ConflictingLeaves.leafByteCountMax)
            writer.write(proof: proof)
        }
    }

    static func decode(from reader: inout ByteReader) throws -> ConflictingLeaves? {
        guard let first = try SignedCheckpoint.decode(from: &reader),
            let second = try SignedCheckpoint.decode(from: &reader),
            let index = reader.readUInt64()
        else { return nil }
        var parts: [([UInt8], [Digest32])] = []
        for _ in 0..<2 {
            guard let leaf = try reader.readPrefixed32(max: leafByteCountMax, field: "leaf"),
                let proof = try reader.readProof()
            else { return nil }
            parts.append((leaf, proof))
        }
        return ConflictingLeaves(
            first: first, second: second, index: index, firstLeaf: parts[0].0,
            firstProof: parts[0].1, secondLeaf: parts[1].0, secondProof: parts[1].1)
    }
}

/// What fork evidence proves. A value, not an error: "not proven" is an answer, not a failure.
public enum ForkVerdict: Hashable, Sendable {
    /// The evidence proves that the wallet's key signed conflicting histories.
    case forkProven(String)
    /// The evidence proves nothing; the reason says which check failed.
    case notProven(NotProvenReason, String)

    /// Stable codes for why evidence proves nothing.
    public enum NotProvenReason: CaseNameCode {
        case differentWallets
        case badSignature
        case sizesDiffer
        case noConflict
        case indexOutOfRange
        case proofInvalid
        /// The carried key-event log is not the accused wallet's (its inception does not hash to the wallet
        /// id the evidence names), or does not hold the key events the evidence names.
        case wrongLog
        /// A checkpoint was signed by a key its wallet's log does not show in force at the checkpoint's size
        /// (another key, an unknown sequence, before its event, or after its retirement).
        case keyNotInForce
        /// Type 7: an opaque entry is not covered by exactly one claim signed by the wallet's key in force,
        /// or the claims do not chain from 0 to the checkpoint's size.
        case claimMissing
        /// Type 7: the entries do not give the checkpoint's chain head and root.
        case notCommitted
        /// Type 7: a log or transfer the replay's statement checks need is not carried.
        case missingSource
    }

    /// Whether a fork is proven.
    public var isProven: Bool {
        if case .forkProven = self { return true }
        return false
    }
}

extension KeyUse {
    /// A few words for a verdict's sentence.
    fileprivate var summary: String {
        switch self {
        case .inForce: "in force"
        case .unknown: "the log has no such key at that sequence and event position"
        case .beforeInForce: "the size is not past the key's event"
        case .retired(let rotation):
            "rotation \(rotation.event.sequence) retired the key at ledger position \(rotation.event.ledgerPosition)"
        }
    }
}
