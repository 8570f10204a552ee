import SecureCrypto

/// D, the index commitment a checkpoint carries: SHA-256 over the wallet's own index tables, the rows of
/// `statements` (every signed statement recorded, by signer and id) and the transfer ids and statuses of
/// `outgoing`. Opening a wallet does not replay its entries, so those tables decide what it believes it has
/// already recorded (a voucher deposited, a payment confirmed). Someone who holds the database key but not
/// the PIN can rewrite them, yet cannot sign a checkpoint over the result: an open that recomputes D and
/// finds another value than its latest checkpoint's locks the wallet. See docs/PROTOCOL.md, "Index
/// commitment".
///
/// The rows are hashed as the database holds them (raw column values), so any edit of a committed column
/// changes D, even one that leaves a value no decoder would accept:
///
///     D = SHA-256("secure-index-v1" ‖ 0x00 ‖ statement rows ‖ outgoing rows)
///     statement row = 0x01 ‖ u32 length ‖ signer ‖ u32 length ‖ id ‖ i64 kind ‖ u32 length ‖ digest ‖ i64 position
///     outgoing row  = 0x02 ‖ u32 length ‖ transfer id ‖ i64 status
///
/// Statement rows come first, in increasing (signer, id) order, then outgoing rows in increasing transfer
/// id order; blobs compare bytewise, a proper prefix first (SQLite's BLOB order). Integers are big-endian.
/// Each row starts with its tag and each blob with its length, so the hashed bytes parse back into exactly
/// one list of rows.
public enum LedgerIndex {
    /// The domain-separation label hashed first.
    public static let label = "secure-index-v1"
    /// The tag that starts a `statements` row.
    static let statementTag: UInt8 = 0x01
    /// The tag that starts an `outgoing` row.
    static let outgoingTag: UInt8 = 0x02

    /// One row of the `statements` table, as stored.
    public struct StatementRow: Hashable, Sendable {
        public let signer: [UInt8]
        public let id: [UInt8]
        public let kind: Int64
        public let digest: [UInt8]
        public let position: Int64

        /// A row read back from the table (or one an entry writes there).
        public init(signer: [UInt8], id: [UInt8], kind: Int64, digest: [UInt8], position: Int64) {
            self.signer = signer
            self.id = id
            self.kind = kind
            self.digest = digest
            self.position = position
        }

        /// Whether this row comes before `other` in the committed order, (signer, id) bytewise.
        public func precedes(_ other: StatementRow) -> Bool {
            signer == other.signer
                ? id.lexicographicallyPrecedes(other.id) : signer.lexicographicallyPrecedes(other.signer)
        }
    }

    /// The committed columns of one row of the `outgoing` table.
    public struct OutgoingRow: Hashable, Sendable {
        public let transferID: [UInt8]
        public let status: Int64

        /// A row read back from the table.
        public init(transferID: [UInt8], status: Int64) {
            self.transferID = transferID
            self.status = status
        }
    }

    /// D computed as the rows stream out of the database, without holding them: O(n) time, O(1) memory.
    /// Statement rows must all come before outgoing rows, each kind in its committed order.
    public struct Hasher {
        private var hasher = SHA256.Hasher()
        private var buffer: [UInt8] = []
        private var outgoingStarted = false

        /// Rows are hashed a buffer at a time: one EVP update per row would cost more than the hashing.
        static let bufferByteCount = 65_536

        /// Starts D with its label.
        public init() {
            buffer.reserveCapacity(Self.bufferByteCount + 256)
            buffer += DomainLabel.bytes(LedgerIndex.label)
        }

        /// Adds the next `statements` row.
        public mutating func add(_ row: StatementRow) {
            precondition(!outgoingStarted, "statement rows come before outgoing rows")
            buffer.append(LedgerIndex.statementTag)
            appendBlob(row.signer)
            appendBlob(row.id)
            appendInteger(row.kind)
            appendBlob(row.digest)
            appendInteger(row.position)
            flushIfFull()
        }

        /// Adds the next `outgoing` row.
        public mutating func add(_ row: OutgoingRow) {
            outgoingStarted = true
            buffer.append(LedgerIndex.outgoingTag)
            appendBlob(row.transferID)
            appendInteger(row.status)
            flushIfFull()
        }

        /// D of the rows added.
        public mutating func finalize() -> Digest32 {
            hasher.update(buffer)
            buffer = []
            return Digest32(finalizing: hasher)
        }

        private mutating func appendBlob(_ blob: [UInt8]) {
            // SQLite holds no value longer than SQLITE_MAX_LENGTH (10^9 bytes), so the length fits in 32 bits.
            precondition(blob.count <= Int(UInt32.max), "a database value longer than SQLite allows")
            withUnsafeBytes(of: UInt32(blob.count).bigEndian) { buffer.append(contentsOf: $0) }
            buffer.append(contentsOf: blob)
        }

        private mutating func appendInteger(_ value: Int64) {
            withUnsafeBytes(of: UInt64(bitPattern: value).bigEndian) { buffer.append(contentsOf: $0) }
        }

        private mutating func flushIfFull() {
            guard buffer.count >= Self.bufferByteCount else { return }
            hasher.update(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// D of rows in any order: they are sorted into the committed order first. For tests and for ledgers
    /// held in memory; a wallet streams its tables through `Hasher` in that order instead.
    public static func digest(statements: [StatementRow], outgoing: [OutgoingRow]) -> Digest32 {
        var hasher = Hasher()
        for row in statements.sorted(by: { $0.precedes($1) }) { hasher.add(row) }
        for row in outgoing.sorted(by: { $0.transferID.lexicographicallyPrecedes($1.transferID) }) { hasher.add(row) }
        return hasher.finalize()
    }

    /// D of empty tables, for checkpoints of ledgers that keep no index (test and benchmark fixtures).
    public static let emptyDigest = digest(statements: [], outgoing: [])

    /// The `statements` row that recording `entry` adds, if any: a statement entry other than a conflict
    /// (a conflict keeps its second payload as evidence; the first payload's row stays).
    public static func statementRow(of entry: LedgerEntry) -> StatementRow? {
        guard let statement = entry.statement, entry.kind != .conflictingStatement else { return nil }
        return StatementRow(
            signer: statement.signer.bytes, id: statement.id.bytes, kind: Int64(entry.kind.rawValue),
            digest: statement.payloadDigest.bytes, position: Int64(truncatingIfNeeded: entry.position))
    }
}
