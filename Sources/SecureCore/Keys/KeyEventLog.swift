import SecureCrypto

/// A verified key-event log: the inception event, then each rotation (and, in an issuer's log, each clearing
/// delegation), every one checked against the one before it. It answers which key was in force for a checkpoint of a given size, so "signed by a retired
/// key after its retirement" is decidable from the signature's own (key sequence, key event position).
/// The rules are in docs/PROTOCOL.md ("Key events", "Rotation rules").
public struct KeyEventLog: Hashable, Sendable {
    /// The events, sequence 0, 1, 2, … in order.
    public private(set) var events: [SignedKeyEvent]

    /// A wallet rotates by hand, a few times in its life; 1,024 events bound what a peer can make us check
    /// and store while leaving room for a rotation a week for twenty years.
    public static let eventCountMax = 1024

    /// A log of just the inception event, which must be sequence 0 and validly signed.
    public init(inception: SignedKeyEvent) throws {
        guard inception.event.kind.isInception, inception.event.sequence == 0, inception.verify(),
            inception.event.previousEvent == .beforeInception, inception.event.ledgerPosition == 0
        else {
            throw KeyEventError(.notInception, "the first key event is not a validly signed inception event")
        }
        events = [inception]
    }

    /// Verifies a whole log, event by event; `walletID`, when given, must be the inception's digest.
    public init(verifying events: [SignedKeyEvent], walletID: WalletID? = nil) throws {
        guard let first = events.first else { throw KeyEventError(.notInception, "a key-event log is never empty") }
        guard events.count <= Self.eventCountMax else {
            throw KeyEventError(
                .tooLong, "a key-event log of \(events.count) events is longer than \(Self.eventCountMax)")
        }
        try self.init(inception: first)
        if let walletID, WalletID(inception: first.event) != walletID {
            throw KeyEventError(
                .wrongWallet, "the key-event log's inception is not this wallet's (its digest is not the wallet id)")
        }
        for event in events.dropFirst() { try append(event) }
    }

    /// SHA-256 of the inception event.
    public var walletID: WalletID { WalletID(inception: events[0].event) }
    /// Whether the wallet was incepted as an issuer: only an issuer's log proves a voucher's signer.
    public var isIssuer: Bool { events[0].event.kind == .issuerInception }
    /// The event in force: the last key-bearing one (kinds 0, 1, 2), whose key signs. A clearing delegation after
    /// it changes no key.
    public var current: KeyEvent { inForce.event }
    /// The signed event in force (see `current`).
    public var inForce: SignedKeyEvent {
        guard let last = events.last(where: { $0.event.kind.isKeyBearing }) else {
            preconditionFailure("a log starts with an inception, which bears a key")
        }
        return last
    }
    /// The last event of any kind: the one the next event follows (sequence, chain, position).
    public var last: KeyEvent { events[events.count - 1].event }
    /// The clearing in force: what the latest clearing delegation names (a later one replaces it), or nil when
    /// the log holds none.
    public var clearingInForce: ClearingDelegation? { events.last { $0.event.clearing != nil }?.event.clearing }
    /// SHA-256 of the contact key (raw ML-KEM-1024 encapsulation key) that the event in force puts in force, or
    /// nil when that event commits to none (an event written before version 3). Only the event in force counts:
    /// a rotation's new contact key replaces the old one, which nobody should encapsulate to any more.
    public var currentContactKeyDigest: Digest32? { current.hasContactKey ? current.contactKeyDigest : nil }
    /// The head of the log: (sequence, digest) of its last event of any kind, as `hello` carries it, so a peer
    /// that lacks a delegation fetches it.
    public var head: KeyEventHead { KeyEventHead(sequence: last.sequence, digest: last.digest) }

    /// The next key-bearing event after event `sequence`: the one that retires the key of a key-bearing event
    /// `sequence`, or nil while that key is in force.
    public func nextKeyBearing(after sequence: UInt64) -> SignedKeyEvent? {
        guard sequence < UInt64(events.count) else { return nil }
        return events[(Int(sequence) + 1)...].first { $0.event.kind.isKeyBearing }
    }

