/// A PKCS#11 URI (RFC 7512) naming a module, a token and optionally an object. Slot ids are parsed
/// but never used to pick a token on their own, because they change between runs.
public struct PKCS11URI: Hashable, Sendable, CustomStringConvertible {
    /// Object types of the `type` attribute.
    public enum ObjectType: String, Sendable, CaseIterable {
        case publicKey = "public", privateKey = "private", certificate = "cert", secretKey = "secret-key", data
    }

    /// Path attributes, by the RFC's names.
    public var token: String?
    public var manufacturer: String?
    public var model: String?
    public var serial: String?
    public var object: String?
    public var id: [UInt8]?
    public var type: ObjectType?
    public var libraryManufacturer: String?
    public var libraryDescription: String?
    public var slotDescription: String?
    public var slotManufacturer: String?
    public var slotID: UInt?
    /// Query attributes.
    public var moduleName: String?
    public var modulePath: String?
    public var pinSource: String?
    public var pinValue: String?

    /// An empty URI, `pkcs11:`, which matches every token.
    public init() {}

    /// The longest URI accepted; a real one is a few hundred bytes.
    static let textByteCountMax = 4096

    private static let pathKeys = [
        "token", "manufacturer", "model", "serial", "object", "id", "type",
        "library-manufacturer", "library-description", "library-version",
        "slot-description", "slot-manufacturer", "slot-id",
    ]
    private static let queryKeys = ["module-name", "module-path", "pin-source", "pin-value"]

    /// Parses a URI. The error names the part that is wrong.
    public init(_ text: String) throws {
        guard text.utf8.count <= Self.textByteCountMax else {
            throw Self.invalid("is longer than \(Self.textByteCountMax) bytes")
        }
        guard text.hasPrefix("pkcs11:") else { throw Self.invalid("must start with \"pkcs11:\"") }
        let rest = text.dropFirst("pkcs11:".count)
        let pieces = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathPart = pieces[0], queryPart = pieces.count > 1 ? pieces[1] : nil
        var seen = Set<String>()
        if !pathPart.isEmpty {
            for attribute in pathPart.split(separator: ";", omittingEmptySubsequences: false) {
                let (key, value) = try Self.split(attribute, part: "path", allowed: Self.pathRaw)
                guard seen.insert(key).inserted else { throw Self.invalid("repeats the attribute \"\(key)\"") }
                try assignPath(key, value)
            }
        }
        if let queryPart {
            guard !queryPart.isEmpty else { throw Self.invalid("has an empty query after \"?\"") }
            for attribute in queryPart.split(separator: "&", omittingEmptySubsequences: false) {
                let (key, value) = try Self.split(attribute, part: "query", allowed: Self.queryRaw)
                guard seen.insert(key).inserted else { throw Self.invalid("repeats the attribute \"\(key)\"") }
                try assignQuery(key, value)
            }
        }
        if moduleName != nil && modulePath != nil {
            throw Self.invalid("names both module-name and module-path; give one")
        }
    }

