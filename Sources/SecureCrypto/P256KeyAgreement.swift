extension P256 {
    /// An ephemeral P-256 key for ECDH (ECIES-style key wrapping). It lives only in memory, is generated
    /// from the system CSPRNG and cannot be imported or exported: long-term P-256 keys stay on tokens.
    public struct KeyAgreementPrivateKey: Sendable {
        let key: EVPPrivateKey
        /// The matching public key.
        public let publicKey: P256.PublicKey

        /// A fresh key. Generation fails only when OpenSSL or the CSPRNG is broken, which no caller can
        /// recover from safely, so that traps (as `SystemRandom` does).
        public static func generate() -> KeyAgreementPrivateKey {
            do {
                let key = try EVPPrivateKey.generateP256()
                return KeyAgreementPrivateKey(
                    key: key, publicKey: try P256.PublicKey(spki: try key.subjectPublicKeyInfo()))
            } catch {
                preconditionFailure("P-256 key generation failed: \(error)")
            }
        }

        private init(key: EVPPrivateKey, publicKey: P256.PublicKey) {
            self.key = key
            self.publicKey = publicKey
        }

        /// The 32-byte x-coordinate of the shared point (SEC 1 ECDH). The peer key was checked to be on the
        /// curve when it was parsed.
        public func sharedSecret(with peer: P256.PublicKey) throws -> SecretBytes {
            let peerKey = try EVPPublicKey(spki: peer.spki)
            return try key.derive(peer: peerKey.handle, secretByteCount: P256.scalarByteCount)
        }
    }
}
