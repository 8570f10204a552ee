import SecureCrypto

/// The signer seam (`MessageSigner`), backed by a key on a token: the one token signer of the package.
/// Each signature does its own per-signature login inside the approved session, on the token.
public final class TokenSigner: MessageSigner {
    /// The token the signatures are made on.
    public let token: WalletToken
    /// The key.
    public let key: TokenKey

    /// A signer for a key already found on a token.
    public init(token: WalletToken, key: TokenKey) {
        self.token = token
        self.key = key
    }

    /// A signer for the key a URI names, in an authenticated session.
    public convenience init(session: TokenSession, keyURI: PKCS11URI) throws {
        self.init(token: session, key: try session.key(keyURI))
    }

    public var publicKey: P256.PublicKey { key.publicKey }

    public func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature {
        try token.sign(digest: label.digest(of: payload), key: key)
    }
}