    /// Why `event` cannot follow the log, or nil when it can. Sequence, chain and position are checked against
    /// the last event of any kind; the key rules against the last key-bearing event (`current`).
    public func refusal(of next: SignedKeyEvent) -> KeyEventError? {
        if next.event.kind == .clearingDelegation { return delegationRefusal(of: next) }
        let (last, keyed) = (self.last, current)
        let event = next.event
        guard event.kind == .rotation, event.sequence == last.sequence + 1 else {
            return KeyEventError(.wrongSequence, "key event \(event.sequence) cannot follow event \(last.sequence)")
        }
        guard event.previousEvent == last.digest else {
            return KeyEventError(
                .brokenChain, "rotation \(event.sequence) does not name the digest of event \(last.sequence)")
        }
        if let refusal = event.isRecovery ? recoveryRefusal(of: next) : committedKeyRefusal(of: next) {
            return refusal
        }
        guard event.ledgerPosition > last.ledgerPosition else {
            return KeyEventError(
                .positionNotAfter,
                "rotation \(event.sequence) takes effect at ledger position "
                    + "\(event.ledgerPosition), not after event \(last.sequence)'s \(last.ledgerPosition)")
        }
        guard event.nextKeyDigest != event.signingKey.fingerprintDigest, event.nextKeyDigest != keyed.nextKeyDigest
        else {
            return KeyEventError(.reusedKey, "rotation \(event.sequence) commits to a next key that is already in use")
        }
        guard
            event.recoveryCommitment == KeyEvent.noRecoveryCommitment
                || event.recoveryCommitment != keyed.recoveryCommitment
        else {
            return KeyEventError(
                .reusedKey,
                "rotation \(event.sequence) commits to the recovery key event \(keyed.sequence) committed to"
            )
        }
        guard !event.hasContactKey || event.contactKeyDigest != keyed.contactKeyDigest else {
            return KeyEventError(
                .reusedKey,
                "rotation \(event.sequence) puts in force the contact key event \(keyed.sequence) already put in force")
        }
        return nil
    }

    /// The rules of a clearing delegation (docs/PROTOCOL.md, "Rotation rules"): an issuer's log, the next sequence
    /// and chain, signed by the issuer key in force and countersigned by the clearing key, after the last event's
    /// position, and a clearing key that is none of the log's signing keys or committed next keys.
    private func delegationRefusal(of next: SignedKeyEvent) -> KeyEventError? {
        let (last, event) = (self.last, next.event)
        guard let clearing = event.clearing else { preconditionFailure("a delegation names a clearing") }
        guard isIssuer else {
            return KeyEventError(
                .wrongKind, "clearing delegation \(event.sequence) is in a log that is not an issuer's")
        }
        guard event.sequence == last.sequence + 1 else {
            return KeyEventError(.wrongSequence, "key event \(event.sequence) cannot follow event \(last.sequence)")
        }
        guard event.previousEvent == last.digest else {
            return KeyEventError(
                .brokenChain, "delegation \(event.sequence) does not name the digest of event \(last.sequence)")
        }
        guard event.signingKey == current.signingKey else {
            return KeyEventError(
                .uncommittedKey,
                "delegation \(event.sequence) names an issuer key that is not the key in force (event "
                    + "\(current.sequence)'s)")
        }
        guard next.verify(), next.verifyClearingCountersignature() else {
            return KeyEventError(
                .badSignature,
                "delegation \(event.sequence) is not signed by the issuer key in force and countersigned by its "
                    + "clearing key")
        }
        guard event.ledgerPosition > last.ledgerPosition else {
            return KeyEventError(
                .positionNotAfter,
                "delegation \(event.sequence) is recorded at ledger position \(event.ledgerPosition), not after "
                    + "event \(last.sequence)'s \(last.ledgerPosition)")
        }
        let clearingDigest = clearing.clearingKey.fingerprintDigest
        let bearing = events.lazy.map(\.event).filter(\.kind.isKeyBearing)
        guard !bearing.contains(where: { $0.signingKey == clearing.clearingKey || $0.nextKeyDigest == clearingDigest })
        else {
            return KeyEventError(
                .reusedKey, "delegation \(event.sequence) names a clearing key that is one of the issuer's own keys")
        }
        return nil
    }

    /// The rules of an ordinary rotation: it puts in force the key the previous event committed to, signed by
    /// that key and, when countersigned, by the previous key.
    private func committedKeyRefusal(of next: SignedKeyEvent) -> KeyEventError? {
        let (last, event) = (current, next.event) // the last key-bearing event
        guard event.signingKey.fingerprintDigest == last.nextKeyDigest else {
            return KeyEventError(
                .uncommittedKey,
                "rotation \(event.sequence) puts in force a key that event \(last.sequence) "
                    + "did not commit to (pre-rotation): a stolen current key cannot rotate to a key of its own")
        }
        guard next.verify() else {
            return KeyEventError(.badSignature, "rotation \(event.sequence) is not signed by the key it puts in force")
        }
        guard next.recovery == nil else {
            return KeyEventError(.badSignature, "rotation \(event.sequence) carries a recovery signature it may not")
        }
        guard next.verifyCountersignature(by: last.signingKey) else {
            return KeyEventError(
                .badSignature, "rotation \(event.sequence)'s countersignature is not the previous key's")
        }
        return nil
    }

