import SecureCrypto

/// How a contact was verified at the exchange.
public enum ContactVerification: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Both signed confirms arrived after the five words were read aloud.
    case verified = 1
    /// The exchange ended before both confirms arrived: the words were not confirmed on both sides.
    case unconfirmed = 2

    /// "verified" or "unconfirmed", as `contact list` and `--json` spell it.
    public var description: String {
        switch self {
        case .verified: "verified"
        case .unconfirmed: "unconfirmed"
        }
    }
}

/// A person's local name for a contact: what `pay --to NAME` and `contact show NAME` take. The rules keep a
/// name from ever being read as something else on a command line or a screen.
public enum ContactName {
    /// At most 64 bytes of UTF-8: a name is a word or two, and a longer one would be cut on screen.
    public static let byteCountMax = 64

    /// Why `name` cannot name a contact, or nil when it can: empty or longer than 64 bytes; holding a
    /// control, format, bidi or invisible character (`PeerText.isUnsafe`), or leading or trailing spaces;
    /// parsing as an address (PORT, HOST:PORT: its last `:`-separated part is all digits) so that
    /// `pay --to NAME` can never be confused with one; or looking like a wallet id or key fingerprint (eight
    /// or more hex digits, with or without `-`, `:`, `.`, `…` or spaces between them).
    public static func problem(_ name: String) -> String? {
        let bytes = name.utf8.count
        guard bytes >= 1 else { return "a contact name cannot be empty" }
        guard bytes <= byteCountMax else {
            return "a contact name is at most \(byteCountMax) bytes of UTF-8; this one is \(bytes)"
        }
        // The command line repairs bytes that are not UTF-8 into U+FFFD; such a name was never typed as text.
        if name.unicodeScalars.contains("\u{FFFD}") {
            return "a contact name must be valid UTF-8 text (it held bytes that are not)"
        }
        if name.unicodeScalars.contains(where: PeerText.isUnsafe) {
            return "a contact name cannot hold control, format, bidi or invisible characters"
        }
        if let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        {
            return "a contact name cannot begin or end with a space"
        }
        let lastPart = name.split(separator: ":", omittingEmptySubsequences: false).last ?? ""
        if !lastPart.isEmpty, lastPart.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) {
            return "a contact name cannot read as an address (HOST:PORT or PORT): \(PeerText.quoted(name))"
        }
        let separators: Set<Unicode.Scalar> = ["-", ":", ".", "…", " "]
        let digits = name.unicodeScalars.filter { !separators.contains($0) }
        if digits.count >= 8, digits.allSatisfy({ $0.properties.isASCIIHexDigit }) {
            return "a contact name cannot look like a wallet id or key fingerprint: \(PeerText.quoted(name))"
        }
        return nil
    }
}

/// A contact: a wallet met in person and verified by the words read aloud, under a name chosen here. Its
/// canonical encoding is hashed into the ledger's `contactAdded` settings entries (only the digest, never
/// the wallet id or the name); the record itself, and the pairwise secret beside it, live in the wallet's
/// encrypted database. See docs/PROTOCOL.md, "Contact records".
public struct ContactRecord: Hashable, Sendable {
    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    /// An ML-KEM-1024 encapsulation key: 384 · k + 32 bytes with k = 4 (FIPS 203).
    public static let contactKeyByteCount = 1568
    /// At most 32 trusted issuers: a person trusts a handful, and the record must stay small.
    public static let trustedIssuerCountMax = 32

    /// The contact's wallet id: the digest of its log's inception.
    public let walletID: WalletID
    /// The contact's key-event log, verified from its inception.
    public let log: KeyEventLog
    /// The contact's long-term ML-KEM-1024 encapsulation key (1,568 bytes).
    public let contactKey: [UInt8]
    /// The local name (`ContactName`'s rules).
    public let name: String
    /// When the contact was stored, in Unix milliseconds.
    public let addedAt: Int64
    /// Whether both signed confirms arrived.
    public let verification: ContactVerification
    /// How the distance was measured at the exchange.
    public let rangingSource: RangingSource
    /// This side's median distance at the exchange, in millimetres.
    public let medianMillimetres: UInt32
    /// The issuers the contact said it trusts, sorted by id and distinct; possibly none.
    public let trustedIssuers: [WalletID]

