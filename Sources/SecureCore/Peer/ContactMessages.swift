import SecureCrypto

/// The contact exchange's messages (docs/PROTOCOL.md, "Contacts → The exchange"): one enum, one struct per
/// message. Each is encoded as version u8 ‖ type u8 ‖ body, and travels in the secure channel's contact
/// records. Nothing before `card` names a wallet: the gate carries only a nonce contribution and a distance.
public enum ContactMessage: Hashable, Sendable {
    case gate(ContactGate)
    case card(ContactCard)
    case measurement(SignedContactMeasurement)
    case encapsulation(ContactEncapsulation)
    case confirm(SignedContactConfirm)
    case failure(ContactFailure)

    /// The version byte; another version is refused.
    public static let encodingVersion: UInt8 = 1
    /// The largest encoding: a card with a log of `KeyEventLog.eventCountMax` events is the largest message.
    public static let encodedByteCountMax = 2 + ContactCard.encodedByteCountMax

    /// A short name for logs and errors.
    public var name: String {
        switch self {
        case .gate: "gate"
        case .card: "card"
        case .measurement: "measurement"
        case .encapsulation: "encapsulation"
        case .confirm: "confirm"
        case .failure: "failure"
        }
    }

    private var type: UInt8 {
        switch self {
        case .gate: 1
        case .card: 2
        case .measurement: 3
        case .encapsulation: 4
        case .confirm: 5
        case .failure: 6
        }
    }

    /// version ‖ type ‖ body.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.encodingVersion)
        writer.write(type)
        switch self {
        case .gate(let gate): gate.encode(into: &writer)
        case .card(let card): card.encode(into: &writer)
        case .measurement(let signed): signed.encode(into: &writer)
        case .encapsulation(let body): writer.write(prefixed16: body.ciphertext, max: ContactEncapsulation.byteCount)
        case .confirm(let signed): signed.encode(into: &writer)
        case .failure(let failure): writer.write(failure.reason.rawValue)
        }
        return writer.bytes
    }

    /// Decodes one whole message from a peer: nil when short, a thrown `FormatError` when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ContactMessage? {
        guard bytes.count <= encodedByteCountMax else {
            throw FormatError(
                .fieldTooLong, "a contact message of \(bytes.count) bytes; at most \(encodedByteCountMax)")
        }
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "contact message"), let type = reader.readUInt8() else {
            return nil
        }
        let message: ContactMessage?
        switch type {
        case 1: message = try ContactGate.decode(from: &reader).map { .gate($0) }
        case 2: message = try ContactCard.decode(from: &reader).map { .card($0) }
        case 3: message = try SignedContactMeasurement.decode(from: &reader).map { .measurement($0) }
        case 4: message = try ContactEncapsulation.decode(from: &reader).map { .encapsulation($0) }
        case 5: message = try SignedContactConfirm.decode(from: &reader).map { .confirm($0) }
        case 6:
            guard let code = reader.readUInt8() else { return nil }
            guard let reason = ContactFailure.Reason(rawValue: code) else {
                throw FormatError(.invalidValue, "contact failure reason \(code) is not known")
            }
            message = .failure(ContactFailure(reason: reason))
        default: throw FormatError(.invalidValue, "contact message type \(type) is not known")
        }
        guard let message else { return nil }
        try reader.expectEnd("contact \(message.name)")
        return message
    }
}

/// The proximity gate: this side's nonce contribution, its claimed median distance and whether its person
/// allows simulated ranging. It names no wallet.
public struct ContactGate: Hashable, Sendable {
    /// 16 random bytes toward the session nonce.
    public let nonceContribution: NonceContribution
    /// Where this side's ranging came from; a verifier refuses simulated ranging unless its policy allows it.
    public let source: RangingSource
    /// This side's median distance, which its signed measurement must repeat exactly.
    public let medianMillimetres: UInt32
    /// Whether this side's person passed `--allow-simulated-ranging`. The gate opens on simulated ranging only
    /// when both sides allow it, so a side that does not allow it never receives the other's card: without
    /// this flag, a side that allows it would see the gate open and send its card to one that refuses.
    public let allowsSimulated: Bool

