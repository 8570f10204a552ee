import SecureCrypto

/// The state a checkpoint commits to: the balance per asset and the open budget windows' totals,
/// in canonical order. Opening a wallet reads it instead of replaying; a full verification replays and
/// must arrive at exactly this snapshot.
public struct LedgerSnapshot: Hashable, Sendable {
    /// Balances sorted by asset: (issuer id bytes, currency code).
    public let balances: [AssetAmount]
    /// Window totals sorted by category (bytewise UTF-8).
    public let windowTotals: [WindowTotal]

    /// A wallet holds at most this many assets (a credit of one more is refused), so any state fits.
    public static let balanceCountMax = 64

    /// The snapshot of a state.
    public init(_ state: LedgerState) {
        balances = state.balances.sorted { $0.key < $1.key }.map { AssetAmount(issuer: $0.key.issuer, money: $0.value) }
        windowTotals = state.windowTotals.values.sorted {
            Array($0.category.utf8).lexicographicallyPrecedes(Array($1.category.utf8))
        }
    }

    init(balances: [AssetAmount], windowTotals: [WindowTotal]) {
        self.balances = balances
        self.windowTotals = windowTotals
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(balances.count))
        for balance in balances { balance.encode(into: &writer) }
        writer.write(UInt16(windowTotals.count))
        for total in windowTotals {
            writer.write(prefixed8: Array(total.category.utf8), max: Budget.categoryByteCountMax)
            writer.write(total.window.kind.rawValue)
            writer.write(total.window.start)
            writer.write(total.window.end)
            total.spent.encode(into: &writer)
        }
    }

    static func decode(from reader: inout ByteReader) throws -> LedgerSnapshot? {
        guard let balanceCount = reader.readUInt8() else { return nil }
        guard Int(balanceCount) <= balanceCountMax else {
            throw FormatError(
                .fieldTooLong, "a snapshot lists \(balanceCount) balances; at most \(balanceCountMax) are allowed")
        }
        var balances: [AssetAmount] = []
        for _ in 0..<balanceCount {
            guard let balance = try AssetAmount.decode(from: &reader) else { return nil }
            if let last = balances.last, !(last.asset < balance.asset) {
                throw FormatError(.notCanonical, "snapshot balances are not in strictly increasing asset order")
            }
            balances.append(balance)
        }
        guard let windowCount = reader.readUInt16() else { return nil }
        guard Int(windowCount) <= LedgerState.budgetCountMax else {
            throw FormatError(
                .fieldTooLong,
                "a snapshot lists \(windowCount) windows; at most \(LedgerState.budgetCountMax) are allowed")
        }
        var totals: [WindowTotal] = []
        for _ in 0..<windowCount {
            guard let total = try decodeWindowTotal(from: &reader) else { return nil }
            if let last = totals.last, !Array(last.category.utf8).lexicographicallyPrecedes(Array(total.category.utf8))
            {
                throw FormatError(.notCanonical, "snapshot windows are not in strictly increasing category order")
            }
            totals.append(total)
        }
        return LedgerSnapshot(balances: balances, windowTotals: totals)
    }

    private static func decodeWindowTotal(from reader: inout ByteReader) throws -> WindowTotal? {
        guard let categoryBytes = try reader.readPrefixed8(max: Budget.categoryByteCountMax, field: "category"),
            let kindByte = reader.readUInt8(), let start = reader.readInt64(), let end = reader.readInt64(),
            let spent = try Money.decode(from: &reader)
        else { return nil }
        guard let category = String(validating: categoryBytes, as: UTF8.self),
            (try? Budget.validateCategory(category)) != nil
        else {
            throw FormatError(.invalidValue, "a snapshot window names an invalid category")
        }
        guard let kind = BudgetWindowKind(rawValue: kindByte) else {
            throw FormatError(.invalidValue, "budget window \(kindByte) is not known")
        }
        guard LedgerTime.isValid(start), start < end else {
            throw FormatError(.invalidValue, "a snapshot window of \(category) does not start before it ends")
        }
        return WindowTotal(category: category, window: BudgetWindow(kind: kind, start: start, end: end), spent: spent)
    }
}

