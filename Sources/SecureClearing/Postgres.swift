internal import CLibPQ
import Foundation
import SecureCrypto

// Every libpq call of the project is in this file (STYLE.md, "All calls into one C library go through one file").
// Statements take their values as parameters, sent in binary, and results come back in binary: no SQL text is
// ever built from a value, so nothing from outside can change a statement's meaning.

/// A PostgreSQL failure: a stable code, the server's SQLSTATE when the server refused a statement, and its message.
public struct PostgresError: CodedError {
    /// What failed.
    public enum Code: CaseNameCode, FailureCode {
        /// The server could not be reached, refused the connection, or the connection broke.
        case connectionFailed
        /// The server refused a statement; `sqlState` says why (a constraint, a syntax error, …).
        case statementFailed
        /// A serialization failure (SQLSTATE 40001) or a deadlock (40P01): the transaction was rolled back and
        /// running it again may succeed.
        case retryableConflict
        /// A result of another shape or type than the caller asked for.
        case unexpectedResult

        /// Every code is a plain failure; the clearing answers them 503 or 500.
        public var kind: FailureKind { .failure }
    }

    /// SQLSTATE 40001: the transaction could not be serialized; retry it.
    public static let serializationFailure = "40001"
    /// SQLSTATE 40P01: the transaction was chosen as a deadlock's victim; retry it.
    public static let deadlockDetected = "40P01"
    /// SQLSTATE 23505: a UNIQUE or PRIMARY KEY constraint refused a row.
    public static let uniqueViolation = "23505"
    /// SQLSTATE 23514: a CHECK constraint refused a row.
    public static let checkViolation = "23514"
    /// SQLSTATE 23502: a NOT NULL constraint refused a row.
    public static let notNullViolation = "23502"

    /// The stable code.
    public let code: Code
    /// The five-character SQLSTATE the server sent, for `statementFailed` and `retryableConflict`.
    public let sqlState: String?
    /// The server's or libpq's message.
    public let message: String

    /// An error with its code, SQLSTATE and message.
    public init(_ code: Code, sqlState: String? = nil, _ message: String) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
    }

    /// The code's kind.
    public var kind: FailureKind { code.kind }

    /// Whether running the whole transaction again may succeed (40001, 40P01).
    public var isRetryable: Bool { code == .retryableConflict }
}

/// The column types this wrapper sends and reads in binary; their PostgreSQL type OIDs (pg_type.h).
public enum PostgresType: UInt32, Sendable, CaseIterable {
    /// `boolean`: one byte, 0 or 1.
    case bool = 16
    /// `bytea`: the bytes as they are.
    case bytea = 17
    /// `bigint`: eight bytes, big-endian two's complement.
    case int8 = 20
    /// `integer`: four bytes, big-endian two's complement.
    case int4 = 23
    /// `text`: UTF-8 (the connection's client encoding is set to UTF8).
    case text = 25
}

