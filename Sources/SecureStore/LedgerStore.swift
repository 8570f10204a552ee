import Foundation
import SecureCore
import SecureCrypto

/// The ledger's SQLCipher database: entries, their leaf hashes, signed checkpoints, the index of signed
/// statements by (signer, id), and peers' checkpoints. One writer per wallet (see `WalletLock`).
/// Writes are single IMMEDIATE transactions on a WAL database with `synchronous=FULL`, so an append is
/// durable when it returns.
public final class LedgerStore {
    let database: Database
    /// The file's path.
    public let path: String

    /// The schema version this code writes. Migrations bring older files up to it.
    public static let schemaVersion: Int64 = 1

    private static let migrations: [Int64: String] = [
        1: """
            CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
            CREATE TABLE entries (position INTEGER PRIMARY KEY, id BLOB NOT NULL, encoded BLOB NOT NULL,
                                  link BLOB NOT NULL, leaf BLOB NOT NULL);
            CREATE TABLE checkpoints (size INTEGER PRIMARY KEY, encoded BLOB NOT NULL);
            CREATE TABLE statements (signer BLOB NOT NULL, id BLOB NOT NULL, digest BLOB NOT NULL,
                                     position INTEGER NOT NULL, PRIMARY KEY (signer, id));
            CREATE TABLE peer_checkpoints (wallet BLOB NOT NULL, size INTEGER NOT NULL, encoded BLOB NOT NULL,
                                           PRIMARY KEY (wallet, size));
            CREATE TABLE evidence (digest BLOB PRIMARY KEY, encoded BLOB NOT NULL);
            """,
    ]

    private init(database: Database, path: String) {
        self.database = database
        self.path = path
    }