    /// The rules of a recovery rotation: the previous event committed to a recovery key, the event names that
    /// commitment as its origin, the recovery key is the committed one and signed the event, and the key put
    /// in force signed it too. The recovery key is never put in force itself, so it signs nothing else.
    private func recoveryRefusal(of next: SignedKeyEvent) -> KeyEventError? {
        let (last, event) = (current, next.event) // the last key-bearing event
        guard last.recoveryCommitment != KeyEvent.noRecoveryCommitment else {
            return KeyEventError(
                .uncommittedKey,
                "rotation \(event.sequence) claims recovery words, but event \(last.sequence) commits to no recovery key"
            )
        }
        guard event.origin == .recoveryWords(last.recoveryCommitment),
            next.verifyRecovery(committedTo: last.recoveryCommitment)
        else {
            return KeyEventError(
                .uncommittedKey,
                "recovery rotation \(event.sequence) is not signed by the recovery key event \(last.sequence) "
                    + "committed to")
        }
        guard next.verify(), next.countersignature == nil else {
            return KeyEventError(.badSignature, "rotation \(event.sequence) is not signed by the key it puts in force")
        }
        guard event.signingKey.fingerprintDigest != last.recoveryCommitment else {
            return KeyEventError(
                .reusedKey, "recovery rotation \(event.sequence) puts the recovery key itself in force")
        }
        return nil
    }

    /// Appends a rotation or a clearing delegation after checking every rule.
    public mutating func append(_ next: SignedKeyEvent) throws {
        if let refusal = refusal(of: next) { throw refusal }
        guard events.count < Self.eventCountMax else {
            throw KeyEventError(.tooLong, "the key-event log already holds \(Self.eventCountMax) events")
        }
        events.append(next)
    }

    /// Whether `head` names an event of this log: the head of this log or of an older copy of it.
    public func contains(_ head: KeyEventHead) -> Bool {
        head.sequence < UInt64(events.count) && events[Int(head.sequence)].event.digest == head.digest
    }

    /// The event that put `key` in force, if it ever was.
    public func event(for key: P256.PublicKey) -> KeyEvent? {
        events.first { $0.event.kind.isKeyBearing && $0.event.signingKey == key }?.event
    }

    /// The event whose key signs the checkpoint of `size` entries: the last key-bearing event recorded below
    /// `size`.
    public func event(signingCheckpointOfSize size: UInt64) -> KeyEvent? {
        events.last { $0.event.kind.isKeyBearing && $0.event.ledgerPosition < size }?.event
    }

    /// Whether a signature made with `key`, dated (sequence, event position) and covering `size` entries,
    /// was made while that key was in force. The signature itself is the caller's to check.
    public func keyUse(key: P256.PublicKey, sequence: UInt64, eventPosition: UInt64, size: UInt64) -> KeyUse {
        guard sequence < UInt64(events.count) else { return .unknown }
        let named = events[Int(sequence)].event
        guard named.kind.isKeyBearing, named.signingKey == key, named.ledgerPosition == eventPosition else {
            return .unknown
        }
        guard size > named.ledgerPosition else { return .beforeInForce }
        // The next key-bearing event retires the key; a clearing delegation in between changes no key.
        if let successor = nextKeyBearing(after: sequence), size > successor.event.ledgerPosition {
            return .retired(successor)
        }
        return .inForce
    }

    /// Where a checkpoint stands against the log: its signature, then its date.
    public func check(_ signed: SignedCheckpoint) -> KeyUse {
        let checkpoint = signed.checkpoint
        guard checkpoint.walletID == walletID, signed.isSelfConsistent else { return .unknown }
        return keyUse(
            key: checkpoint.walletKey, sequence: checkpoint.keySequence,
            eventPosition: checkpoint.keyEventPosition, size: checkpoint.size)
    }

    /// Accepts a peer's newer log in place of this one only through a valid chain: the newer log must
    /// start with exactly this log's events. Returns the refusal, or nil after adopting it. Two valid
    /// events with the same sequence are evidence (`conflict`).
    public mutating func follow(_ newer: [SignedKeyEvent]) -> KeyEventFollow {
        for (index, known) in events.prefix(newer.count).enumerated() where newer[index] != known {
            let offered = newer[index]
            if offered.event.digest != known.event.digest, let evidence = KeyEventConflict(known, offered) {
                return .conflict(evidence)
            }
            // The same event with another (randomized) signature is no conflict; anything else breaks the chain.
            guard offered.event == known.event, offered.verify() else {
                return .refused(
                    KeyEventError(.brokenChain, "the offered log differs from the known one at event \(index)"))
            }
        }
        guard newer.count >= events.count else {
            return .refused(KeyEventError(.wrongSequence, "the offered log is shorter than the one known"))
        }
        var extended = self
        for event in newer.dropFirst(events.count) {
            if let refusal = extended.refusal(of: event) { return .refused(refusal) }
            extended.events.append(event)
        }
        guard extended.events.count <= Self.eventCountMax else {
            return .refused(KeyEventError(.tooLong, "the offered log is longer than \(Self.eventCountMax) events"))
        }
        self = extended
        return .followed
    }
}

