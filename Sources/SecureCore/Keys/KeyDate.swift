import SecureCrypto

/// When a wallet key made a signature: the key event that put the key in force (its sequence and ledger
/// position) and the size of the signer's ledger when it signed. Checkpoints carry the first two and are
/// their own size; receipts, refusals and measurements carry all three, so that "signed by a retired key
/// after its retirement" is decidable for them against the signer's key-event log. See docs/PROTOCOL.md,
/// "Which key signs what".
public struct KeyDate: Hashable, Sendable {
    /// The sequence of the key event that put the signing key in force.
    public let keySequence: UInt64
    /// That event's ledger position.
    public let keyEventPosition: UInt64
    /// How many entries the signer's ledger held when it signed: at least one more than the key event's
    /// position, since the event's own entry is the first one its key signs.
    public let ledgerSize: UInt64

    /// keySequence u64 ‖ keyEventPosition u64 ‖ ledgerSize u64.
    public static let encodedByteCount = 24

    /// A date; a ledger size that does not cover the key event is malformed.
    public init(keySequence: UInt64, keyEventPosition: UInt64, ledgerSize: UInt64) throws {
        guard ledgerSize > keyEventPosition else {
            throw FormatError(
                .invalidValue,
                "a signature dated at ledger size \(ledgerSize) cannot use a key "
                    + "that took effect at position \(keyEventPosition)")
        }
        self.keySequence = keySequence
        self.keyEventPosition = keyEventPosition
        self.ledgerSize = ledgerSize
    }

    /// The date of a signature made by the key that signed `checkpoint`, while the ledger was that size.
    public init(checkpoint: Checkpoint) {
        // A checkpoint's size always covers its key event (the checkpoint's initializer checks it).
        keySequence = checkpoint.keySequence
        keyEventPosition = checkpoint.keyEventPosition
        ledgerSize = checkpoint.size
    }

    /// Whether this date is the one of `checkpoint`'s key, at that checkpoint's size or later: what a
    /// statement made during a session must show against the signer's `hello` checkpoint.
    public func follows(_ checkpoint: Checkpoint) -> Bool {
        keySequence == checkpoint.keySequence && keyEventPosition == checkpoint.keyEventPosition
            && ledgerSize >= checkpoint.size
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(keySequence)
        writer.write(keyEventPosition)
        writer.write(ledgerSize)
    }

    static func decode(from reader: inout ByteReader) throws -> KeyDate? {
        guard let sequence = reader.readUInt64(), let position = reader.readUInt64(), let size = reader.readUInt64()
        else {
            return nil
        }
        return try KeyDate(keySequence: sequence, keyEventPosition: position, ledgerSize: size)
    }
}

/// A signed payload that says when its wallet key signed it.
public protocol DatedPayload: SignedPayload {
    /// When the signer's key signed it.
    var keyDate: KeyDate { get }
}

extension KeyEventLog {
    /// Where a signature by `key` dated `date` stands against the log. The signature is the caller's to check.
    public func check(key: P256.PublicKey, date: KeyDate) -> KeyUse {
        keyUse(key: key, sequence: date.keySequence, eventPosition: date.keyEventPosition, size: date.ledgerSize)
    }

    /// Where a dated statement stands: `.unknown` unless its signature verifies, then its date against the log.
    public func check(_ statement: DatedStatement) -> KeyUse {
        guard statement.isSignatureValid else { return .unknown }
        return check(key: statement.signerKey, date: statement.keyDate)
    }

    /// Fork evidence (type 5) when `statement` was signed by a key of this log after its retirement.
    public func retiredKeyEvidence(_ statement: DatedStatement) -> ForkEvidence? {
        guard case .retired(let rotation) = check(statement) else { return nil }
        let retiredEvent = events[Int(statement.keyDate.keySequence)]
        return ForkEvidence(
            .retiredKeyStatement(
                RetiredKeyStatement(retiredEvent: retiredEvent, rotation: rotation, statement: statement)),
            log: self)
    }
}

/// A signed statement that carries a key date: the kinds fork evidence of type 5 can hold.
public enum DatedStatement: Hashable, Sendable {
    case receipt(SignedReceipt)
    case refusal(SignedRefusal)
    case measurement(SignedMeasurement)
    /// An issuer's voucher: its key date is the issuer's ledger size at the `mint` entry.
    case voucher(SignedVoucher)

    /// The key that signed it.
    public var signerKey: P256.PublicKey {
        switch self {
        case .receipt(let signed): signed.payload.signerKey
        case .refusal(let signed): signed.payload.signerKey
        case .measurement(let signed): signed.payload.signerKey
        case .voucher(let signed): signed.payload.signerKey
        }
    }