/// A checkpoint: what the wallet's token signs after each append. It commits to the signing key and its
/// place in the key-event log, to the ledger through size, Merkle root and chain head, to the state
/// after the last entry, and to the wallet's index tables (D, `LedgerIndex`). See docs/PROTOCOL.md,
/// "Checkpoint encoding".
public struct Checkpoint: Hashable, Sendable {
    /// SHA-256 of the wallet's inception event.
    public let walletID: WalletID
    /// The signing key, as its 65-byte uncompressed point.
    public let walletKey: P256.PublicKey
    /// The signing key's sequence number in the key-event log (0 for the inception key).
    public let keySequence: UInt64
    /// The ledger position of the key event that made this key current.
    public let keyEventPosition: UInt64
    /// The number of entries covered, ≥ 1: positions 0 … size−1.
    public let size: UInt64
    /// MTH of the entries 0 … size−1.
    public let root: Digest32
    /// h(size−1), the chain link of the last entry covered.
    public let head: Digest32
    /// When the checkpoint was made, in Unix milliseconds.
    public let time: Int64
    /// The state after entry size−1.
    public let snapshot: LedgerSnapshot
    /// D: SHA-256 over the wallet's `statements` and `outgoing` rows as committed with this checkpoint
    /// (`LedgerIndex`). Only the wallet itself checks it, against its own tables; peers carry it opaquely.
    public let index: Digest32

    /// The encoding's version byte: 2 since balances are per asset and the index commitment D is signed
    /// (version 1 is refused).
    public static let encodingVersion: UInt8 = 2
    /// The signature label: checkpoint signatures can never be replayed as any other statement.
    public static let signatureLabel = SignatureLabel("secure-checkpoint-v1")

    /// Makes a checkpoint, checking that the key event lies inside the ledger and the time is valid.
    public init(
        walletID: WalletID, walletKey: P256.PublicKey, keySequence: UInt64, keyEventPosition: UInt64,
        size: UInt64, root: Digest32, head: Digest32, time: Int64, snapshot: LedgerSnapshot, index: Digest32
    ) throws {
        guard size >= 1, keyEventPosition < size else {
            throw FormatError(
                .invalidValue, "a checkpoint covers at least entry 0 and the key event at \(keyEventPosition)")
        }
        guard LedgerTime.isValid(time) else {
            throw FormatError(.invalidValue, "the checkpoint time lies outside 1970 to 9999")
        }
        self.walletID = walletID
        self.walletKey = walletKey
        self.keySequence = keySequence
        self.keyEventPosition = keyEventPosition
        self.size = size
        self.root = root
        self.head = head
        self.time = time
        self.snapshot = snapshot
        self.index = index
    }

    /// A checkpoint of `state` with the tree root and the index commitment D the store computed for the
    /// same entries.
    public init(
        walletID: WalletID, walletKey: P256.PublicKey, keySequence: UInt64, keyEventPosition: UInt64,
        state: LedgerState, root: Digest32, time: Int64, index: Digest32
    ) throws {
        try self.init(
            walletID: walletID, walletKey: walletKey, keySequence: keySequence, keyEventPosition: keyEventPosition,
            size: state.size, root: root, head: state.head, time: time, snapshot: LedgerSnapshot(state), index: index)
    }

    /// The canonical encoding, which is what gets signed.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.write(Checkpoint.encodingVersion)
        writer.write(walletID)
        writer.write(fixed: walletKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(keySequence)
        writer.write(keyEventPosition)
        writer.write(size)
        writer.write(root)
        writer.write(head)
        writer.write(time)
        snapshot.encode(into: &writer)
        writer.write(index)
        return writer.bytes
    }

    /// Decodes a checkpoint that fills `bytes` exactly: nil when short, throws when malformed. When the
    /// wallet key's bytes equal `knownKey`'s, that already checked key is taken instead of parsing the
    /// point again: OpenSSL 3.0 parses a point in tens of microseconds under a process-wide lock, more
    /// than a signature check costs, and a full verification decodes one checkpoint per entry.
    public static func decode(_ bytes: [UInt8], knownKey: P256.PublicKey? = nil) throws -> Checkpoint? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "checkpoint") else { return nil }
        guard let walletID = reader.read(WalletID.self), let point = reader.readFixed(P256.uncompressedPointByteCount),
            let keySequence = reader.readUInt64(), let keyEventPosition = reader.readUInt64(),
            let size = reader.readUInt64(), let root = reader.read(Digest32.self),
            let head = reader.read(Digest32.self),
            let time = reader.readInt64(), let snapshot = try LedgerSnapshot.decode(from: &reader),
            let index = reader.read(Digest32.self)
        else { return nil }
        try reader.expectEnd("checkpoint")
        let key: P256.PublicKey
        do {
            if let knownKey, knownKey.x963 == point { key = knownKey } else { key = try P256.PublicKey(x963: point) }
        } catch {
            throw FormatError(.invalidValue, "the checkpoint's wallet key is not a valid P-256 point")
        }
        return try Checkpoint(
            walletID: walletID, walletKey: key, keySequence: keySequence, keyEventPosition: keyEventPosition,
            size: size, root: root, head: head, time: time, snapshot: snapshot, index: index)
    }

    /// Signs the checkpoint; the signer must hold the checkpoint's wallet key.
    public func sign(with signer: MessageSigner) throws -> SignedCheckpoint {
        precondition(signer.publicKey == walletKey, "a checkpoint is signed by its own wallet key")
        return SignedCheckpoint(checkpoint: self, signature: try signer.sign(encoded, label: Checkpoint.signatureLabel))
    }
}