    private mutating func assignPath(_ key: String, _ value: [UInt8]) throws {
        switch key {
        case "id": id = value
        case "type":
            guard let parsed = ObjectType(rawValue: try Self.text(value, key)) else {
                throw Self.invalid(
                    "has type=\(String(decoding: value, as: UTF8.self)); expected one of "
                        + ObjectType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            type = parsed
        case "slot-id":
            guard let number = UInt(try Self.text(value, key)) else {
                throw Self.invalid("has a slot-id that is not a number")
            }
            slotID = number
        case "token": token = try Self.text(value, key)
        case "manufacturer": manufacturer = try Self.text(value, key)
        case "model": model = try Self.text(value, key)
        case "serial": serial = try Self.text(value, key)
        case "object": object = try Self.text(value, key)
        case "library-manufacturer": libraryManufacturer = try Self.text(value, key)
        case "library-description": libraryDescription = try Self.text(value, key)
        case "slot-description": slotDescription = try Self.text(value, key)
        case "slot-manufacturer": slotManufacturer = try Self.text(value, key)
        case "library-version": break // accepted and ignored: a version does not select a token here
        default:
            // RFC 7512 reserves x- names for vendor extensions; anything else is a typo worth naming.
            guard key.hasPrefix("x-") else {
                throw Self.invalid(
                    "has an unknown path attribute \"\(key)\"; known: " + Self.pathKeys.joined(separator: ", "))
            }
        }
    }

    private mutating func assignQuery(_ key: String, _ value: [UInt8]) throws {
        switch key {
        case "module-name": moduleName = try Self.text(value, key)
        case "module-path": modulePath = try Self.text(value, key)
        case "pin-source": pinSource = try Self.text(value, key)
        case "pin-value": pinValue = try Self.text(value, key)
        default:
            guard key.hasPrefix("x-") else {
                throw Self.invalid(
                    "has an unknown query attribute \"\(key)\"; known: " + Self.queryKeys.joined(separator: ", "))
            }
        }
    }

    /// The URI in canonical form: attributes in a fixed order, percent-encoding where needed.
    public var description: String {
        /// A text value, percent-encoded but for the `allowed` bytes.
        func encoded(_ value: String?, _ allowed: Set<UInt8> = Self.pathRaw) -> String? {
            value.map { Self.encode(Array($0.utf8), allowed: allowed) }
        }
        /// "key=value" for each attribute that is there.
        func joined(_ attributes: [(String, String?)], separator: String) -> String {
            attributes.compactMap { key, value in value.map { key + "=" + $0 } }.joined(separator: separator)
        }
        let path = joined(
            [
                ("token", encoded(token)), ("manufacturer", encoded(manufacturer)), ("model", encoded(model)),
                ("serial", encoded(serial)), ("library-manufacturer", encoded(libraryManufacturer)),
                ("library-description", encoded(libraryDescription)),
                ("slot-description", encoded(slotDescription)),
                ("slot-manufacturer", encoded(slotManufacturer)), ("slot-id", slotID.map { "\($0)" }),
                ("object", encoded(object)), ("id", id.map { Self.encode($0, allowed: []) }),
                ("type", encoded(type?.rawValue)),
            ], separator: ";")
        let query = joined(
            [
                ("module-name", encoded(moduleName, Self.queryRaw)),
                ("module-path", encoded(modulePath, Self.queryRaw)),
                ("pin-source", encoded(pinSource, Self.queryRaw)),
                ("pin-value", encoded(pinValue, Self.queryRaw)),
            ], separator: "&")
        return "pkcs11:" + path + (query.isEmpty ? "" : "?" + query)
    }

    /// The same URI without its PIN attributes, for printing and recording.
    public var withoutPIN: PKCS11URI {
        var copy = self
        copy.pinSource = nil
        copy.pinValue = nil
        return copy
    }

    /// The same URI without object attributes: it names only the token.
    public var tokenOnly: PKCS11URI {
        var copy = self
        copy.object = nil
        copy.id = nil
        copy.type = nil
        return copy
    }

    // RFC 7512 section 2.3: characters allowed unencoded besides `unreserved`, in the path and the query.
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    private static let pathRaw = unreserved.union(":[]@!$'()*+,=&".utf8)
    private static let queryRaw = unreserved.union(":[]@!$'()*+,=/?|;".utf8)

    private static func split(_ attribute: Substring, part: String, allowed: Set<UInt8>) throws -> (String, [UInt8]) {
        guard let equals = attribute.firstIndex(of: "=") else {
            throw invalid("has a \(part) attribute \"\(attribute)\" without \"=\"")
        }
        let key = String(attribute[..<equals])
        guard !key.isEmpty, key.utf8.allSatisfy({ unreserved.contains($0) }) else {
            throw invalid("has a \(part) attribute with an empty or malformed name \"\(key)\"")
        }
        let value = try decode(attribute[attribute.index(after: equals)...], key: key, allowed: allowed)
        return (key, value)
    }

    private static func decode(_ value: Substring, key: String, allowed: Set<UInt8>) throws -> [UInt8] {
        let bytes = Array(value.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count,
                    let decoded = percentByte(bytes[index + 1], bytes[index + 2])
                else {
                    throw invalid("has a bad percent-escape in \"\(key)\"")
                }
                output.append(decoded)
                index += 3
            } else {
                guard allowed.contains(byte) else {
                    throw invalid(
                        "has the character \"\(String(decoding: [byte], as: UTF8.self))\" in \"\(key)\"; percent-encode it"
                    )
                }
                output.append(byte)
                index += 1
            }
        }
        return output
    }

    private static func encode(_ bytes: [UInt8], allowed: Set<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            if allowed.contains(byte) {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func text(_ value: [UInt8], _ key: String) throws -> String {
        guard let string = String(validating: value, as: UTF8.self) else {
            throw invalid("has a value of \"\(key)\" that is not UTF-8")
        }
        return string
    }

    private static func invalid(_ what: String) -> TokenError {
        TokenError(.invalidURI, "the PKCS#11 URI " + what)
    }
}

/// The byte of a percent-escape's two hex digits, or nil.
private func percentByte(_ high: UInt8, _ low: UInt8) -> UInt8? {
    func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    guard let high = nibble(high), let low = nibble(low) else { return nil }
    return high << 4 | low
}
