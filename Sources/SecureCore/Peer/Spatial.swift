import SecureCrypto

/// The session nonce N = SHA-256(τ ‖ transcript_hash ‖ c_payer ‖ c_payee), with τ the ASCII label
/// "secure-session-nonce-v1" and a zero byte. Neither wallet chooses it alone, and the channel's transcript
/// hash ties it to one link, so a relay cannot reuse one nonce on two links. See docs/PROTOCOL.md,
/// "Spatial proof".
public enum SessionNonce {
    /// τ: the label and its terminating zero byte.
    public static let label: [UInt8] = DomainLabel.bytes("secure-session-nonce-v1")
    /// Each wallet contributes 16 random bytes: 128 bits from either side alone make N unpredictable.
    public static let contributionByteCount = NonceContribution.byteCount

    /// N for a session.
    public static func derive(
        transcriptHash: Digest32, payerContribution: NonceContribution, payeeContribution: NonceContribution
    ) -> Digest32 {
        Digest32(of: label + transcriptHash.bytes + payerContribution.bytes + payeeContribution.bytes)
    }
}

/// Where ranging samples came from. Recorded in the signed summary, so a verifier can refuse a source.
public enum RangingSource: UInt8, Hashable, Sendable, CaseIterable {
    /// Seeded samples around a chosen distance. Accepted only where policy allows simulated ranging.
    case simulated = 1
    /// Samples read line by line from a file, a pipe or a serial device (a UWB board).
    case external = 2
}

/// An error in ranging: too few samples, too wide a spread, or an unreadable sample line.
public typealias RangingError = CodedFailure<RangingErrorCode>

/// Stable codes for `RangingError`.
public enum RangingErrorCode: FailureCode, CaseNameCode {
    case tooFewSamples
    case tooManySamples
    case spreadTooWide
    case readingOutOfRange
    case malformedLine

    /// Ranging failures exit 1.
    public var kind: FailureKind { .failure }
}

/// One wallet's ranging reduced to integers: the median distance and the p10–p90 spread, in millimetres.
public struct RangingSummary: Hashable, Sendable {
    /// The median (the nearest-rank 50th percentile) in millimetres.
    public let medianMillimetres: UInt32
    /// p90 − p10 (nearest rank) in millimetres.
    public let spreadMillimetres: UInt32
    /// How many samples were summarized.
    public let sampleCount: UInt16

    /// UWB ranging runs at a few to tens of hertz; 10 samples is under two seconds of it and enough for the
    /// 10th and 90th percentiles to be distinct samples rather than the extremes.
    public static let sampleCountMin = 10
    /// A few minutes of ranging at 20 Hz; more is a runaway source, and the bound keeps sorting cheap.
    public static let sampleCountMax = 4096
    /// UWB is accurate to about ±10 cm; a p10–p90 spread above 50 cm means the phones moved or the radio
    /// saw reflections, and the median would not be a distance worth signing.
    public static let spreadMillimetresMax: UInt32 = 500
    /// UWB reaches about 50 m indoors; a reading over 100 m is a broken source, and the bound keeps the
    /// acceptance arithmetic small.
    public static let readingMillimetresMax: UInt32 = 100_000

    /// Summarizes samples in millimetres, refusing too few or too many, a reading out of range, or too wide
    /// a spread.
    public init(samples: [UInt32]) throws {
        guard samples.count >= RangingSummary.sampleCountMin else {
            throw RangingError(
                .tooFewSamples,
                "only \(samples.count) ranging samples; at least \(RangingSummary.sampleCountMin) are needed")
        }
        guard samples.count <= RangingSummary.sampleCountMax else {
            throw RangingError(.tooManySamples, "more than \(RangingSummary.sampleCountMax) ranging samples")
        }
        guard samples.allSatisfy({ $0 <= RangingSummary.readingMillimetresMax }) else {
            throw RangingError(
                .readingOutOfRange, "a ranging reading exceeds \(RangingSummary.readingMillimetresMax) mm")
        }
        let sorted = samples.sorted()
        let median = RangingSummary.percentile(50, of: sorted)
        let spread = RangingSummary.percentile(90, of: sorted) - RangingSummary.percentile(10, of: sorted)
        try self.init(medianMillimetres: median, spreadMillimetres: spread, sampleCount: UInt16(samples.count))
    }

