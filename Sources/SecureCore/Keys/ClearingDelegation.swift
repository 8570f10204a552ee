import SecureCrypto

/// What an issuer's clearing delegation (key-event kind 3) names: the key that signs for the issuer's clearing,
/// where that key came from, the pin of the service's TLS key, and the service's URL. The latest delegation in
/// an issuer's log is the clearing in force (`KeyEventLog.clearingInForce`); a later one replaces it. The
/// format is in docs/PROTOCOL.md ("Key events"), the design in docs/CLEARING.md §1.
public struct ClearingDelegation: Hashable, Sendable {
    /// The clearing key's countersignature label (proof of possession).
    public static let label = SignatureLabel(SignatureDomain.clearingDelegationLabel)
    /// A delegation's version byte.
    public static let encodingVersion: UInt8 = 3
    /// The URL's length: at least "https://", and at most 200 bytes so an event stays under 450 bytes.
    public static let urlByteCountMin = 8
    /// See `urlByteCountMin`.
    public static let urlByteCountMax = 200

    /// The clearing's P-256 key, on the clearing's token: it signs lists, tree heads and cosignatures.
    public let clearingKey: P256.PublicKey
    /// Where `clearingKey` came from, as proven when the delegation was made (never recovery words).
    public let clearingKeyOrigin: KeyOrigin
    /// SHA-256 of the DER SubjectPublicKeyInfo of the service's TLS key: the pin a wallet's client checks.
    public let tlsKeyDigest: Digest32
    /// The service's URL: `https://…`, printable ASCII, 8–200 bytes, no fragment.
    public let url: String

    /// A delegation's fields, checked: the URL as above, the origin one a key event may record for a key made on
    /// a token (unproven, module's word, attested).
    public init(clearingKey: P256.PublicKey, clearingKeyOrigin: KeyOrigin, tlsKeyDigest: Digest32, url: String)
        throws
    {
        try self.init(
            clearingKey: clearingKey, clearingKeyOrigin: clearingKeyOrigin, tlsKeyDigest: tlsKeyDigest, url: url,
            urlBytes: Array(url.utf8))
    }

    init(
        clearingKey: P256.PublicKey, clearingKeyOrigin: KeyOrigin, tlsKeyDigest: Digest32, url: String,
        urlBytes: [UInt8]
    ) throws {
        if let refusal = Self.urlRefusal(urlBytes) { throw FormatError(.invalidValue, refusal) }
        switch clearingKeyOrigin {
        case .unproven, .modulesWord, .attested: break
        case .recoveryWords, .notRecorded:
            throw FormatError(.invalidValue, "a clearing key's origin is never \(clearingKeyOrigin.description)")
        }
        self.clearingKey = clearingKey
        self.clearingKeyOrigin = clearingKeyOrigin
        self.tlsKeyDigest = tlsKeyDigest
        self.url = url
    }

    /// Why `bytes` is not a clearing URL, or nil when it is.
    static func urlRefusal(_ bytes: [UInt8]) -> String? {
        guard (urlByteCountMin...urlByteCountMax).contains(bytes.count) else {
            return "a clearing URL is \(urlByteCountMin) to \(urlByteCountMax) bytes, not \(bytes.count)"
        }
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return "a clearing URL is printable ASCII without spaces"
        }
        guard bytes.starts(with: Array("https://".utf8)) else { return "a clearing URL starts with https://" }
        guard !bytes.contains(UInt8(ascii: "#")) else { return "a clearing URL has no fragment (#)" }
        return nil
    }

    /// version u8 (3) ‖ kind u8 (3) ‖ sequence u64 ‖ previous event (32) ‖ issuer key (65) ‖ clearing key (65)
    /// ‖ origin u8 ‖ origin evidence (32) ‖ TLS key digest (32) ‖ u8 length ‖ URL ‖ ledger position u64.
    func encoded(sequence: UInt64, previousEvent: KeyEventDigest, issuerKey: P256.PublicKey, ledgerPosition: UInt64)
        -> [UInt8]
    {
        var writer = ByteWriter(capacity: 246 + Self.urlByteCountMax)
        writer.write(Self.encodingVersion)
        writer.write(KeyEvent.Kind.clearingDelegation.rawValue)
        writer.write(sequence)
        writer.write(previousEvent)
        writer.write(fixed: issuerKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(fixed: clearingKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(clearingKeyOrigin.code)
        writer.write(clearingKeyOrigin.evidenceDigest)
        writer.write(tlsKeyDigest)
        writer.write(prefixed8: Array(url.utf8), max: Self.urlByteCountMax)
        writer.write(ledgerPosition)
        return writer.bytes
    }
}
