/// X-Wing, the hybrid of X25519 and ML-KEM-768, exactly as draft-connolly-cfrg-xwing-kem-06 specifies
/// it (HPKE KEM id 0x647a).
///
/// One deliberate strictness beyond the draft, which lets X25519 run without a zero check: a low-order
/// X25519 share is refused. A public key whose X25519 part is a low-order point fails to parse, and a
/// ciphertext whose X25519 part is one fails to decapsulate with `.invalidCiphertext`. Honest parties
/// never produce either, OpenSSL 3.0 refuses the all-zero X25519 output, and falling back to a secret
/// without its X25519 part would silently drop half of the hybrid. See docs/THREAT-MODEL.md.
public enum XWing: KEM {
    /// "X-Wing".
    public static let name = "X-Wing"
    /// Bytes in a public key: ML-KEM-768 ek ‖ X25519 public key.
    public static let publicKeyByteCount = 1216
    /// Bytes in a ciphertext: ML-KEM-768 ciphertext ‖ X25519 ephemeral public key.
    public static let ciphertextByteCount = 1120
    /// Bytes in a shared secret.
    public static let sharedSecretByteCount = 32
    /// Bytes in the private key seed.
    public static let seedByteCount = 32
    /// Bytes of randomness one encapsulation consumes.
    public static let encapsulationSeedByteCount = 64

    /// XWingLabel = "\.//^\" (0x5c2e2f2f5e5c), the combiner's domain separator.
    static let label: [UInt8] = [0x5c, 0x2e, 0x2f, 0x2f, 0x5e, 0x5c]
    static let mlkemPublicKeyByteCount = 1184
    static let mlkemCiphertextByteCount = 1088

    /// SHA3-256(ss_M ‖ ss_X ‖ ct_X ‖ pk_X ‖ XWingLabel).
    static func combine(
        mlkemSecret: SecretBytes, x25519Secret: SecretBytes, x25519Ciphertext: [UInt8],
        x25519PublicKey: [UInt8]
    ) -> SecretBytes {
        let keccak = KeccakContext()
        keccak.start(.sha3With256Bits)
        mlkemSecret.withUnsafeBytes { keccak.absorb($0.baseAddress, $0.count) }
        x25519Secret.withUnsafeBytes { keccak.absorb($0.baseAddress, $0.count) }
        keccak.absorb(x25519Ciphertext)
        keccak.absorb(x25519PublicKey)
        keccak.absorb(label)
        let output = SecretBytes(zeroedCount: 32)
        output.storage.withUnsafeMutableBytes { keccak.finish(into: $0.baseAddress!, count: 32) }
        return output
    }

    /// An X-Wing public key: pk_M ‖ pk_X, both parts checked.
    public struct PublicKey: KEMPublicKey, Hashable {
        let mlkem: MLKEM768.PublicKey
        let x25519: X25519.PublicKey

