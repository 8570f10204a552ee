import SecureCrypto

/// The peer-payment protocol's messages: one enum, one struct per message. Each message is encoded as
/// version u8 ‖ type u8 ‖ body, with every length bounded. `decode` returns nil when the bytes end early
/// and throws when they are malformed; it never traps. See docs/PROTOCOL.md, "Peer messages".
public enum PeerMessage: Hashable, Sendable {
    case hello(PeerHello)
    case request(PaymentRequest)
    case offer(PaymentOffer)
    case reply(OfferReply)
    case measurement(MeasurementMessage)
    case ready(ReadyMessage)
    case transfer(TransferMessage)
    case receipt(ReceiptMessage)
    case refusal(RefusalMessage)
    case evidence(EvidenceMessage)
    case keyEvents(KeyEventsMessage)
    case failure(PeerFailure)

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 2
    /// The largest message is one piece of fork evidence (about 576 KiB at its limits, most of it the
    /// accused wallet's key-event log); 640 KiB bounds what a peer can make us buffer. SecurePeer splits
    /// messages over channel records.
    public static let encodedByteCountMax = 655_360

    /// Every message body, each declaring its own type byte and name (see `PeerMessageBody`): the one table
    /// the decoder reads. A type byte listed twice is our bug and traps when the table is first used.
    static let bodyTypes: [UInt8: any PeerMessageBody.Type] = Dictionary(
        uniqueKeysWithValues: ([
            PeerHello.self, PaymentRequest.self, PaymentOffer.self, OfferReply.self, MeasurementMessage.self,
            ReadyMessage.self, TransferMessage.self, ReceiptMessage.self, RefusalMessage.self, EvidenceMessage.self,
            KeyEventsMessage.self, PeerFailure.self,
        ] as [any PeerMessageBody.Type]).map { ($0.messageType, $0) })

    /// The message's body.
    var body: any PeerMessageBody {
        switch self {
        case .hello(let body): body
        case .request(let body): body
        case .offer(let body): body
        case .reply(let body): body
        case .measurement(let body): body
        case .ready(let body): body
        case .transfer(let body): body
        case .receipt(let body): body
        case .refusal(let body): body
        case .evidence(let body): body
        case .keyEvents(let body): body
        case .failure(let body): body
        }
    }

    /// The type byte.
    var type: UInt8 { Swift.type(of: body).messageType }

    /// A short name for logs and errors.
    public var name: String { Swift.type(of: body).messageName }

    /// The canonical encoding.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 512)
        writer.write(PeerMessage.encodingVersion)
        writer.write(type)
        body.encode(into: &writer)
        precondition(writer.bytes.count <= PeerMessage.encodedByteCountMax, "a message over its limit")
        return writer.bytes
    }

    /// Decodes one message that fills `bytes` exactly.
    public static func decode(_ bytes: [UInt8]) throws -> PeerMessage? {
        guard bytes.count <= encodedByteCountMax else {
            throw FormatError(.fieldTooLong, "a peer message of \(bytes.count) bytes exceeds \(encodedByteCountMax)")
        }
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "peer message") else { return nil }
        guard let type = reader.readUInt8() else { return nil }
        guard let bodyType = bodyTypes[type] else {
            throw FormatError(.invalidValue, "peer message type \(type) is not known")
        }
        guard let message = try bodyType.decodeMessage(from: &reader) else { return nil }
        try reader.expectEnd("\(message.name) message")
        return message
    }
}

/// One kind of peer message: its type byte, its name, its body's encoding and decoding, and the case of
/// `PeerMessage` that carries it. Each message declares all of these in one place, beside its fields.
protocol PeerMessageBody: Sendable {
    /// The type byte that follows the version byte.
    static var messageType: UInt8 { get }
    /// A short name for logs and errors.
    static var messageName: String { get }
    /// The body's canonical encoding.
    func encode(into writer: inout ByteWriter)
    /// Decodes a body: nil when the bytes end early, throws when they are malformed.
    static func decode(from reader: inout ByteReader) throws -> Self?
    /// The message that carries this body.
    var peerMessage: PeerMessage { get }
}

extension PeerMessageBody {
    /// Decodes a body and wraps it in its message.
    static func decodeMessage(from reader: inout ByteReader) throws -> PeerMessage? {
        try decode(from: &reader)?.peerMessage
    }
}

