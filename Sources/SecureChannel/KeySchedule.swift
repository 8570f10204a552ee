import SecureCrypto

/// The channel's hash and key-derivation inputs, each under its own label. docs/PROTOCOL.md
/// ("Secure channel") lists every byte.
enum KeySchedule {
    static let commitLabel = DomainLabel.bytes("secure-channel-commit-v1")
    static let transcriptLabel = DomainLabel.bytes("secure-channel-transcript-v1")
    static let keysLabel = DomainLabel.bytes("secure-channel-keys-v1")
    static let confirmLabel = DomainLabel.bytes("secure-channel-confirm-v1")
    /// The SAS label is "secure-sas-v2" with no zero byte: SAS = SHA-256(label ‖ commitment ‖
    /// contribution_I ‖ contribution_R), exactly. v2 (issue 16) changed the label with the word rule and the
    /// word list; both sides compute the SAS, so there is nothing to negotiate.
    static let sasLabel = Array("secure-sas-v2".utf8)

    /// Bytes HKDF produces: two record keys, two confirmation keys, the session id and the binding.
    static let outputByteCount = 4 * 32 + sessionIdByteCount + channelBindingByteCount
    /// Bytes in a session id.
    static let sessionIdByteCount = 16
    /// Bytes in the channel binding value.
    static let channelBindingByteCount = 32

    /// SHA-256("secure-channel-commit-v1" ‖ 0x00 ‖ contribution_I). The contribution holds a fresh key and
    /// 16 random bytes, so the commitment hides it; SHA-256's collision resistance binds it.
    static func commitment(to contribution: [UInt8]) -> [UInt8] {
        SHA256.hash(parts: [commitLabel, contribution])
    }

    /// SHA-256("secure-channel-transcript-v1" ‖ 0x00 ‖ for each message: length(4, big-endian) ‖ message),
    /// over commit, hello, reveal and response as they crossed the wire.
    static func transcriptHash(_ messages: [[UInt8]]) -> [UInt8] {
        var hasher = SHA256.Hasher()
        hasher.update(transcriptLabel)
        for message in messages {
            var length = ByteWriter(capacity: 4)
            length.write(UInt32(message.count))
            hasher.update(length.bytes)
            hasher.update(message)
        }
        return hasher.finalize()
    }

    /// SHA-256("secure-sas-v2" ‖ commitment ‖ contribution_I ‖ contribution_R).
    static func shortAuthenticationString(commitment: [UInt8], initiator: [UInt8], responder: [UInt8])
        -> ShortAuthenticationString
    {
        ShortAuthenticationString(SHA256.hash(parts: [sasLabel, commitment, initiator, responder]))
    }

    /// The secrets HKDF derives.
    struct Derived {
        let initiatorRecordKey: SecretBytes
        let responderRecordKey: SecretBytes
        let initiatorConfirmKey: SecretBytes
        let responderConfirmKey: SecretBytes
        let sessionId: [UInt8]
        let channelBinding: [UInt8]
    }

    /// HKDF-SHA256 with IKM = ss_I ‖ ss_R (the secret the initiator encapsulated, then the responder's),
    /// salt = the transcript hash, info = label ‖ SHA-256(contribution_I) ‖ SHA-256(contribution_R).
    static func derive(
        initiatorSecret: SecretBytes, responderSecret: SecretBytes, transcriptHash: [UInt8],
        initiatorContribution: [UInt8], responderContribution: [UInt8]
    ) -> Derived {
        var inputKeyMaterial = initiatorSecret.copyBytes() + responderSecret.copyBytes()
        let secret = SecretBytes(inputKeyMaterial)
        wipe(&inputKeyMaterial)
        let info = keysLabel + SHA256.hash(initiatorContribution) + SHA256.hash(responderContribution)
        // The output length is a constant inside HKDF's range, so this cannot throw.
        var output = try! HKDFSHA256.deriveKey(
            inputKeyMaterial: secret, salt: transcriptHash, info: info,
            outputByteCount: outputByteCount)
        defer { wipe(&output) }
        return Derived(
            initiatorRecordKey: SecretBytes(Array(output[0..<32])),
            responderRecordKey: SecretBytes(Array(output[32..<64])),
            initiatorConfirmKey: SecretBytes(Array(output[64..<96])),
            responderConfirmKey: SecretBytes(Array(output[96..<128])),
            sessionId: Array(output[128..<144]),
            channelBinding: Array(output[144..<176]))
    }

    /// HMAC-SHA256(confirm key, "secure-channel-confirm-v1" ‖ 0x00 ‖ role ‖ transcript hash), role being
    /// 0x49 ('I') or 0x52 ('R').
    static func confirmation(key: SecretBytes, role: ChannelRole, transcriptHash: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: key, message: confirmLabel + [role.byte] + transcriptHash)
    }

    /// Overwrites an array's bytes before it is released.
    static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }
}

/// Which end of the handshake a side is.
public enum ChannelRole: Sendable, Equatable {
    /// Sends the commitment first.
    case initiator
    /// Answers it.
    case responder

    var byte: UInt8 { self == .initiator ? 0x49 : 0x52 }
}

/// The short authentication string both people compare: SHA-256("secure-sas-v2" ‖ commitment ‖
/// contribution_I ‖ contribution_R), shown as six digits and as three words.
public struct ShortAuthenticationString: Equatable, Sendable, CustomStringConvertible {
    /// The full 32-byte hash.
    public let value: [UInt8]

    init(_ value: [UInt8]) {
        precondition(value.count == 32, "a SHA-256 output")
        self.value = value
    }

    /// The first 32 bits (big-endian) mod 10⁶, zero-padded to six digits: about 20 bits. The value is
    /// public (both people read it aloud), so the division's timing does not matter.
    public var digits: String {
        let number = UInt32(value[0]) << 24 | UInt32(value[1]) << 16 | UInt32(value[2]) << 8 | UInt32(value[3])
        let text = String(number % 1_000_000)
        return String(repeating: "0", count: 6 - text.count) + text
    }

    /// Three distinct words from `SASWords.list` (secure-sas-v2): the hash's bytes in order, each byte's word
    /// unless it is already chosen, until there are three. If the 32 bytes held fewer than three distinct
    /// values (a SHA-256 output essentially never does), the lowest-indexed words not yet chosen complete it.
    public var words: [String] { Self.wordIndices(value).map { SASWords.list[$0] } }

    /// The indices `words` picks from `bytes`, in order.
    static func wordIndices(_ bytes: [UInt8]) -> [Int] {
        var chosen: [Int] = []
        for byte in bytes where chosen.count < 3 && !chosen.contains(Int(byte)) {
            chosen.append(Int(byte))
        }
        var next = 0
        while chosen.count < 3 {
            if !chosen.contains(next) { chosen.append(next) }
            next += 1
        }
        return chosen
    }

    public var description: String { "\(digits) (\(words.joined(separator: " ")))" }
}
