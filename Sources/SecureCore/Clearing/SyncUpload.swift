import SecureCrypto

// The wallet-upload format of a clearing sync (docs/CLEARING.md §2.2, docs/PROTOCOL.md "Clearing sync"): the
// chunks of entries, the wallet's signed claim that closes a sync, the opaque map, and the admission request.

extension ClearingLimits {
    /// Entries in one chunk: 1,024 entries of at most 66,409 bytes (plus a 49,152-byte transfer for a payment
    /// out) would exceed the byte limit, so the byte limit cuts first for large entries; the count bounds the
    /// per-chunk work for small ones (§2.2).
    public static let syncChunkEntryCountMax = 1024
    /// A chunk is read into memory whole before any database work: 4 MiB holds any single entry with its
    /// transfer and peer logs many times over (§2.2).
    public static let syncChunkByteCountMax = 4_194_304
    /// Peer logs in one chunk: a chunk of 1,024 payments names at most that many peers, and a wallet pays a
    /// few hundred people at most between syncs; 256 keeps one chunk's logs under 256 × 1,024 × 1,107 bytes
    /// only in theory, so the byte limit still decides.
    public static let syncPeerLogCountMax = 256
    /// Positions in one opaque map: one per opaque entry of a sync, and a map is carried whole in type 7
    /// evidence, whose 64 MiB limit holds 4 Mi positions of 9 bytes with room for the rest.
    public static let opaqueMapCountMax = 4_194_304
}

/// An entry that reaches the clearing without its content: its position, id, δ (SHA-256 of its encoding)
/// and leaf hash (SHA-256(0x00 ‖ encoding)); enough to continue the chain and the Merkle tree. The same
/// meaning as `AuditBundle.OpaqueEntry`, without the previous link (the clearing holds the chain's head).
public struct OpaqueLeaf: Hashable, Sendable {
    /// The entry's position in the wallet's ledger.
    public let position: UInt64
    /// The entry's id.
    public let id: StatementID
    /// δ(n) = SHA-256(encoding).
    public let digest: Digest32
    /// SHA-256(0x00 ‖ encoding).
    public let leafHash: Digest32

    /// Collects the parts.
    public init(position: UInt64, id: StatementID, digest: Digest32, leafHash: Digest32) {
        self.position = position
        self.id = id
        self.digest = digest
        self.leafHash = leafHash
    }

    /// The parts of `entry` that leave the wallet.
    public init(_ entry: LedgerEntry) {
        self.init(
            position: entry.position, id: entry.id, digest: entry.digest, leafHash: Merkle.leafHash(entry.encoded))
    }

    /// The parts an audit bundle's opaque entry carries.
    public init(_ opaque: AuditBundle.OpaqueEntry) {
        self.init(position: opaque.position, id: opaque.id, digest: opaque.digest, leafHash: opaque.leafHash)
    }

    /// id 16 ‖ δ 32 ‖ leaf hash 32: 80 bytes; the position is the entry's place in the list.
    static let encodedByteCount = StatementID.byteCount + 2 * Digest32.byteCount

    func encode(into writer: inout ByteWriter) {
        writer.write(id)
        writer.write(digest)
        writer.write(leafHash)
    }

    static func decode(position: UInt64, from reader: inout ByteReader) -> OpaqueLeaf? {
        guard let id = reader.read(StatementID.self), let digest = reader.read(Digest32.self),
            let leafHash = reader.read(Digest32.self)
        else { return nil }
        return OpaqueLeaf(position: position, id: id, digest: digest, leafHash: leafHash)
    }
}

/// Why an entry goes opaque (the opaque map's class byte).
public enum OpaqueClass: UInt8, Hashable, Sendable, CaseIterable {
    /// It moves no money: budgets, settings, refusals recorded, conflicts, rollbacks, confirmations of
    /// payments the clearing does not see.
    case noMoney = 0
    /// It moves only another issuer's money.
    case otherIssuerMoney = 1
}

/// How one entry travels to a clearing.
public enum SyncForm: Hashable, Sendable {
    /// Whole: its encoding (and, for a payment out, its signed transfer).
    case whole
    /// Opaque: (id, δ, leaf hash), with its class in the opaque map.
    case opaque(OpaqueClass)