/// One parameter or result value.
public enum PostgresValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A `bytea`.
    case bytea([UInt8])
    /// A `bigint`.
    case int8(Int64)
    /// An `integer` (a `smallint` result is widened to it).
    case int4(Int32)
    /// A `boolean`.
    case bool(Bool)
    /// A `text` (a `varchar`, `char` or `name` result is read as text too).
    case text(String)
    /// A result of a type this wrapper does not decode, in PostgreSQL's binary form (cast it in SQL instead).
    case other(typeOID: UInt32, bytes: [UInt8])

    /// The parameter type sent to the server, nil for NULL (the server infers it from the statement).
    var type: PostgresType? {
        switch self {
        case .null, .other: nil
        case .bytea: .bytea
        case .int8: .int8
        case .int4: .int4
        case .bool: .bool
        case .text: .text
        }
    }

    /// The binary form sent to the server.
    var binary: [UInt8] {
        switch self {
        case .null: []
        case .bytea(let bytes): bytes
        case .int8(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .int4(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .bool(let value): [value ? 1 : 0]
        case .text(let text): Array(text.utf8)
        case .other(_, let bytes): bytes
        }
    }

    /// Decodes a binary result value of the given type OID.
    static func decode(typeOID: UInt32, bytes: [UInt8]) throws -> PostgresValue {
        func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
            guard bytes.count == MemoryLayout<T>.size else {
                throw PostgresError(.unexpectedResult, "a \(T.self) result of \(bytes.count) bytes")
            }
            return bytes.reduce(T.zero) { $0 << 8 | T(truncatingIfNeeded: $1) }
        }
        switch typeOID {
        case PostgresType.bytea.rawValue: return .bytea(bytes)
        case PostgresType.int8.rawValue: return .int8(try integer(Int64.self))
        case PostgresType.int4.rawValue: return .int4(try integer(Int32.self))
        case 21: return .int4(Int32(try integer(Int16.self))) // smallint
        case PostgresType.bool.rawValue:
            guard bytes.count == 1, bytes[0] <= 1 else {
                throw PostgresError(.unexpectedResult, "a boolean result that is not one byte 0 or 1")
            }
            return .bool(bytes[0] == 1)
        case PostgresType.text.rawValue, 1043, 1042, 19: // text, varchar, char, name
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw PostgresError(.unexpectedResult, "a text result that is not UTF-8")
            }
            return .text(text)
        default: return .other(typeOID: typeOID, bytes: bytes)
        }
    }

    /// Whether the value is SQL NULL.
    public var isNull: Bool { self == .null }
    /// The bytes of a `bytea`, else nil.
    public var bytes: [UInt8]? { if case .bytea(let bytes) = self { bytes } else { nil } }
    /// A `bigint` or `integer` as Int64, else nil.
    public var int64: Int64? {
        switch self {
        case .int8(let value): value
        case .int4(let value): Int64(value)
        default: nil
        }
    }
    /// An `integer`, else nil.
    public var int32: Int32? { if case .int4(let value) = self { value } else { nil } }
    /// A `boolean`, else nil.
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    /// A `text`, else nil.
    public var text: String? { if case .text(let value) = self { value } else { nil } }
}

/// One row of a result, with typed getters that throw `unexpectedResult` on NULL or another type.
public struct PostgresRow: Sendable {
    /// The result's column names, in order.
    public let columns: [String]
    /// The row's values, one per column.
    public let values: [PostgresValue]

    /// The value of the named column; a name the result lacks is the caller's bug.
    public subscript(_ column: String) -> PostgresValue {
        guard let index = columns.firstIndex(of: column) else { preconditionFailure("no column \(column)") }
        return values[index]
    }

    private func typed<T>(_ column: String, _ name: String, _ read: (PostgresValue) -> T?) throws -> T {
        guard let value = read(self[column]) else {
            throw PostgresError(.unexpectedResult, "column \(column) is \(self[column]), not a non-null \(name)")
        }
        return value
    }

    /// The named `bytea` column.
    public func bytes(_ column: String) throws -> [UInt8] { try typed(column, "bytea") { $0.bytes } }
    /// The named `bigint` (or `integer`) column.
    public func int64(_ column: String) throws -> Int64 { try typed(column, "bigint") { $0.int64 } }
    /// The named `integer` column.
    public func int32(_ column: String) throws -> Int32 { try typed(column, "integer") { $0.int32 } }
    /// The named `boolean` column.
    public func bool(_ column: String) throws -> Bool { try typed(column, "boolean") { $0.bool } }
    /// The named `text` column.
    public func text(_ column: String) throws -> String { try typed(column, "text") { $0.text } }
}

/// A statement's whole result, copied out of libpq.
public struct PostgresResult: Sendable {
    /// The column names, in order (empty for a statement that returns no rows).
    public let columns: [String]
    /// The rows.
    public let rows: [PostgresRow]
    /// The rows an INSERT, UPDATE or DELETE touched (PQcmdTuples), 0 for other statements.
    public let affectedRows: Int
}

