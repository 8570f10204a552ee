import Foundation
import Testing

@testable import SecureToken

/// The names printed for PKCS#11 return values are the header's: each (value, name) pair of the table is
/// checked against p11-kit's pkcs11.h as text, so a name string that does not match its constant fails.
@Suite("PKCS#11 return value names")
struct ReturnValueTests {
    static let header = "/usr/include/p11-kit-1/p11-kit/pkcs11.h"

    /// `#define CKR_NAME (0x…UL)` lines of the header, by name.
    static func headerReturnValues() throws -> [String: UInt] {
        let text = try String(contentsOfFile: header, encoding: .utf8)
        var values: [String: UInt] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count == 3, words[0] == "#define", words[1].hasPrefix("CKR_") else { continue }
            var number = words[2].trimmingCharacters(in: CharacterSet(charactersIn: "()"))
            guard number.hasSuffix("UL") else { continue }
            number.removeLast(2)
            let value = number.hasPrefix("0x") ? UInt(number.dropFirst(2), radix: 16) : UInt(number)
            if let value { values[String(words[1])] = value }
        }
        return values
    }

    @Test func returnValueNamesMatchTheHeader() throws {
        let header = try Self.headerReturnValues()
        #expect(header.count > 80, "the header was read: \(header.count) CKR_ values")
        #expect(ReturnValue.entries.count > 60)
        for entry in ReturnValue.entries {
            let hex = String(entry.value, radix: 16)
            #expect(header[entry.name] == entry.value, "\(entry.name) is 0x\(hex) in the table")
            #expect(ReturnValue.name(entry.value) == entry.name)
            #expect(!entry.sentence.isEmpty)
        }
        #expect(ReturnValue.name(0x8000_0001) == "CKR_VENDOR_DEFINED+0x1")
        #expect(ReturnValue.name(0x7777) == "CKR_0x7777")
        #expect(ReturnValue.code(try #require(header["CKR_PIN_INCORRECT"])) == .pinIncorrect)
        #expect(ReturnValue.code(try #require(header["CKR_DEVICE_REMOVED"])) == .tokenRemoved)
    }
}
