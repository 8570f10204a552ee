import Foundation

/// Just enough DER for ECDSA signatures: definite lengths, strict minimal encodings.
struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// Reads one element with the given tag and returns its contents, or nil when malformed.
    mutating func read(tag: UInt8) -> [UInt8]? {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { return nil }
        var length = Int(bytes[offset + 1])
        var cursor = offset + 2
        if length & 0x80 != 0 {
            // Long form: only one length byte is ever needed here, and it must be ≥ 0x80 to be minimal.
            guard length == 0x81, cursor < bytes.count, bytes[cursor] >= 0x80 else { return nil }
            length = Int(bytes[cursor])
            cursor += 1
        }
        guard cursor + length <= bytes.count else { return nil }
        offset = cursor + length
        return Array(bytes[cursor..<cursor + length])
    }

    /// A positive minimal DER INTEGER of at most 32 significant bytes, left-padded to 32.
    static func unsignedScalar(_ contents: [UInt8]) -> [UInt8]? {
        guard let first = contents.first, first & 0x80 == 0 else { return nil }
        if contents.count > 1 && first == 0 && contents[1] & 0x80 == 0 { return nil }
        let significant = Array(contents.drop { $0 == 0 })
        guard significant.count <= 32 else { return nil }
        return [UInt8](repeating: 0, count: 32 - significant.count) + significant
    }
}

/// Writes the DER that `DERReader` reads.
enum DERWriter {
    static func tagged(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        precondition(contents.count < 256)
        if contents.count < 0x80 { return [tag, UInt8(contents.count)] + contents }
        return [tag, 0x81, UInt8(contents.count)] + contents
    }

    /// A minimal positive INTEGER from a big-endian unsigned number.
    static func integer(_ value: [UInt8]) -> [UInt8] {
        var significant = Array(value.drop { $0 == 0 })
        if significant.isEmpty { significant = [0] }
        if significant[0] & 0x80 != 0 { significant.insert(0, at: 0) }
        return tagged(0x02, significant)
    }
}

/// PEM armour (RFC 7468) for one labelled block.
public enum PEM {
    /// Encodes DER as a PEM block with 64-column lines.
    public static func encode(_ der: [UInt8], label: String) -> String {
        let base64 = Base64.encode(der)
        var lines = ["-----BEGIN \(label)-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<end]))
            index = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Decodes the first block with the given label.
    public static func decode(_ text: String, label: String) throws -> [UInt8] {
        let begin = "-----BEGIN \(label)-----", end = "-----END \(label)-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex)
        else {
            throw CryptoError(.invalidEncoding, "no PEM block labelled \(label)")
        }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let der = Base64.decode(String(body)) else {
            throw CryptoError(.invalidEncoding, "the PEM block \(label) is not valid base64")
        }
        return der
    }
}

/// Standard base64 with padding.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes bytes.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value =
                (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8)
                | UInt32(chunk.count > 2 ? chunk[2] : 0)
            for position in 0..<4 {
                if position <= chunk.count {
                    output.append(alphabet[Int((value >> (18 - 6 * UInt32(position))) & 0x3f)])
                } else {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes strict padded base64; nil on any other character or bad padding.
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else { return nil }
        var lookup = [Int](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() { lookup[Int(character)] = index }
        var output: [UInt8] = []
        var index = 0
        while index < characters.count {
            let quad = characters[index..<index + 4]
            let padding = quad.reversed().prefix { $0 == UInt8(ascii: "=") }.count
            guard padding <= 2, index + 4 == characters.count || padding == 0 else { return nil }
            var value: UInt32 = 0
            for (position, character) in quad.enumerated() {
                let digit: Int
                if position >= 4 - padding { digit = 0 } else { digit = lookup[Int(character)] }
                guard digit >= 0 else { return nil }
                value = (value << 6) | UInt32(digit)
            }
            let decoded = [UInt8(value >> 16), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
            output.append(contentsOf: decoded.prefix(3 - padding))
            index += 4
        }
        return output
    }
}

/// Lower-case hexadecimal.
public enum Hex {
    /// Encodes bytes as lower-case hex.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes hex (either case); nil on odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