    /// A summary as signed by a peer, checked against the same limits.
    public init(medianMillimetres: UInt32, spreadMillimetres: UInt32, sampleCount: UInt16) throws {
        guard Int(sampleCount) >= RangingSummary.sampleCountMin else {
            throw RangingError(
                .tooFewSamples,
                "a summary of \(sampleCount) samples; at least \(RangingSummary.sampleCountMin) are needed")
        }
        guard Int(sampleCount) <= RangingSummary.sampleCountMax else {
            throw RangingError(.tooManySamples, "a summary of more than \(RangingSummary.sampleCountMax) samples")
        }
        guard medianMillimetres <= RangingSummary.readingMillimetresMax else {
            throw RangingError(.readingOutOfRange, "a median over \(RangingSummary.readingMillimetresMax) mm")
        }
        guard spreadMillimetres <= RangingSummary.spreadMillimetresMax else {
            throw RangingError(
                .spreadTooWide,
                "the p10–p90 spread of \(spreadMillimetres) mm exceeds \(RangingSummary.spreadMillimetresMax) mm; hold still"
            )
        }
        self.medianMillimetres = medianMillimetres
        self.spreadMillimetres = spreadMillimetres
        self.sampleCount = sampleCount
    }

    /// The nearest-rank percentile: the value at rank ⌈p·n/100⌉ (1-based) of the sorted samples.
    static func percentile(_ p: Int, of sorted: [UInt32]) -> UInt32 {
        let rank = (p * sorted.count + 99) / 100
        return sorted[max(rank, 1) - 1]
    }
}

/// The seed's acceptance rule in integer millimetres: with d_far = max(d_A, d_B), accepted only if
/// d_far ≤ 1000 and 5·|d_A − d_B| ≤ max(1250, d_far) — that is d_far ≤ 100 cm and
/// |d_A − d_B| ≤ max(25 cm, 0.2·d_far).
public enum ProximityRule {
    /// 1 m: the seed's "within a metre".
    public static let distanceMillimetresMax: Int64 = 1000
    /// 25 cm, times 5: the disagreement allowed at any distance.
    public static let disagreementFloorTimesFive: Int64 = 1250

    /// The verdict for two medians.
    public static func evaluate(_ a: UInt32, _ b: UInt32) -> ProximityVerdict {
        let (da, db) = (Int64(a), Int64(b))
        let far = max(da, db)
        guard far <= distanceMillimetresMax else { return .tooFar(millimetres: UInt32(far)) }
        guard 5 * abs(da - db) <= max(disagreementFloorTimesFive, far) else { return .disagree(a, b) }
        return .near(millimetres: UInt32(far))
    }
}

/// What the acceptance rule says about two medians.
public enum ProximityVerdict: Hashable, Sendable {
    /// Within the rule; the farther median.
    case near(millimetres: UInt32)
    /// The farther median is over a metre.
    case tooFar(millimetres: UInt32)
    /// The medians disagree by more than the rule allows.
    case disagree(UInt32, UInt32)
}

/// Which side of a payment a wallet is on.
public enum PeerRole: UInt8, Hashable, Sendable {
    case payer = 1
    case payee = 2
}