    /// Which entries go whole to the clearing of `issuer` (docs/CLEARING.md §2.2): deposits, payments out and
    /// in, reversals, key events, confirmations, mints and redemptions of `issuer`'s assets; everything else
    /// opaque. A confirmation goes with its payment out (opaque class 0 when that one went opaque). One form
    /// per entry, in order; `entries` start at position 0 or at a point where no open payment out of another
    /// issuer's asset is confirmed later (the wallet side passes its whole ledger).
    public static func forms(of entries: [LedgerEntry], issuer: WalletID) -> [SyncForm] {
        var opaquePayments: Set<StatementID> = []
        return entries.map { entry in
            switch entry.kind {
            case .keyEvent: return .whole
            case .deposit, .paymentOut, .paymentIn, .reversal, .mint, .redemption:
                guard entry.amount?.issuer == issuer else {
                    if entry.kind == .paymentOut, let id = entry.statement?.id { opaquePayments.insert(id) }
                    return .opaque(.otherIssuerMoney)
                }
                return .whole
            case .confirmation:
                guard let id = entry.statement?.id, !opaquePayments.contains(id) else { return .opaque(.noMoney) }
                return .whole
            case .budgetChange, .rollbackAccepted, .statementRefused, .conflictingStatement, .settings:
                return .opaque(.noMoney)
            }
        }
    }
}

/// One entry of a sync: whole (with the signed transfer a payment out needs), or opaque.
public enum SyncEntry: Hashable, Sendable {
    /// The entry itself; `transfer` is the signed transfer it sent, present exactly for a `paymentOut`.
    case whole(LedgerEntry, SignedTransfer?)
    /// What the chain and the tree need of an entry whose content does not leave the wallet.
    case opaque(OpaqueLeaf)

    /// The entry's position.
    public var position: UInt64 {
        switch self {
        case .whole(let entry, _): entry.position
        case .opaque(let leaf): leaf.position
        }
    }

    /// The Merkle leaf hash.
    public var leafHash: Digest32 {
        switch self {
        case .whole(let entry, _): Merkle.leafHash(entry.encoded)
        case .opaque(let leaf): leaf.leafHash
        }
    }

    /// The entries of `entries` as they go to the clearing of `issuer`, with the opaque map of those that go
    /// opaque. `sentTransfer` gives the signed transfer of each whole payment out (the wallet's `outgoing`
    /// row); a missing one throws, since the clearing refuses a payment out without it.
    public static func make(
        _ entries: [LedgerEntry], issuer: WalletID, sentTransfer: (TransferID) -> SignedTransfer?
    ) throws -> (entries: [SyncEntry], map: OpaqueMap) {
        var result: [SyncEntry] = []
        var map: [OpaqueMap.Item] = []
        for (entry, form) in zip(entries, SyncForm.forms(of: entries, issuer: issuer)) {
            switch form {
            case .whole:
                var transfer: SignedTransfer?
                if entry.kind == .paymentOut {
                    guard let id = entry.statement.map({ TransferID($0.id) }), let sent = sentTransfer(id) else {
                        throw FormatError(
                            .invalidValue, "payment out \(entry.position) has no signed transfer to send with it")
                    }
                    transfer = sent
                }
                result.append(.whole(entry, transfer))
            case .opaque(let kind):
                result.append(.opaque(OpaqueLeaf(entry)))
                map.append(OpaqueMap.Item(position: entry.position, kind: kind))
            }
        }
        return (result, OpaqueMap(items: map))
    }

    /// A signed transfer: version, u32 length, the transfer (at most 49,152 bytes), u8 length, signature.
    static let signedTransferByteCountMax = 1 + 4 + Transfer.encodedByteCountMax + 1 + 72

    /// The largest whole entry with its transfer: form, lengths, entry, transfer.
    static let encodedByteCountMax =
        1 + 4 + ConflictingLeaves.leafByteCountMax + 4 + SyncEntry.signedTransferByteCountMax