/// A checkpoint with its signature by the checkpoint's wallet key.
public struct SignedCheckpoint: Hashable, Sendable {
    /// The checkpoint.
    public let checkpoint: Checkpoint
    /// ECDSA P-256 over SHA-256("secure-checkpoint-v1" ‖ 0x00 ‖ checkpoint encoding), low-s.
    public let signature: ECDSASignature

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// A snapshot holds at most 64 balances and 256 windows of at most 94 bytes each, so a checkpoint
    /// stays below 26 KiB; 32 KiB bounds what a peer can hand us.
    public static let checkpointByteCountMax = 32_768
    /// A DER ECDSA P-256 signature is at most 72 bytes.
    public static let signatureByteCountMax = 72

    /// Pairs a checkpoint with a signature, e.g. one read back from a file.
    public init(checkpoint: Checkpoint, signature: ECDSASignature) {
        self.checkpoint = checkpoint
        self.signature = signature
    }

    /// Whether `key` is the checkpoint's wallet key and made the signature.
    public func isValid(signedBy key: P256.PublicKey) -> Bool {
        key == checkpoint.walletKey && Checkpoint.signatureLabel.verify(signature, of: checkpoint.encoded, by: key)
    }

    /// Whether the signature verifies under the key the checkpoint names. Callers that know the wallet
    /// must also check that this key belongs to it (`isValid(signedBy:)`).
    public var isSelfConsistent: Bool { isValid(signedBy: checkpoint.walletKey) }

    /// version u8 ‖ u16 length ‖ checkpoint ‖ u8 length ‖ DER signature.
    public var encoded: [UInt8] { ByteWriter.bytes { encode(into: &$0) } }

    func encode(into writer: inout ByteWriter) {
        writer.write(SignedCheckpoint.encodingVersion)
        writer.write(prefixed16: checkpoint.encoded, max: SignedCheckpoint.checkpointByteCountMax)
        writer.write(prefixed8: signature.der, max: SignedCheckpoint.signatureByteCountMax)
    }

    /// Decodes a signed checkpoint that fills `bytes` exactly. The signature is parsed, not verified.
    /// `knownKey`: see `Checkpoint.decode(_:knownKey:)`.
    public static func decode(_ bytes: [UInt8], knownKey: P256.PublicKey? = nil) throws -> SignedCheckpoint? {
        var reader = ByteReader(bytes)
        guard let signed = try decode(from: &reader, knownKey: knownKey) else { return nil }
        try reader.expectEnd("signed checkpoint")
        return signed
    }

    static func decode(from reader: inout ByteReader, knownKey: P256.PublicKey? = nil) throws -> SignedCheckpoint? {
        guard try reader.readVersion(encodingVersion, of: "signed checkpoint") else { return nil }
        guard let body = try reader.readPrefixed16(max: checkpointByteCountMax, field: "checkpoint"),
            let der = try reader.readPrefixed8(max: signatureByteCountMax, field: "signature")
        else { return nil }
        // The checkpoint is a complete field here, so a short one is malformed rather than incomplete.
        guard let checkpoint = try Checkpoint.decode(body, knownKey: knownKey) else {
            throw FormatError(.invalidValue, "the checkpoint inside a signed checkpoint is truncated")
        }
        let signature: ECDSASignature
        do {
            signature = try ECDSASignature(der: der)
        } catch {
            throw FormatError(.invalidValue, "the checkpoint signature is not a strict DER ECDSA signature")
        }
        return SignedCheckpoint(checkpoint: checkpoint, signature: signature)
    }
}
