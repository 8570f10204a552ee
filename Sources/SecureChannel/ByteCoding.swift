/// Reads big-endian fields from bytes that came from outside. Every read returns nil when the input is
/// too short, so decoders can tell "not enough bytes yet" from "these bytes are wrong"; nothing traps.
struct ByteReader {
    private let bytes: [UInt8]
    /// The index of the next unread byte.
    private(set) var offset: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
    }

    /// Bytes not yet read.
    var remainingCount: Int { bytes.count - offset }

    /// Whether every byte has been read.
    var isAtEnd: Bool { offset == bytes.count }

    mutating func readByte() -> UInt8? {
        guard remainingCount >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() -> UInt16? {
        guard let high = readByte(), let low = readByte() else { return nil }
        return UInt16(high) << 8 | UInt16(low)
    }

    mutating func readUInt64() -> UInt64? {
        guard remainingCount >= 8 else { return nil }
        var value: UInt64 = 0
        for index in offset..<(offset + 8) { value = value << 8 | UInt64(bytes[index]) }
        offset += 8
        return value
    }

    mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, remainingCount >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// All remaining bytes.
    mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// The bytes read so far, for messages whose encoding is hashed as it was received.
    var consumed: [UInt8] { Array(bytes[0..<offset]) }
}

extension Array where Element == UInt8 {
    mutating func appendUInt16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendUInt32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func appendUInt64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// ASCII bytes of a label followed by a zero byte, so no label is a prefix of another's input.
func labelBytes(_ label: String) -> [UInt8] { Array(label.utf8) + [0] }