    /// When it was signed.
    public var keyDate: KeyDate {
        switch self {
        case .receipt(let signed): signed.payload.keyDate
        case .refusal(let signed): signed.payload.keyDate
        case .measurement(let signed): signed.payload.keyDate
        case .voucher(let signed): signed.payload.keyDate
        }
    }

    /// Whether the signature verifies under the statement's own label and key.
    public var isSignatureValid: Bool {
        switch self {
        case .receipt(let signed): signed.isSignatureValid
        case .refusal(let signed): signed.isSignatureValid
        case .measurement(let signed): signed.isSignatureValid
        case .voucher(let signed): signed.isSignatureValid
        }
    }

    /// kind u8 (1 receipt, 2 refusal, 3 measurement, 4 voucher) ‖ the signed statement.
    func encode(into writer: inout ByteWriter) {
        switch self {
        case .receipt(let signed):
            writer.write(UInt8(1))
            signed.encode(into: &writer)
        case .refusal(let signed):
            writer.write(UInt8(2))
            signed.encode(into: &writer)
        case .measurement(let signed):
            writer.write(UInt8(3))
            signed.encode(into: &writer)
        case .voucher(let signed):
            writer.write(UInt8(4))
            signed.encode(into: &writer)
        }
    }

    static func decode(from reader: inout ByteReader) throws -> DatedStatement? {
        guard let kind = reader.readUInt8() else { return nil }
        switch kind {
        case 1: return try SignedReceipt.decode(from: &reader).map { .receipt($0) }
        case 2: return try SignedRefusal.decode(from: &reader).map { .refusal($0) }
        case 3: return try SignedMeasurement.decode(from: &reader).map { .measurement($0) }
        case 4: return try SignedVoucher.decode(from: &reader).map { .voucher($0) }
        default: throw FormatError(.invalidValue, "dated statement kind \(kind) is not known")
        }
    }
}

/// A receipt, refusal, measurement or voucher signed by a retired key after its retirement, with the
/// rotation that retired it: fork evidence of type 5, checkable alone like type 4.
public struct RetiredKeyStatement: Hashable, Sendable, RetiredKeyEvidence {
    /// The event that put the retired key in force.
    public let retiredEvent: SignedKeyEvent
    /// The rotation that retired it.
    public let rotation: SignedKeyEvent
    /// The late statement.
    public let statement: DatedStatement

    public init(retiredEvent: SignedKeyEvent, rotation: SignedKeyEvent, statement: DatedStatement) {
        self.retiredEvent = retiredEvent
        self.rotation = rotation
        self.statement = statement
    }

    /// Whether it proves a signature by a key after its retirement: R and N validly signed and chained,
    /// N's key the one R committed to, the statement signed by R's key, dated with R's sequence and
    /// position, at a ledger size past N's position.
    public var isProven: Bool {
        provesRetired(statement.signerKey, signedAt: statement.keyDate) && statement.isSignatureValid
    }
}

/// Fork evidence that a key signed after its retirement: the event that put it in force and the rotation
/// that retired it, beside the late signature.
protocol RetiredKeyEvidence {
    /// The event that put the retired key in force.
    var retiredEvent: SignedKeyEvent { get }
    /// The rotation that retired it.
    var rotation: SignedKeyEvent { get }
}

extension RetiredKeyEvidence {
    /// Whether a signature by `key` dated `date` came after the key's retirement: R and N validly signed
    /// and chained, N's key the one R committed to (or N a recovery rotation signed by R's recovery key), `key`
    /// R's key, `date` R's sequence and position, at a
    /// ledger size past N's position. The late signature itself is the caller's to check. N follows R directly,
    /// or, with clearing delegations between them (an issuer's log), later: that N is then the next key-bearing
    /// event after R is the log's to show (`ForkEvidence.checkRetirement`).
    func provesRetired(_ key: P256.PublicKey, signedAt date: KeyDate) -> Bool {
        let retired = retiredEvent.event
        let next = rotation.event
        let chained =
            retired.sequence < UInt64.max && next.sequence == retired.sequence + 1
            ? next.previousEvent == retired.digest : next.sequence > retired.sequence
        return retiredEvent.verify() && rotation.verify() && chained
            && retired.kind.isKeyBearing && next.kind == .rotation
            && (next.isRecovery
                ? rotation.verifyRecovery(committedTo: retired.recoveryCommitment)
                : next.signingKey.fingerprintDigest == retired.nextKeyDigest)
            && key == retired.signingKey && date.keySequence == retired.sequence
            && date.keyEventPosition == retired.ledgerPosition && date.ledgerSize > next.ledgerPosition
    }
}