    /// A record from its parts: throws on a name `ContactName` refuses, a key of the wrong length, a log
    /// that is not `walletID`'s, or too many issuers. The issuers are sorted and made distinct.
    public init(
        walletID: WalletID, log: KeyEventLog, contactKey: [UInt8], name: String, addedAt: Int64,
        verification: ContactVerification, rangingSource: RangingSource, medianMillimetres: UInt32,
        trustedIssuers: [WalletID] = []
    ) throws {
        guard log.walletID == walletID else {
            throw FormatError(.invalidValue, "the contact's key-event log is not wallet \(walletID.hex)'s")
        }
        guard contactKey.count == Self.contactKeyByteCount else {
            throw FormatError(
                .invalidValue,
                "a contact key is \(Self.contactKeyByteCount) bytes (ML-KEM-1024), got \(contactKey.count)")
        }
        if let problem = ContactName.problem(name) { throw FormatError(.invalidValue, problem) }
        let issuers = Set(trustedIssuers).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        guard issuers.count <= Self.trustedIssuerCountMax else {
            throw FormatError(
                .fieldTooLong, "a contact names at most \(Self.trustedIssuerCountMax) trusted issuers")
        }
        self.walletID = walletID
        self.log = log
        self.contactKey = contactKey
        self.name = name
        self.addedAt = addedAt
        self.verification = verification
        self.rangingSource = rangingSource
        self.medianMillimetres = medianMillimetres
        self.trustedIssuers = issuers
    }

    /// The same record under another name (rename keeps everything else).
    public func renamed(_ newName: String) throws -> ContactRecord {
        try ContactRecord(
            walletID: walletID, log: log, contactKey: contactKey, name: newName, addedAt: addedAt,
            verification: verification, rangingSource: rangingSource, medianMillimetres: medianMillimetres,
            trustedIssuers: trustedIssuers)
    }

    /// version u8 (1) ‖ wallet id (32) ‖ key-event log (as in a wallet card) ‖ contact key (1,568) ‖
    /// name (u8 length ‖ UTF-8) ‖ added at (i64) ‖ verification u8 ‖ ranging source u8 ‖ median u32 ‖
    /// issuer count u8 ‖ each issuer's wallet id (32), ascending.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 2048)
        writer.write(Self.encodingVersion)
        writer.write(walletID)
        log.encode(into: &writer)
        writer.write(fixed: contactKey, count: Self.contactKeyByteCount)
        writer.write(prefixed8: Array(name.utf8), max: ContactName.byteCountMax)
        writer.write(addedAt)
        writer.write(verification.rawValue)
        writer.write(rangingSource.rawValue)
        writer.write(medianMillimetres)
        writer.write(UInt8(trustedIssuers.count))
        for issuer in trustedIssuers { writer.write(issuer) }
        return writer.bytes
    }

    /// SHA-256 of `encoded`: what the ledger's contact settings entries hold.
    public var digest: Digest32 { Digest32(of: encoded) }

    /// Decodes a record; throws on short or malformed bytes, on a field the constructor refuses, and on
    /// issuers out of order (only the canonical encoding decodes).
    public static func decode(_ bytes: [UInt8]) throws -> ContactRecord {
        var reader = ByteReader(bytes)
        func short() -> FormatError { FormatError(.invalidValue, "the contact record is truncated") }
        guard try reader.readVersion(encodingVersion, of: "contact record"),
            let walletID = reader.read(WalletID.self), let log = try KeyEventLog.decode(from: &reader),
            let contactKey = reader.readFixed(contactKeyByteCount),
            let nameBytes = try reader.readPrefixed8(max: ContactName.byteCountMax, field: "contact name"),
            let addedAt = reader.readInt64(), let verificationByte = reader.readUInt8(),
            let sourceByte = reader.readUInt8(), let median = reader.readUInt32(),
            let issuerCount = reader.readUInt8()
        else { throw short() }
        guard let name = String(validating: nameBytes, as: UTF8.self) else {
            throw FormatError(.invalidValue, "the contact name is not UTF-8")
        }
        guard let verification = ContactVerification(rawValue: verificationByte) else {
            throw FormatError(.invalidValue, "contact verification \(verificationByte) is not known")
        }
        guard let source = RangingSource(rawValue: sourceByte) else {
            throw FormatError(.invalidValue, "ranging source \(sourceByte) is not known")
        }
        guard Int(issuerCount) <= trustedIssuerCountMax else {
            throw FormatError(.fieldTooLong, "a contact names at most \(trustedIssuerCountMax) trusted issuers")
        }
        var issuers: [WalletID] = []
        for _ in 0..<issuerCount {
            guard let issuer = reader.read(WalletID.self) else { throw short() }
            if let previous = issuers.last, !previous.bytes.lexicographicallyPrecedes(issuer.bytes) {
                throw FormatError(.notCanonical, "a contact's trusted issuers are not in ascending order")
            }
            issuers.append(issuer)
        }
        try reader.expectEnd("contact record")
        return try ContactRecord(
            walletID: walletID, log: log, contactKey: contactKey, name: name, addedAt: addedAt,
            verification: verification, rangingSource: source, medianMillimetres: median, trustedIssuers: issuers)
    }
}