    /// form u8 (1 whole: u32 length ‖ entry encoding, then for a payment out u32 length ‖ signed transfer;
    /// 2 opaque: id ‖ δ ‖ leaf hash).
    func encode(into writer: inout ByteWriter) {
        switch self {
        case .whole(let entry, let transfer):
            precondition((entry.kind == .paymentOut) == (transfer != nil), "a payment out travels with its transfer")
            writer.write(UInt8(1))
            writer.write(prefixed32: entry.encoded, max: ConflictingLeaves.leafByteCountMax)
            if let transfer { writer.write(prefixed32: transfer.encoded, max: SyncEntry.signedTransferByteCountMax) }
        case .opaque(let leaf):
            writer.write(UInt8(2))
            leaf.encode(into: &writer)
        }
    }

    /// The entry at `position`: nil when short, throws when malformed or not at `position`.
    static func decode(position: UInt64, from reader: inout ByteReader) throws -> SyncEntry? {
        guard let form = reader.readUInt8() else { return nil }
        switch form {
        case 1:
            guard let bytes = try reader.readPrefixed32(max: ConflictingLeaves.leafByteCountMax, field: "entry")
            else { return nil }
            guard let entry = try LedgerEntry.decode(bytes) else {
                throw FormatError(.invalidValue, "entry \(position) is truncated")
            }
            guard entry.position == position else {
                throw FormatError(.invalidValue, "entry \(position) names position \(entry.position)")
            }
            guard entry.encoded == bytes else {
                throw FormatError(.invalidValue, "entry \(position) is not in its canonical encoding")
            }
            guard entry.kind == .paymentOut else { return .whole(entry, nil) }
            guard let body = try reader.readPrefixed32(max: SyncEntry.signedTransferByteCountMax, field: "transfer")
            else { return nil }
            guard let transfer = try SignedTransfer.decode(body) else {
                throw FormatError(.invalidValue, "the transfer of entry \(position) is truncated")
            }
            return .whole(entry, transfer)
        case 2:
            return OpaqueLeaf.decode(position: position, from: &reader).map { .opaque($0) }
        default:
            throw FormatError(.invalidValue, "entry form \(form) is not 1 (whole) or 2 (opaque)")
        }
    }
}

/// The 16 random bytes a wallet picks for one sync; every chunk and the claim of that sync carry them.
public struct SyncSessionID: FixedByteValue {
    /// 128 random bits: two live syncs of one wallet never collide.
    public static let byteCount = 16
    /// The id's bytes.
    public let bytes: [UInt8]
    /// The id with checked bytes.
    public init(validated: ValidatedBytes<Self>) { bytes = validated.bytes }
}

/// A list of signed key events as chunks carry them: u16 count ‖ each u16 length ‖ `SignedKeyEvent.encoded`.
/// Unlike `KeyEventLog`'s decoder it does not verify the chain: the events may continue a log the clearing
/// holds, and the verifier decides.
enum SignedKeyEventList {
    static func encode(_ events: [SignedKeyEvent], into writer: inout ByteWriter) {
        precondition(events.count <= KeyEventLog.eventCountMax)
        writer.write(UInt16(events.count))
        for event in events { writer.write(prefixed16: event.encoded, max: KeyEventsMessage.signedEventByteCountMax) }
    }

    static func decode(from reader: inout ByteReader) throws -> [SignedKeyEvent]? {
        guard let count = reader.readUInt16() else { return nil }
        guard Int(count) <= KeyEventLog.eventCountMax else {
            throw FormatError(.fieldTooLong, "\(count) key events; at most \(KeyEventLog.eventCountMax)")
        }
        var events: [SignedKeyEvent] = []
        for _ in 0..<count {
            guard
                let bytes = try reader.readPrefixed16(max: KeyEventsMessage.signedEventByteCountMax, field: "key event")
            else { return nil }
            guard let event = try SignedKeyEvent.decode(bytes) else {
                throw FormatError(.invalidValue, "a key event is truncated")
            }
            events.append(event)
        }
        return events
    }
}

