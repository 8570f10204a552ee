import Foundation
import SecureCrypto

/// The baseline for the durable commits of `secure-bench pay`: plain SQLCipher transactions on a database
/// configured like the ledger (raw 256-bit key, WAL, `synchronous = FULL`), each inserting rows of given
/// byte counts into one table and nothing else: no schema of ours, no indexes, no reads.
@_spi(Benchmark) public enum DurableCommitBaseline {
    /// Runs `rounds` times the commits listed (each commit is one IMMEDIATE transaction inserting one row
    /// per byte count) in a new database at `path`, and returns the mean microseconds of one whole list.
    /// The file and its WAL are removed afterwards.
    public static func microseconds(path: String, commits: [[Int]], rounds: Int) throws -> Double {
        precondition(rounds > 0 && commits.allSatisfy { $0.allSatisfy { $0 >= 0 } })
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let database = try Database(path: path, key: SecretBytes(randomCount: 32), create: true)
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = FULL")
        try database.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, value BLOB NOT NULL)")
        let payload = SystemRandom.bytes(commits.joined().max() ?? 0)
        // One warm-up list, so that the file's first growth is not in the figure.
        for commit in commits { try insert(database, commit, payload) }
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<rounds {
            for commit in commits { try insert(database, commit, payload) }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(rounds) / 1000
    }

    private static func insert(_ database: Database, _ sizes: [Int], _ payload: [UInt8]) throws {
        try database.transaction {
            let statement = try database.prepare("INSERT INTO rows (value) VALUES (?)")
            for size in sizes { try statement.bind([.blob(Array(payload[..<size]))]).run() }
        }
    }
}
