import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// Key rotation with pre-rotation (KERI). The committed next key waits on the backup token, so putting it in
/// force moves signing there; a rotation therefore makes two events, one hop out and one hop home:
///
/// 1. The next key Kb on the backup token is put in force; it commits to a new key Kh generated on the wallet's
///    token. Signed by Kb, countersigned by the old key when it is at hand.
/// 2. Kh is put in force and commits to a fresh next key on the backup token. Signed by Kh, countersigned by Kb.
///
/// Afterwards the wallet's token signs again and the backup holds a next key that has never signed anything.
/// Each event is one ledger entry whose checkpoint is the first the new key signs; it commits in one SQLite
/// transaction with that checkpoint, so the key in force is always exactly the last key event in the ledger:
/// a crash leaves the old key or the new one in force, never neither, never both. A rotation interrupted
/// between the two events resumes where it stopped (`rotate` again). The rules are in docs/PROTOCOL.md.
extension Wallet {
    /// The points of a rotation where a test can stop it, as a crash would.
    enum RotationStep: String, CaseIterable, Sendable {
        case keyGenerated, eventSigned, eventRecorded, homeKeyGenerated, homeEventSigned, homeEventRecorded
        case metadataSaved, oldKeysDestroyed
    }

    /// What a rotation did.
    public struct RotationResult: Sendable {
        /// The events appended, in order.
        public let events: [SignedKeyEvent]
        /// The keys retired by this rotation (public halves).
        public let retired: [P256.PublicKey]
        /// How many retired private keys were deleted from the tokens (`--destroy-old`).
        public let destroyed: Int
    }

    /// A rotation beyond two hops would mean a key in force on neither token; two is the whole design.
    static let rotationHopCountMax = 2

    /// Rotates the signing key, as above. `backup` is the token holding the committed next key. After a
    /// token loss and `recover`, this wallet's token is the new one and the old key is simply absent: the
    /// events then carry no countersignature. With `destroyOld`, the retired private keys are deleted from
    /// whichever token holds them once both events are in the ledger (the caller has confirmed).
    public func rotate(backup: WalletToken, destroyOld: Bool) throws -> RotationResult {
        try rotate(backup: backup, destroyOld: destroyOld, crash: nil)
    }