/// One connection to PostgreSQL. Not thread-safe: one thread uses it at a time (a pool hands it out).
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// The largest number of parameters a statement takes here (the protocol's own limit is 65535).
    public static let parametersMax = 1_000
    /// How long a connection attempt may take when the URL does not say (`connect_timeout`, seconds).
    public static let connectTimeoutSeconds = 10

    /// Connects with a `postgresql://` URL or a `key=value` connection string, UTF-8 and READ COMMITTED.
    public init(_ connectionString: String) throws {
        // The URL's own connect_timeout, if any, overrides the default: libpq expands `dbname` over the
        // keywords before it.
        let keywords = ["connect_timeout", "client_encoding", "dbname"]
        let values = ["\(Self.connectTimeoutSeconds)", "UTF8", connectionString]
        let connection = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let connection else { throw PostgresError(.connectionFailed, "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.text(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(.connectionFailed, "cannot connect to PostgreSQL: \(message)")
        }
        handle = connection
        // Notices (e.g. "relation already exists, skipping") would go to stderr; they carry nothing to act on.
        _ = PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// The server's version as an integer (150018 for 15.18).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Whether the connection is still usable (a pool drops one that is not).
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Whether a transaction is open on this connection.
    public var inTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// Runs SQL text with no parameters and no results, possibly several statements (a migration, `BEGIN`).
    /// Only for text written in the source, never for anything built from a value.
    public func execute(script: StaticString) throws {
        try execute(trustedScript: script.description)
    }

    /// `execute(script:)` for a script held in a constant that the compiler cannot see as static (migrations).
    func execute(trustedScript script: String) throws {
        let result = PQexec(handle, script)
        defer { PQclear(result) }
        try check(result, script)
    }

    /// Runs one statement with binary parameters (`$1`, `$2`, …) and returns its whole result in binary.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresResult {
        try withParameters(parameters) { count, types, values, lengths, formats in
            let result = PQexecParams(handle, sql, count, types, values, lengths, formats, 1)
            defer { PQclear(result) }
            return try read(result, sql)
        }
    }

    /// Prepares a named statement on this connection, with its parameter types fixed so that binary
    /// parameters are read as the types sent.
    public func prepare(_ name: String, _ sql: String, parameterTypes: [PostgresType]) throws {
        precondition(parameterTypes.count <= Self.parametersMax, "too many parameters for \(name)")
        let types = parameterTypes.map { Oid($0.rawValue) }
        let result = PQprepare(handle, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, sql)
        preparedTypes[name] = parameterTypes
    }

    private var preparedTypes: [String: [PostgresType]] = [:]

    /// Whether `name` was prepared on this connection (a pooled connection prepares its statements on first use).
    public func isPrepared(_ name: String) -> Bool { preparedTypes[name] != nil }

    /// Runs a statement prepared on this connection with binary parameters of the prepared types.
    @discardableResult
    public func execute(prepared name: String, _ parameters: [PostgresValue]) throws -> PostgresResult {
        guard let types = preparedTypes[name] else { preconditionFailure("statement \(name) was not prepared") }
        precondition(types.count == parameters.count, "statement \(name) takes \(types.count) parameters")
        for (type, value) in zip(types, parameters) where value.type != nil {
            precondition(value.type == type, "statement \(name) takes \(type), not \(value)")
        }
        return try withParameters(parameters) { count, _, values, lengths, formats in
            let result = PQexecPrepared(handle, name, count, values, lengths, formats, 1)
            defer { PQclear(result) }
            return try read(result, name)
        }
    }

    /// Runs `body` in one READ COMMITTED transaction: committed when it returns, rolled back when it throws.
    /// A serialization failure or deadlock (40001, 40P01) runs the whole body again, up to `attempts` times in
    /// all, so `body` must do nothing outside the database that it cannot repeat.
    public func transaction<T>(attempts: Int = 1, _ body: () throws -> T) throws -> T {
        precondition(attempts >= 1 && attempts <= Self.transactionAttemptsMax, "attempts out of range")
        precondition(!inTransaction, "a transaction is already open on this connection")
        var attempt = 1
        while true {
            do {
                try execute(script: "BEGIN ISOLATION LEVEL READ COMMITTED")
                let value = try body()
                try execute(script: "COMMIT")
                return value
            } catch let error as PostgresError where error.isRetryable && attempt < attempts {
                try rollBackIfOpen()
                attempt += 1
            } catch {
                try? rollBackIfOpen()
                throw error
            }
        }
    }

    /// The most attempts `transaction` makes: a conflict that repeats this often is not bad luck.
    public static let transactionAttemptsMax = 10

    private func rollBackIfOpen() throws {
        if inTransaction { try execute(script: "ROLLBACK") }
    }

    /// `pg_try_advisory_xact_lock(key)`: takes the transaction-scoped advisory lock if no other session holds it
    /// and returns whether it did; never waits. Released at the transaction's end.
    public func tryAdvisoryTransactionLock(_ key: Int64) throws -> Bool {
        precondition(inTransaction, "an advisory transaction lock needs an open transaction")
        let result = try query("SELECT pg_try_advisory_xact_lock($1) AS locked", [.int8(key)])
        guard let row = result.rows.first else {
            throw PostgresError(.unexpectedResult, "the try-lock returned no row")
        }
        return try row.bool("locked")
    }

    /// `pg_advisory_xact_lock(key)`: waits for the transaction-scoped advisory lock (the migrator's).
    public func advisoryTransactionLock(_ key: Int64) throws {
        precondition(inTransaction, "an advisory transaction lock needs an open transaction")
        try query("SELECT pg_advisory_xact_lock($1)", [.int8(key)])
    }

    // MARK: libpq plumbing

    private func withParameters<T>(
        _ parameters: [PostgresValue],
        _ body: (
            Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) throws -> T
    ) throws -> T {
        precondition(parameters.count <= Self.parametersMax, "too many parameters")
        let types = parameters.map { Oid($0.type?.rawValue ?? 0) }
        let binaries = parameters.map { $0.binary }
        let lengths = binaries.map { Int32($0.count) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        // Each value is copied into memory that lives until the call returns; a NULL is a null pointer.
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        defer { buffers.forEach { $0?.deallocate() } }
        for (value, binary) in zip(parameters, binaries) {
            if value.isNull {
                buffers.append(nil)
                continue
            }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(binary.count, 1))
            binary.withUnsafeBytes { raw in
                if let base = raw.baseAddress {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: raw.count)
                }
            }
            buffers.append(buffer)
        }
        let pointers = buffers.map { UnsafePointer($0) }
        return try types.withUnsafeBufferPointer { types in
            try pointers.withUnsafeBufferPointer { values in
                try lengths.withUnsafeBufferPointer { lengths in
                    try formats.withUnsafeBufferPointer { formats in
                        try body(
                            Int32(parameters.count), types.baseAddress, values.baseAddress, lengths.baseAddress,
                            formats.baseAddress)
                    }
                }
            }
        }
    }

    /// Throws the result's error, if it is one.
    private func check(_ result: OpaquePointer?, _ what: String) throws {
        guard let result else {
            throw PostgresError(.connectionFailed, "no result from PostgreSQL: \(Self.text(PQerrorMessage(handle)))")
        }
        let status = PQresultStatus(result)
        guard status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK else { return }
        let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let message = Self.text(PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        if PQstatus(handle) != CONNECTION_OK {
            throw PostgresError(.connectionFailed, sqlState: sqlState, "the connection to PostgreSQL broke: \(message)")
        }
        let retryable = sqlState == Self.serializationFailureState || sqlState == Self.deadlockState
        throw PostgresError(retryable ? .retryableConflict : .statementFailed, sqlState: sqlState, message)
    }

    private static let serializationFailureState = PostgresError.serializationFailure
    private static let deadlockState = PostgresError.deadlockDetected

    /// Copies a result out of libpq, decoding each binary value by its column's type.
    private func read(_ result: OpaquePointer?, _ what: String) throws -> PostgresResult {
        try check(result, what)
        guard let result else { preconditionFailure("check returned for a missing result") }
        let columnCount = PQnfields(result), rowCount = PQntuples(result)
        let columns = (0..<columnCount).map { Self.text(PQfname(result, $0)) }
        let typeOIDs = (0..<columnCount).map { UInt32(PQftype(result, $0)) }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgresValue] = []
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                let bytes: [UInt8] =
                    PQgetvalue(result, row, column).map { pointer in
                        pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                            Array(UnsafeBufferPointer(start: $0, count: length))
                        }
                    } ?? []
                values.append(try PostgresValue.decode(typeOID: typeOIDs[Int(column)], bytes: bytes))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        return PostgresResult(columns: columns, rows: rows, affectedRows: affected)
    }

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }

    private static func withCStrings<T>(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T
    ) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