/// One wallet's signed distance claim: its summary, bound to the session nonce, the offer, both wallet
/// keys in their roles, the ranging source and the channel, dated by the signer's key event and ledger
/// size (its `hello` checkpoint's). Label `secure-measurement-v1`.
public struct Measurement: DatedPayload {
    /// The session nonce N.
    public let nonce: Digest32
    /// The offer this measurement is for.
    public let offerID: OfferID
    /// Which side signed: the signer key is the payer key or the payee key accordingly.
    public let signerRole: PeerRole
    /// The payer's wallet key.
    public let payerKey: P256.PublicKey
    /// The payee's wallet key.
    public let payeeKey: P256.PublicKey
    /// When the signer's key signed: the date of the signer's `hello` checkpoint.
    public let keyDate: KeyDate
    /// The summary.
    public let summary: RangingSummary
    /// Where the samples came from.
    public let source: RangingSource
    /// The channel binding of the session.
    public let channelBinding: [UInt8]

    /// 2 since measurements carry their key date.
    public static let encodingVersion: UInt8 = 2
    public static let signatureLabel = SignatureLabel("secure-measurement-v1")
    /// 1 + 32 + 16 + 1 + 65 + 65 + 24 + 10 + 1 + 65 = 280 bytes at most.
    public static let encodedByteCountMax = 280

    /// Makes a measurement. The types fix the nonce's length; the channel binding comes from a session
    /// context or a decoder, which both bound it, so a longer one is our bug and traps.
    public init(
        nonce: Digest32, offerID: OfferID, signerRole: PeerRole, payerKey: P256.PublicKey, payeeKey: P256.PublicKey,
        keyDate: KeyDate, summary: RangingSummary, source: RangingSource, channelBinding: [UInt8]
    ) {
        precondition(
            channelBinding.count <= TransferOrder.channelBindingByteCountMax, "a channel binding over the limit")
        self.nonce = nonce
        self.offerID = offerID
        self.signerRole = signerRole
        self.payerKey = payerKey
        self.payeeKey = payeeKey
        self.keyDate = keyDate
        self.summary = summary
        self.source = source
        self.channelBinding = channelBinding
    }

    public var signerKey: P256.PublicKey {
        switch signerRole {
        case .payer: payerKey
        case .payee: payeeKey
        }
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 280)
        writer.write(Measurement.encodingVersion)
        writer.write(nonce)
        writer.write(offerID)
        writer.write(signerRole.rawValue)
        writer.write(fixed: payerKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(fixed: payeeKey.x963, count: P256.uncompressedPointByteCount)
        keyDate.encode(into: &writer)
        writer.write(summary.medianMillimetres)
        writer.write(summary.spreadMillimetres)
        writer.write(summary.sampleCount)
        writer.write(source.rawValue)
        writer.write(prefixed8: channelBinding, max: TransferOrder.channelBindingByteCountMax)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Measurement? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "measurement") else { return nil }
        guard let nonce = reader.read(Digest32.self), let offerID = reader.read(OfferID.self),
            let roleByte = reader.readUInt8(), let payer = reader.readFixed(P256.uncompressedPointByteCount),
            let payee = reader.readFixed(P256.uncompressedPointByteCount),
            let keyDate = try KeyDate.decode(from: &reader),
            let median = reader.readUInt32(),
            let spread = reader.readUInt32(), let count = reader.readUInt16(), let sourceByte = reader.readUInt8(),
            let binding = try reader.readPrefixed8(
                max: TransferOrder.channelBindingByteCountMax, field: "channel binding")
        else { return nil }
        try reader.expectEnd("measurement")
        guard let role = PeerRole(rawValue: roleByte) else {
            throw FormatError(.invalidValue, "measurement role \(roleByte) is not known")
        }
        guard let source = RangingSource(rawValue: sourceByte) else {
            throw FormatError(.invalidValue, "ranging source \(sourceByte) is not known")
        }
        let summary: RangingSummary
        do {
            summary = try RangingSummary(medianMillimetres: median, spreadMillimetres: spread, sampleCount: count)
        } catch let error as RangingError {
            throw FormatError(.invalidValue, "the signed summary breaks a limit: \(error.message)")
        }
        return Measurement(
            nonce: nonce, offerID: offerID, signerRole: role, payerKey: try decodeKey(payer, "payer key"),
            payeeKey: try decodeKey(payee, "payee key"), keyDate: keyDate, summary: summary, source: source,
            channelBinding: binding)
    }

    /// Signs the measurement with the signer's wallet key.
    public func sign(with signer: MessageSigner) throws -> SignedMeasurement {
        try SignedMeasurement(signing: self, with: signer)
    }
}

