/// An error in bytes that came from outside: a stored row, a file or a peer. Equality is by code, so
/// tests and callers match on the kind of failure; the sentence says which field was wrong.
public struct FormatError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Stable codes for the kinds of malformed input.
    public enum Code: String, Sendable {
        /// The version byte names a format this build does not know.
        case unsupportedVersion = "unsupported-version"
        /// A length prefix exceeds the field's named limit.
        case fieldTooLong = "field-too-long"
        /// A field holds a value the format forbids (an unknown kind, a flag bit, a non-UTF-8 note…).
        case invalidValue = "invalid-value"
        /// Bytes remain after a complete record.
        case trailingBytes = "trailing-bytes"
        /// Records that must be in a canonical order are not.
        case notCanonical = "not-canonical"
    }

    /// What kind of failure this is.
    public let code: Code
    /// A sentence for a person.
    public let detail: String

    /// Makes an error with a code and a sentence.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }

    public static func == (lhs: FormatError, rhs: FormatError) -> Bool { lhs.code == rhs.code }
}

/// Appends fixed-width big-endian integers and length-prefixed fields. Writers are only handed values
/// that were validated when they were made, so a field over its limit here is our own bug and traps.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func write(_ value: UInt8) { bytes.append(value) }

    mutating func write(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func write(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    mutating func write(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// Two's complement, big-endian.
    mutating func write(_ value: Int64) { write(UInt64(bitPattern: value)) }

    /// Raw bytes whose length the format fixes.
    mutating func write(fixed field: [UInt8], count: Int) {
        precondition(field.count == count, "fixed-width field has \(field.count) bytes, expected \(count)")
        bytes.append(contentsOf: field)
    }

    /// One length byte, then the field.
    mutating func write(prefixed8 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt8.max), "field over its limit")
        write(UInt8(field.count))
        bytes.append(contentsOf: field)
    }

    /// Two length bytes, then the field.
    mutating func write(prefixed16 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt16.max), "field over its limit")
        write(UInt16(field.count))
        bytes.append(contentsOf: field)
    }

    /// Four length bytes, then the field.
    mutating func write(prefixed32 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt32.max), "field over its limit")
        write(UInt32(field.count))
        bytes.append(contentsOf: field)
    }
}

/// Reads what `ByteWriter` writes. Every read returns nil when the input ends early and throws when a
/// length prefix exceeds its limit; nothing here traps on outside bytes.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    var remainingCount: Int { bytes.count - offset }

    mutating func readUInt8() -> UInt8? {
        guard remainingCount >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() -> UInt16? {
        guard let raw = readFixed(2) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func readUInt32() -> UInt32? {
        guard let raw = readFixed(4) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func readUInt64() -> UInt64? {
        guard let raw = readFixed(8) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func readInt64() -> Int64? { readUInt64().map { Int64(bitPattern: $0) } }

    mutating func readFixed(_ count: Int) -> [UInt8]? {
        guard count >= 0, remainingCount >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readPrefixed8(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt8() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    mutating func readPrefixed16(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt16() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    mutating func readPrefixed32(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt32() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    private mutating func readBody(_ length: Int, max: Int, field: String) throws -> [UInt8]? {
        guard length <= max else {
            throw FormatError(.fieldTooLong, "the \(field) is \(length) bytes long; at most \(max) are allowed")
        }
        return readFixed(length)
    }

    /// Throws unless every byte has been read: a canonical encoding has exactly one length.
    func expectEnd(_ record: String) throws {
        guard isAtEnd else {
            throw FormatError(.trailingBytes, "\(remainingCount) bytes follow the end of the \(record)")
        }
    }
}
