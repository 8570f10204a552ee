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
    /// The label of the recovery key's signature on a recovery rotation.
    public static let recoveryLabel = SignatureLabel("secure-key-event-recovery-v1")
    /// The version new events are written in. Versions 1 (no origin, no recovery commitment) and 2 (no
    /// contact key) still decode, and re-encode byte for byte, because wallets made before keep their logs.
    public static let encodingVersion: UInt8 = 3
    /// The versions that decode.
    static let decodableVersions: ClosedRange<UInt8> = 1...3

    /// Inception, rotation or clearing delegation. An issuer's wallet is incepted as one, and stays one: its
    /// ledger records the vouchers it mints as liabilities and never holds spendable money. Only an issuer's
    /// log holds clearing delegations (kind 3), which name the issuer's clearing and put no key in force.
    public enum Kind: UInt8, Sendable {
        case inception = 0
        case rotation = 1
        case issuerInception = 2
        case clearingDelegation = 3

        /// Whether this kind starts a log (sequence 0).
        public var isInception: Bool { self == .inception || self == .issuerInception }
        /// Whether an event of this kind puts a signing key in force (kinds 0, 1, 2). The rules that compare a
        /// rotation with the key before it, and "the event that retires a key", look only at these.
        public var isKeyBearing: Bool { self != .clearingDelegation }
    }

    public let kind: Kind
    /// 0 for inception, then 1, 2, … for each later event of any kind.
    public let sequence: UInt64
    /// SHA-256 of the previous event's encoding (of any kind); 32 zero bytes for inception.
    public let previousEvent: KeyEventDigest
    /// The signing key this event puts in force. On a clearing delegation, which puts no key in force, it is the
    /// issuer key in force that signs the event, and `nextKeyDigest`, `agreementKey`, `origin`,
    /// `recoveryCommitment` and `contactKeyDigest` are placeholders that are never encoded (zero digests,
    /// `agreementKey` the issuer key, origin unproven): read `clearing`, and skip the event wherever keys in
    /// force are walked (`kind.isKeyBearing`).
    public let signingKey: P256.PublicKey
    /// SHA-256 of the next signing key's SubjectPublicKeyInfo.
    public let nextKeyDigest: Digest32
    /// The key-agreement key the database key is wrapped to, and peers may encrypt to.
    public let agreementKey: P256.PublicKey
    /// The ledger position from which this event's key signs.
    public let ledgerPosition: UInt64
    /// The encoding version: 3 for new events; 2 for events written before contact keys, 1 for events of logs
    /// written before origins were recorded.
    public let version: UInt8
    /// Where `signingKey` came from, as proven when the event was made (version 2; `.notRecorded` in 1).
    public let origin: KeyOrigin
    /// A commitment to the recovery key (version 2): SHA-256 of the SubjectPublicKeyInfo DER of the key that
    /// recovery words derive for this event's sequence (`RecoveryKey`); all zero means none (a wallet made
    /// without `--recovery-words`). Only that key may sign the recovery rotation that follows this event.
    public let recoveryCommitment: Digest32
    /// SHA-256 of the raw ML-KEM-1024 encapsulation key (1,568 bytes) this event puts in force as the wallet's
    /// long-term contact key (version 3); all zero means none (every version 1 and 2 event). Contacts
    /// encapsulate to that key, and a rotation replaces it with the key its own event commits to.
    public let contactKeyDigest: Digest32
    /// What a clearing delegation (kind 3) names: exactly the kind-3 events carry one.
    public let clearing: ClearingDelegation?

    /// The "no recovery key" commitment: 32 zero bytes.
    public static let noRecoveryCommitment = Digest32.zero
    /// The "no contact key" digest: 32 zero bytes.
    public static let noContactKey = Digest32.zero

    /// The digest a key event records for a contact key: SHA-256 of its raw encapsulation key.
    public static func contactKeyDigest(of key: MLKEM1024.PublicKey) -> Digest32 {
        Digest32(of: key.rawRepresentation)
    }

    /// Whether this event puts a contact key in force (a version 3 event with a non-zero digest).
    public var hasContactKey: Bool { contactKeyDigest != Self.noContactKey }

    init(
        kind: Kind, sequence: UInt64, previousEvent: KeyEventDigest, signingKey: P256.PublicKey,
        nextKeyDigest: Digest32, agreementKey: P256.PublicKey, ledgerPosition: UInt64,
        version: UInt8 = KeyEvent.encodingVersion, origin: KeyOrigin = .unproven,
        recoveryCommitment: Digest32 = KeyEvent.noRecoveryCommitment,
        contactKeyDigest: Digest32 = KeyEvent.noContactKey,
        clearing: ClearingDelegation? = nil
    ) {
        precondition((kind == .clearingDelegation) == (clearing != nil), "exactly a delegation names a clearing")
        precondition(clearing == nil || version == ClearingDelegation.encodingVersion, "a delegation is version 3")
        precondition(Self.decodableVersions.contains(version), "key event version \(version) is never written")
        precondition(version >= 2 || (origin == .notRecorded && recoveryCommitment == Self.noRecoveryCommitment))
        precondition(version == 1 || origin != .notRecorded, "an event of version 2 or later records its key's origin")
        precondition(version >= 3 || contactKeyDigest == Self.noContactKey, "only version 3 names a contact key")
        self.kind = kind
        self.sequence = sequence
        self.previousEvent = previousEvent
        self.signingKey = signingKey
        self.nextKeyDigest = nextKeyDigest
        self.agreementKey = agreementKey
        self.ledgerPosition = ledgerPosition
        self.version = version
        self.origin = origin
        self.recoveryCommitment = recoveryCommitment
        self.contactKeyDigest = contactKeyDigest
        self.clearing = clearing
    }

    /// The inception event of a new wallet, or of a new issuer when `issuer` is set.
    /// `origin` is where the signing key came from; `recoveryCommitment` commits to recovery key 0;
    /// `contactKeyDigest` (`contactKeyDigest(of:)`) names the contact key put in force, zero for none.
    public static func inception(
        signingKey: P256.PublicKey, nextKey: P256.PublicKey, agreementKey: P256.PublicKey, issuer: Bool = false,
        origin: KeyOrigin = .unproven, recoveryCommitment: Digest32 = KeyEvent.noRecoveryCommitment,
        contactKeyDigest: Digest32 = KeyEvent.noContactKey
    ) -> KeyEvent {
        KeyEvent(
            kind: issuer ? .issuerInception : .inception, sequence: 0, previousEvent: .beforeInception,
            signingKey: signingKey,
            nextKeyDigest: Digest32(of: nextKey.spki), agreementKey: agreementKey, ledgerPosition: 0, origin: origin,
            recoveryCommitment: recoveryCommitment, contactKeyDigest: contactKeyDigest)
    }

    /// A rotation after `previous`: it puts `signingKey` in force (which must be the key `previous`
    /// committed to) and commits to `nextKey`. `ledgerPosition` is the position of the ledger entry that
    /// records this event: that entry's checkpoint is the first the new key signs. `contactKeyDigest` names the
    /// contact key this event puts in force in place of the previous one (zero for none). `previous` is the last
    /// key-bearing event; `last`, when given, is the log's last event after it (a clearing delegation), which
    /// the rotation follows in sequence and chain.
    public static func rotation(
        after previous: KeyEvent, signingKey: P256.PublicKey, nextKey: P256.PublicKey,
        agreementKey: P256.PublicKey, ledgerPosition: UInt64, origin: KeyOrigin = .unproven,
        recoveryCommitment: Digest32 = KeyEvent.noRecoveryCommitment,
        contactKeyDigest: Digest32 = KeyEvent.noContactKey,
        following last: KeyEvent? = nil
    ) -> KeyEvent {
        let last = last ?? previous
        return KeyEvent(
            kind: .rotation, sequence: last.sequence + 1, previousEvent: last.digest, signingKey: signingKey,
            nextKeyDigest: Digest32(of: nextKey.spki), agreementKey: agreementKey, ledgerPosition: ledgerPosition,
            origin: origin, recoveryCommitment: recoveryCommitment, contactKeyDigest: contactKeyDigest)
    }

    /// A recovery rotation after `previous`, made with recovery words after the keys were lost: it puts in
    /// force `signingKey` (a key just made on the new token, in place of the committed next key), commits to
    /// `nextKey`, and records its origin as recovery words, naming the commitment of `previous` that the
    /// recovery key satisfies. It is signed by `signingKey` and by that recovery key (`SignedKeyEvent`).
    /// `contactKeyDigest` names the new contact key (zero for none). `previous` is the last key-bearing event;
    /// `last`, when given, the log's last event after it (a clearing delegation), as for `rotation`.
    public static func recoveryRotation(
        after previous: KeyEvent, signingKey: P256.PublicKey, nextKey: P256.PublicKey,
        agreementKey: P256.PublicKey, ledgerPosition: UInt64, recoveryCommitment: Digest32,
        contactKeyDigest: Digest32 = KeyEvent.noContactKey, following last: KeyEvent? = nil
    ) -> KeyEvent {
        precondition(
            previous.recoveryCommitment != noRecoveryCommitment, "the previous event commits to no recovery key")
        let last = last ?? previous
        return KeyEvent(
            kind: .rotation, sequence: last.sequence + 1, previousEvent: last.digest, signingKey: signingKey,
            nextKeyDigest: Digest32(of: nextKey.spki), agreementKey: agreementKey, ledgerPosition: ledgerPosition,
            origin: .recoveryWords(previous.recoveryCommitment), recoveryCommitment: recoveryCommitment,
            contactKeyDigest: contactKeyDigest)
    }

    /// A clearing delegation after `previous` (the log's last event, of any kind): the issuer key in force,
    /// `issuerKey`, names `clearing` as the issuer's clearing. `ledgerPosition` is the position of the issuer's
    /// ledger entry that records it. It is signed by the issuer key and countersigned by the clearing key
    /// (`SignedKeyEvent.init(delegation:issuerSigner:clearingSigner:)`).
    public static func clearingDelegation(
        after previous: KeyEvent, issuerKey: P256.PublicKey, clearing: ClearingDelegation, ledgerPosition: UInt64
    ) -> KeyEvent {
        KeyEvent(
            kind: .clearingDelegation, sequence: previous.sequence + 1, previousEvent: previous.digest,
            signingKey: issuerKey, nextKeyDigest: .zero, agreementKey: issuerKey, ledgerPosition: ledgerPosition,
            version: ClearingDelegation.encodingVersion, clearing: clearing)
    }

    /// This event as an older encoding `version` writes it, without the fields that came later (which must be
    /// unset; version 1 records no origin). Only for tests that make a wallet as one made before those fields.
    package func writtenAsVersion(_ older: UInt8) -> KeyEvent {
        precondition(older >= 1 && older <= version, "an event is only written in an older version")
        precondition(kind.isKeyBearing, "a clearing delegation has one version")
        return KeyEvent(
            kind: kind, sequence: sequence, previousEvent: previousEvent, signingKey: signingKey,
            nextKeyDigest: nextKeyDigest, agreementKey: agreementKey, ledgerPosition: ledgerPosition, version: older,
            origin: older == 1 ? .notRecorded : origin, recoveryCommitment: recoveryCommitment,
            contactKeyDigest: contactKeyDigest)
    }

    /// Whether this event was put in force by recovery words (origin code 3).
    public var isRecovery: Bool {
        if case .recoveryWords = origin { return true }
        return false
    }

    /// The canonical encoding that is hashed and signed (docs/PROTOCOL.md, "Key events"): version 1 is 212
    /// bytes, version 2 adds the origin (u8 code ‖ 32 bytes) and the recovery commitment (32 bytes), 277;
    /// version 3 adds the contact key digest (32 bytes), 309.
    public var encoded: [UInt8] {
        if let clearing {
            return clearing.encoded(
                sequence: sequence, previousEvent: previousEvent,
                issuerKey: signingKey, ledgerPosition: ledgerPosition)
        }
        var writer = ByteWriter(capacity: 320)
        writer.write(version)
        writer.write(kind.rawValue)
        writer.write(sequence)
        writer.write(previousEvent)
        writer.write(fixed: signingKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(nextKeyDigest)
        writer.write(fixed: agreementKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(ledgerPosition)
        if version >= 2 {
            writer.write(origin.code)
            writer.write(origin.evidenceDigest)
            writer.write(recoveryCommitment)
        }
        if version >= 3 { writer.write(contactKeyDigest) }
        return writer.bytes
    }

    /// SHA-256 of the encoding. For the inception event this is the wallet id.
    public var digest: KeyEventDigest { KeyEventDigest(of: encoded) }

    /// Decodes an event: nil on short input, a thrown error on malformed input.
    public static func decode(_ bytes: [UInt8]) throws -> KeyEvent? {
        var reader = ByteReader(bytes)
        guard let version = reader.readUInt8() else { return nil }
        guard decodableVersions.contains(version) else {
            throw FormatError(
                .unsupportedVersion,
                "key event version \(version) is not supported (expected \(decodableVersions.lowerBound)…"
                    + "\(decodableVersions.upperBound))")
        }
        guard let kindByte = reader.readUInt8() else { return nil }
        guard let kind = Kind(rawValue: kindByte) else {
            throw FormatError(.invalidValue, "key event kind \(kindByte) is unknown")
        }
        if kind == .clearingDelegation { return try decodeDelegation(version: version, reader: &reader) }
        guard let sequence = reader.readUInt64(), let previous = reader.read(KeyEventDigest.self),
            let signing = reader.readFixed(P256.uncompressedPointByteCount), let next = reader.read(Digest32.self),
            let agreement = reader.readFixed(P256.uncompressedPointByteCount), let position = reader.readUInt64()
        else {
            return nil
        }
        var origin = KeyOrigin.notRecorded
        var recoveryCommitment = noRecoveryCommitment
        if version >= 2 {
            guard let code = reader.readUInt8(), let evidence = reader.read(Digest32.self),
                let recovery = reader.read(Digest32.self)
            else { return nil }
            origin = try KeyOrigin(code: code, evidenceDigest: evidence)
            recoveryCommitment = recovery
        }
        var contactKeyDigest = noContactKey
        if version >= 3 {
            guard let contact = reader.read(Digest32.self) else { return nil }
            contactKeyDigest = contact
        }
        try reader.expectEnd("key event")
        guard kind.isInception == (sequence == 0) else {
            throw FormatError(.invalidValue, "a key event's kind does not match its sequence number")
        }
        do {
            return KeyEvent(
                kind: kind, sequence: sequence, previousEvent: previous, signingKey: try P256.PublicKey(x963: signing),
                nextKeyDigest: next, agreementKey: try P256.PublicKey(x963: agreement), ledgerPosition: position,
                version: version, origin: origin, recoveryCommitment: recoveryCommitment,
                contactKeyDigest: contactKeyDigest)
        } catch {
            throw FormatError(.invalidValue, "a key event names a key that is not a valid P-256 point")
        }
    }
}

extension KeyEvent {
    /// The fields of a clearing delegation after its version and kind bytes (docs/PROTOCOL.md, "Key events").
    fileprivate static func decodeDelegation(version: UInt8, reader: inout ByteReader) throws -> KeyEvent? {
        guard version == ClearingDelegation.encodingVersion else {
            throw FormatError(.invalidValue, "a clearing delegation of version \(version) is not one (version 3)")
        }
        guard let sequence = reader.readUInt64(), let previous = reader.read(KeyEventDigest.self),
            let issuer = reader.readFixed(P256.uncompressedPointByteCount),
            let clearingPoint = reader.readFixed(P256.uncompressedPointByteCount), let code = reader.readUInt8(),
            let evidence = reader.read(Digest32.self), let tlsKeyDigest = reader.read(Digest32.self),
            let url = try reader.readPrefixed8(max: ClearingDelegation.urlByteCountMax, field: "clearing URL"),
            let position = reader.readUInt64()
        else { return nil }
        try reader.expectEnd("clearing delegation")
        guard sequence > 0 else { throw FormatError(.invalidValue, "a clearing delegation cannot start a log") }
        let origin = try KeyOrigin(code: code, evidenceDigest: evidence)
        guard let issuerKey = try? P256.PublicKey(x963: issuer),
            let clearingKey = try? P256.PublicKey(x963: clearingPoint)
        else {
            throw FormatError(.invalidValue, "a clearing delegation names a key that is not a valid P-256 point")
        }
        let clearing = try ClearingDelegation(
            clearingKey: clearingKey, clearingKeyOrigin: origin, tlsKeyDigest: tlsKeyDigest,
            url: String(decoding: url, as: UTF8.self), urlBytes: url)
        return KeyEvent(
            kind: .clearingDelegation, sequence: sequence, previousEvent: previous, signingKey: issuerKey,
            nextKeyDigest: .zero, agreementKey: issuerKey, ledgerPosition: position,
            version: ClearingDelegation.encodingVersion, clearing: clearing)
    }
}

/// Where the signing key a key event puts in force came from, as proven when the event was made. Version 2 and 3
/// events record it as a code and a 32-byte field (docs/PROTOCOL.md, "Key events"); version 1 events have none.
public enum KeyOrigin: Hashable, Sendable {
    /// Nothing proves where the key was made (a PIV key without attestation, or a token that does not report
    /// CKA_LOCAL; accepted only with `--allow-unproven-origin`). Code 0.
    case unproven
    /// The module reports the key as generated on the token and never extractable (CKA_LOCAL,
    /// CKA_NEVER_EXTRACTABLE); nothing else backs it (SoftHSM, NSS, a TPM). Code 1.
    case modulesWord
    /// A PIV attestation chain to a trusted root attests this very key; the digest is SHA-256 of u16 length ‖
    /// slot attestation certificate DER ‖ u16 length ‖ F9 certificate DER, so anyone holding the two
    /// certificates can check them against the event. Code 2.
    case attested(Digest32)
    /// The key was made on a new token during recovery, and put in force by the recovery key that the
    /// previous event committed to; the digest is that commitment. Code 3.
    case recoveryWords(Digest32)
    /// A version 1 event: no origin was recorded. Never encoded.
    case notRecorded

    /// The codes a version 2 or 3 event may carry.
    var code: UInt8 {
        switch self {
        case .unproven: 0
        case .modulesWord: 1
        case .attested: 2
        case .recoveryWords: 3
        case .notRecorded: preconditionFailure("a version 1 event's origin is never encoded")
        }
    }

    /// The 32 bytes after the code: the attestation digest, the satisfied recovery commitment, or zero.
    var evidenceDigest: Digest32 {
        switch self {
        case .attested(let digest), .recoveryWords(let digest): digest
        case .unproven, .modulesWord, .notRecorded: KeyEvent.noRecoveryCommitment
        }
    }

    init(code: UInt8, evidenceDigest: Digest32) throws {
        let zero = evidenceDigest == KeyEvent.noRecoveryCommitment
        switch code {
        case 0 where zero: self = .unproven
        case 1 where zero: self = .modulesWord
        case 2 where !zero: self = .attested(evidenceDigest)
        case 3 where !zero: self = .recoveryWords(evidenceDigest)
        case 0, 1, 2, 3:
            throw FormatError(.invalidValue, "a key event's origin \(code) carries the wrong evidence digest")
        default: throw FormatError(.invalidValue, "key event origin \(code) is unknown")
        }
    }

    /// A phrase for people: "attested (evidence SHA-256 …)", "module's word, unattested", "unproven",
    /// "not recorded (version 1 event)".
    public var description: String {
        switch self {
        case .unproven: "unproven"
        case .modulesWord: "module's word, unattested"
        case .attested(let digest): "attested (evidence SHA-256 \(digest))"
        case .recoveryWords: "recovery words"
        case .notRecorded: "not recorded (version 1 event)"
        }
    }
}

/// The recovery key's public key and its signature over a recovery rotation, under `KeyEvent.recoveryLabel`.
/// The key travels with the event because the previous event commits only to its SHA-256.
public struct RecoverySignature: Hashable, Sendable {
    public let key: P256.PublicKey
    public let signature: ECDSASignature

    public init(key: P256.PublicKey, signature: ECDSASignature) {
        self.key = key
        self.signature = signature
    }
}

/// A key event with the signature of the key it puts in force (proof of possession) and, for a rotation
/// made while the previous key was still at hand, that previous key's countersignature; a recovery rotation
/// carries the recovery key's signature instead.
public struct SignedKeyEvent: Hashable, Sendable {
    public let event: KeyEvent
    public let signature: ECDSASignature
    /// The previous signing key's signature over the same encoding under `KeyEvent.countersignatureLabel`;
    /// nil for inception and for a rotation made after the previous key was lost. On a clearing delegation it
    /// is the clearing key's, under `ClearingDelegation.label`, and required.
    public let countersignature: ECDSASignature?
    /// The recovery key's signature: present exactly on recovery rotations.
    public let recovery: RecoverySignature?

    /// Signs an event with the key it names and, when given, countersigns it with the previous key.
    /// Each is a separate token signature (and PIN login for always-authenticate keys).
    public init(_ event: KeyEvent, signer: MessageSigner, previous: MessageSigner? = nil) throws {
        precondition(signer.publicKey == event.signingKey, "a key event is signed by the key it puts in force")
        precondition(previous == nil || event.kind == .rotation, "only a rotation is countersigned")
        precondition(event.kind.isKeyBearing, "a clearing delegation is countersigned by its clearing key")
        precondition(!event.isRecovery, "a recovery rotation is signed by its recovery key")
        self.event = event
        signature = try signer.sign(event.encoded, label: KeyEvent.label)
        countersignature = try previous?.sign(event.encoded, label: KeyEvent.countersignatureLabel)
        recovery = nil
    }

    /// Signs a recovery rotation with the key it puts in force and with the recovery key the previous event
    /// committed to. This is the one signature a recovery key ever makes.
    public init(recovery event: KeyEvent, signer: MessageSigner, recoveryKey: MessageSigner) throws {
        precondition(signer.publicKey == event.signingKey, "a key event is signed by the key it puts in force")
        guard case .recoveryWords(let commitment) = event.origin else {
            preconditionFailure("only a recovery rotation is signed by a recovery key")
        }
        precondition(recoveryKey.publicKey.fingerprintDigest == commitment, "the recovery key is the committed one")
        self.event = event
        signature = try signer.sign(event.encoded, label: KeyEvent.label)
        countersignature = nil
        recovery = RecoverySignature(
            key: recoveryKey.publicKey, signature: try recoveryKey.sign(event.encoded, label: KeyEvent.recoveryLabel))
    }

    /// Signs a clearing delegation with the issuer key in force (under `KeyEvent.label`) and countersigns it with
    /// the clearing key it names (under `ClearingDelegation.label`): proof that the delegated key can sign.
    public init(delegation event: KeyEvent, issuerSigner: MessageSigner, clearingSigner: MessageSigner) throws {
        guard let clearing = event.clearing else { preconditionFailure("only a delegation names a clearing key") }
        precondition(issuerSigner.publicKey == event.signingKey, "a delegation is signed by the issuer key it names")
        precondition(clearingSigner.publicKey == clearing.clearingKey, "and countersigned by the clearing key")
        self.event = event
        signature = try issuerSigner.sign(event.encoded, label: KeyEvent.label)
        countersignature = try clearingSigner.sign(event.encoded, label: ClearingDelegation.label)
        recovery = nil
    }

    /// An event and signatures read from storage or a peer; `verify()` must pass before it is trusted.
    public init(
        event: KeyEvent, signature: ECDSASignature, countersignature: ECDSASignature? = nil,
        recovery: RecoverySignature? = nil
    ) {
        self.event = event
        self.signature = signature
        self.countersignature = countersignature
        self.recovery = recovery
    }

    /// Whether the signature is the named key's, over the event. The countersignature needs the previous
    /// event to check: `KeyEventLog` does that.
    public func verify() -> Bool { KeyEvent.label.verify(signature, of: event.encoded, by: event.signingKey) }

    /// Whether a clearing delegation carries the clearing key's countersignature over it. False for any other
    /// kind, and for a delegation without one.
    public func verifyClearingCountersignature() -> Bool {
        guard let clearing = event.clearing, let countersignature else { return false }
        return ClearingDelegation.label.verify(countersignature, of: event.encoded, by: clearing.clearingKey)
    }

    /// Whether the countersignature, if any, is `previousKey`'s over this event.
    public func verifyCountersignature(by previousKey: P256.PublicKey) -> Bool {
        guard let countersignature else { return true }
        return KeyEvent.countersignatureLabel.verify(countersignature, of: event.encoded, by: previousKey)
    }

    /// Whether the recovery signature is by the key `commitment` names, over this event. False when there is
    /// none, or when the commitment is the zero "none".
    public func verifyRecovery(committedTo commitment: Digest32) -> Bool {
        guard let recovery, commitment != KeyEvent.noRecoveryCommitment,
            recovery.key.fingerprintDigest == commitment
        else { return false }
        return KeyEvent.recoveryLabel.verify(recovery.signature, of: event.encoded, by: recovery.key)
    }

    /// u16 length ‖ event ‖ u8 length ‖ DER signature [‖ u8 length ‖ DER countersignature]; a recovery
    /// rotation ends instead with u8 length ‖ DER recovery signature ‖ the recovery key's 65-byte point.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(prefixed16: event.encoded, max: 1024)
        writer.write(prefixed8: signature.der, max: 80)
        if let countersignature { writer.write(prefixed8: countersignature.der, max: 80) }
        if let recovery {
            writer.write(prefixed8: recovery.signature.der, max: 80)
            writer.write(fixed: recovery.key.x963, count: P256.uncompressedPointByteCount)
        }
        return writer.bytes
    }

    /// Decodes and checks the signature; a forged event is an error, never a value. The countersignature
    /// is parsed here and checked against the previous event by `KeyEventLog`.
    public static func decode(_ bytes: [UInt8]) throws -> SignedKeyEvent? {
        var reader = ByteReader(bytes)
        guard let eventBytes = try reader.readPrefixed16(max: 1024, field: "key event"),
            let signatureBytes = try reader.readPrefixed8(max: 80, field: "key event signature")
        else { return nil }
        guard let event = try KeyEvent.decode(eventBytes) else {
            throw FormatError(.invalidValue, "the key event is truncated")
        }
        if event.isRecovery { return try decodeRecovery(event, signatureBytes: signatureBytes, reader: &reader) }
        var counterBytes: [UInt8]?
        if !reader.isAtEnd {
            guard let bytes = try reader.readPrefixed8(max: 80, field: "key event countersignature") else { return nil }
            counterBytes = bytes
        }
        try reader.expectEnd("signed key event")
        guard let signature = try? ECDSASignature(der: signatureBytes) else {
            throw FormatError(.invalidValue, "the key event's signature is not DER")
        }
        var countersignature: ECDSASignature?
        if let counterBytes {
            guard !event.kind.isInception else {
                throw FormatError(.invalidValue, "an inception event carries no countersignature")
            }
            guard let parsed = try? ECDSASignature(der: counterBytes) else {
                throw FormatError(.invalidValue, "the key event's countersignature is not DER")
            }
            countersignature = parsed
        }
        let signed = SignedKeyEvent(event: event, signature: signature, countersignature: countersignature)
        guard signed.verify() else { throw FormatError(.invalidValue, "the key event's signature does not verify") }
        guard event.kind.isKeyBearing || signed.verifyClearingCountersignature() else {
            throw FormatError(
                .invalidValue, "the clearing delegation is not countersigned by the clearing key it names")
        }
        return signed
    }

    /// The tail of a recovery rotation: its recovery signature and key, which must be the key its origin names.
    /// Whether the previous event committed to that key is `KeyEventLog`'s to check.
    private static func decodeRecovery(_ event: KeyEvent, signatureBytes: [UInt8], reader: inout ByteReader) throws
        -> SignedKeyEvent?
    {
        guard let recoveryBytes = try reader.readPrefixed8(max: 80, field: "key event recovery signature"),
            let point = reader.readFixed(P256.uncompressedPointByteCount)
        else { return nil }
        try reader.expectEnd("signed key event")
        guard let signature = try? ECDSASignature(der: signatureBytes),
            let recoverySignature = try? ECDSASignature(der: recoveryBytes)
        else {
            throw FormatError(.invalidValue, "a recovery rotation's signatures are not DER")
        }
        guard let key = try? P256.PublicKey(x963: point) else {
            throw FormatError(.invalidValue, "a recovery rotation names a recovery key that is not a P-256 point")
        }
        let signed = SignedKeyEvent(
            event: event, signature: signature, recovery: RecoverySignature(key: key, signature: recoverySignature))
        guard signed.verify(), signed.verifyRecovery(committedTo: event.origin.evidenceDigest) else {
            throw FormatError(.invalidValue, "the recovery rotation's signatures do not verify")
        }
        return signed
    }
}
