import SecureCrypto

/// A cipher suite: the KEM of the contributions together with HKDF-SHA256, HMAC-SHA256 and AES-256-GCM.
public struct ChannelSuite: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The two-byte identifier on the wire.
    public let rawValue: UInt16

    /// Wraps a wire identifier.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// X-Wing (ML-KEM-768 + X25519), HKDF-SHA256, HMAC-SHA256, AES-256-GCM: the one suite of version 1.
    public static let xwingAES256GCM = ChannelSuite(rawValue: 0x0001)

    public var description: String {
        self == .xwingAES256GCM ? "X-Wing/HKDF-SHA256/AES-256-GCM" : String(format: "suite 0x%04x", rawValue)
    }
}

/// A KEM the handshake can run on: a SecureCrypto `KEM` with the suite it stands for. The shipped channel
/// uses X-Wing; tests may run the same state machines on another KEM.
public protocol ChannelKEM: KEM {
    /// The suite whose contributions carry this KEM's keys.
    static var suite: ChannelSuite { get }
}

extension XWing: ChannelKEM {
    /// X-Wing is suite 0x0001.
    public static var suite: ChannelSuite { .xwingAES256GCM }
}

/// The protocol version this build speaks.
public enum ChannelVersion {
    /// Version 1, the only one so far.
    public static let current: UInt8 = 1
}

/// One side's handshake contribution: version, suites in preference order, a fresh KEM public key for
/// the first suite, and 16 random bytes. Its encoding is what the commitment, the SAS and the key
/// derivation hash, so it is kept exactly as sent.
public struct Contribution: Equatable, Sendable {
    /// Bytes of randomness each side adds.
    public static let randomByteCount = 16

    /// The protocol version.
    public let version: UInt8
    /// Suites in preference order; the public key belongs to the first.
    public let suites: [ChannelSuite]
    /// The encoded KEM public key.
    public let publicKey: [UInt8]
    /// The side's own random bytes.
    public let random: [UInt8]

    /// Makes a contribution; the parts come from our own code, so wrong sizes are our bug.
    init(version: UInt8 = ChannelVersion.current, suites: [ChannelSuite], publicKey: [UInt8], random: [UInt8]) {
        precondition(!suites.isEmpty && suites.count <= ChannelLimits.suiteCountMax, "1 to 8 suites")
        precondition(!publicKey.isEmpty && publicKey.count <= ChannelLimits.publicKeyByteCountMax, "a bounded key")
        precondition(random.count == Self.randomByteCount, "16 random bytes")
        self.version = version
        self.suites = suites
        self.publicKey = publicKey
        self.random = random
    }

    /// version(1) ‖ suite count(1) ‖ suites(2 each) ‖ key length(2) ‖ key ‖ random(16).
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 4 + 2 * suites.count + publicKey.count + random.count)
        writer.write(version)
        writer.write(UInt8(suites.count))
        for suite in suites { writer.write(suite.rawValue) }
        writer.write(prefixed16: publicKey, max: ChannelLimits.publicKeyByteCountMax)
        writer.write(fixed: random, count: Self.randomByteCount)
        return writer.bytes
    }

    /// Decodes a whole contribution (no trailing bytes): nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> Contribution? {
        var reader = ByteReader(bytes)
        guard let contribution = try decode(&reader) else { return nil }
        guard reader.isAtEnd else {
            throw ChannelError(.malformed, "a contribution has \(reader.remainingCount) trailing bytes")
        }
        return contribution
    }

    static func decode(_ reader: inout ByteReader) throws -> Contribution? {
        guard let version = reader.readUInt8() else { return nil }
        guard version == ChannelVersion.current else {
            throw ChannelError(
                .unsupportedVersion,
                "the peer speaks channel version \(version); this wallet speaks version \(ChannelVersion.current)")
        }
        guard let suiteCount = reader.readUInt8() else { return nil }
        guard suiteCount >= 1, Int(suiteCount) <= ChannelLimits.suiteCountMax else {
            throw ChannelError(
                .malformed, "a contribution lists \(suiteCount) suites; 1 to \(ChannelLimits.suiteCountMax) are allowed"
            )
        }
        var suites: [ChannelSuite] = []
        for _ in 0..<suiteCount {
            guard let raw = reader.readUInt16() else { return nil }
            suites.append(ChannelSuite(rawValue: raw))
        }
        guard let keyCount = reader.readUInt16() else { return nil }
        guard keyCount >= 1, Int(keyCount) <= ChannelLimits.publicKeyByteCountMax else {
            throw ChannelError(
                .malformed,
                "a contribution's public key is \(keyCount) bytes; 1 to \(ChannelLimits.publicKeyByteCountMax) are allowed"
            )
        }
        guard let key = reader.readFixed(Int(keyCount)), let random = reader.readFixed(randomByteCount) else {
            return nil
        }
        return Contribution(version: version, suites: suites, publicKey: key, random: random)
    }
}