/// The first message each side sends.
public struct PeerHello: Hashable, Sendable, PeerMessageBody {
    /// Type byte 1.
    static let messageType: UInt8 = 1
    static let messageName = "hello"
    var peerMessage: PeerMessage { .hello(self) }

    /// The sender's current signing key.
    public let walletKey: P256.PublicKey
    /// A name chosen by the key's owner; it proves nothing on its own.
    public let displayName: String
    /// The sender's ranging discovery token (opaque to the protocol).
    public let rangingToken: [UInt8]
    /// The sender's 16 random bytes for the session nonce.
    public let nonceContribution: NonceContribution
    /// The sender's latest signed checkpoint, naming its wallet id.
    public let checkpoint: SignedCheckpoint
    /// Digests (SHA-256 of the encoding) of the fork evidence the sender holds.
    public let evidenceDigests: [EvidenceDigest]
    /// The head of the sender's key-event log; a peer that knows an older head asks for the log.
    public let keyEventHead: KeyEventHead?

    /// A display name is a label on a screen: 64 bytes is ample, and it is not trusted anyway.
    public static let displayNameByteCountMax = 64
    /// NearbyInteraction discovery tokens are a few hundred bytes; UWB boards use less.
    public static let rangingTokenByteCountMax = 1024
    /// A wallet that holds more evidence than this hands it over in several sessions.
    public static let evidenceDigestCountMax = 64

    public init(
        walletKey: P256.PublicKey, displayName: String, rangingToken: [UInt8], nonceContribution: NonceContribution,
        checkpoint: SignedCheckpoint, evidenceDigests: [EvidenceDigest] = [], keyEventHead: KeyEventHead? = nil
    ) throws {
        guard displayName.utf8.count <= PeerHello.displayNameByteCountMax,
            !displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw FormatError(.invalidValue, "a display name is at most 64 bytes without control characters")
        }
        guard rangingToken.count <= PeerHello.rangingTokenByteCountMax,
            evidenceDigests.count <= PeerHello.evidenceDigestCountMax
        else {
            throw FormatError(.invalidValue, "a hello's token or evidence digests break a limit")
        }
        self.walletKey = walletKey
        self.displayName = displayName
        self.rangingToken = rangingToken
        self.nonceContribution = nonceContribution
        self.checkpoint = checkpoint
        self.evidenceDigests = evidenceDigests
        self.keyEventHead = keyEventHead
    }

    /// The sender's wallet id, as its checkpoint names it.
    public var walletID: WalletID { checkpoint.checkpoint.walletID }

    func encode(into writer: inout ByteWriter) {
        writer.write(fixed: walletKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(prefixed8: Array(displayName.utf8), max: PeerHello.displayNameByteCountMax)
        writer.write(prefixed16: rangingToken, max: PeerHello.rangingTokenByteCountMax)
        writer.write(nonceContribution)
        checkpoint.encode(into: &writer)
        writer.write(UInt8(evidenceDigests.count))
        for digest in evidenceDigests { writer.write(digest) }
        if let keyEventHead {
            writer.write(UInt8(1))
            writer.write(keyEventHead.sequence)
            writer.write(keyEventHead.digest)
        } else {
            writer.write(UInt8(0))
        }
    }

    static func decode(from reader: inout ByteReader) throws -> PeerHello? {
        guard let point = reader.readFixed(P256.uncompressedPointByteCount),
            let name = try reader.readPrefixed8(max: displayNameByteCountMax, field: "display name"),
            let token = try reader.readPrefixed16(max: rangingTokenByteCountMax, field: "ranging token"),
            let contribution = reader.read(NonceContribution.self),
            let checkpoint = try SignedCheckpoint.decode(from: &reader), let count = reader.readUInt8()
        else { return nil }
        guard Int(count) <= evidenceDigestCountMax else {
            throw FormatError(
                .fieldTooLong, "a hello lists \(count) evidence digests; at most \(evidenceDigestCountMax)")
        }
        var digests: [EvidenceDigest] = []
        for _ in 0..<count {
            guard let digest = reader.read(EvidenceDigest.self) else { return nil }
            digests.append(digest)
        }
        guard let headTag = reader.readUInt8() else { return nil }
        var head: KeyEventHead?
        switch headTag {
        case 0: head = nil
        case 1:
            guard let sequence = reader.readUInt64(), let digest = reader.read(KeyEventDigest.self) else { return nil }
            head = KeyEventHead(sequence: sequence, digest: digest)
        default: throw FormatError(.invalidValue, "key-event head tag \(headTag) is not 0 or 1")
        }
        if let head, head.sequence != checkpoint.checkpoint.keySequence {
            throw FormatError(
                .invalidValue, "a hello's key-event head is not the sequence its checkpoint is signed under")
        }
        return try PeerHello(
            walletKey: try decodeKey(point, "wallet key"), displayName: try decodeText(name, "display name"),
            rangingToken: token, nonceContribution: contribution, checkpoint: checkpoint, evidenceDigests: digests,
            keyEventHead: head)
    }
}