    public init(
        nonceContribution: NonceContribution, source: RangingSource, medianMillimetres: UInt32, allowsSimulated: Bool
    ) {
        self.nonceContribution = nonceContribution
        self.source = source
        self.medianMillimetres = medianMillimetres
        self.allowsSimulated = allowsSimulated
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(nonceContribution)
        writer.write(source.rawValue)
        writer.write(medianMillimetres)
        writer.write(UInt8(allowsSimulated ? 1 : 0))
    }

    static func decode(from reader: inout ByteReader) throws -> ContactGate? {
        guard let contribution = reader.read(NonceContribution.self), let sourceByte = reader.readUInt8(),
            let median = reader.readUInt32(), let allowsByte = reader.readUInt8()
        else { return nil }
        guard let source = RangingSource(rawValue: sourceByte) else {
            throw FormatError(.invalidValue, "ranging source \(sourceByte) is not known")
        }
        guard median <= RangingSummary.readingMillimetresMax else {
            throw FormatError(.invalidValue, "a claimed median over \(RangingSummary.readingMillimetresMax) mm")
        }
        guard allowsByte <= 1 else {
            throw FormatError(.invalidValue, "the gate's simulated-ranging flag is \(allowsByte); it is 0 or 1")
        }
        return ContactGate(
            nonceContribution: contribution, source: source, medianMillimetres: median, allowsSimulated: allowsByte == 1
        )
    }
}

/// A wallet's identity for a contact (a card v2 and more): its key-event log, its long-term ML-KEM-1024
/// public key (which the log's current event commits to), and the issuers it trusts.
public struct ContactCard: Hashable, Sendable {
    /// The issuers a card may list: a wallet trusts a handful; more is not a person's wallet.
    public static let trustedIssuerCountMax = 16
    /// A log of the most events, each at most `KeyEventsMessage.signedEventByteCountMax`, plus the rest.
    static let encodedByteCountMax =
        2 + KeyEventLog.eventCountMax * (2 + KeyEventsMessage.signedEventByteCountMax) + 2
        + MLKEM1024.publicKeyByteCount + 1 + trustedIssuerCountMax * WalletID.byteCount

    /// The wallet's key-event log, verified from its inception.
    public let log: KeyEventLog
    /// The raw ML-KEM-1024 encapsulation key (1,568 bytes).
    public let contactKey: MLKEM1024.PublicKey
    /// The wallet ids of the issuers this wallet trusts.
    public let trustedIssuers: [WalletID]

    public init(log: KeyEventLog, contactKey: MLKEM1024.PublicKey, trustedIssuers: [WalletID]) {
        precondition(trustedIssuers.count <= Self.trustedIssuerCountMax, "a wallet trusts at most 16 issuers here")
        self.log = log
        self.contactKey = contactKey
        self.trustedIssuers = trustedIssuers
    }

    /// The wallet's id.
    public var walletID: WalletID { log.walletID }

    func encode(into writer: inout ByteWriter) {
        log.encode(into: &writer)
        writer.write(prefixed16: contactKey.rawRepresentation, max: MLKEM1024.publicKeyByteCount)
        writer.write(UInt8(trustedIssuers.count))
        for issuer in trustedIssuers { writer.write(issuer) }
    }

    static func decode(from reader: inout ByteReader) throws -> ContactCard? {
        guard let log = try KeyEventLog.decode(from: &reader),
            let keyBytes = try reader.readPrefixed16(max: MLKEM1024.publicKeyByteCount, field: "contact key"),
            let count = reader.readUInt8()
        else { return nil }
        guard Int(count) <= trustedIssuerCountMax else {
            throw FormatError(.fieldTooLong, "a card lists \(count) issuers; at most \(trustedIssuerCountMax)")
        }
        var issuers: [WalletID] = []
        for _ in 0..<count {
            guard let issuer = reader.read(WalletID.self) else { return nil }
            issuers.append(issuer)
        }
        let key: MLKEM1024.PublicKey
        do {
            key = try MLKEM1024.PublicKey(rawRepresentation: keyBytes)
        } catch {
            throw FormatError(.invalidValue, "the card's contact key is not an ML-KEM-1024 encapsulation key")
        }
        return ContactCard(log: log, contactKey: key, trustedIssuers: issuers)
    }
}

