import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// Recovery words (docs/PROTOCOL.md, "Recovery words"): a 256-bit secret shown once at init as 24 words.
/// Every key event commits to the recovery key the secret derives for that event's sequence, and the database
/// key is also wrapped to the secret, so the words alone open the wallet and put a new token's key in force
/// with one recovery rotation, after every token is lost.
///
/// A rotation needs the next commitment without the words, so init derives the commitments of every sequence
/// a log can reach (`KeyEventLog.eventCountMax`) and keeps them, public digests only, in the encrypted
/// database's meta table, where SQLCipher authenticates them: a file swapped in the wallet folder cannot
/// plant a commitment to someone else's words.
extension Wallet {
    /// The meta row holding the commitments: 32 bytes per sequence, from sequence 0.
    static let recoveryCommitmentsMeta = "recovery-commitments"

    /// The commitments of sequences 0..<count: SHA-256 of each recovery key's SubjectPublicKeyInfo.
    static func recoveryCommitments(secret: SecretBytes, count: Int) throws -> [Digest32] {
        try (0..<UInt64(count)).map { try RecoveryKey(secret: secret, sequence: $0).publicKey.fingerprintDigest }
    }

    /// The commitment a new event with this sequence carries: zero for a wallet made without words.
    func recoveryCommitment(forSequence sequence: UInt64) throws -> Digest32 {
        guard let bytes = try store.meta(Self.recoveryCommitmentsMeta) else { return KeyEvent.noRecoveryCommitment }
        let start = Int(clamping: sequence) * Digest32.byteCount
        guard bytes.count % Digest32.byteCount == 0, start + Digest32.byteCount <= bytes.count else {
            throw StoreError(
                .corrupted,
                "the wallet's recovery commitments do not reach key event \(sequence); the database is damaged")
        }
        return Digest32(exactly: Array(bytes[start..<(start + Digest32.byteCount)]))
    }

    /// Whether this wallet's key events commit to recovery words.
    public var hasRecoveryWords: Bool { keyEvent.event.recoveryCommitment != KeyEvent.noRecoveryCommitment }

    /// Recovers a wallet from its recovery words onto a new token, every old token being lost: the words
    /// unwrap the database key; a new key-agreement key, signing key and next key are made on the new token;
    /// and one recovery rotation, signed by the recovery key the last event committed to (derived in memory,
    /// dropped, and wiped by OpenSSL when freed) and by the new signing key, puts the new key in force. The
    /// database key is rewrapped to the new token, the words, and every old recipient but the lost token.
    /// Returns the recovery rotation. `backupToken` in wallet.json is kept: `keys rotate` still needs a second
    /// token for its next key, and after this the committed next key waits on the new token.
    @discardableResult
    public static func recover(
        paths: WalletPaths, recoverySecret secret: SecretBytes, newToken: WalletToken, newTokenURI: PKCS11URI,
        clock: @escaping @Sendable () -> Int64 = systemClock
    ) throws -> SignedKeyEvent {
        try moveToNewToken(paths: paths, secret: secret, newToken: newToken, newTokenURI: newTokenURI)
        let wallet = try Wallet.open(paths: paths, token: newToken, access: .appending, clock: clock)
        return try wallet.recoveryRotation(secret: secret)
    }

    /// Opens the database with the words, checks them against the last event's commitment, and moves the
    /// wallet to the new token (keys.bin, wallet.json, anchor), under the wallet's lock.
    private static func moveToNewToken(
        paths: WalletPaths, secret: SecretBytes, newToken: WalletToken, newTokenURI: PKCS11URI
    ) throws {
        var metadata = try WalletMetadata.load(paths)
        let lock = try WalletLock(path: paths.lock)
        _ = lock
        let walletID = try metadata.parsedWalletID()
        guard let wrappedBytes = FileManager.default.contents(atPath: paths.wrappedKey) else {
            throw StoreError(
                .wrappedKeyMissing, "the wrapped database key \(paths.wrappedKey) is missing; recovery needs it")
        }
        let wrapped = try WrappedKeyFile(encoded: Array(wrappedBytes))
        let databaseKey: SecretBytes
        do {
            databaseKey = try wrapped.unwrap(recoverySecret: secret)
        } catch let error as StoreError where wrapped.recoverySecretRecipient != nil {
            throw RecoveryWordsError(.notThisWallet, error.message)
        }
        let store = try LedgerStore.open(
            path: paths.database, key: databaseKey, expectedSalt: wrapped.databaseSalt, walletID: walletID)
        let current = try keyEventLog(store, walletID: walletID).current
        try checkCommitment(of: current, secret: secret)
        let agreement = try newToken.generateKey(label: "wallet-agreement", usage: .derive)
        var rewrapped = WrappedKeyFile(walletID: walletID, key: databaseKey, databaseSalt: wrapped.databaseSalt)
        try rewrapped.wrap(databaseKey, to: agreement.publicKey)
        // The lost token's copy goes; the backup's (and any RSA one) and the words' stay.
        rewrapped.recipients += wrapped.recipients.filter { $0.recipientKey != current.agreementKey }
        rewrapped.rsaRecipients = wrapped.rsaRecipients
        rewrapped.recoverySecretRecipient = wrapped.recoverySecretRecipient
        try DurableFile.write(rewrapped.encoded, to: paths.wrappedKey)
        metadata.agreementKeyID = Hex.encode(agreement.id)
        try restartOnNewToken(&metadata, store: store, newToken: newToken, newTokenURI: newTokenURI)
        try metadata.save(paths)
    }

