import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken

/// Finds a wallet's token when the URI recorded in `wallet.json` names none: some tools change what a
/// module reports (OpenSC takes a PIV card's serial and label from its CHUID and certificates, so writing a
/// certificate with ykman changes both). The token is then found by the wallet's own keys, read without a
/// PIN: its key-agreement key (the CKA_ID recorded at init, and a public key that `keys.bin` wraps the
/// database key to) and its signing key's CKA_ID. Once the wallet is open, the token must hold the signing
/// key in force per the key-event log under the recorded CKA_ID, and only then is its URI recorded.
/// A token holding other keys is never picked, whatever ids they have.
public enum WalletTokenSearch {
    /// The token a command uses, and whether it was found by its keys rather than by the URI.
    public struct Found {
        /// The token.
        public let token: Token
        /// True when the recorded URI matched no token and the keys found this one.
        public let moved: Bool
    }

    /// The one token `uri` names; when it names none and `recorded` (the URI is the one `wallet.json`
    /// recorded, not one the person typed), the one token of the same module that holds the wallet's keys.
    /// Without such a token, the original "no token matches" error stands.
    public static func token(_ uri: PKCS11URI, paths: WalletPaths, recorded: Bool) throws -> Found {
        do {
            return Found(token: try TokenLibrary.shared.token(uri), moved: false)
        } catch let error as TokenError where error.code == .tokenNotFound && recorded {
            guard let holder = try holder(near: uri, paths: paths) else { throw error }
            return Found(token: holder, moved: true)
        }
    }

    /// The token of `uri`'s module (every module when it names none) that holds the wallet's keys, or nil.
    static func holder(near uri: PKCS11URI, paths: WalletPaths) throws -> Token? {
        let metadata = try WalletMetadata.load(paths)
        guard let wrappedBytes = FileManager.default.contents(atPath: paths.wrappedKey) else { return nil }
        let recipients = Set(try WrappedKeyFile(encoded: Array(wrappedBytes)).recipients.map(\.recipientKey.x963))
        var scope = PKCS11URI()
        scope.moduleName = uri.moduleName
        scope.modulePath = uri.modulePath
        let holders = try TokenLibrary.shared.list(scope).flatMap(\.tokens).filter { token in
            guard let keys = try? token.publicKeys() else { return false }
            let agreement = keys.first { Hex.encode($0.id) == metadata.agreementKeyID }
            return agreement.map { recipients.contains($0.publicKey.x963) } == true
                && keys.contains { Hex.encode($0.id) == metadata.signingKeyID }
        }
        guard holders.count <= 1 else {
            throw TokenError(
                .ambiguous,
                "no token matches \(uri.withoutPIN.tokenOnly), and \(holders.count) tokens hold the wallet's keys: "
                    + holders.map { "\($0.uri)" }.joined(separator: ", ") + "; pass --token to pick one")
        }
        return holders.first
    }

    /// After `wallet` opened on a token found by its keys: checks that the token holds the signing key in
    /// force (the key-event log's) under the CKA_ID recorded at init, then records the token's URI in
    /// `wallet.json` in place of the one that matched nothing. Returns the URI recorded.
    @discardableResult
    public static func record(_ token: Token, for wallet: Wallet) throws -> PKCS11URI {
        let signing = try token.publicKeys().first { Hex.encode($0.id) == wallet.metadata.signingKeyID }
        guard let signing, signing.publicKey == wallet.signingKey else {
            throw WalletError(
                .keyMismatch,
                "the token \"\(token.label)\" holds the wallet's key-agreement key, but not its signing key in force "
                    + "under id \(wallet.metadata.signingKeyID); its URI was not recorded. Pass --token to use it")
        }
        let found = token.uri.withoutPIN.tokenOnly
        wallet.metadata.token = found.description
        try wallet.metadata.save(wallet.paths)
        return found
    }
}