/// A peer's key-event log as a chunk or evidence carries it: the wallet id and its events from the inception.
public struct PeerLog: Hashable, Sendable {
    /// The peer the log is said to be of; the verifier checks the inception hashes to it.
    public let walletID: WalletID
    /// Its events from the inception.
    public let events: [SignedKeyEvent]

    /// Collects the parts.
    public init(walletID: WalletID, events: [SignedKeyEvent]) {
        self.walletID = walletID
        self.events = events
    }

    /// The log of `log`'s wallet.
    public init(_ log: KeyEventLog) { self.init(walletID: log.walletID, events: log.events) }

    /// The verified log, or nil when the events are not a valid log of `walletID`.
    public var verified: KeyEventLog? { try? KeyEventLog(verifying: events, walletID: walletID) }

    func encode(into writer: inout ByteWriter) {
        writer.write(walletID)
        SignedKeyEventList.encode(events, into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> PeerLog? {
        guard let walletID = reader.read(WalletID.self), let events = try SignedKeyEventList.decode(from: &reader)
        else { return nil }
        return PeerLog(walletID: walletID, events: events)
    }
}

/// One upload request of a sync (version 1, docs/CLEARING.md §2.2).
public struct SyncChunk: Hashable, Sendable {
    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1

    /// The wallet syncing.
    public let walletID: WalletID
    /// The sync this chunk belongs to.
    public let session: SyncSessionID
    /// The first entry's position; the first chunk of a sync starts at the clearing's cosigned size.
    public let firstPosition: UInt64
    /// The key events the clearing does not know yet (all of them on the first sync).
    public let keyEvents: [SignedKeyEvent]
    /// Logs of counterparties named by this chunk's whole entries that the wallet holds.
    public let peerLogs: [PeerLog]
    /// The entries from `firstPosition` on, 0 … `syncChunkEntryCountMax`: a sync with nothing new sends one
    /// empty chunk, which carries its session, and closes at the cosigned size (its answer brings the list).
    public let entries: [SyncEntry]

    /// Collects the parts; the counts must be within the limits (our own bug otherwise).
    public init(
        walletID: WalletID, session: SyncSessionID, firstPosition: UInt64, keyEvents: [SignedKeyEvent],
        peerLogs: [PeerLog], entries: [SyncEntry]
    ) {
        precondition(entries.count <= ClearingLimits.syncChunkEntryCountMax)
        precondition(peerLogs.count <= ClearingLimits.syncPeerLogCountMax)
        self.walletID = walletID
        self.session = session
        self.firstPosition = firstPosition
        self.keyEvents = keyEvents
        self.peerLogs = peerLogs
        self.entries = entries
    }

    /// version ‖ wallet id ‖ session ‖ first position ‖ key events ‖ peer logs ‖ u16 count ‖ entries.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.encodingVersion)
        writer.write(walletID)
        writer.write(session)
        writer.write(firstPosition)
        SignedKeyEventList.encode(keyEvents, into: &writer)
        writer.write(UInt16(peerLogs.count))
        for log in peerLogs { log.encode(into: &writer) }
        writer.write(UInt16(entries.count))
        for entry in entries { entry.encode(into: &writer) }
        return writer.bytes
    }

    /// Decodes a chunk that fills `bytes` exactly: nil when short, throws when malformed or over a limit.
    public static func decode(_ bytes: [UInt8]) throws -> SyncChunk? {
        guard bytes.count <= ClearingLimits.syncChunkByteCountMax else {
            throw FormatError(.fieldTooLong, "a sync chunk of \(bytes.count) bytes is over the limit")
        }
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "sync chunk"), let walletID = reader.read(WalletID.self),
            let session = reader.read(SyncSessionID.self), let first = reader.readUInt64(),
            let keyEvents = try SignedKeyEventList.decode(from: &reader), let logCount = reader.readUInt16()
        else { return nil }
        guard Int(logCount) <= ClearingLimits.syncPeerLogCountMax else {
            throw FormatError(.fieldTooLong, "\(logCount) peer logs in a chunk")
        }
        var logs: [PeerLog] = []
        for _ in 0..<logCount {
            guard let log = try PeerLog.decode(from: &reader) else { return nil }
            logs.append(log)
        }
        guard let count = reader.readUInt16() else { return nil }
        guard Int(count) <= ClearingLimits.syncChunkEntryCountMax else {
            throw FormatError(.fieldTooLong, "a chunk of \(count) entries")
        }
        var entries: [SyncEntry] = []
        for offset in 0..<UInt64(count) {
            let (position, overflows) = first.addingReportingOverflow(offset)
            guard !overflows else { throw FormatError(.invalidValue, "a chunk's positions pass 2⁶⁴") }
            guard let entry = try SyncEntry.decode(position: position, from: &reader) else { return nil }
            entries.append(entry)
        }
        try reader.expectEnd("sync chunk")
        return SyncChunk(
            walletID: walletID, session: session, firstPosition: first, keyEvents: keyEvents, peerLogs: logs,
            entries: entries)
    }

