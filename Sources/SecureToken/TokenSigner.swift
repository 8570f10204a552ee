import SecureCore
import SecureCrypto

/// SecureCore's signer seam, backed by a key on a token. Each signature does its own per-signature
/// login inside the approved session.
public final class TokenSigner: MessageSigner {
    /// The authenticated session the signatures are made in.
    public let session: TokenSession
    /// The key.
    public let key: TokenKey

    /// A signer for the key a URI names, in an authenticated session.
    public init(session: TokenSession, keyURI: PKCS11URI) throws {
        self.session = session
        key = try session.key(keyURI)
    }

    public var publicKey: P256.PublicKey { key.publicKey }

    public func sign(_ payload: [UInt8], label: SignatureLabel) throws -> ECDSASignature {
        try session.sign(digest: label.digest(of: payload), key: key)
    }
}