    /// The third check of the words (after list membership and the checksum): the key they derive for the
    /// last event's sequence must be the one that event committed to.
    private static func checkCommitment(of current: KeyEvent, secret: SecretBytes) throws {
        guard current.recoveryCommitment != KeyEvent.noRecoveryCommitment else {
            throw WalletError(
                .keyMismatch,
                "key event \(current.sequence) commits to no recovery key: this wallet was made without "
                    + "--recovery-words (or rotated by a version that did not commit to them)")
        }
        let derived = try RecoveryKey(secret: secret, sequence: current.sequence).publicKey.fingerprintDigest
        guard derived == current.recoveryCommitment else {
            throw RecoveryWordsError(
                .notThisWallet,
                "these recovery words derive a recovery key that key event \(current.sequence) did not commit to; "
                    + "they are not this wallet's words")
        }
    }

    /// Points wallet.json at the new token and restarts the anchor there from the database as it is now.
    static func restartOnNewToken(
        _ metadata: inout WalletMetadata, store: LedgerStore, newToken: WalletToken, newTokenURI: PKCS11URI
    ) throws {
        metadata.token = newTokenURI.withoutPIN.tokenOnly.description
        metadata.signingKeyID = ""
        // The ledger's signed settings name the anchor's kind; wallet.json only repeats it.
        let kind = try WalletSettings.replay(try store.entries(kind: .settings)).anchorKind
        metadata.anchor = kind.description
        let anchor = makeAnchor(kind: kind.description, session: newToken, walletID: try metadata.parsedWalletID())
        if let (_, latest) = try store.latestCheckpoint() { try anchor.store(latest) }
    }

    /// Makes the recovery rotation on the new token and records it. The recovery key is derived here, signs
    /// this one event, and is released when this function returns.
    private func recoveryRotation(secret: SecretBytes) throws -> SignedKeyEvent {
        if let lockReason { throw WalletError(.locked, "the wallet is locked and cannot recover: \(lockReason)") }
        let previous = keyEvent.event
        let agreement = try Wallet.keyOnToken(token, idHex: metadata.agreementKeyID, what: "key-agreement").publicKey
        let last = keyLog.last // a clearing delegation may follow the key-bearing event
        let newKey = try token.generateKey(label: "wallet-key-\(last.sequence + 1)", usage: .sign)
        let nextKey = try token.generateKey(label: "wallet-key-\(last.sequence + 2)", usage: .sign)
        _ = try Wallet.checkedOrigin(of: newKey, on: token, what: "the new signing key", paths: paths)
        _ = try Wallet.checkedOrigin(of: nextKey, on: token, what: "the new committed key", paths: paths)
        // A new contact key: whoever held the lost token may have read the old one's seed with the database.
        let contactKey = Wallet.newContactKey()
        let event = KeyEvent.recoveryRotation(
            after: previous, signingKey: newKey.publicKey, nextKey: nextKey.publicKey, agreementKey: agreement,
            ledgerPosition: size,
            recoveryCommitment: try RecoveryKey(secret: secret, sequence: last.sequence + 1).publicKey
                .fingerprintDigest,
            contactKeyDigest: contactKey.digest, following: last)
        let signer = TokenSigner(token: token, key: newKey)
        let signed = try {
            let recoveryKey = try RecoveryKey(secret: secret, sequence: previous.sequence)
            return try SignedKeyEvent(recovery: event, signer: signer, recoveryKey: recoveryKey)
        }()
        try recordRotation(signed, signer: signer, contactKeySeed: contactKey.seed)
        var updated = metadata
        updated.signingKeyID = Hex.encode(newKey.id)
        try updated.save(paths)
        metadata = updated
        return signed
    }
}
