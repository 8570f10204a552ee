import SecureCrypto

/// What a wallet's DNS-SD announcement carries (docs/PROTOCOL.md, "Discovery"): no wallet identity at all.
/// The instance name and the SRV host name are random per session; the TXT record holds only the version,
/// a fresh nonce N and, once a wallet has contacts, a tag `HMAC-SHA256(K, "secure-discovery-tag-v1" ‖ N)`
/// cut to 16 bytes, by which a contact holding K recognises it and no one else can.
public struct DiscoveryRecord: Equatable, Sendable {
    /// The DNS-SD service type wallets announce to be paid.
    public static let payServiceType = "_secure-pay._tcp"
    /// The TXT version this build writes and reads; another version is not a wallet this build can pay.
    public static let version = "1"
    /// 16 bytes of nonce: fresh per announcement, so tags never repeat across sessions.
    public static let nonceByteCount = 16
    /// 16 bytes of tag: 128 bits, so a guessed tag matches with probability 2^-128.
    public static let tagByteCount = 16
    /// The TXT record's keys and values are short ASCII; anything longer is not ours.
    public static let txtValueByteCountMax = 64
    /// The domain-separation label of the tag's MAC.
    static let tagLabel = Array("secure-discovery-tag-v1".utf8)

    /// The announcement's nonce.
    public let nonce: [UInt8]
    /// The tag under the announcer's discovery key, when it has one.
    public let tag: [UInt8]?

    /// A fresh record: a new random nonce, and the tag under `key` when given.
    public static func fresh(discoveryKey key: SecretBytes? = nil) -> DiscoveryRecord {
        let nonce = SystemRandom.bytes(nonceByteCount)
        return DiscoveryRecord(nonce: nonce, tag: key.map { tag(key: $0, nonce: nonce) })
    }

    /// A record from its parts (tests and `fresh`).
    public init(nonce: [UInt8], tag: [UInt8]?) {
        precondition(nonce.count == Self.nonceByteCount && (tag?.count ?? Self.tagByteCount) == Self.tagByteCount)
        self.nonce = nonce
        self.tag = tag
    }

    /// The TXT record's key=value strings, in this order: `v`, `n`, then `t` when there is a tag.
    public var txt: [String] {
        ["v=\(Self.version)", "n=\(Hex.encode(nonce))"] + (tag.map { ["t=\(Hex.encode($0))"] } ?? [])
    }

    /// Reads a TXT record someone on the network announced. Unknown keys are ignored (a later minor
    /// addition); a missing or other version, a missing nonce, or a value of the wrong shape is refused.
    public init(txt pairs: [(key: String, value: String)]) throws {
        var values: [String: String] = [:]
        for (key, value) in pairs {
            guard key.utf8.count <= 9, value.utf8.count <= Self.txtValueByteCountMax else {
                throw DiscoveryError(.malformedRecord, "a TXT entry is longer than a wallet's")
            }
            guard values[key] == nil else { throw DiscoveryError(.malformedRecord, "the TXT key \"\(key)\" repeats") }
            values[key] = value
        }
        guard let version = values["v"] else { throw DiscoveryError(.malformedRecord, "the TXT record has no version") }
        guard version == Self.version else {
            throw DiscoveryError(.unsupportedVersion, "the announcement's version is not \(Self.version)")
        }
        guard let nonceText = values["n"], let nonce = Hex.decode(nonceText), nonce.count == Self.nonceByteCount else {
            throw DiscoveryError(.malformedRecord, "the announcement's nonce is not \(Self.nonceByteCount) hex bytes")
        }
        var tag: [UInt8]?
        if let tagText = values["t"] {
            guard let bytes = Hex.decode(tagText), bytes.count == Self.tagByteCount else {
                throw DiscoveryError(.malformedRecord, "the announcement's tag is not \(Self.tagByteCount) hex bytes")
            }
            tag = bytes
        }
        self.init(nonce: nonce, tag: tag)
    }

    /// The tag for `nonce` under a discovery key.
    public static func tag(key: SecretBytes, nonce: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: key, message: tagLabel + nonce).prefix(tagByteCount))
    }

    /// Whether this record's tag was made under `key`, compared in constant time.
    public func tagChecks(under key: SecretBytes) -> Bool {
        guard let tag else { return false }
        return ConstantTime.equal(tag, Self.tag(key: key, nonce: nonce))
    }

    /// Whether an instance name has the shape this build announces ("secure-" and 12 lowercase hex digits).
    /// Anything else (a leading space, a control character, a name chosen to sort first) is not a wallet's.
    public static func isWalletInstanceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count == 19, name.hasPrefix("secure-") else { return false }
        return bytes[7...].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A random DNS-SD instance name: nothing in it names the wallet, and a new one each session.
    public static func randomInstanceName() -> String { "secure-" + Hex.encode(SystemRandom.bytes(6)) }

    /// A random host label for the SRV record (".local" is added by the announcer), a new one each session,
    /// so the machine's own host name is never what a wallet's announcement points at.
    public static func randomHostLabel() -> String { "w" + Hex.encode(SystemRandom.bytes(8)) }
}

/// A failure to announce, browse or read an announcement. Equality is by code.
public typealias DiscoveryError = CodedFailure<DiscoveryErrorCode>

/// Stable codes for `DiscoveryError`. None is one of the failures the command line names by its own code,
/// so each exits 1.
public enum DiscoveryErrorCode: String, FailureCode, CaseIterable {
    /// No Avahi daemon answers on the system bus.
    case noDaemon = "no-daemon"
    /// The daemon refused or failed an operation.
    case daemonFailed = "daemon-failed"
    /// Another host announced the same random name (three times: someone squats every name).
    case collision
    /// No interface can carry an announcement.
    case noInterface = "no-interface"
    /// An announcement's TXT record, name or address is not a wallet's.
    case malformedRecord = "malformed-record"
    /// An announcement of another version.
    case unsupportedVersion = "unsupported-version"
    /// Nothing was found, or the choice names nothing found.
    case notFound = "not-found"

    /// Every code exits 1.
    public var kind: FailureKind { .failure }
}