        /// Parses 1216 bytes. Throws `.invalidLength`, or `.invalidKey` when the ML-KEM part fails the
        /// modulus check or the X25519 part is a low-order point.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == XWing.publicKeyByteCount else {
                throw CryptoError(
                    .invalidLength,
                    "an X-Wing public key is \(XWing.publicKeyByteCount) bytes, got \(rawRepresentation.count)")
            }
            let mlkem = try MLKEM768.PublicKey(
                rawRepresentation: Array(rawRepresentation[0..<XWing.mlkemPublicKeyByteCount]))
            let x25519 = try X25519.PublicKey(
                rawRepresentation: Array(rawRepresentation[XWing.mlkemPublicKeyByteCount...]))
            try XWing.refuseLowOrder(x25519)
            self.init(mlkem: mlkem, x25519: x25519)
        }

        init(mlkem: MLKEM768.PublicKey, x25519: X25519.PublicKey) {
            self.mlkem = mlkem
            self.x25519 = x25519
        }

        /// pk_M ‖ pk_X.
        public var rawRepresentation: [UInt8] { mlkem.rawRepresentation + x25519.rawRepresentation }

        /// Encapsulates with 64 fresh bytes from the system CSPRNG.
        public func encapsulate() -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
            // The X25519 share was checked not to be low order when the key was made, so this cannot fail.
            try! encapsulate(seed: SecretBytes(randomCount: XWing.encapsulationSeedByteCount))
        }

        /// Encapsulate with caller-chosen randomness eseed (64 bytes: m for ML-KEM, then ek_X). For
        /// known-answer tests only.
        public func _encapsulate(seed: [UInt8]) throws -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
            guard seed.count == XWing.encapsulationSeedByteCount else {
                throw CryptoError(.invalidLength, "X-Wing encapsulation randomness is 64 bytes, got \(seed.count)")
            }
            return try encapsulate(seed: SecretBytes(seed))
        }

        private func encapsulate(seed: SecretBytes) throws -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
            let (ephemeral, mlkemResult) = seed.withUnsafeBytes { bytes in
                (
                    SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[32..<64])),
                    MLKEMEngine.encapsulate(mlkem.storage, message: UnsafeRawBufferPointer(rebasing: bytes[0..<32]))
                )
            }
            let ephemeralKey = try X25519.PrivateKey(secret: ephemeral)
            let x25519Ciphertext = ephemeralKey.publicKey.rawRepresentation
            let x25519Secret = try ephemeralKey.sharedSecret(with: x25519)
            let secret = XWing.combine(
                mlkemSecret: mlkemResult.sharedSecret, x25519Secret: x25519Secret,
                x25519Ciphertext: x25519Ciphertext, x25519PublicKey: x25519.rawRepresentation)
            return (secret, mlkemResult.ciphertext + x25519Ciphertext)
        }
    }

    /// An X-Wing private key, stored as its 32-byte seed and expanded when made.
    public struct PrivateKey: KEMPrivateKey {
        /// The 32-byte seed: the whole private key.
        public let seed: SecretBytes
        let mlkem: MLKEM768.PrivateKey
        let x25519: X25519.PrivateKey
        /// The matching public key.
        public let publicKey: PublicKey

        /// Expands a 32-byte seed: SHAKE256(seed, 96) = d ‖ z ‖ sk_X.
        public init(seed: SecretBytes) throws {
            guard seed.count == XWing.seedByteCount else {
                throw CryptoError(.invalidLength, "an X-Wing private key seed is 32 bytes, got \(seed.count)")
            }
            let expanded = SecretBytes(zeroedCount: 96)
            let keccak = KeccakContext()
            keccak.start(.shake256)
            seed.withUnsafeBytes { keccak.absorb($0.baseAddress, 32) }
            expanded.storage.withUnsafeMutableBytes { keccak.squeeze(into: $0.baseAddress!, count: 96) }
            let (mlkemSeed, x25519Secret) = expanded.withUnsafeBytes {
                (
                    SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[0..<64])),
                    SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[64..<96]))
                )
            }
            self.seed = seed
            mlkem = try MLKEM768.PrivateKey(seed: mlkemSeed)
            x25519 = try X25519.PrivateKey(secret: x25519Secret)
            publicKey = PublicKey(mlkem: mlkem.publicKey, x25519: x25519.publicKey)
        }

        /// The same from an array.
        public init(seed: [UInt8]) throws { try self.init(seed: SecretBytes(seed)) }

        /// A fresh key from a random seed.
        public static func generate() -> PrivateKey {
            // Any 32-byte seed makes a key.
            try! PrivateKey(seed: SecretBytes(randomCount: XWing.seedByteCount))
        }

        /// Decapsulates. Throws `.invalidLength` for a wrong length and `.invalidCiphertext` when ct_X is a
        /// low-order point (only a malicious sender makes one); otherwise ML-KEM's implicit rejection
        /// applies and a wrong ciphertext yields an unrelated secret.
        public func decapsulate(_ ciphertext: [UInt8]) throws -> SecretBytes {
            guard ciphertext.count == XWing.ciphertextByteCount else {
                throw CryptoError(
                    .invalidLength,
                    "an X-Wing ciphertext is \(XWing.ciphertextByteCount) bytes, got \(ciphertext.count)")
            }
            let mlkemSecret = try mlkem.decapsulate(Array(ciphertext[0..<XWing.mlkemCiphertextByteCount]))
            let x25519Ciphertext = Array(ciphertext[XWing.mlkemCiphertextByteCount...])
            let x25519Secret: SecretBytes
            do {
                x25519Secret = try x25519.sharedSecret(with: try X25519.PublicKey(rawRepresentation: x25519Ciphertext))
            } catch {
                throw CryptoError(
                    .invalidCiphertext,
                    "the X-Wing ciphertext's X25519 share is a low-order point; refusing it rather than dropping the X25519 part"
                )
            }
            return XWing.combine(
                mlkemSecret: mlkemSecret, x25519Secret: x25519Secret,
                x25519Ciphertext: x25519Ciphertext, x25519PublicKey: publicKey.x25519.rawRepresentation)
        }
    }

    /// The u-coordinates, reduced mod p = 2²⁵⁵ − 19, of the points of small order on Curve25519 and its
    /// twist: 0 and 1 and p − 1 (orders 2 and 4), and the two of order 8. For a clamped scalar (a multiple
    /// of 8 below the prime subgroup orders), X25519(k, u) is all zeros exactly for these u, so this list
    /// is complete; the tests check it against OpenSSL's refusal.
    private static let lowOrderCoordinates: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
        hexBytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        hexBytes("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
    ]

    /// Whether a public X25519 u-coordinate is a low-order point. It is public data, so this may branch.
    /// X25519 ignores the top bit and accepts non-canonical values p ... 2²⁵⁵ − 1, so both are folded.
    static func isLowOrder(_ u: [UInt8]) -> Bool {
        var canonical = u
        canonical[31] &= 0x7f
        let isAtLeastP = canonical[31] == 0x7f && canonical[1...30].allSatisfy { $0 == 0xff } && canonical[0] >= 0xed
        if isAtLeastP {
            canonical = [canonical[0] - 0xed] + [UInt8](repeating: 0, count: 31)
        }
        return lowOrderCoordinates.contains(canonical)
    }

    static func refuseLowOrder(_ key: X25519.PublicKey) throws {
        if isLowOrder(key.rawRepresentation) {
            throw CryptoError(.invalidKey, "the X-Wing public key's X25519 part is a low-order point")
        }
    }
}