/// A measurement with its signer's signature.
public typealias SignedMeasurement = SignedStatement<Measurement>

/// What a verifier of spatial proofs allows.
public struct RangingPolicy: Hashable, Sendable {
    /// `--allow-simulated-ranging`: accept `simulated` sources. Off by default, and shown loudly when on:
    /// the seed once accepted a simulator's 0 m reading in a release build.
    public var allowsSimulated: Bool

    public init(allowsSimulated: Bool = false) { self.allowsSimulated = allowsSimulated }
}

/// The session facts every measurement of a payment must carry.
public struct MeasurementContext: Hashable, Sendable {
    public let nonce: Digest32
    public let offerID: OfferID
    public let payerKey: P256.PublicKey
    public let payeeKey: P256.PublicKey
    /// The payer's key date: its `hello` checkpoint's key event and size.
    public let payerDate: KeyDate
    /// The payee's key date, from its `hello` checkpoint likewise.
    public let payeeDate: KeyDate
    public let channelBinding: [UInt8]

    public init(
        nonce: Digest32, offerID: OfferID, payerKey: P256.PublicKey, payeeKey: P256.PublicKey,
        payerDate: KeyDate, payeeDate: KeyDate, channelBinding: [UInt8]
    ) {
        self.nonce = nonce
        self.offerID = offerID
        self.payerKey = payerKey
        self.payeeKey = payeeKey
        self.payerDate = payerDate
        self.payeeDate = payeeDate
        self.channelBinding = channelBinding
    }

    /// The key date a measurement of `role` must carry.
    public func date(of role: PeerRole) -> KeyDate {
        switch role {
        case .payer: payerDate
        case .payee: payeeDate
        }
    }

    /// This wallet's measurement for the context.
    public func measurement(role: PeerRole, summary: RangingSummary, source: RangingSource) -> Measurement {
        Measurement(
            nonce: nonce, offerID: offerID, signerRole: role, payerKey: payerKey, payeeKey: payeeKey,
            keyDate: date(of: role), summary: summary, source: source, channelBinding: channelBinding)
    }
}

/// Why a measurement or spatial proof is refused.
public enum SpatialRefusal: Hashable, Sendable, CustomStringConvertible {
    /// "simulatedNotAllowed (payee)": the case and whose measurement, never a Swift type dump.
    public var description: String {
        guard let child = Mirror(reflecting: self).children.first, let label = child.label else {
            return String(describing: Mirror(reflecting: self).subjectType)
        }
        return "\(label) (\(child.value))"
    }

    /// A measurement's signature does not verify under the key of its role.
    case badSignature(PeerRole)
    /// A measurement is for another session nonce (e.g. replayed from an older session).
    case wrongNonce(PeerRole)
    /// A measurement names other keys or other roles than the payment's (e.g. the keys swapped).
    case keysMismatch(PeerRole)
    /// A measurement is for another offer or channel.
    case wrongOffer(PeerRole)
    /// A measurement's key date is not its signer's `hello` checkpoint's (key event and ledger size).
    case wrongDate(PeerRole)
    /// A simulated source where policy does not allow one.
    case simulatedNotAllowed(PeerRole)
    /// The farther median is over a metre.
    case tooFar(millimetres: UInt32)
    /// The medians disagree by more than the rule allows.
    case disagree(payer: UInt32, payee: UInt32)
}

