internal import CSQLCipher
import Foundation
import SecureCrypto

// Every call into SQLCipher goes through this file, and every return code is checked where it is made.

/// SQLite result codes the store tells apart.
enum SQLiteCode {
    static let ok: Int32 = 0, busy: Int32 = 5, locked: Int32 = 6, readOnly: Int32 = 8, corrupt: Int32 = 11
    static let notADatabase: Int32 = 26
    static let row: Int32 = 100, done: Int32 = 101, constraint: Int32 = 19
}

/// An open SQLCipher connection, closed with its owner.
final class Database {
    private let handle: OpaquePointer
    let path: String

    /// Opens (or creates) a database file and gives SQLCipher the raw 256-bit key. The key goes in as
    /// SQLCipher's raw-key form x'…' so no passphrase derivation runs; the hex copy is wiped after.
    /// `readOnly` opens with SQLITE_OPEN_READONLY: every write fails with SQLITE_READONLY, and closing never
    /// checkpoints the WAL into the file (checked on SQLite 3.15.2 / SQLCipher 3.4.1). Reading a WAL
    /// database still needs its -shm file, which SQLite opens read-write (creating it, and an empty -wal,
    /// when no writer left them): the folder must be writable, as a wallet's always is.
    init(path: String, key: SecretBytes, create: Bool, readOnly: Bool = false) throws {
        precondition(!(create && readOnly), "a database is created read-write")
        var pointer: OpaquePointer?
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        let flags = access | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(path, &pointer, flags, nil)
        guard opened == SQLITE_OK, let pointer else {
            if let pointer { sqlite3_close_v2(pointer) }
            throw StoreError(.io, "cannot open the ledger database \(path): \(String(cString: sqlite3_errstr(opened)))")
        }
        handle = pointer
        self.path = path
        precondition(key.count == 32, "the database key is 256 bits")
        // Built byte by byte so that no String copy of the key is left behind unwiped.
        let digits = Array("0123456789abcdef".utf8)
        var literal = [UInt8](repeating: 0, count: 3 + 64)
        literal[0] = UInt8(ascii: "x"); literal[1] = UInt8(ascii: "'"); literal[66] = UInt8(ascii: "'")
        key.withUnsafeBytes { bytes in
            for (index, byte) in bytes.enumerated() {
                literal[2 + 2 * index] = digits[Int(byte >> 4)]
                literal[3 + 2 * index] = digits[Int(byte & 0x0f)]
            }
        }
        defer { literal.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        let keyed = literal.withUnsafeBytes { sqlite3_key(handle, $0.baseAddress, Int32($0.count)) }
        guard keyed == SQLITE_OK else {
            sqlite3_close_v2(handle)
            throw StoreError(.sqlite, "SQLCipher refused the key: \(String(cString: sqlite3_errstr(keyed)))")
        }
        sqlite3_busy_timeout(handle, 2000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs statements that return no rows.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard result == SQLITE_OK else {
            throw Self.error(
                result, message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle)), in: self)
        }
    }

    /// Prepares a statement.
    func prepare(_ sql: String) throws -> Statement {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else {
            throw Self.error(result, String(cString: sqlite3_errmsg(handle)), in: self)
        }
        return Statement(statement, database: self)
    }

    /// Runs `body` in an IMMEDIATE transaction; it commits only if `body` returns.
    func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// How many rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// The last error message.
    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// The version of SQLCipher linked, from `PRAGMA cipher_version`.
    func cipherVersion() throws -> String? {
        let statement = try prepare("PRAGMA cipher_version")
        return try statement.step() ? statement.text(0) : nil
    }

    /// The error for a failed call on this database: a disk that is full, read-only or failing names the
    /// file and the system's cause (errno) instead of SQLite's "disk I/O error".
    static func error(_ code: Int32, _ message: String, in database: Database) -> StoreError {
        switch code & 0xff {
        case 10, 13, 14: // SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN
            let systemErrno = sqlite3_system_errno(database.handle)
            let cause =
                code & 0xff == 13
                ? "the disk is full" : systemErrno != 0 ? String(cString: strerror(systemErrno)) : message
            return StoreError(.io, "cannot write the ledger database \(database.path): \(cause)")
        default:
            return error(code, message)
        }
    }

    static func error(_ code: Int32, _ message: String) -> StoreError {
        switch code & 0xff {
        case SQLiteCode.notADatabase:
            return StoreError(.corrupted, "SQLCipher cannot read the database (SQLITE_NOTADB): \(message)")
        case SQLiteCode.corrupt:
            return StoreError(.corrupted, "the database is corrupted (SQLITE_CORRUPT): \(message)")
        case SQLiteCode.busy, SQLiteCode.locked:
            return StoreError(.walletBusy, "the database is busy: \(message)")
        case SQLiteCode.readOnly:
            // Our bug if it happens: a reading command's wallet was asked to write.
            return StoreError(
                .sqlite,
                "the wallet was opened for reading and cannot write (SQLITE_READONLY): "
                    + message)
        default:
            return StoreError(.sqlite, "SQLite error \(code): \(message)")
        }
    }
}

/// A prepared statement, finalized with its owner.
final class Statement {
    private let handle: OpaquePointer
    private let database: Database

    fileprivate init(_ handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds parameters by position (1-based), replacing earlier bindings.
    @discardableResult
    func bind(_ values: [SQLValue]) throws -> Statement {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .integer(let number): result = sqlite3_bind_int64(handle, index, number)
            case .text(let text): result = sqlite3_bind_text(handle, index, text, -1, transientDestructor)
            case .blob(let bytes):
                result = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(
                        handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
                        transientDestructor)
                }
            case .secret(let secret):
                // SQLITE_TRANSIENT: SQLite copies the bytes into its own memory (and its pages), which it owns
                // like every other row; no array copy of the secret is made here.
                result = secret.withUnsafeBytes {
                    sqlite3_bind_blob(
                        handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
                        transientDestructor)
                }
            case .null: result = sqlite3_bind_null(handle, index)
            }
            guard result == SQLITE_OK else { throw Database.error(result, database.lastMessage, in: database) }
        }
        return self
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw Database.error(result, database.lastMessage, in: database)
        }
    }

    /// Runs to completion, ignoring rows.
    func run() throws {
        while try step() {}
        sqlite3_reset(handle)
    }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: pointer)
    }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// A blob column copied straight into wiped-on-release memory, for a secret row.
    func secretBlob(_ column: Int32) -> SecretBytes {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return SecretBytes([]) }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
}

/// A value bound to a statement.
enum SQLValue {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    /// A secret blob, bound from its wiped-on-release memory.
    case secret(SecretBytes)
    case null
}

extension SQLValue {
    /// A ledger size, position or index as SQLite's signed integer. No ledger reaches 2^63 entries, so a
    /// larger value can only come from a hostile file or peer: it is refused here, never converted with a
    /// trap (`Int64(_:)` on such a value stops the process).
    static func count(_ value: UInt64) throws -> SQLValue {
        guard let signed = Int64(exactly: value) else {
            throw FormatError(.invalidValue, "\(value) is past the largest size a ledger can have (2^63 − 1)")
        }
        return .integer(signed)
    }
}

/// SQLITE_TRANSIENT: SQLite copies bound values before the call returns.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