/// Which end of the secure channel a side is: the side that connected is the initiator.
public enum ContactRole: UInt8, Hashable, Sendable {
    case initiator = 1
    case responder = 2

    /// The other side.
    public var peer: ContactRole { self == .initiator ? .responder : .initiator }
}

/// What a contact measurement and a confirm both name: the session, the channel, who signs and about whom.
public struct ContactBinding: Hashable, Sendable {
    /// The session nonce (from both gates' contributions and the channel's transcript).
    public let nonce: Digest32
    /// The secure channel's binding: a relay runs two channels, with two bindings.
    public let channelBinding: [UInt8]
    /// The signer's end of the channel.
    public let signerRole: ContactRole
    /// The signer's wallet id.
    public let signerWalletID: WalletID
    /// The other wallet's id.
    public let peerWalletID: WalletID
    /// The signing key, which must be the one the signer's log has in force.
    public let signerKey: P256.PublicKey
    /// The sequence of the signer's key event that put that key in force.
    public let keySequence: UInt64

    public init(
        nonce: Digest32, channelBinding: [UInt8], signerRole: ContactRole, signerWalletID: WalletID,
        peerWalletID: WalletID, signerKey: P256.PublicKey, keySequence: UInt64
    ) {
        precondition(channelBinding.count <= TransferOrder.channelBindingByteCountMax, "a channel binding too long")
        self.nonce = nonce
        self.channelBinding = channelBinding
        self.signerRole = signerRole
        self.signerWalletID = signerWalletID
        self.peerWalletID = peerWalletID
        self.signerKey = signerKey
        self.keySequence = keySequence
    }

    static let encodedByteCount =
        32 + 1 + 32 + 32 + P256.uncompressedPointByteCount + 8 + 1
        + TransferOrder.channelBindingByteCountMax

    func encode(into writer: inout ByteWriter) {
        writer.write(nonce)
        writer.write(signerRole.rawValue)
        writer.write(signerWalletID)
        writer.write(peerWalletID)
        writer.write(fixed: signerKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(keySequence)
        writer.write(prefixed8: channelBinding, max: TransferOrder.channelBindingByteCountMax)
    }

    static func decode(from reader: inout ByteReader) throws -> ContactBinding? {
        guard let nonce = reader.read(Digest32.self), let roleByte = reader.readUInt8(),
            let signer = reader.read(WalletID.self), let peer = reader.read(WalletID.self),
            let key = reader.readFixed(P256.uncompressedPointByteCount), let sequence = reader.readUInt64(),
            let binding = try reader.readPrefixed8(
                max: TransferOrder.channelBindingByteCountMax, field: "channel binding")
        else { return nil }
        guard let role = ContactRole(rawValue: roleByte) else {
            throw FormatError(.invalidValue, "contact role \(roleByte) is not known")
        }
        return ContactBinding(
            nonce: nonce, channelBinding: binding, signerRole: role, signerWalletID: signer, peerWalletID: peer,
            signerKey: try decodeKey(key, "signer key"), keySequence: sequence)
    }
}

/// The seed's MITM guard: a wallet's signed statement, under `secure-contact-measurement-v1`, that it measured
/// this distance in this very session (its nonce and channel binding) with this other wallet.
public struct ContactMeasurement: SignedPayload {
    /// The signing label.
    public static let signatureLabel = SignatureLabel("secure-contact-measurement-v1")
    /// The version byte.
    public static let encodingVersion: UInt8 = 1
    /// version ‖ binding ‖ median u32 ‖ spread u32 ‖ count u16 ‖ source u8.
    public static let encodedByteCountMax = 1 + ContactBinding.encodedByteCount + 11

    public let binding: ContactBinding
    public let summary: RangingSummary
    public let source: RangingSource

    public init(binding: ContactBinding, summary: RangingSummary, source: RangingSource) {
        self.binding = binding
        self.summary = summary
        self.source = source
    }