/// Both wallets' signed measurements: the proof that the two were within a metre of each other.
public struct SpatialProof: Hashable, Sendable {
    /// The payer's signed measurement.
    public let payer: SignedMeasurement
    /// The payee's signed measurement.
    public let payee: SignedMeasurement

    public static let encodingVersion: UInt8 = 1
    /// Two signed measurements of at most 1 + 4 + 256 + 1 + 72 bytes each, and the version byte.
    public static let encodedByteCountMax = 1 + 2 * (1 + 4 + Measurement.encodedByteCountMax + 1 + 72)

    public init(payer: SignedMeasurement, payee: SignedMeasurement) {
        self.payer = payer
        self.payee = payee
    }

    /// version u8 ‖ signed payer measurement ‖ signed payee measurement.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 700)
        encode(into: &writer)
        return writer.bytes
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(SpatialProof.encodingVersion)
        payer.encode(into: &writer)
        payee.encode(into: &writer)
    }

    /// SHA-256 of the encoding: what a transfer order names.
    public var digest: Digest32 { Digest32(of: encoded) }

    public static func decode(_ bytes: [UInt8]) throws -> SpatialProof? {
        var reader = ByteReader(bytes)
        guard let proof = try decode(from: &reader) else { return nil }
        try reader.expectEnd("spatial proof")
        return proof
    }

    static func decode(from reader: inout ByteReader) throws -> SpatialProof? {
        guard try reader.readVersion(encodingVersion, of: "spatial proof") else { return nil }
        guard let payer = try SignedMeasurement.decode(from: &reader),
            let payee = try SignedMeasurement.decode(from: &reader)
        else { return nil }
        return SpatialProof(payer: payer, payee: payee)
    }

    /// Checks one measurement against the context and policy, or names why it is refused.
    public static func check(
        _ signed: SignedMeasurement, role: PeerRole, context: MeasurementContext,
        policy: RangingPolicy
    ) -> SpatialRefusal? {
        let measurement = signed.payload
        guard measurement.signerRole == role, measurement.payerKey == context.payerKey,
            measurement.payeeKey == context.payeeKey
        else { return .keysMismatch(role) }
        guard signed.isSignatureValid else { return .badSignature(role) }
        guard measurement.nonce == context.nonce else { return .wrongNonce(role) }
        guard measurement.offerID == context.offerID, measurement.channelBinding == context.channelBinding else {
            return .wrongOffer(role)
        }
        guard measurement.keyDate == context.date(of: role) else { return .wrongDate(role) }
        guard measurement.source != .simulated || policy.allowsSimulated else { return .simulatedNotAllowed(role) }
        return nil
    }

    /// The proof's verdict: both measurements check, then the acceptance rule. Returns the farther median
    /// when accepted.
    public func verify(context: MeasurementContext, policy: RangingPolicy) -> Result<UInt32, SpatialRefusalError> {
        for (signed, role) in [(payer, PeerRole.payer), (payee, .payee)] {
            if let refusal = SpatialProof.check(signed, role: role, context: context, policy: policy) {
                return .failure(SpatialRefusalError(refusal))
            }
        }
        let a = payer.payload.summary.medianMillimetres
        let b = payee.payload.summary.medianMillimetres
        switch ProximityRule.evaluate(a, b) {
        case .near(let far): return .success(far)
        case .tooFar(let far): return .failure(SpatialRefusalError(.tooFar(millimetres: far)))
        case .disagree: return .failure(SpatialRefusalError(.disagree(payer: a, payee: b)))
        }
    }
}

/// A spatial refusal as an error value, for `Result`.
public struct SpatialRefusalError: Error, Hashable, Sendable {
    public let refusal: SpatialRefusal
    public init(_ refusal: SpatialRefusal) { self.refusal = refusal }
}

