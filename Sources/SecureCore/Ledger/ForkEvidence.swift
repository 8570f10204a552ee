import SecureCrypto

/// Proof that one wallet signed two histories that cannot both be true. Either kind is checked offline
/// with nothing but the bytes: both checkpoints name and are signed by the same wallet key. See
/// docs/PROTOCOL.md, "Fork evidence encoding".
public enum ForkEvidence: Hashable, Sendable {
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

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1

    /// The wallet that proven evidence of this type bars from paying its holder: types 1, 2 and 6 show the
    /// wallet signed two histories (a double spend is possible), so the holder takes no more payments from it
    /// until the issuer's clearing settles it. Types 4 and 5 condemn only the retired key's statements, which
    /// the key-event log already refuses, and type 3 a pair of key events: they bar no wallet.
    public var bannedWallet: WalletID? {
        switch self {
        case .conflictingCheckpoints(let first, _): first.checkpoint.walletID
        case .conflictingLeaves(let leaves): leaves.first.checkpoint.walletID
        case .rolledBack(let rolledBack): rolledBack.earlier.checkpoint.walletID
        case .conflictingKeyEvents, .retiredKeySignature, .retiredKeyStatement: nil
        }
    }
    /// A signed key event: 2 + 180 + 1 + 72 + 1 + 72 bytes at most; 1 KiB as `SignedKeyEvent` allows.
    static let keyEventByteCountMax = 1100

    /// Checks the evidence and says whether it proves a fork, and why or why not.
    public func verify() -> ForkVerdict {
        switch self {
        case .conflictingCheckpoints(let first, let second):
            if let refusal = ForkEvidence.checkPair(first, second) { return refusal }
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
            return leaves.verify()
        case .conflictingKeyEvents(let conflict):
            // The initializer refuses a pair that proves nothing, but decoded bytes are checked again here.
            guard KeyEventConflict(conflict.first, conflict.second) != nil else {
                return .notProven(
                    .noConflict, "the key events are not two validly signed events of one key and sequence")
            }
            return .forkProven(
                "the key in force signed two different key events with sequence \(conflict.first.event.sequence)")
        case .retiredKeySignature(let late):
            guard late.isProven else {
                return .notProven(.noConflict, "the checkpoint is not shown to be signed after its key's retirement")
            }
            return .forkProven(
                "a key retired at ledger position \(late.rotation.event.ledgerPosition) signed a checkpoint "
                    + "of \(late.checkpoint.checkpoint.size) entries")
        case .retiredKeyStatement(let late):
            guard late.isProven else {
                return .notProven(.noConflict, "the statement is not shown to be signed after its key's retirement")
            }
            return .forkProven(
                "a key retired at ledger position \(late.rotation.event.ledgerPosition) signed a statement "
                    + "dated at ledger size \(late.statement.keyDate.ledgerSize)")
        case .rolledBack(let rolledBack):
            return rolledBack.verify()
        }
    }

    /// Both signatures valid, the same wallet and key, and two distinct statements.
    static func checkPair(_ first: SignedCheckpoint, _ second: SignedCheckpoint) -> ForkVerdict? {
        let a = first.checkpoint
        let b = second.checkpoint
        guard a.walletID == b.walletID, a.walletKey == b.walletKey else {
            return .notProven(.differentWallets, "the checkpoints name different wallets or keys")
        }
        guard first.isSelfConsistent, second.isSelfConsistent else {
            return .notProven(.badSignature, "a checkpoint's signature does not verify under the wallet key it names")
        }
        return nil
    }

    /// version u8 ‖ type u8 ‖ type-specific fields.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(ForkEvidence.encodingVersion)
        switch self {
        case .conflictingCheckpoints(let first, let second):
            writer.write(UInt8(1))
            first.encode(into: &writer)
            second.encode(into: &writer)
        case .conflictingLeaves(let leaves):
            writer.write(UInt8(2))
            leaves.encode(into: &writer)
        case .conflictingKeyEvents(let conflict):
            writer.write(UInt8(3))
            writer.write(prefixed16: conflict.first.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: conflict.second.encoded, max: Self.keyEventByteCountMax)
        case .retiredKeySignature(let late):
            writer.write(UInt8(4))
            writer.write(prefixed16: late.retiredEvent.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: late.rotation.encoded, max: Self.keyEventByteCountMax)
            late.checkpoint.encode(into: &writer)
        case .retiredKeyStatement(let late):
            writer.write(UInt8(5))
            writer.write(prefixed16: late.retiredEvent.encoded, max: Self.keyEventByteCountMax)
            writer.write(prefixed16: late.rotation.encoded, max: Self.keyEventByteCountMax)
            late.statement.encode(into: &writer)
        case .rolledBack(let rolledBack):
            writer.write(UInt8(6))
            rolledBack.encode(into: &writer)
        }
        return writer.bytes
    }

    /// The body of types 4 and 5: the retired key's event and the rotation, each prefixed by 16 bits, then the
    /// late checkpoint or statement that `late` reads, made into evidence by `make`. Nil when short; throws
    /// when a key event is malformed.
    private static func decodeRetiredKey<Late>(
        from reader: inout ByteReader, late: (inout ByteReader) throws -> Late?,
        _ make: (SignedKeyEvent, SignedKeyEvent, Late) -> ForkEvidence
    ) throws -> ForkEvidence? {
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
    /// checks shape only; `verify()` decides what the evidence proves.
    public static func decode(_ bytes: [UInt8]) throws -> ForkEvidence? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "fork evidence"), let type = reader.readUInt8() else {
            return nil
        }
        let evidence: ForkEvidence
        switch type {
        case 1:
            guard let first = try SignedCheckpoint.decode(from: &reader),
                let second = try SignedCheckpoint.decode(from: &reader)
            else { return nil }
            evidence = .conflictingCheckpoints(first, second)
        case 2:
            guard let leaves = try ConflictingLeaves.decode(from: &reader) else { return nil }
            evidence = .conflictingLeaves(leaves)
        case 3:
            guard let first = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event"),
                let second = try reader.readPrefixed16(max: keyEventByteCountMax, field: "key event")
            else { return nil }
            guard let a = try SignedKeyEvent.decode(first), let b = try SignedKeyEvent.decode(second),
                let conflict = KeyEventConflict(a, b)
            else {
                throw FormatError(.invalidValue, "the key events are not two signed events of one key and sequence")
            }
            evidence = .conflictingKeyEvents(conflict)
        case 4:
            guard
                let late = try decodeRetiredKey(
                    from: &reader, late: { try SignedCheckpoint.decode(from: &$0) },
                    {
                        .retiredKeySignature(RetiredKeySignature(retiredEvent: $0, rotation: $1, checkpoint: $2))
                    })
            else { return nil }
            evidence = late
        case 5:
            guard
                let late = try decodeRetiredKey(
                    from: &reader, late: { try DatedStatement.decode(from: &$0) },
                    {
                        .retiredKeyStatement(RetiredKeyStatement(retiredEvent: $0, rotation: $1, statement: $2))
                    })
            else { return nil }
            evidence = late
        case 6:
            guard let rolledBack = try RolledBack.decode(from: &reader) else { return nil }
            evidence = .rolledBack(rolledBack)
        default:
            throw FormatError(.invalidValue, "fork evidence type \(type) is not known")
        }
        try reader.expectEnd("fork evidence")
        return evidence
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

    func verify() -> ForkVerdict {
        if let refusal = ForkEvidence.checkPair(first, second) { return refusal }
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
    }

    /// Whether a fork is proven.
    public var isProven: Bool {
        if case .forkProven = self { return true }
        return false
    }
}
