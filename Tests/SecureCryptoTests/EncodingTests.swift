import SecureCrypto
import Testing

@Suite("The shared codec")
struct EncodingTests {
    @Test("every writer call is read back, big-endian, and the reader ends exactly")
    func roundTrip() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0xab))
        writer.write(UInt16(0x0102))
        writer.write(UInt32(0x0304_0506))
        writer.write(UInt64(0x0708_090a_0b0c_0d0e))
        writer.write(Int64(-2))
        writer.write(fixed: [1, 2, 3], count: 3)
        writer.write(prefixed8: [4], max: 1)
        writer.write(prefixed16: [5, 6], max: 2)
        writer.write(prefixed32: [], max: 0)
        writer.write(raw: [9])
        #expect(
            writer.bytes == [0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
                + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe] + [1, 2, 3] + [1, 4] + [0, 2, 5, 6] + [0, 0, 0, 0]
                + [9])

        var reader = ByteReader(writer.bytes)
        #expect(reader.readUInt8() == 0xab)
        #expect(reader.readUInt16() == 0x0102)
        #expect(reader.readUInt32() == 0x0304_0506)
        #expect(reader.readUInt64() == 0x0708_090a_0b0c_0d0e)
        #expect(reader.readInt64() == -2)
        #expect(reader.readFixed(3) == [1, 2, 3])
        #expect(try reader.readPrefixed8(max: 1, field: "a") == [4])
        #expect(try reader.readPrefixed16(max: 2, field: "b") == [5, 6])
        #expect(try reader.readPrefixed32(max: 0, field: "c") == [])
        #expect(reader.consumed == Array(writer.bytes.dropLast()))
        #expect(reader.readRest() == [9])
        #expect(reader.isAtEnd)
        try reader.expectEnd("record")
    }

    @Test("short input reads nil, an over-long prefix and trailing bytes throw")
    func refusals() throws {
        var short = ByteReader([0, 5, 1])
        #expect(short.readUInt32() == nil)
        var prefixed = ByteReader([0, 5, 1])
        #expect(try prefixed.readPrefixed16(max: 5, field: "note") == nil, "5 bytes promised, 1 there")
        var tooLong = ByteReader([0, 6, 1])
        #expect(throws: FormatError(.fieldTooLong, "")) { try tooLong.readPrefixed16(max: 5, field: "note") }
        let trailing = ByteReader([1])
        #expect(throws: FormatError(.trailingBytes, "")) { try trailing.expectEnd("record") }
    }

    @Test("the version byte: nil when absent, accepted when known, refused otherwise")
    func version() throws {
        var empty = ByteReader([])
        #expect(try empty.readVersion(1, of: "record") == false)
        var known = ByteReader([1, 7])
        #expect(try known.readVersion(1, of: "record"))
        #expect(known.readUInt8() == 7)
        var unknown = ByteReader([2])
        #expect(throws: FormatError(.unsupportedVersion, "")) { try unknown.readVersion(1, of: "record") }
    }

    @Test("a label is its ASCII bytes and one zero byte, as SignatureLabel hashes it")
    func label() throws {
        #expect(DomainLabel.bytes("ab") == [0x61, 0x62, 0])
        let payload: [UInt8] = [1, 2, 3]
        #expect(SignatureLabel.file.digest(of: payload) == SHA256.hash(Array("secure-file-v1".utf8) + [0] + payload))
    }

    @Test("format errors are equal by code, print their sentence and exit 1")
    func formatError() {
        let error = FormatError(.invalidValue, "the kind byte 9 is unknown")
        #expect(error == FormatError(.invalidValue, "another sentence"))
        #expect(error != FormatError(.trailingBytes, "the kind byte 9 is unknown"))
        #expect(error.description == "the kind byte 9 is unknown")
        #expect(error.codeName == "invalid-value")
        #expect(error.kind == .failure)
    }
}
