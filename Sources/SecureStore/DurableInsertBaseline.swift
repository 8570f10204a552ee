import Foundation
import SecureCrypto

/// The ledger benchmark's baseline for an append's commit: a table with nothing but an integer key and
/// a blob, in a SQLCipher database with the ledger's settings (its own random raw key, WAL,
/// `synchronous=FULL`), and one IMMEDIATE transaction per insert. What it costs is what any durable,
/// encrypted insert of the same bytes costs on this disk; what an append costs beyond it is the ledger's.
@_spi(Benchmark) public final class DurableInsertBaseline {
    private let database: Database
    private let insert: Statement

    /// Creates the table in a new database file at `path`; an existing file is refused.
    public init(path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.walletExists, "\(path) exists; the baseline makes its own database")
        }
        database = try Database(path: path, key: SecretBytes(randomCount: 32), create: true)
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = FULL")
        try database.execute("CREATE TABLE rows (position INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
        insert = try database.prepare("INSERT INTO rows (bytes) VALUES (?)")
    }

    /// Inserts one row in its own durable transaction.
    public func insert(_ bytes: [UInt8]) throws {
        try database.transaction { try insert.bind([.blob(bytes)]).run() }
    }
}