/// The kind byte that opens every frame body.
public enum MessageKind: UInt8, Sendable {
    /// Initiator → responder: the commitment.
    case commit = 0x01
    /// Responder → initiator: the responder's contribution.
    case hello = 0x02
    /// Initiator → responder: the initiator's contribution and its encapsulation to the responder.
    case reveal = 0x03
    /// Responder → initiator: the responder's encapsulation to the initiator.
    case response = 0x04
    /// Responder → initiator: the responder's key-confirmation MAC.
    case responderConfirm = 0x05
    /// Initiator → responder: the initiator's key-confirmation MAC.
    case initiatorConfirm = 0x06
    /// Either way, after the handshake: a sealed record.
    case record = 0x17
}

/// The six handshake messages, each with its exact wire encoding.
public enum HandshakeMessage: Equatable, Sendable {
    /// 0x01 ‖ version(1) ‖ SHA-256 commitment(32).
    case commit(version: UInt8, commitment: [UInt8])
    /// 0x02 ‖ contribution_R.
    case hello(Contribution)
    /// 0x03 ‖ contribution_I ‖ ciphertext length(2) ‖ ciphertext (encapsulated to the responder's key).
    case reveal(Contribution, ciphertext: [UInt8])
    /// 0x04 ‖ ciphertext length(2) ‖ ciphertext (encapsulated to the initiator's key).
    case response(ciphertext: [UInt8])
    /// 0x05 ‖ HMAC-SHA256(32).
    case responderConfirm(mac: [UInt8])
    /// 0x06 ‖ HMAC-SHA256(32).
    case initiatorConfirm(mac: [UInt8])

    /// Bytes in the commitment and in each MAC.
    public static let digestByteCount = 32

    /// The wire encoding.
    public var encoded: [UInt8] {
        switch self {
        case .commit(let version, let commitment):
            return [MessageKind.commit.rawValue, version] + commitment
        case .hello(let contribution):
            return [MessageKind.hello.rawValue] + contribution.encoded
        case .reveal(let contribution, let ciphertext):
            var writer = ByteWriter()
            writer.write(MessageKind.reveal.rawValue)
            writer.write(raw: contribution.encoded)
            writer.write(prefixed16: ciphertext, max: ChannelLimits.ciphertextByteCountMax)
            return writer.bytes
        case .response(let ciphertext):
            var writer = ByteWriter()
            writer.write(MessageKind.response.rawValue)
            writer.write(prefixed16: ciphertext, max: ChannelLimits.ciphertextByteCountMax)
            return writer.bytes
        case .responderConfirm(let mac):
            return [MessageKind.responderConfirm.rawValue] + mac
        case .initiatorConfirm(let mac):
            return [MessageKind.initiatorConfirm.rawValue] + mac
        }
    }

    /// Decodes one whole frame body. Returns nil when the bytes stop short of a complete message; throws
    /// on an unknown kind, a bad length, an unsupported version or trailing bytes. A record frame is not a
    /// handshake message and throws `.unexpectedMessage`.
    public static func decode(_ bytes: [UInt8]) throws -> HandshakeMessage? {
        var reader = ByteReader(bytes)
        guard let kindByte = reader.readUInt8() else { return nil }
        guard let kind = MessageKind(rawValue: kindByte) else {
            throw ChannelError(.malformed, String(format: "unknown message kind 0x%02x", kindByte))
        }
        let message: HandshakeMessage
        switch kind {
        case .commit:
            guard let version = reader.readUInt8() else { return nil }
            guard version == ChannelVersion.current else {
                throw ChannelError(
                    .unsupportedVersion,
                    "the initiator speaks channel version \(version); this wallet speaks version \(ChannelVersion.current)"
                )
            }
            guard let commitment = reader.readFixed(digestByteCount) else { return nil }
            message = .commit(version: version, commitment: commitment)
        case .hello:
            guard let contribution = try Contribution.decode(&reader) else { return nil }
            message = .hello(contribution)
        case .reveal:
            guard let contribution = try Contribution.decode(&reader) else { return nil }
            guard let ciphertext = try readCiphertext(&reader) else { return nil }
            message = .reveal(contribution, ciphertext: ciphertext)
        case .response:
            guard let ciphertext = try readCiphertext(&reader) else { return nil }
            message = .response(ciphertext: ciphertext)
        case .responderConfirm:
            guard let mac = reader.readFixed(digestByteCount) else { return nil }
            message = .responderConfirm(mac: mac)
        case .initiatorConfirm:
            guard let mac = reader.readFixed(digestByteCount) else { return nil }
            message = .initiatorConfirm(mac: mac)
        case .record:
            throw ChannelError(.unexpectedMessage, "a record arrived before the handshake finished")
        }
        guard reader.isAtEnd else {
            throw ChannelError(.malformed, "a handshake message has \(reader.remainingCount) trailing bytes")
        }
        return message
    }

    private static func readCiphertext(_ reader: inout ByteReader) throws -> [UInt8]? {
        guard let count = reader.readUInt16() else { return nil }
        guard count >= 1, Int(count) <= ChannelLimits.ciphertextByteCountMax else {
            throw ChannelError(
                .malformed, "a ciphertext of \(count) bytes; 1 to \(ChannelLimits.ciphertextByteCountMax) are allowed")
        }
        return reader.readFixed(Int(count))
    }

    /// A name for error messages.
    var name: String {
        switch self {
        case .commit: "commit"
        case .hello: "hello"
        case .reveal: "reveal"
        case .response: "response"
        case .responderConfirm: "responder confirmation"
        case .initiatorConfirm: "initiator confirmation"
        }
    }
}