    func rotate(backup: WalletToken, destroyOld: Bool, crash: RotationStep?) throws -> RotationResult {
        if let lockReason { throw WalletError(.locked, "the wallet is locked and cannot rotate: \(lockReason)") }
        let agreement = try Wallet.keyOnToken(token, idHex: metadata.agreementKeyID, what: "key-agreement").publicKey
        let base = rotationLabelBase()
        var appended: [SignedKeyEvent] = []
        var retired: [P256.PublicKey] = []
        for _ in 0..<Self.rotationHopCountMax {
            let homeHop = try tokenHolding(digest: keyEvent.event.nextKeyDigest, in: token) != nil
            let holder: WalletToken = homeHop ? token : backup
            let other: WalletToken = homeHop ? backup : token
            guard let newKey = try tokenHolding(digest: keyEvent.event.nextKeyDigest, in: holder) else {
                throw WalletError(
                    .keyMismatch,
                    "the next key this wallet committed to (SHA-256 \(keyEvent.event.nextKeyDigest)) "
                        + "is on neither \"\(token.label)\" nor \"\(backup.label)\"; pass the wallet's backup token")
            }
            let following = try uncommittedKey(on: other, label: base + "-key-\(keyLog.last.sequence + 2)")
            try stop(crash, homeHop ? .homeKeyGenerated : .keyGenerated)
            // Both keys' origins are checked before anything is signed: the key put in force (recorded in the
            // event), and the key committed to, so an unproven one is refused before the log names it.
            let origin = try Wallet.checkedOrigin(of: newKey, on: holder, what: "the next signing key", paths: paths)
            _ = try Wallet.checkedOrigin(of: following, on: other, what: "the new committed key", paths: paths)
            let previousSigner = try signerOfKeyInForce(among: [token, backup])
            // Each event puts a new contact key in force; its seed is stored with the event's entry.
            let contactKey = Wallet.newContactKey()
            let event = KeyEvent.rotation(
                after: keyEvent.event, signingKey: newKey.publicKey, nextKey: following.publicKey,
                agreementKey: agreement, ledgerPosition: size, origin: origin.recorded,
                recoveryCommitment: try recoveryCommitment(forSequence: keyLog.last.sequence + 1),
                contactKeyDigest: contactKey.digest, following: keyLog.last)
            let newSigner = TokenSigner(token: holder, key: newKey)
            let signed = try SignedKeyEvent(event, signer: newSigner, previous: previousSigner)
            try stop(crash, homeHop ? .homeEventSigned : .eventSigned)
            retired.append(keyEvent.event.signingKey)
            try recordRotation(signed, signer: newSigner, contactKeySeed: contactKey.seed)
            appended.append(signed)
            try stop(crash, homeHop ? .homeEventRecorded : .eventRecorded)
            if homeHop { break }
        }
        guard let homeKey = try tokenHolding(key: signingKey, in: token) else {
            preconditionFailure("a completed rotation leaves the key in force on the wallet's token")
        }
        var updated = metadata
        updated.signingKeyID = Hex.encode(homeKey.id)
        try updated.save(paths)
        metadata = updated
        try stop(crash, .metadataSaved)
        var destroyed = 0
        if destroyOld { destroyed = try destroyRetired(among: [token, backup]) }
        try stop(crash, .oldKeysDestroyed)
        return RotationResult(events: appended, retired: retired, destroyed: destroyed)
    }

    /// Appends a rotation as its own ledger entry, signing that entry's checkpoint with the new key, and stores
    /// the seed of the contact key it names in the same transaction. The wallet's key in force changes only if
    /// the entry committed.
    func recordRotation(_ signed: SignedKeyEvent, signer newSigner: MessageSigner, contactKeySeed: SecretBytes?)
        throws
    {
        precondition(signed.event.hasContactKey == (contactKeySeed != nil), "a contact key comes with its seed")
        var log = keyLog
        try log.append(signed)
        precondition(signed.event.ledgerPosition == size, "a rotation takes effect at the entry that records it")
        let saved = (keyLog, keyEvent, tokenSigner, size)
        (keyLog, keyEvent, tokenSigner) = (log, signed, newSigner)
        do {
            try append(
                { position, previous, time in
                    try LedgerEntry(
                        position: position, id: .random(), kind: .keyEvent,
                        amount: nil, note: "key rotation \(signed.event.sequence)", time: time,
                        payload: signed.encoded, previousLink: previous)
                }, contactKey: contactKeySeed.map { (sequence: signed.event.sequence, seed: $0) })
        } catch {
            // `append` throws after its commit only when the anchor could not move; then the rotation stands.
            if size == saved.3 { (keyLog, keyEvent, tokenSigner) = (saved.0, saved.1, saved.2) }
            throw error
        }
    }

    /// The label base of the wallet's keys ("wallet" unless init was given another).
    private func rotationLabelBase() -> String {
        guard let signer = tokenSigner as? TokenSigner else { return "wallet" }
        let label = signer.key.label
        if let range = label.range(of: "-key-", options: .backwards) { return String(label[..<range.lowerBound]) }
        return label.hasSuffix("-next") ? String(label.dropLast(5)) : label
    }

    /// A key never committed to: one left by an interrupted rotation under `label` is reused (it has
    /// never been exposed), else a new one is generated.
    private func uncommittedKey(on holder: WalletToken, label: String) throws -> TokenKey {
        let known = Set(
            keyLog.events.map(\.event.signingKey.fingerprintDigest) + keyLog.events.map(\.event.nextKeyDigest))
        if let left = try holder.keys().first(where: {
            $0.label == label && !known.contains($0.publicKey.fingerprintDigest)
        }) {
            return left
        }
        return try holder.generateKey(label: label, usage: .sign)
    }

