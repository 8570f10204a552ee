/// Reads what `ByteWriter` writes, from bytes that came from outside. Every read returns nil when the
/// input ends early, so decoders can tell "not enough bytes yet" from "these bytes are wrong", and throws
/// when a length prefix exceeds its limit or a version byte is unknown; nothing here traps on outside bytes.
package struct ByteReader {
    private let bytes: [UInt8]
    /// The index of the next unread byte.
    package private(set) var offset = 0

    /// A reader at the start of `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte has been read.
    package var isAtEnd: Bool { offset == bytes.count }
    /// Bytes not yet read.
    package var remainingCount: Int { bytes.count - offset }
    /// The bytes read so far, for messages whose encoding is hashed as it was received.
    package var consumed: [UInt8] { Array(bytes[0..<offset]) }

    /// One byte.
    package mutating func readUInt8() -> UInt8? {
        guard remainingCount >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Two bytes, big-endian.
    package mutating func readUInt16() -> UInt16? {
        guard let raw = readFixed(2) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt16($1) }
    }

    /// Four bytes, big-endian.
    package mutating func readUInt32() -> UInt32? {
        guard let raw = readFixed(4) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Eight bytes, big-endian.
    package mutating func readUInt64() -> UInt64? {
        guard let raw = readFixed(8) else { return nil }
        return raw.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Eight bytes, big-endian two's complement.
    package mutating func readInt64() -> Int64? { readUInt64().map { Int64(bitPattern: $0) } }

    /// `count` raw bytes.
    package mutating func readFixed(_ count: Int) -> [UInt8]? {
        guard count >= 0, remainingCount >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// All remaining bytes, for a field that runs to the end of the record.
    package mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// One length byte, then the field; throws when the length is over `max`.
    package mutating func readPrefixed8(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt8() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    /// Two length bytes, then the field; throws when the length is over `max`.
    package mutating func readPrefixed16(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt16() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    /// Four length bytes, then the field; throws when the length is over `max`.
    package mutating func readPrefixed32(max: Int, field: String) throws -> [UInt8]? {
        guard let length = readUInt32() else { return nil }
        return try readBody(Int(length), max: max, field: field)
    }

    private mutating func readBody(_ length: Int, max: Int, field: String) throws -> [UInt8]? {
        guard length <= max else {
            throw FormatError(.fieldTooLong, "the \(field) is \(length) bytes long; at most \(max) are allowed")
        }
        return readFixed(length)
    }

    /// Reads a record's leading version byte: false when the input is empty, and throws
    /// `unsupportedVersion` when the byte is not `expected`, the one version this build reads.
    package mutating func readVersion(_ expected: UInt8, of record: String) throws -> Bool {
        guard let version = readUInt8() else { return false }
        guard version == expected else {
            throw FormatError(
                .unsupportedVersion, "\(record) version \(version) is not supported (expected \(expected))")
        }
        return true
    }

    /// Throws unless every byte has been read: a canonical encoding has exactly one length.
    package func expectEnd(_ record: String) throws {
        guard isAtEnd else {
            throw FormatError(.trailingBytes, "\(remainingCount) bytes follow the end of the \(record)")
        }
    }
}