    /// Cuts `entries` (consecutive, from the clearing's cosigned size) into chunks of at most `entryCountMax`
    /// entries and `syncChunkByteCountMax` bytes. `keyEvents` go in the first chunk; each chunk carries the
    /// logs in `peerLogs` of the counterparties its whole entries name.
    public static func chunks(
        walletID: WalletID, session: SyncSessionID, entries: [SyncEntry], keyEvents: [SignedKeyEvent],
        peerLogs: [WalletID: KeyEventLog], entryCountMax: Int = ClearingLimits.syncChunkEntryCountMax
    ) -> [SyncChunk] {
        precondition(entryCountMax >= 1 && entryCountMax <= ClearingLimits.syncChunkEntryCountMax)
        var chunks: [SyncChunk] = []
        var start = 0
        while start < entries.count {
            let events = chunks.isEmpty ? keyEvents : []
            var size =
                1 + 32 + 16 + 8 + 2 + 2 + 2
                + ByteWriter.bytes { SignedKeyEventList.encode(events, into: &$0) }
                .count
            var logs: [PeerLog] = []
            var end = start
            while end < entries.count, end - start < entryCountMax {
                let entry = entries[end]
                var added = ByteWriter.bytes { entry.encode(into: &$0) }.count
                var newLog: PeerLog?
                if case .whole(let whole, _) = entry, let peer = WalletID(bytes: whole.counterparty),
                    let log = peerLogs[peer], !logs.contains(where: { $0.walletID == peer })
                {
                    newLog = PeerLog(log)
                    added += ByteWriter.bytes { newLog!.encode(into: &$0) }.count
                }
                if end > start,
                    size + added > ClearingLimits.syncChunkByteCountMax
                        || (newLog != nil && logs.count == ClearingLimits.syncPeerLogCountMax)
                {
                    break
                }
                size += added
                if let newLog { logs.append(newLog) }
                end += 1
            }
            chunks.append(
                SyncChunk(
                    walletID: walletID, session: session, firstPosition: entries[start].position, keyEvents: events,
                    peerLogs: logs, entries: Array(entries[start..<end])))
            start = end
        }
        return chunks
    }
}

/// The positions a sync sent opaque, each with its class, in increasing order; its digest is what the claim
/// signs.
public struct OpaqueMap: Hashable, Sendable {
    /// One opaque position and its class.
    public struct Item: Hashable, Sendable {
        public let position: UInt64
        public let kind: OpaqueClass

        public init(position: UInt64, kind: OpaqueClass) {
            self.position = position
            self.kind = kind
        }
    }

    /// The items, by increasing position.
    public let items: [Item]

    /// The map of `items`, which must be in increasing position order (our own bug otherwise).
    public init(items: [Item]) {
        precondition(zip(items, items.dropFirst()).allSatisfy { $0.position < $1.position })
        precondition(items.count <= ClearingLimits.opaqueMapCountMax)
        self.items = items
    }

    /// SHA-256 of the items' concatenation (position u64 ‖ class u8 each), without the count.
    public var digest: Digest32 {
        Digest32(
            of: ByteWriter.bytes { writer in
                for item in items {
                    writer.write(item.position)
                    writer.write(item.kind.rawValue)
                }
            })
    }

    /// u32 count ‖ each position u64 ‖ class u8.
    public var encoded: [UInt8] { ByteWriter.bytes { encode(into: &$0) } }

