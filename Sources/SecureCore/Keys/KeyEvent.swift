import SecureCrypto

/// One event of a wallet's key-event log. The design follows KERI's pre-rotation: each event names the
/// signing key in force and commits to the SHA-256 of the *next* key's SubjectPublicKeyInfo, so a thief
/// who steals the current key cannot rotate to a key of their own. The inception event (sequence 0) is
/// written at wallet init; its SHA-256 is the wallet id. The format is in docs/PROTOCOL.md ("Key events").
public struct KeyEvent: Hashable, Sendable {
    /// The signing label of key events.
    public static let label = SignatureLabel("secure-key-event-v1")
    /// The label of the previous key's countersignature on a rotation.
    public static let countersignatureLabel = SignatureLabel("secure-key-event-countersignature-v1")
    static let encodingVersion: UInt8 = 1

    /// Inception or rotation. An issuer's wallet is incepted as one, and stays one: its ledger records the
    /// vouchers it mints as liabilities and never holds spendable money.
    public enum Kind: UInt8, Sendable {
        case inception = 0
        case rotation = 1
        case issuerInception = 2

        /// Whether this kind starts a log (sequence 0).
        public var isInception: Bool { self != .rotation }
    }

    public let kind: Kind
    /// 0 for inception, then 1, 2, … for each rotation.
    public let sequence: UInt64
    /// SHA-256 of the previous event's encoding; 32 zero bytes for inception.
    public let previousEvent: KeyEventDigest
    /// The signing key this event puts in force.
    public let signingKey: P256.PublicKey
    /// SHA-256 of the next signing key's SubjectPublicKeyInfo.
    public let nextKeyDigest: Digest32
    /// The key-agreement key the database key is wrapped to, and peers may encrypt to.
    public let agreementKey: P256.PublicKey
    /// The ledger position from which this event's key signs.
    public let ledgerPosition: UInt64

    /// The inception event of a new wallet, or of a new issuer when `issuer` is set.
    public static func inception(
        signingKey: P256.PublicKey, nextKey: P256.PublicKey, agreementKey: P256.PublicKey, issuer: Bool = false
    ) -> KeyEvent {
        KeyEvent(
            kind: issuer ? .issuerInception : .inception, sequence: 0, previousEvent: .beforeInception,
            signingKey: signingKey,
            nextKeyDigest: Digest32(of: nextKey.spki), agreementKey: agreementKey, ledgerPosition: 0)
    }

    /// A rotation after `previous`: it puts `signingKey` in force (which must be the key `previous`
    /// committed to) and commits to `nextKey`. `ledgerPosition` is the position of the ledger entry that
    /// records this event: that entry's checkpoint is the first the new key signs.
    public static func rotation(
        after previous: KeyEvent, signingKey: P256.PublicKey, nextKey: P256.PublicKey,
        agreementKey: P256.PublicKey, ledgerPosition: UInt64
    ) -> KeyEvent {
        KeyEvent(
            kind: .rotation, sequence: previous.sequence + 1, previousEvent: previous.digest, signingKey: signingKey,
            nextKeyDigest: Digest32(of: nextKey.spki), agreementKey: agreementKey, ledgerPosition: ledgerPosition)
    }

    /// The canonical encoding that is hashed and signed.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.write(Self.encodingVersion)
        writer.write(kind.rawValue)
        writer.write(sequence)
        writer.write(previousEvent)
        writer.write(fixed: signingKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(nextKeyDigest)
        writer.write(fixed: agreementKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(ledgerPosition)
        return writer.bytes
    }

    /// SHA-256 of the encoding. For the inception event this is the wallet id.
    public var digest: KeyEventDigest { KeyEventDigest(of: encoded) }

    /// Decodes an event: nil on short input, a thrown error on malformed input.
    public static func decode(_ bytes: [UInt8]) throws -> KeyEvent? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "key event") else { return nil }
        guard let kindByte = reader.readUInt8() else { return nil }
        guard let kind = Kind(rawValue: kindByte) else {
            throw FormatError(.invalidValue, "key event kind \(kindByte) is unknown")
        }
        guard let sequence = reader.readUInt64(), let previous = reader.read(KeyEventDigest.self),
            let signing = reader.readFixed(P256.uncompressedPointByteCount), let next = reader.read(Digest32.self),
            let agreement = reader.readFixed(P256.uncompressedPointByteCount), let position = reader.readUInt64()
        else {
            return nil
        }
        try reader.expectEnd("key event")
        guard kind.isInception == (sequence == 0) else {
            throw FormatError(.invalidValue, "a key event's kind does not match its sequence number")
        }
        do {
            return KeyEvent(
                kind: kind, sequence: sequence, previousEvent: previous, signingKey: try P256.PublicKey(x963: signing),
                nextKeyDigest: next, agreementKey: try P256.PublicKey(x963: agreement), ledgerPosition: position)
        } catch {
            throw FormatError(.invalidValue, "a key event names a key that is not a valid P-256 point")
        }
    }
}