    public var signerKey: P256.PublicKey { binding.signerKey }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedByteCountMax)
        writer.write(Self.encodingVersion)
        binding.encode(into: &writer)
        writer.write(summary.medianMillimetres)
        writer.write(summary.spreadMillimetres)
        writer.write(summary.sampleCount)
        writer.write(source.rawValue)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ContactMeasurement? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "contact measurement"),
            let binding = try ContactBinding.decode(from: &reader), let median = reader.readUInt32(),
            let spread = reader.readUInt32(), let count = reader.readUInt16(), let sourceByte = reader.readUInt8()
        else { return nil }
        try reader.expectEnd("contact measurement")
        guard let source = RangingSource(rawValue: sourceByte) else {
            throw FormatError(.invalidValue, "ranging source \(sourceByte) is not known")
        }
        do {
            let summary = try RangingSummary(medianMillimetres: median, spreadMillimetres: spread, sampleCount: count)
            return ContactMeasurement(binding: binding, summary: summary, source: source)
        } catch let error as RangingError {
            throw FormatError(.invalidValue, "the signed summary breaks a limit: \(error.message)")
        }
    }
}

/// A contact measurement with its signature.
public typealias SignedContactMeasurement = SignedStatement<ContactMeasurement>

/// One side's ML-KEM-1024 ciphertext, encapsulated to the other side's contact key.
public struct ContactEncapsulation: Hashable, Sendable {
    /// An ML-KEM-1024 ciphertext is 1,568 bytes.
    public static let byteCount = MLKEM1024.ciphertextByteCount
    public let ciphertext: [UInt8]

    public init(ciphertext: [UInt8]) {
        precondition(ciphertext.count == Self.byteCount, "an ML-KEM-1024 ciphertext is 1,568 bytes")
        self.ciphertext = ciphertext
    }

    static func decode(from reader: inout ByteReader) throws -> ContactEncapsulation? {
        guard let bytes = try reader.readPrefixed16(max: byteCount, field: "ciphertext") else { return nil }
        guard bytes.count == byteCount else {
            throw FormatError(.invalidValue, "an ML-KEM-1024 ciphertext of \(bytes.count) bytes; it is \(byteCount)")
        }
        return ContactEncapsulation(ciphertext: bytes)
    }
}

/// A person's yes, signed under `secure-contact-confirm-v1`: the words matched, and this wallet derived the
/// contact secret named by `keyConfirmation` from this exchange's transcript.
public struct ContactConfirm: SignedPayload {
    /// The signing label.
    public static let signatureLabel = SignatureLabel("secure-contact-confirm-v1")
    /// The version byte.
    public static let encodingVersion: UInt8 = 1
    /// version ‖ binding ‖ transcript 32 ‖ key confirmation 32.
    public static let encodedByteCountMax = 1 + ContactBinding.encodedByteCount + 64

    public let binding: ContactBinding
    /// SHA-256 of the exchange's transcript (`ContactSecret.transcriptDigest`).
    public let transcript: Digest32
    /// HMAC-SHA256(contact secret, "secure-contact-key-confirm-v1" ‖ role): the signer holds the same secret.
    public let keyConfirmation: Digest32

    public init(binding: ContactBinding, transcript: Digest32, keyConfirmation: Digest32) {
        self.binding = binding
        self.transcript = transcript
        self.keyConfirmation = keyConfirmation
    }

    public var signerKey: P256.PublicKey { binding.signerKey }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedByteCountMax)
        writer.write(Self.encodingVersion)
        binding.encode(into: &writer)
        writer.write(transcript)
        writer.write(keyConfirmation)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> ContactConfirm? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "contact confirm"),
            let binding = try ContactBinding.decode(from: &reader), let transcript = reader.read(Digest32.self),
            let confirmation = reader.read(Digest32.self)
        else { return nil }
        try reader.expectEnd("contact confirm")
        return ContactConfirm(binding: binding, transcript: transcript, keyConfirmation: confirmation)
    }
}

/// A confirm with its signature.
public typealias SignedContactConfirm = SignedStatement<ContactConfirm>

/// Why a side ended the exchange. A closed set of codes: a peer's text is never shown.
public struct ContactFailure: Hashable, Sendable {
    public enum Reason: UInt8, Hashable, Sendable {
        /// The proximity gate stayed closed: too far, too different, or ranging not allowed.
        case gateClosed = 1
        /// The person said the words do not match (or declined).
        case declined = 2
        /// A message broke the protocol.
        case violation = 3
        /// Something on this side failed (ranging, the token, a timeout).
        case localFailure = 4
    }

    public let reason: Reason

    public init(reason: Reason) { self.reason = reason }
}