    func encode(into writer: inout ByteWriter) {
        writer.write(UInt32(items.count))
        for item in items {
            writer.write(item.position)
            writer.write(item.kind.rawValue)
        }
    }

    /// Decodes a map that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> OpaqueMap? {
        var reader = ByteReader(bytes)
        guard let map = try decode(from: &reader) else { return nil }
        try reader.expectEnd("opaque map")
        return map
    }

    static func decode(from reader: inout ByteReader) throws -> OpaqueMap? {
        guard let count = reader.readUInt32() else { return nil }
        guard Int(count) <= ClearingLimits.opaqueMapCountMax else {
            throw FormatError(.fieldTooLong, "an opaque map of \(count) positions")
        }
        var items: [Item] = []
        for _ in 0..<count {
            guard let position = reader.readUInt64(), let raw = reader.readUInt8() else { return nil }
            guard let kind = OpaqueClass(rawValue: raw) else {
                throw FormatError(.invalidValue, "opaque class \(raw) is not 0 or 1")
            }
            guard items.last.map({ $0.position < position }) ?? true else {
                throw FormatError(.invalidValue, "an opaque map's positions are not increasing")
            }
            items.append(Item(position: position, kind: kind))
        }
        return OpaqueMap(items: items)
    }
}

/// The wallet's signed statement that closes a sync (docs/CLEARING.md §2.2): from size s₀ to s₁, the entries
/// it sent opaque move none of `issuer`'s money (the opaque map's digest says which and why), signed by its
/// key in force at s₁.
public struct SyncClaim: DatedPayload {
    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    public static let signatureLabel = SignatureLabel("secure-sync-claim-v1")
    /// 1 + 32 + 65 + 24 + 32 + 8 + 8 + 32 + 16 = 218 bytes.
    public static let encodedByteCountMax = 218

    /// The wallet claiming.
    public let walletID: WalletID
    /// Its key in force at `toSize`.
    public let walletKey: P256.PublicKey
    /// When it signed: the key's event and ledger size `toSize`.
    public let keyDate: KeyDate
    /// The clearing's issuer.
    public let issuer: WalletID
    /// s₀: the clearing's cosigned size the sync starts from.
    public let fromSize: UInt64
    /// s₁: the size of the checkpoint the sync ends at.
    public let toSize: UInt64
    /// `OpaqueMap.digest` of the positions in s₀ … s₁−1 sent opaque.
    public let opaqueMapDigest: Digest32
    /// The sync's session.
    public let session: SyncSessionID

    /// A claim; the date's size must be `toSize`, and `fromSize` at most `toSize`.
    public init(
        walletID: WalletID, walletKey: P256.PublicKey, keyDate: KeyDate, issuer: WalletID, fromSize: UInt64,
        toSize: UInt64, opaqueMapDigest: Digest32, session: SyncSessionID
    ) throws {
        guard keyDate.ledgerSize == toSize, fromSize <= toSize else {
            throw FormatError(
                .invalidValue, "a sync claim from \(fromSize) to \(toSize) must be dated at ledger size \(toSize)")
        }
        self.walletID = walletID
        self.walletKey = walletKey
        self.keyDate = keyDate
        self.issuer = issuer
        self.fromSize = fromSize
        self.toSize = toSize
        self.opaqueMapDigest = opaqueMapDigest
        self.session = session
    }

    public var signerKey: P256.PublicKey { walletKey }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedByteCountMax)
        writer.write(Self.encodingVersion)
        writer.write(walletID)
        writer.write(fixed: walletKey.x963, count: P256.uncompressedPointByteCount)
        keyDate.encode(into: &writer)
        writer.write(issuer)
        writer.write(fromSize)
        writer.write(toSize)
        writer.write(opaqueMapDigest)
        writer.write(session)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> SyncClaim? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "sync claim"), let walletID = reader.read(WalletID.self),
            let point = reader.readFixed(P256.uncompressedPointByteCount),
            let keyDate = try KeyDate.decode(from: &reader),
            let issuer = reader.read(WalletID.self), let from = reader.readUInt64(), let to = reader.readUInt64(),
            let digest = reader.read(Digest32.self), let session = reader.read(SyncSessionID.self)
        else { return nil }
        try reader.expectEnd("sync claim")
        return try SyncClaim(
            walletID: walletID, walletKey: try decodeKey(point, "wallet key"), keyDate: keyDate, issuer: issuer,
            fromSize: from, toSize: to, opaqueMapDigest: digest, session: session)
    }

    /// Signs the claim with the wallet's key in force.
    public func sign(with signer: MessageSigner) throws -> SignedSyncClaim {
        try SignedSyncClaim(signing: self, with: signer)
    }
}