/// A key event with the signature of the key it puts in force (proof of possession) and, for a rotation
/// made while the previous key was still at hand, that previous key's countersignature.
public struct SignedKeyEvent: Hashable, Sendable {
    public let event: KeyEvent
    public let signature: ECDSASignature
    /// The previous signing key's signature over the same encoding under `KeyEvent.countersignatureLabel`;
    /// nil for inception and for a rotation made after the previous key was lost.
    public let countersignature: ECDSASignature?

    /// Signs an event with the key it names and, when given, countersigns it with the previous key.
    /// Each is a separate token signature (and PIN login for always-authenticate keys).
    public init(_ event: KeyEvent, signer: MessageSigner, previous: MessageSigner? = nil) throws {
        precondition(signer.publicKey == event.signingKey, "a key event is signed by the key it puts in force")
        precondition(previous == nil || event.kind == .rotation, "only a rotation is countersigned")
        self.event = event
        signature = try signer.sign(event.encoded, label: KeyEvent.label)
        countersignature = try previous?.sign(event.encoded, label: KeyEvent.countersignatureLabel)
    }

    /// An event and signatures read from storage or a peer; `verify()` must pass before it is trusted.
    public init(event: KeyEvent, signature: ECDSASignature, countersignature: ECDSASignature? = nil) {
        self.event = event
        self.signature = signature
        self.countersignature = countersignature
    }

    /// Whether the signature is the named key's, over the event. The countersignature needs the previous
    /// event to check: `KeyEventLog` does that.
    public func verify() -> Bool { KeyEvent.label.verify(signature, of: event.encoded, by: event.signingKey) }

    /// Whether the countersignature, if any, is `previousKey`'s over this event.
    public func verifyCountersignature(by previousKey: P256.PublicKey) -> Bool {
        guard let countersignature else { return true }
        return KeyEvent.countersignatureLabel.verify(countersignature, of: event.encoded, by: previousKey)
    }

    /// u16 length ‖ event ‖ u8 length ‖ DER signature [‖ u8 length ‖ DER countersignature].
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(prefixed16: event.encoded, max: 1024)
        writer.write(prefixed8: signature.der, max: 80)
        if let countersignature { writer.write(prefixed8: countersignature.der, max: 80) }
        return writer.bytes
    }

    /// Decodes and checks the signature; a forged event is an error, never a value. The countersignature
    /// is parsed here and checked against the previous event by `KeyEventLog`.
    public static func decode(_ bytes: [UInt8]) throws -> SignedKeyEvent? {
        var reader = ByteReader(bytes)
        guard let eventBytes = try reader.readPrefixed16(max: 1024, field: "key event"),
            let signatureBytes = try reader.readPrefixed8(max: 80, field: "key event signature")
        else { return nil }
        var counterBytes: [UInt8]?
        if !reader.isAtEnd {
            guard let bytes = try reader.readPrefixed8(max: 80, field: "key event countersignature") else { return nil }
            counterBytes = bytes
        }
        try reader.expectEnd("signed key event")
        guard let event = try KeyEvent.decode(eventBytes) else {
            throw FormatError(.invalidValue, "the key event is truncated")
        }
        guard let signature = try? ECDSASignature(der: signatureBytes) else {
            throw FormatError(.invalidValue, "the key event's signature is not DER")
        }
        var countersignature: ECDSASignature?
        if let counterBytes {
            guard event.kind == .rotation else {
                throw FormatError(.invalidValue, "an inception event carries no countersignature")
            }
            guard let parsed = try? ECDSASignature(der: counterBytes) else {
                throw FormatError(.invalidValue, "the key event's countersignature is not DER")
            }
            countersignature = parsed
        }
        let signed = SignedKeyEvent(event: event, signature: signature, countersignature: countersignature)
        guard signed.verify() else { throw FormatError(.invalidValue, "the key event's signature does not verify") }
        return signed
    }
}