/// A source of ranging samples in millimetres. SecurePeer reads `external` sources (files, pipes, serial
/// devices) with `ExternalRangingParser`; `SimulatedRanging` is pure.
public protocol RangingSampleSource {
    /// What the signed summary records as the source.
    var source: RangingSource { get }
    /// The next `count` samples, fewer if the source ran dry.
    mutating func samples(count: Int) throws -> [UInt32]
}

/// Seeded samples around a chosen distance: uniform in [distance − jitter, distance + jitter], never below
/// zero. The same seed gives the same samples. Its summaries say `simulated`, which verifiers refuse unless
/// their policy allows it.
public struct SimulatedRanging: RangingSampleSource {
    public var source: RangingSource { .simulated }
    /// The distance the samples cluster around, in millimetres.
    public let distanceMillimetres: UInt32
    /// The largest deviation from it, in millimetres.
    public let jitterMillimetres: UInt32
    /// Simulated noise; the same seed gives the same samples.
    private var random: SeededRandom

    public init(seed: UInt64, distanceMillimetres: UInt32, jitterMillimetres: UInt32 = 30) {
        random = SeededRandom(seed: seed)
        self.distanceMillimetres = min(distanceMillimetres, RangingSummary.readingMillimetresMax)
        self.jitterMillimetres = jitterMillimetres
    }

    public mutating func samples(count: Int) -> [UInt32] {
        (0..<max(count, 0)).map { _ in
            let width = UInt64(jitterMillimetres) * 2 + 1
            let offset = Int64(random.next() % width) - Int64(jitterMillimetres)
            let value = Int64(distanceMillimetres) + offset
            return UInt32(min(max(value, 0), Int64(RangingSummary.readingMillimetresMax)))
        }
    }
}

/// Parses the `external` ranging line format: one reading per line, a decimal integer of millimetres
/// (0 to 100000, at most 6 digits, no sign, no decimal point), optionally surrounded by spaces or tabs;
/// `#` starts a comment that runs to the end of the line; blank and comment-only lines are skipped; lines
/// end in LF, optionally preceded by CR. See docs/PROTOCOL.md, "Spatial proof".
public enum ExternalRangingParser {
    /// A reading is at most 6 digits; 256 bytes leaves room for a comment and bounds what a device can
    /// make us buffer per line.
    public static let lineByteCountMax = 256

    /// The reading on one line (without its LF), nil for a blank or comment line; throws when malformed.
    public static func parse(line: some StringProtocol) throws -> UInt32? { try parse(lineBytes: Array(line.utf8)) }

    /// The reading on one line given as bytes (without its LF).
    public static func parse(lineBytes bytes: [UInt8]) throws -> UInt32? {
        guard bytes.count <= lineByteCountMax else {
            throw RangingError(.malformedLine, "a ranging line is longer than \(lineByteCountMax) bytes")
        }
        var content = bytes.prefix { $0 != UInt8(ascii: "#") }
        if bytes.last == UInt8(ascii: "\r"), content.count == bytes.count { content = content.dropLast() }
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        let trimmed = content.drop(while: blank).reversed().drop(while: blank).reversed()
        guard !trimmed.isEmpty else { return nil }
        guard trimmed.count <= 6, trimmed.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw RangingError(
                .malformedLine,
                "a ranging line holds one whole number of millimetres, not \"\(String(decoding: trimmed, as: UTF8.self))\""
            )
        }
        let value = trimmed.reduce(UInt32(0)) { $0 * 10 + UInt32($1 - UInt8(ascii: "0")) }
        guard value <= RangingSummary.readingMillimetresMax else {
            throw RangingError(
                .readingOutOfRange, "a reading of \(value) mm exceeds \(RangingSummary.readingMillimetresMax) mm")
        }
        return value
    }

    /// Every reading in a text (lines separated by LF).
    public static func parse(text: String) throws -> [UInt32] {
        // Split bytes, not Characters: Swift reads CR LF as one Character.
        try text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .compactMap { try parse(lineBytes: Array($0)) }
    }
}
