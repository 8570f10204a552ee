/// A key-encapsulation mechanism. The peer channel is written against this protocol, so another
/// implementation of the same KEM (for example OpenSSL ≥ 3.5's ML-KEM, once a machine here can run and
/// test it) can replace the Swift one without touching callers.
public protocol KEM {
    /// The recipient's public (encapsulation) key.
    associatedtype PublicKey: KEMPublicKey
    /// The recipient's private (decapsulation) key.
    associatedtype PrivateKey: KEMPrivateKey where PrivateKey.PublicKey == PublicKey

    /// The name used in logs and benchmarks, e.g. "ML-KEM-768".
    static var name: String { get }
    /// Bytes in an encoded public key.
    static var publicKeyByteCount: Int { get }
    /// Bytes in a ciphertext.
    static var ciphertextByteCount: Int { get }
    /// Bytes in a shared secret.
    static var sharedSecretByteCount: Int { get }
}

/// A KEM public key: parsed once (with the checks its standard requires), then used to encapsulate.
public protocol KEMPublicKey: Sendable {
    /// Parses and checks an encoded public key; throws `CryptoError` (`.invalidLength`, `.invalidKey`).
    init(rawRepresentation: [UInt8]) throws
    /// The encoded public key.
    var rawRepresentation: [UInt8] { get }
    /// Encapsulates with fresh randomness from the system CSPRNG.
    func encapsulate() -> (sharedSecret: SecretBytes, ciphertext: [UInt8])
}

/// A KEM private key.
public protocol KEMPrivateKey: Sendable {
    /// The matching public key type.
    associatedtype PublicKey: KEMPublicKey
    /// A fresh key from the system CSPRNG.
    static func generate() -> Self
    /// The matching public key.
    var publicKey: PublicKey { get }
    /// Recovers the shared secret. Throws only for a ciphertext of the wrong length or (X-Wing) a
    /// ciphertext whose X25519 share is a low-order point; a wrong ciphertext of the right length gives an
    /// unrelated secret (implicit rejection).
    func decapsulate(_ ciphertext: [UInt8]) throws -> SecretBytes
}