    /// Creates a new database file; an existing file is never overwritten.
    public static func create(path: String, key: SecretBytes, walletID: [UInt8]) throws -> LedgerStore {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.walletExists, "a ledger already exists at \(path); it is never recreated")
        }
        let store = LedgerStore(database: try Database(path: path, key: key, create: true), path: path)
        try store.configure()
        try store.migrate()
        try store.database.transaction {
            try store.database.prepare("INSERT INTO meta (name, value) VALUES ('wallet-id', ?)").bind([.blob(walletID)]).run()
        }
        return store
    }

    /// Opens an existing database with its key. Failures say which: corruption (the salt matches but the
    /// file cannot be read), another wallet's database (the salt differs), or a missing file.
    public static func open(path: String, key: SecretBytes, expectedSalt: [UInt8], walletID: [UInt8]) throws -> LedgerStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.walletMissing, "the ledger database \(path) is missing; restore it from a backup. "
                + "The wallet is never silently recreated")
        }
        let salt = try fileSalt(path)
        guard salt == expectedSalt else {
            throw StoreError(.foreignDatabase, "\(path) is not this wallet's database (its salt differs from the one recorded "
                + "with the wrapped key); was another wallet's file copied here?")
        }
        let store = LedgerStore(database: try Database(path: path, key: key, create: false), path: path)
        do {
            try store.configure()
            try store.migrate()
        } catch let error as StoreError where error.code == .corrupted {
            throw StoreError(.corrupted, "the ledger database \(path) is corrupted: the key is right (it matches the key-check "
                + "value) and the file is this wallet's (its salt matches), but SQLCipher cannot read it. Restore a backup, "
                + "then `secure ledger verify`")
        }
        guard try store.walletID() == walletID else {
            throw StoreError(.foreignDatabase, "\(path) belongs to another wallet")
        }
        return store
    }

    /// The first 16 bytes of a database file: SQLCipher's random salt.
    public static func fileSalt(_ path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError(.io, "cannot read \(path)")
        }
        defer { try? handle.close() }
        let bytes = Array(handle.readData(ofLength: WrappedKeyFile.saltByteCount))
        guard bytes.count == WrappedKeyFile.saltByteCount else {
            throw StoreError(.corrupted, "the ledger database \(path) is truncated (shorter than its 16-byte salt)")
        }
        return bytes
    }

    private func configure() throws {
        // Reading the schema is the first access that needs the key; a bad file fails here.
        _ = try database.prepare("SELECT count(*) FROM sqlite_master").step()
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = FULL")
        try database.execute("PRAGMA foreign_keys = ON")
    }

    private func migrate() throws {
        let statement = try database.prepare("PRAGMA user_version")
        _ = try statement.step()
        var version = statement.integer(0)
        guard version <= Self.schemaVersion else {
            throw StoreError(.schemaTooNew, "the ledger was written by a newer secure (schema \(version)); upgrade secure")
        }
        while version < Self.schemaVersion {
            let next = version + 1
            guard let sql = Self.migrations[next] else { preconditionFailure("no migration to schema \(next)") }
            try database.transaction {
                try database.execute(sql)
                try database.execute("PRAGMA user_version = \(next)")
            }
            version = next
        }
    }

    /// The wallet id recorded at creation.
    public func walletID() throws -> [UInt8] {
        let statement = try database.prepare("SELECT value FROM meta WHERE name = 'wallet-id'")
        guard try statement.step() else { throw StoreError(.corrupted, "the ledger has no wallet id") }
        return statement.blob(0)
    }

    // MARK: Appending

    /// What one append writes, all in one transaction.
    public struct Append {
        public let entry: LedgerEntry
        /// The signed checkpoint that covers the new entry.
        public let checkpoint: [UInt8]
        /// The new size the checkpoint commits to.
        public let checkpointSize: UInt64

        public init(entry: LedgerEntry, checkpoint: [UInt8], checkpointSize: UInt64) {
            self.entry = entry
            self.checkpoint = checkpoint
            self.checkpointSize = checkpointSize
        }
    }

    /// Appends entries and their checkpoint in one durable transaction. Positions must continue the ledger.
    public func append(_ appends: [Append]) throws {
        try database.transaction {
            let insertEntry = try database.prepare("INSERT INTO entries (position, id, encoded, link, leaf) VALUES (?, ?, ?, ?, ?)")
            let insertStatement = try database.prepare("INSERT INTO statements (signer, id, digest, position) VALUES (?, ?, ?, ?)")
            let insertCheckpoint = try database.prepare("INSERT OR REPLACE INTO checkpoints (size, encoded) VALUES (?, ?)")
            var expected = try size()
            for item in appends {
                precondition(item.entry.position == expected, "append out of order: \(item.entry.position) after size \(expected)")
                let encoded = item.entry.encoded
                try insertEntry.bind([.integer(Int64(item.entry.position)), .blob(item.entry.id), .blob(encoded),
                                      .blob(item.entry.link), .blob(Merkle.leafHash(encoded))]).run()
                if let statement = item.entry.statement, Self.indexesStatement(item.entry.kind) {
                    try insertStatement.bind([.blob(statement.signer), .blob(statement.id), .blob(statement.payloadDigest),
                                              .integer(Int64(item.entry.position))]).run()
                }
                try insertCheckpoint.bind([.integer(Int64(item.checkpointSize)), .blob(item.checkpoint)]).run()
                expected += 1
            }
        }
    }

    /// Entries whose (signer, id) is unique in the ledger; conflicting and refused statements are kept
    /// as evidence under other keys.
    static func indexesStatement(_ kind: EntryKind) -> Bool {
        switch kind {
        case .deposit, .paymentOut, .paymentIn, .reversal: return true
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement: return false
        }
    }

    // MARK: Reading

    /// The number of entries.
    public func size() throws -> UInt64 {
        let statement = try database.prepare("SELECT coalesce(max(position) + 1, 0) FROM entries")
        _ = try statement.step()
        return UInt64(statement.integer(0))
    }

    /// The entry at a position, decoded; nil past the end.
    public func entry(at position: UInt64) throws -> LedgerEntry? {
        let statement = try database.prepare("SELECT encoded FROM entries WHERE position = ?").bind([.integer(Int64(position))])
        guard try statement.step() else { return nil }
        return try decodeEntry(statement.blob(0), position: position)
    }

    /// The entry with a given 16-byte id.
    public func entry(id: [UInt8]) throws -> LedgerEntry? {
        let statement = try database.prepare("SELECT position, encoded FROM entries WHERE id = ?").bind([.blob(id)])
        guard try statement.step() else { return nil }
        return try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0)))
    }

    /// Calls `body` with every entry in [from, to), in order, decoding lazily.
    public func forEachEntry(from: UInt64 = 0, to: UInt64 = .max, _ body: (LedgerEntry) throws -> Void) throws {
        let statement = try database.prepare("SELECT position, encoded FROM entries WHERE position >= ? AND position < ? ORDER BY position")
            .bind([.integer(Int64(from)), .integer(Int64(min(to, UInt64(Int64.max))))])
        while try statement.step() {
            try body(try decodeEntry(statement.blob(1), position: UInt64(statement.integer(0))))
        }
    }

    /// The raw encodings of entries in [from, to), in order (for parallel verification).
    public func encodedEntries(from: UInt64, to: UInt64) throws -> [[UInt8]] {
        let statement = try database.prepare("SELECT encoded FROM entries WHERE position >= ? AND position < ? ORDER BY position")
            .bind([.integer(Int64(from)), .integer(Int64(to))])
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }

    /// Stored leaf hashes of entries in [from, to), in order.
    public func leafHashes(from: UInt64 = 0, to: UInt64) throws -> [[UInt8]] {
        let statement = try database.prepare("SELECT leaf FROM entries WHERE position >= ? AND position < ? ORDER BY position")
            .bind([.integer(Int64(from)), .integer(Int64(to))])
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }

    private func decodeEntry(_ bytes: [UInt8], position: UInt64) throws -> LedgerEntry {
        do {
            guard let entry = try LedgerEntry.decode(bytes) else {
                throw StoreError(.corrupted, "entry \(position) is truncated")
            }
            return entry
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.corrupted, "entry \(position) does not decode: \(error)")
        }
    }

    /// The latest signed checkpoint and its size.
    public func latestCheckpoint() throws -> (size: UInt64, encoded: [UInt8])? {
        let statement = try database.prepare("SELECT size, encoded FROM checkpoints ORDER BY size DESC LIMIT 1")
        guard try statement.step() else { return nil }
        return (UInt64(statement.integer(0)), statement.blob(1))
    }

    /// The signed checkpoint of a given size.
    public func checkpoint(size: UInt64) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT encoded FROM checkpoints WHERE size = ?").bind([.integer(Int64(size))])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// Every stored checkpoint size, ascending.
    public func checkpointSizes() throws -> [UInt64] {
        let statement = try database.prepare("SELECT size FROM checkpoints ORDER BY size")
        var sizes: [UInt64] = []
        while try statement.step() { sizes.append(UInt64(statement.integer(0))) }
        return sizes
    }

    /// The entry that recorded a signed statement, by (signer, id): its payload digest and position.
    public func statement(signer: [UInt8], id: [UInt8]) throws -> (digest: [UInt8], position: UInt64)? {
        let statement = try database.prepare("SELECT digest, position FROM statements WHERE signer = ? AND id = ?")
            .bind([.blob(signer), .blob(id)])
        guard try statement.step() else { return nil }
        return (statement.blob(0), UInt64(statement.integer(1)))
    }

    // MARK: Peers and evidence

    /// Keeps a peer's signed checkpoint (a payee keeps the payer's).
    public func storePeerCheckpoint(wallet: [UInt8], size: UInt64, encoded: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR IGNORE INTO peer_checkpoints (wallet, size, encoded) VALUES (?, ?, ?)")
                .bind([.blob(wallet), .integer(Int64(size)), .blob(encoded)]).run()
        }
    }

    /// A peer's latest stored checkpoint.
    public func latestPeerCheckpoint(wallet: [UInt8]) throws -> (size: UInt64, encoded: [UInt8])? {
        let statement = try database.prepare("SELECT size, encoded FROM peer_checkpoints WHERE wallet = ? ORDER BY size DESC LIMIT 1")
            .bind([.blob(wallet)])
        guard try statement.step() else { return nil }
        return (UInt64(statement.integer(0)), statement.blob(1))
    }

    /// A peer's stored checkpoint of a size.
    public func peerCheckpoint(wallet: [UInt8], size: UInt64) throws -> [UInt8]? {
        let statement = try database.prepare("SELECT encoded FROM peer_checkpoints WHERE wallet = ? AND size = ?")
            .bind([.blob(wallet), .integer(Int64(size))])
        return try statement.step() ? statement.blob(0) : nil
    }

    /// Keeps fork evidence by its digest; keeping the same evidence twice is a no-op.
    public func storeEvidence(_ encoded: [UInt8]) throws {
        try database.transaction {
            try database.prepare("INSERT OR IGNORE INTO evidence (digest, encoded) VALUES (?, ?)")
                .bind([.blob(SHA256.hash(encoded)), .blob(encoded)]).run()
        }
    }

    /// All evidence held.
    public func evidence() throws -> [[UInt8]] {
        let statement = try database.prepare("SELECT encoded FROM evidence ORDER BY digest")
        var result: [[UInt8]] = []
        while try statement.step() { result.append(statement.blob(0)) }
        return result
    }
}
