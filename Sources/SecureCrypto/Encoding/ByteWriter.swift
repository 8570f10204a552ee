/// Appends fixed-width big-endian integers and length-prefixed fields: the one writer behind every
/// encoding in the package (ledger entries, peer messages, channel handshakes and records, key files).
/// Writers are only handed values that were validated when they were made, so a field over its limit
/// here is our own bug and traps.
package struct ByteWriter {
    /// The bytes written so far.
    package private(set) var bytes: [UInt8] = []

    /// An empty writer with room for `capacity` bytes.
    package init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// One byte.
    package mutating func write(_ value: UInt8) { bytes.append(value) }

    /// Two bytes, big-endian.
    package mutating func write(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    /// Four bytes, big-endian.
    package mutating func write(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }

    /// Eight bytes, big-endian.
    package mutating func write(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// Two's complement, big-endian.
    package mutating func write(_ value: Int64) { write(UInt64(bitPattern: value)) }

    /// Raw bytes whose length the format fixes.
    package mutating func write(fixed field: [UInt8], count: Int) {
        precondition(field.count == count, "fixed-width field has \(field.count) bytes, expected \(count)")
        bytes.append(contentsOf: field)
    }

    /// Raw bytes whose length the reader knows from elsewhere: a field that runs to the end of the record,
    /// or one whose length an earlier field gave.
    package mutating func write(raw field: [UInt8]) { bytes.append(contentsOf: field) }

    /// One length byte, then the field.
    package mutating func write(prefixed8 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt8.max), "field over its limit")
        write(UInt8(field.count))
        bytes.append(contentsOf: field)
    }

    /// Two length bytes, then the field.
    package mutating func write(prefixed16 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt16.max), "field over its limit")
        write(UInt16(field.count))
        bytes.append(contentsOf: field)
    }

    /// Four length bytes, then the field.
    package mutating func write(prefixed32 field: [UInt8], max: Int) {
        precondition(field.count <= max && max <= Int(UInt32.max), "field over its limit")
        write(UInt32(field.count))
        bytes.append(contentsOf: field)
    }
}