/// A sync claim with the wallet's signature.
public typealias SignedSyncClaim = SignedStatement<SyncClaim>

/// The first request of a new wallet (docs/CLEARING.md §3.4): its key-event log, its latest signed
/// checkpoint, and one whole entry with its inclusion proof under that checkpoint (a deposit of a voucher
/// this issuer minted, or a payment in from a wallet already admitted).
public struct AdmissionRequest: Hashable, Sendable {
    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1

    /// The wallet's key-event log from its inception.
    public let log: KeyEventLog
    /// Its latest signed checkpoint.
    public let checkpoint: SignedCheckpoint
    /// The entry that admits it.
    public let entry: LedgerEntry
    /// The entry's inclusion proof under `checkpoint`.
    public let proof: [Digest32]

    /// Collects the parts; nothing is checked until `problem`.
    public init(log: KeyEventLog, checkpoint: SignedCheckpoint, entry: LedgerEntry, proof: [Digest32]) {
        self.log = log
        self.checkpoint = checkpoint
        self.entry = entry
        self.proof = proof
    }

    /// version u8 (1) ‖ key-event log ‖ signed checkpoint ‖ u32 length ‖ entry encoding ‖ proof (u8 count ‖
    /// hashes).
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.encodingVersion)
        log.encode(into: &writer)
        checkpoint.encode(into: &writer)
        writer.write(prefixed32: entry.encoded, max: ConflictingLeaves.leafByteCountMax)
        writer.write(proof: proof)
        return writer.bytes
    }

    /// Decodes a request that fills `bytes` exactly: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> AdmissionRequest? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "admission request"),
            let log = try KeyEventLog.decode(from: &reader),
            let checkpoint = try SignedCheckpoint.decode(from: &reader),
            let body = try reader.readPrefixed32(max: ConflictingLeaves.leafByteCountMax, field: "entry"),
            let proof = try reader.readProof()
        else { return nil }
        try reader.expectEnd("admission request")
        guard let entry = try LedgerEntry.decode(body), entry.encoded == body else {
            throw FormatError(.invalidValue, "the admission entry is truncated or not canonical")
        }
        return AdmissionRequest(log: log, checkpoint: checkpoint, entry: entry, proof: proof)
    }

    /// Why the request does not admit its wallet to the clearing of `issuer`, or nil when its own bytes hold:
    /// the checkpoint is the log's wallet's, signed by its key in force; the entry is proven under it; it is a
    /// deposit of `issuer`'s voucher or a payment in of `issuer`'s asset; and its statement checks with
    /// `sources`. Whether the voucher was minted or the payer admitted is the store's to decide.
    public func problem(issuer: WalletID, sources: StatementSources) -> String? {
        let signed = checkpoint.checkpoint
        guard signed.walletID == log.walletID, checkpoint.isSelfConsistent, log.check(checkpoint) == .inForce else {
            return "the checkpoint is not the log's wallet's, signed by its key in force at its size"
        }
        guard
            Merkle.verifyInclusion(
                leafHash: Merkle.leafHash(entry.encoded), index: entry.position, size: signed.size, proof: proof,
                root: signed.root)
        else { return "the entry is not proven under the checkpoint" }
        guard [.deposit, .paymentIn].contains(entry.kind), entry.amount?.issuer == issuer else {
            return "the entry is not a deposit or payment in of this issuer's asset"
        }
        return EntryStatementCheck.problem(entry, encoded: entry.encoded, ownLog: log, sources: sources)
    }
}