/// Payee → payer: "please pay me this", with an optional note.
public struct PaymentRequest: Hashable, Sendable, PeerMessageBody {
    /// Type byte 2.
    static let messageType: UInt8 = 2
    static let messageName = "request"
    var peerMessage: PeerMessage { .request(self) }

    /// The request id; an offer that answers it carries the same id.
    public let requestID: OfferID
    /// The amount asked for.
    public let amount: AssetAmount
    /// A note for the payer ("Coffee"), or "".
    public let note: String

    public init(requestID: OfferID, amount: AssetAmount, note: String = "") throws {
        try checkOfferFields(amount, note)
        self.requestID = requestID
        self.amount = amount
        self.note = note
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(requestID)
        amount.encode(into: &writer)
        writer.write(prefixed16: Array(note.utf8), max: LedgerEntry.noteByteCountMax)
    }

    static func decode(from reader: inout ByteReader) throws -> PaymentRequest? {
        guard let id = reader.read(OfferID.self), let amount = try AssetAmount.decode(from: &reader),
            let note = try reader.readPrefixed16(max: LedgerEntry.noteByteCountMax, field: "note")
        else { return nil }
        return try PaymentRequest(requestID: id, amount: amount, note: try decodeText(note, "note"))
    }
}

/// Payer → payee, after the payer's budget check and approval: "I will pay this".
public struct PaymentOffer: Hashable, Sendable, PeerMessageBody {
    /// Type byte 3.
    static let messageType: UInt8 = 3
    static let messageName = "offer"
    var peerMessage: PeerMessage { .offer(self) }

    /// The offer id: the request id when it answers a request, else fresh random bytes.
    public let offerID: OfferID
    /// The amount offered.
    public let amount: AssetAmount
    /// A note for the payee, or "".
    public let note: String

    public init(offerID: OfferID, amount: AssetAmount, note: String = "") throws {
        try checkOfferFields(amount, note)
        self.offerID = offerID
        self.amount = amount
        self.note = note
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        amount.encode(into: &writer)
        writer.write(prefixed16: Array(note.utf8), max: LedgerEntry.noteByteCountMax)
    }

    static func decode(from reader: inout ByteReader) throws -> PaymentOffer? {
        guard let id = reader.read(OfferID.self), let amount = try AssetAmount.decode(from: &reader),
            let note = try reader.readPrefixed16(max: LedgerEntry.noteByteCountMax, field: "note")
        else { return nil }
        return try PaymentOffer(offerID: id, amount: amount, note: try decodeText(note, "note"))
    }
}

private func checkOfferFields(_ amount: AssetAmount, _ note: String) throws {
    guard !amount.isZero, note.utf8.count <= LedgerEntry.noteByteCountMax else {
        throw FormatError(.invalidValue, "an offer or request has a positive amount and a short note")
    }
}

/// Payee → payer: accepted (after the payee's approval) or declined.
public struct OfferReply: Hashable, Sendable, PeerMessageBody {
    /// Type byte 4.
    static let messageType: UInt8 = 4
    static let messageName = "reply"
    var peerMessage: PeerMessage { .reply(self) }

    public let offerID: OfferID
    /// Whether the payee accepted.
    public let accepted: Bool
    /// The size of the latest checkpoint of this payer the payee holds, or nil.
    public let heldCheckpointSize: UInt64?