/// The head of a key-event log: the sequence of its last event and that event's SHA-256.
public struct KeyEventHead: Hashable, Sendable {
    public let sequence: UInt64
    public let digest: KeyEventDigest

    public init(sequence: UInt64, digest: KeyEventDigest) {
        self.sequence = sequence
        self.digest = digest
    }
}

/// Where a dated signature stands against a key-event log.
public enum KeyUse: Hashable, Sendable {
    /// The key was in force when the signature says it was made.
    case inForce
    /// The log has no such key at that sequence and event position.
    case unknown
    /// The signature says it covers entries before its key was in force.
    case beforeInForce
    /// The key had been retired by this rotation before the signature was made: refused, and evidence.
    case retired(SignedKeyEvent)
}

/// What following a newer log did.
public enum KeyEventFollow: Hashable, Sendable {
    case followed
    case refused(KeyEventError)
    /// Two validly signed events with the same sequence: evidence against the key that signed both.
    case conflict(KeyEventConflict)
}

/// Two events with the same sequence, both validly signed by the same key: the committed key signed two
/// histories. Because each ordinary rotation's key must match the digest its predecessor committed to, two
/// such events that follow the same predecessor are signed by the same key, so this pair is checkable with
/// nothing but its own bytes. (A recovery rotation puts another key in force; it and an ordinary rotation
/// after the same event are not this evidence, and a log holding the other is refused as a broken chain.)
public struct KeyEventConflict: Hashable, Sendable {
    public let first: SignedKeyEvent
    public let second: SignedKeyEvent

    /// The pair, or nil when it proves nothing (other sequence, other key, same event, a bad signature).
    public init?(_ first: SignedKeyEvent, _ second: SignedKeyEvent) {
        guard first.event.sequence == second.event.sequence, first.event.signingKey == second.event.signingKey,
            first.event.digest != second.event.digest, first.verify(), second.verify()
        else { return nil }
        // Canonical order, so the same conflict always encodes to the same bytes.
        if first.event.digest.bytes.lexicographicallyPrecedes(second.event.digest.bytes) {
            self.first = first
            self.second = second
        } else {
            self.first = second
            self.second = first
        }
    }
}

/// A checkpoint signed by a retired key after its retirement, with the rotation that retired it. It is
/// checkable alone: the rotation is signed by the key it puts in force and names the digest of the event
/// that put the checkpoint's key in force; the checkpoint is signed by that retired key, names its
/// sequence, and covers the rotation's ledger position. (That the rotation's predecessor is the named
/// event is proved by also carrying it.)
public struct RetiredKeySignature: Hashable, Sendable, RetiredKeyEvidence {
    /// The event that put the retired key in force.
    public let retiredEvent: SignedKeyEvent
    /// The rotation that retired it.
    public let rotation: SignedKeyEvent
    /// The late checkpoint.
    public let checkpoint: SignedCheckpoint

    public init(retiredEvent: SignedKeyEvent, rotation: SignedKeyEvent, checkpoint: SignedCheckpoint) {
        self.retiredEvent = retiredEvent
        self.rotation = rotation
        self.checkpoint = checkpoint
    }

    /// Whether it proves a signature by a key after its retirement.
    public var isProven: Bool {
        let late = checkpoint.checkpoint
        return provesRetired(late.walletKey, signedAt: KeyDate(checkpoint: late)) && checkpoint.isSelfConsistent
    }
}

/// Why a key event or log was refused. Equal by code.
public typealias KeyEventError = CodedFailure<KeyEventErrorCode>

/// Stable codes for `KeyEventError`.
public enum KeyEventErrorCode: String, FailureCode {
    case notInception = "not-inception", wrongWallet = "wrong-wallet", wrongSequence = "wrong-sequence"
    case brokenChain = "broken-chain", uncommittedKey = "uncommitted-key", badSignature = "bad-signature"
    case positionNotAfter = "position-not-after", reusedKey = "reused-key", tooLong = "too-long"
    case wrongKind = "wrong-kind"

    /// A refused key event exits 1.
    public var kind: FailureKind { .failure }
}
