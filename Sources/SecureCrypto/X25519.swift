/// X25519 Diffie–Hellman (RFC 7748) through OpenSSL.
public enum X25519 {
    /// Key and shared-secret length in bytes.
    public static let byteCount = 32

    /// An X25519 private key. Held by OpenSSL, which wipes it when the key is released.
    public struct PrivateKey: Sendable {
        let key: EVPPrivateKey
        /// The matching public key.
        public let publicKey: PublicKey

        /// A fresh key from the system CSPRNG.
        public static func generate() -> PrivateKey {
            let seed = SecretBytes(randomCount: X25519.byteCount)
            // 32 random bytes are always a valid X25519 private key.
            return try! PrivateKey(secret: seed)
        }

        /// A key from its 32 raw bytes (any 32 bytes; clamping is part of the scalar multiplication).
        public init(rawRepresentation: [UInt8]) throws {
            try self.init(secret: SecretBytes(rawRepresentation))
        }

        /// A key from its 32 raw bytes held as a secret.
        public init(secret: SecretBytes) throws {
            guard secret.count == X25519.byteCount else {
                throw CryptoError(.invalidKey, "an X25519 private key is 32 bytes, got \(secret.count)")
            }
            key = try secret.withUnsafeBytes { try EVPPrivateKey.x25519(raw: $0) }
            publicKey = PublicKey(checkedRaw: try key.rawPublicKey())
        }

        /// X25519(k, u) with the peer's public key. Throws `.invalidKey` when the result is all zeros, which
        /// happens exactly for the low-order points (RFC 7748 §6.1); OpenSSL refuses those.
        public func sharedSecret(with peer: PublicKey) throws -> SecretBytes {
            let peerKey = try EVPX25519PublicKey(raw: peer.rawRepresentation)
            do {
                return try key.derive(peer: peerKey.pointer, secretByteCount: X25519.byteCount)
            } catch {
                throw CryptoError.openSSL(
                    "X25519 gave the all-zero shared secret: the peer's public key is a low-order point",
                    code: .invalidKey)
            }
        }
    }

    /// An X25519 public key: 32 bytes, u-coordinate little-endian. Every 32-byte string is accepted
    /// (RFC 7748); low-order points are caught when a shared secret is computed.
    public struct PublicKey: Hashable, Sendable {
        /// The 32 raw bytes.
        public let rawRepresentation: [UInt8]

        /// Takes 32 raw bytes.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == X25519.byteCount else {
                throw CryptoError(.invalidKey, "an X25519 public key is 32 bytes, got \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
        }

        init(checkedRaw: [UInt8]) { rawRepresentation = checkedRaw }
    }
}
