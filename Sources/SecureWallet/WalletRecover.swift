import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

extension Wallet {
    /// Recovers a wallet whose token is lost (or a PIV card reset after PIN and PUK are exhausted):
    /// unwraps the database key with the backup token's key-agreement key, makes a new key-agreement key
    /// on the new token, and rewraps the key to the new token and the backup. Reading resumes at once;
    /// spending resumes after a rotation to a signing key on the new token (the next key waits on the
    /// backup token, committed to in the inception event). The anchor restarts on the new token from the
    /// database as it is now: a rollback made before the recovery cannot be detected by this wallet.
    public static func recover(paths: WalletPaths, backup: WalletToken, newToken: WalletToken, newTokenURI: PKCS11URI)
        throws
    {
        var metadata = try WalletMetadata.load(paths)
        let lock = try WalletLock(path: paths.lock)
        _ = lock
        guard let wrappedBytes = FileManager.default.contents(atPath: paths.wrappedKey) else {
            throw StoreError(
                .wrappedKeyMissing, "the wrapped database key \(paths.wrappedKey) is missing; recovery needs it")
        }
        let wrapped = try WrappedKeyFile(encoded: Array(wrappedBytes))
        guard let backupKey = try AgreementKey.find(in: wrapped, on: backup) else {
            throw WalletError(
                .keyMismatch,
                "the token \"\(backup.label)\" holds none of this wallet's key-agreement keys; "
                    + "is it the wallet's backup token?")
        }
        let databaseKey = try backupKey.unwrap(wrapped, session: backup)
        // The database must open with the key before anything is rewritten.
        let store = try LedgerStore.open(
            path: paths.database, key: databaseKey, expectedSalt: wrapped.databaseSalt,
            walletID: try metadata.parsedWalletID())
        let agreement = try newToken.generateKey(label: "wallet-agreement", usage: .derive)
        var rewrapped = WrappedKeyFile(
            walletID: try metadata.parsedWalletID(), key: databaseKey, databaseSalt: wrapped.databaseSalt)
        try rewrapped.wrap(databaseKey, to: agreement.publicKey)
        try backupKey.wrap(databaseKey, into: &rewrapped)
        // The recovery words' copy, when the wallet has words, stays: they are still the wallet's.
        rewrapped.recoverySecretRecipient = wrapped.recoverySecretRecipient
        try DurableFile.write(rewrapped.encoded, to: paths.wrappedKey)
        metadata.agreementKeyID = Hex.encode(agreement.id)
        try restartOnNewToken(&metadata, store: store, newToken: newToken, newTokenURI: newTokenURI)
        try metadata.save(paths)
    }
}

extension Wallet {
    /// Leaves a rollback lock on the user's explicit word: appends a signed `rollbackAccepted` entry whose
    /// payload is the abandoned anchor (the newer checkpoint this database no longer has), and re-anchors.
    /// That entry and the abandoned checkpoint are themselves evidence if money was spent twice.
    @discardableResult
    public func acceptRollback() throws -> LedgerEntry {
        guard let reason = lockReason else {
            throw WalletError(.invalidInput, "the wallet is not locked; there is nothing to accept")
        }
        let abandoned = try anchor.load() ?? []
        lockReason = nil
        do {
            return try appendDraft(
                EntryDraft(
                    kind: .rollbackAccepted, amount: nil, note: "rollback accepted by the user",
                    statement: nil, payload: abandoned))
        } catch {
            lockReason = reason
            throw error
        }
    }
}