    /// Makes a reply. The size comes from a held checkpoint (which covers at least entry 0) or from the
    /// decoder (which reads 0 as none), so a size of 0 is our bug and traps.
    public init(offerID: OfferID, accepted: Bool, heldCheckpointSize: UInt64?) {
        precondition(heldCheckpointSize != 0, "a reply's held checkpoint size is at least 1")
        self.offerID = offerID
        self.accepted = accepted
        self.heldCheckpointSize = heldCheckpointSize
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        writer.write(UInt8(accepted ? 1 : 2))
        writer.write(heldCheckpointSize ?? 0)
    }

    static func decode(from reader: inout ByteReader) throws -> OfferReply? {
        guard let id = reader.read(OfferID.self), let decision = reader.readUInt8(),
            let held = reader.readUInt64()
        else { return nil }
        guard decision == 1 || decision == 2 else {
            throw FormatError(.invalidValue, "reply decision \(decision) is not 1 (accept) or 2 (decline)")
        }
        return OfferReply(offerID: id, accepted: decision == 1, heldCheckpointSize: held == 0 ? nil : held)
    }
}

/// A signed measurement; the payer's also carries the consistency proof from the checkpoint size the payee
/// holds to the payer's `hello` checkpoint.
public struct MeasurementMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 5.
    static let messageType: UInt8 = 5
    static let messageName = "measurement"
    var peerMessage: PeerMessage { .measurement(self) }

    public let offerID: OfferID
    public let measurement: SignedMeasurement
    /// RFC 9162 consistency proof; nil in the payee's message, and in the payer's when the payee holds none.
    public let consistencyProof: [Digest32]?

    /// Makes the message. The decoder bounds a received proof and a store never makes a longer one than a
    /// u64-sized tree needs, so a longer proof is our bug and traps.
    public init(offerID: OfferID, measurement: SignedMeasurement, consistencyProof: [Digest32]?) {
        precondition((consistencyProof ?? []).count <= Merkle.proofHashCountMax, "a proof longer than any tree needs")
        self.offerID = offerID
        self.measurement = measurement
        self.consistencyProof = consistencyProof
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        measurement.encode(into: &writer)
        if let consistencyProof {
            writer.write(UInt8(1))
            writer.write(proof: consistencyProof)
        } else {
            writer.write(UInt8(0))
        }
    }

    static func decode(from reader: inout ByteReader) throws -> MeasurementMessage? {
        guard let id = reader.read(OfferID.self),
            let measurement = try SignedMeasurement.decode(from: &reader), let tag = reader.readUInt8()
        else { return nil }
        var proof: [Digest32]?
        switch tag {
        case 0: proof = nil
        case 1:
            guard let hashes = try reader.readProof() else { return nil }
            proof = hashes
        default: throw FormatError(.invalidValue, "consistency proof tag \(tag) is not 0 or 1")
        }
        return MeasurementMessage(offerID: id, measurement: measurement, consistencyProof: proof)
    }
}

