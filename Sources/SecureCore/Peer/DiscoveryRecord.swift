import SecureCrypto

/// What a wallet's DNS-SD announcement carries (docs/PROTOCOL.md, "Discovery"): no wallet identity at all.
/// The instance name and the SRV host name are random per session; the TXT record holds only the version,
/// a fresh nonce N and eight tag slots `t0`…`t7`. A slot holds `HMAC-SHA256(K, "secure-discovery-tag-v1" ‖ N)`
/// cut to 16 bytes for one contact's pairwise discovery key K, or 16 random bytes: a contact holding K
/// recognises the announcement, and no one else can tell a tag from filler, nor count the contacts.
public struct DiscoveryRecord: Equatable, Sendable {
    /// The DNS-SD service type wallets announce to be paid.
    public static let payServiceType = "_secure-pay._tcp"
    /// The TXT version this build writes and reads; another version is not a wallet this build can pay.
    public static let version = "1"
    /// 16 bytes of nonce: fresh per announcement, so tags never repeat across sessions.
    public static let nonceByteCount = 16
    /// 16 bytes of tag: 128 bits, so a guessed tag matches with probability 2^-128.
    public static let tagByteCount = 16
    /// Eight slots: a TXT record stays well under one mDNS packet (about 330 bytes), and a wallet announces
    /// for its eight most recent contacts. Always all eight, filled with random bytes, so the count of
    /// contacts never shows.
    public static let tagSlotCount = 8
    /// The TXT record's keys and values are short ASCII; anything longer is not ours.
    public static let txtValueByteCountMax = 64
    /// The domain-separation label of the tag's MAC.
    static let tagLabel = Array("secure-discovery-tag-v1".utf8)

    /// The announcement's nonce.
    public let nonce: [UInt8]
    /// The tag slots, in slot order (none in an announcement written before slots, which nobody can find
    /// by tag).
    public let tags: [[UInt8]]

    /// A fresh record: a new random nonce, a tag under each key given (at most `tagSlotCount`), random filler
    /// in the other slots, all in a random order.
    public static func fresh(discoveryKeys keys: [SecretBytes] = []) -> DiscoveryRecord {
        precondition(keys.count <= tagSlotCount, "at most \(tagSlotCount) contacts' tags in one announcement")
        let nonce = SystemRandom.bytes(nonceByteCount)
        var tags = keys.map { tag(key: $0, nonce: nonce) }
        while tags.count < tagSlotCount { tags.append(SystemRandom.bytes(tagByteCount)) }
        // Fisher-Yates with the system CSPRNG: a contact's slot says nothing about when it was added.
        for index in stride(from: tags.count - 1, to: 0, by: -1) {
            tags.swapAt(index, randomBelow(index + 1))
        }
        return DiscoveryRecord(nonce: nonce, tags: tags)
    }

    /// A uniform integer in 0..<bound (bound ≤ 256), by rejection from random bytes: no modulo bias.
    private static func randomBelow(_ bound: Int) -> Int {
        precondition(bound > 0 && bound <= 256)
        let limit = 256 - 256 % bound
        while true {
            let byte = Int(SystemRandom.bytes(1)[0])
            if byte < limit { return byte % bound }
        }
    }

    /// A record from its parts (tests and `fresh`).
    public init(nonce: [UInt8], tags: [[UInt8]]) {
        precondition(nonce.count == Self.nonceByteCount && tags.count <= Self.tagSlotCount)
        precondition(tags.allSatisfy { $0.count == Self.tagByteCount })
        self.nonce = nonce
        self.tags = tags
    }

    /// The TXT record's key=value strings, in this order: `v`, `n`, then `t0`… for each slot.
    public var txt: [String] {
        ["v=\(Self.version)", "n=\(Hex.encode(nonce))"]
            + tags.enumerated().map { "t\($0.offset)=\(Hex.encode($0.element))" }
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
        var tags: [[UInt8]] = []
        for slot in 0..<Self.tagSlotCount {
            guard let tagText = values["t\(slot)"] else { break }
            guard let bytes = Hex.decode(tagText), bytes.count == Self.tagByteCount else {
                throw DiscoveryError(
                    .malformedRecord, "the announcement's tag t\(slot) is not \(Self.tagByteCount) hex bytes")
            }
            tags.append(bytes)
        }
        self.init(nonce: nonce, tags: tags)
    }

    /// The tag for `nonce` under a discovery key.
    public static func tag(key: SecretBytes, nonce: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: key, message: tagLabel + nonce).prefix(tagByteCount))
    }

    /// Whether one of this record's tags was made under `key`, each compared in constant time (every slot is
    /// compared, so the time does not say which matched).
    public func tagChecks(under key: SecretBytes) -> Bool {
        let expected = Self.tag(key: key, nonce: nonce)
        return tags.reduce(false) { found, tag in ConstantTime.equal(tag, expected) || found }
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