    /// The signer of the key in force, on whichever token holds it, for the countersignature.
    private func signerOfKeyInForce(among tokens: [WalletToken]) throws -> MessageSigner? {
        for holder in tokens {
            if let key = try tokenHolding(key: signingKey, in: holder) { return TokenSigner(token: holder, key: key) }
        }
        return nil
    }

    private func tokenHolding(digest: Digest32, in holder: WalletToken) throws -> TokenKey? {
        try holder.keys().first { $0.publicKey.fingerprintDigest == digest }
    }

    private func tokenHolding(key: P256.PublicKey, in holder: WalletToken) throws -> TokenKey? {
        try holder.keys().first { $0.publicKey == key }
    }

    /// Deletes every retired key of the log still on these tokens; the key in force and the committed
    /// next key are never touched.
    private func destroyRetired(among tokens: [WalletToken]) throws -> Int {
        let current = keyLog.current.sequence
        let retired = Set(
            keyLog.events.filter { $0.event.kind.isKeyBearing && $0.event.sequence < current }.map(\.event.signingKey))
        var count = 0
        for holder in tokens {
            for key in try holder.keys() where retired.contains(key.publicKey) {
                // Only a real token deletes keys; the simulator's stand-in keeps its software keys.
                guard let session = holder as? TokenSession else { continue }
                try session.destroyKey(key.uri)
                count += 1
            }
        }
        return count
    }

    private func stop(_ crash: RotationStep?, _ step: RotationStep) throws {
        if crash == step { throw RotationCrash(step: step) }
    }

    /// The wallet's key-event log from its ledger: every key-event entry, each recorded at the position it
    /// names, checked as a chain from the inception whose digest is the wallet id.
    static func keyEventLog(_ store: LedgerStore, walletID: WalletID) throws -> KeyEventLog {
        let entries = try store.entries(kind: .keyEvent)
        let events: [SignedKeyEvent] = try entries.map { entry in
            guard let event = try? SignedKeyEvent.decode(entry.payload), event.event.ledgerPosition == entry.position
            else {
                throw StoreError(
                    .corrupted, "the key event at entry \(entry.position) does not decode or names another position")
            }
            return event
        }
        guard entries.first?.position == 0 else {
            throw StoreError(.corrupted, "entry 0 is not this wallet's inception event")
        }
        do {
            return try KeyEventLog(verifying: events, walletID: walletID)
        } catch let error as KeyEventError {
            throw StoreError(.corrupted, "the ledger's key-event log is broken: \(error)")
        }
    }

    /// The key in force on this token, or nil (a recovered wallet, or a rotation stopped between its hops):
    /// found by its public key, so a crash after a rotation committed but before wallet.json was updated
    /// still opens with the right key.
    static func signingKeyInForce(_ session: WalletToken, metadata: WalletMetadata, log: KeyEventLog) throws
        -> TokenKey?
    {
        let current = log.current.signingKey
        var missing: Error?
        if !metadata.signingKeyID.isEmpty {
            do {
                let named = try keyOnToken(session, idHex: metadata.signingKeyID, what: "signing")
                if named.publicKey == current { return named }
                guard log.event(for: named.publicKey) != nil else {
                    throw WalletError(
                        .keyMismatch, "the token's signing key is not one the wallet's key events name; wrong token?")
                }
            } catch let error as TokenError where error.code == .keyNotFound {
                missing = error
            }
        }
        if let found = try session.keys().first(where: { $0.publicKey == current }) { return found }
        if let missing { throw missing }
        return nil
    }
}

/// A rotation stopped on purpose at a step, as a crash would stop it (tests only).
struct RotationCrash: Error, Equatable {
    let step: Wallet.RotationStep
}