/// Payee → payer: proof and limits are good for exactly this amount; the payee has persisted its ready
/// record.
public struct ReadyMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 6.
    static let messageType: UInt8 = 6
    static let messageName = "ready"
    var peerMessage: PeerMessage { .ready(self) }

    public let offerID: OfferID
    public let amount: AssetAmount

    public init(offerID: OfferID, amount: AssetAmount) {
        self.offerID = offerID
        self.amount = amount
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        amount.encode(into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> ReadyMessage? {
        guard let id = reader.read(OfferID.self), let amount = try AssetAmount.decode(from: &reader)
        else { return nil }
        return ReadyMessage(offerID: id, amount: amount)
    }
}

/// Payer → payee: the signed transfer and the spatial proof it names.
public struct TransferMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 7.
    static let messageType: UInt8 = 7
    static let messageName = "transfer"
    var peerMessage: PeerMessage { .transfer(self) }

    public let offerID: OfferID
    public let transfer: SignedTransfer
    public let spatialProof: SpatialProof

    public init(offerID: OfferID, transfer: SignedTransfer, spatialProof: SpatialProof) {
        self.offerID = offerID
        self.transfer = transfer
        self.spatialProof = spatialProof
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        transfer.encode(into: &writer)
        spatialProof.encode(into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> TransferMessage? {
        guard let id = reader.read(OfferID.self),
            let transfer = try SignedTransfer.decode(from: &reader), let proof = try SpatialProof.decode(from: &reader)
        else { return nil }
        return TransferMessage(offerID: id, transfer: transfer, spatialProof: proof)
    }
}

/// Payee → payer: the countersigned receipt.
public struct ReceiptMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 8.
    static let messageType: UInt8 = 8
    static let messageName = "receipt"
    var peerMessage: PeerMessage { .receipt(self) }

    public let offerID: OfferID
    public let receipt: SignedReceipt

    public init(offerID: OfferID, receipt: SignedReceipt) {
        self.offerID = offerID
        self.receipt = receipt
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        receipt.encode(into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> ReceiptMessage? {
        guard let id = reader.read(OfferID.self),
            let receipt = try SignedReceipt.decode(from: &reader)
        else { return nil }
        return ReceiptMessage(offerID: id, receipt: receipt)
    }
}

/// Payee → payer: the signed refusal of a validly signed transfer that failed a check.
public struct RefusalMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 9.
    static let messageType: UInt8 = 9
    static let messageName = "refusal"
    var peerMessage: PeerMessage { .refusal(self) }

    public let offerID: OfferID
    public let refusal: SignedRefusal

    public init(offerID: OfferID, refusal: SignedRefusal) {
        self.offerID = offerID
        self.refusal = refusal
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(offerID)
        refusal.encode(into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> RefusalMessage? {
        guard let id = reader.read(OfferID.self),
            let refusal = try SignedRefusal.decode(from: &reader)
        else { return nil }
        return RefusalMessage(offerID: id, refusal: refusal)
    }
}

/// Fork evidence, asked for by digest and handed over one piece per message.
public enum EvidenceMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 10.
    static let messageType: UInt8 = 10
    static let messageName = "evidence"
    var peerMessage: PeerMessage { .evidence(self) }

    /// "Send me these": digests taken from the other side's `hello`.
    case request([EvidenceDigest])
    /// One piece of evidence; the receiver verifies it offline before keeping it.
    case item(ForkEvidence)

    /// Type (b) evidence at its limits: two signed checkpoints (32,844 bytes each), two entry leaves
    /// (66,409) and two 65-hash proofs come to 202,686 bytes (200 KiB + 4 KiB bounds it), and evidence v2 adds
    /// the accused's key-event log: 2 + 1,024 events of at most 2 + 376 bytes each, 387,074 bytes (380 KiB
    /// bounds it). A log longer than evidence needs is still sent whole: a verifier needs its later rotations.
    public static let evidenceByteCountMax = 204_800 + 389_120

    func encode(into writer: inout ByteWriter) {
        switch self {
        case .request(let digests):
            precondition(digests.count <= PeerHello.evidenceDigestCountMax)
            writer.write(UInt8(1))
            writer.write(UInt8(digests.count))
            for digest in digests { writer.write(digest) }
        case .item(let evidence):
            writer.write(UInt8(2))
            writer.write(prefixed32: evidence.encoded, max: EvidenceMessage.evidenceByteCountMax)
        }
    }

    static func decode(from reader: inout ByteReader) throws -> EvidenceMessage? {
        guard let tag = reader.readUInt8() else { return nil }
        switch tag {
        case 1:
            guard let count = reader.readUInt8() else { return nil }
            guard Int(count) <= PeerHello.evidenceDigestCountMax else {
                throw FormatError(.fieldTooLong, "an evidence request names \(count) digests; at most 64")
            }
            var digests: [EvidenceDigest] = []
            for _ in 0..<count {
                guard let digest = reader.read(EvidenceDigest.self) else { return nil }
                digests.append(digest)
            }
            return .request(digests)
        case 2:
            guard let bytes = try reader.readPrefixed32(max: evidenceByteCountMax, field: "fork evidence") else {
                return nil
            }
            guard let evidence = try ForkEvidence.decode(bytes) else {
                throw FormatError(.invalidValue, "the fork evidence in an evidence message is truncated")
            }
            return .item(evidence)
        default: throw FormatError(.invalidValue, "evidence message kind \(tag) is not known")
        }
    }
}

/// Key-event logs, asked for by wallet id and sent one page at a time, so a log of any length up to
/// `KeyEventLog.eventCountMax` crosses the channel in bounded messages.
public enum KeyEventsMessage: Hashable, Sendable, PeerMessageBody {
    /// Type byte 11.
    static let messageType: UInt8 = 11
    static let messageName = "keyEvents"
    var peerMessage: PeerMessage { .keyEvents(self) }

    /// "Send me the page of this wallet's key-event log that starts at sequence `from`."
    case request(walletID: WalletID, from: UInt32)
    /// One page of a wallet's signed key events: sequences `from`, `from + 1`, … of a log `total` events long.
    case page(walletID: WalletID, from: UInt32, total: UInt32, events: [SignedKeyEvent])

    /// Events in one page (`PeerLimits.keyEventPageEventCountMax`).
    public static let pageEventCountMax = PeerLimits.keyEventPageEventCountMax
    /// A signed key event is at most 2 + 1024 + 1 + 80 bytes (its own encoding's limits).
    static let signedEventByteCountMax = 1107

    /// The page of `events` (a whole log) that starts at `from`; nil when `from` is past its end.
    public static func page(of events: [SignedKeyEvent], walletID: WalletID, from: UInt32) -> KeyEventsMessage? {
        guard Int(from) < events.count, events.count <= KeyEventLog.eventCountMax else { return nil }
        let end = min(Int(from) + pageEventCountMax, events.count)
        return .page(
            walletID: walletID, from: from, total: UInt32(events.count), events: Array(events[Int(from)..<end]))
    }

    func encode(into writer: inout ByteWriter) {
        switch self {
        case .request(let walletID, let from):
            writer.write(UInt8(1))
            writer.write(walletID)
            writer.write(from)
        case .page(let walletID, let from, let total, let events):
            precondition(!events.isEmpty && events.count <= KeyEventsMessage.pageEventCountMax)
            precondition(Int(total) <= KeyEventLog.eventCountMax && Int(from) + events.count <= Int(total))
            writer.write(UInt8(2))
            writer.write(walletID)
            writer.write(from)
            writer.write(total)
            writer.write(UInt8(events.count))
            for event in events {
                writer.write(prefixed16: event.encoded, max: KeyEventsMessage.signedEventByteCountMax)
            }
        }
    }

    static func decode(from reader: inout ByteReader) throws -> KeyEventsMessage? {
        guard let tag = reader.readUInt8() else { return nil }
        switch tag {
        case 1:
            guard let walletID = reader.read(WalletID.self), let from = reader.readUInt32() else { return nil }
            guard Int(from) < KeyEventLog.eventCountMax else {
                throw FormatError(
                    .invalidValue,
                    "a key-event request from sequence \(from); logs have at most \(KeyEventLog.eventCountMax)")
            }
            return .request(walletID: walletID, from: from)
        case 2:
            guard let walletID = reader.read(WalletID.self), let from = reader.readUInt32(),
                let total = reader.readUInt32(),
                let count = reader.readUInt8()
            else { return nil }
            guard count >= 1, Int(count) <= pageEventCountMax else {
                throw FormatError(.fieldTooLong, "a key-event page of \(count) events; 1 to \(pageEventCountMax)")
            }
            guard Int(total) <= KeyEventLog.eventCountMax, UInt64(from) + UInt64(count) <= UInt64(total) else {
                throw FormatError(
                    .invalidValue,
                    "a key-event page of events \(from)+\(count) of a \(total)-event log "
                        + "(at most \(KeyEventLog.eventCountMax))")
            }
            var events: [SignedKeyEvent] = []
            for index in 0..<Int(count) {
                guard let bytes = try reader.readPrefixed16(max: signedEventByteCountMax, field: "key event") else {
                    return nil
                }
                guard let event = try SignedKeyEvent.decode(bytes) else {
                    throw FormatError(.invalidValue, "a key event in a key-event page is truncated")
                }
                guard event.event.sequence == UInt64(from) + UInt64(index) else {
                    throw FormatError(
                        .invalidValue,
                        "a key-event page starting at \(from) holds event \(event.event.sequence) "
                            + "in place \(index)")
                }
                events.append(event)
            }
            return .page(walletID: walletID, from: from, total: total, events: events)
        default: throw FormatError(.invalidValue, "key-events message kind \(tag) is not known")
        }
    }
}

/// Why a session failed, as one side tells the other. Codes only: a peer's free text would be shown to a
/// person and could lie.
public enum PeerFailureReason: UInt8, Hashable, Sendable, CaseIterable {
    /// The person declined.
    case declined = 1
    /// The person withdrew the request or offer.
    case withdrawn = 2
    /// A wait ran out.
    case timeout = 3
    /// The payer's budget refused the payment (hard cap, or over budget without an override).
    case overBudget = 4
    /// The payer's balance is too small.
    case insufficientFunds = 5
    /// The farther median is over a metre.
    case tooFar = 6
    /// The two medians disagree.
    case distancesDisagree = 7
    /// This side could not range (too few samples, too wide a spread, a broken source).
    case rangingFailed = 8
    /// A measurement does not check: signature, nonce, keys, offer or channel.
    case measurementInvalid = 9
    /// `ready` or the transfer named another amount than the offer.
    case amountMismatch = 10
    /// The payer's `hello` checkpoint does not extend the one the payee holds.
    case checkpointInconsistent = 11
    /// A message arrived that the protocol does not allow here.
    case protocolViolation = 12
    /// A transfer's signature does not verify, or a retry matches no ready record.
    case transferInvalid = 13
    /// The token, the PIN or storage failed; nothing was recorded and the payment can be tried again.
    case localFailure = 14
    /// Simulated ranging where this side's policy does not allow it.
    case simulatedRangingRefused = 15
    /// The peer's key-event log was not given, does not hash to its wallet id, or does not show the hello's
    /// key in force at its checkpoint: nothing the peer signs in this session could be tied to its wallet.
    case peerUnproven = 16
    /// The payee holds proven fork evidence against the payer, found itself (types 1, 2, 6), or against the
    /// key the payer's `hello` uses (types 4, 5): no payment until the issuer's clearing settles it, or from
    /// that key at all.
    case peerBanned = 17
    /// The offer moves an asset whose issuer the payee does not trust (or, to an issuer, another issuer's
    /// asset): refused before `ready`, so nothing is debited.
    case untrustedAsset = 18
    /// The offer would take what the payee credited from this payer within its offline-limit window past the
    /// limit: refused before `ready`, so nothing is debited.
    case offlineLimitExceeded = 19
    /// To an issuer: the offer pays back more of its asset than it has outstanding (money nobody minted, or
    /// already paid back by others): refused before `ready`, so nothing is debited.
    case redemptionExceedsOutstanding = 20
    /// Till sessions only (docs/TILL.md): the payer's wallet refused before the offer, by its balance, its
    /// budget or its own policy (`--max-amount`, `--expect-payee`). A payer in till mode sends this in place
    /// of `overBudget` and `insufficientFunds`, so the till learns that the payer's wallet refused, not why.
    case refusedByPayerWallet = 21
    /// Till sessions only: another payer holds the till; sent in place of the till's `hello`.
    case tillBusy = 22
}

/// One side tells the other it stops, optionally naming the offer.
public struct PeerFailure: Hashable, Sendable, PeerMessageBody {
    /// Type byte 12.
    static let messageType: UInt8 = 12
    static let messageName = "failure"
    var peerMessage: PeerMessage { .failure(self) }

    public let offerID: OfferID?
    public let reason: PeerFailureReason

    public init(offerID: OfferID?, reason: PeerFailureReason) {
        self.offerID = offerID
        self.reason = reason
    }

    func encode(into writer: inout ByteWriter) {
        if let offerID {
            writer.write(UInt8(1))
            writer.write(offerID)
        } else {
            writer.write(UInt8(0))
        }
        writer.write(reason.rawValue)
    }

    static func decode(from reader: inout ByteReader) throws -> PeerFailure? {
        guard let tag = reader.readUInt8() else { return nil }
        var offerID: OfferID?
        switch tag {
        case 0: offerID = nil
        case 1:
            guard let id = reader.read(OfferID.self) else { return nil }
            offerID = id
        default: throw FormatError(.invalidValue, "failure offer tag \(tag) is not 0 or 1")
        }
        guard let code = reader.readUInt8() else { return nil }
        guard let reason = PeerFailureReason(rawValue: code) else {
            throw FormatError(.invalidValue, "failure reason \(code) is not known")
        }
        return PeerFailure(offerID: offerID, reason: reason)
    }
}

/// Strict UTF-8 text from a peer.
func decodeText(_ bytes: [UInt8], _ field: String) throws -> String {
    guard let text = String(validating: bytes, as: UTF8.self) else {
        throw FormatError(.invalidValue, "the \(field) is not valid UTF-8")
    }
    return text
}
