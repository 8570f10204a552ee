/// Selects an ML-KEM parameter set at the type level.
public protocol MLKEMParameterSet: Sendable {
    /// The parameter set's numbers.
    static var parameters: MLKEMParameters { get }
}

/// ML-KEM-512's parameters.
public enum MLKEM512Parameters: MLKEMParameterSet {
    /// The parameter set's numbers.
    public static var parameters: MLKEMParameters { .mlkem512 }
}

/// ML-KEM-768's parameters.
public enum MLKEM768Parameters: MLKEMParameterSet {
    /// The parameter set's numbers.
    public static var parameters: MLKEMParameters { .mlkem768 }
}

/// ML-KEM-1024's parameters.
public enum MLKEM1024Parameters: MLKEMParameterSet {
    /// The parameter set's numbers.
    public static var parameters: MLKEMParameters { .mlkem1024 }
}

/// ML-KEM-512 (FIPS 203).
public typealias MLKEM512 = MLKEM<MLKEM512Parameters>
/// ML-KEM-768 (FIPS 203).
public typealias MLKEM768 = MLKEM<MLKEM768Parameters>
/// ML-KEM-1024 (FIPS 203).
public typealias MLKEM1024 = MLKEM<MLKEM1024Parameters>

/// ML-KEM exactly as FIPS 203 (August 2024) specifies it, with the lattice arithmetic in Swift and
/// Keccak from OpenSSL. Secret-dependent code is constant time (see docs/THREAT-MODEL.md).
public enum MLKEM<Parameters: MLKEMParameterSet>: KEM {
    /// "ML-KEM-512", "ML-KEM-768" or "ML-KEM-1024".
    public static var name: String { Parameters.parameters.name }
    /// Bytes in an encapsulation key.
    public static var publicKeyByteCount: Int { Parameters.parameters.encapsulationKeyByteCount }
    /// Bytes in a full FIPS 203 decapsulation key.
    public static var decapsulationKeyByteCount: Int { Parameters.parameters.decapsulationKeyByteCount }
    /// Bytes in a ciphertext.
    public static var ciphertextByteCount: Int { Parameters.parameters.ciphertextByteCount }
    /// Bytes in a shared secret.
    public static var sharedSecretByteCount: Int { MLKEMParameters.sharedSecretByteCount }
    /// Bytes in the seed d ‖ z.
    public static var seedByteCount: Int { MLKEMParameters.seedByteCount }

    /// An encapsulation key, parsed and checked (FIPS 203 §7.2), with Â pre-expanded.
    public struct PublicKey: KEMPublicKey, Hashable {
        let storage: MLKEMPublicKeyStorage

        init(storage: MLKEMPublicKeyStorage) { self.storage = storage }

        /// Parses an encapsulation key; throws `.invalidLength` for a wrong length and `.invalidKey` when
        /// a coefficient is ≥ q (the modulus check).
        public init(rawRepresentation: [UInt8]) throws {
            storage = try MLKEMEngine.parsePublicKey(Parameters.parameters, encoded: rawRepresentation)
        }

        /// The encoded encapsulation key.
        public var rawRepresentation: [UInt8] { storage.encoded }

        /// Encapsulates with 32 fresh bytes m from the system CSPRNG.
        public func encapsulate() -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
            let message = SecretBytes(randomCount: 32)
            return message.withUnsafeBytes { MLKEMEngine.encapsulate(storage, message: $0) }
        }

        /// ML-KEM.Encaps_internal with a caller-chosen m. For known-answer tests only: reusing or
        /// predicting m breaks the KEM.
        public func _encapsulate(message: [UInt8]) throws -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
            guard message.count == 32 else { throw CryptoError(.invalidLength, "m is 32 bytes, got \(message.count)") }
            return message.withUnsafeBytes { MLKEMEngine.encapsulate(storage, message: $0) }
        }

        /// Equal when the encodings are equal.
        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.storage.encoded == rhs.storage.encoded }

        /// Hashes the encoding.
        public func hash(into hasher: inout Hasher) { hasher.combine(storage.encoded) }
    }

    /// A decapsulation key. Made from the 64-byte seed d ‖ z (the recommended stored form) or parsed from
    /// the full FIPS 203 encoding with its hash check.
    public struct PrivateKey: KEMPrivateKey {
        let storage: MLKEMPrivateKeyStorage

        /// ML-KEM.KeyGen_internal(d, z) from the seed d ‖ z.
        public init(seed: SecretBytes) throws {
            guard seed.count == MLKEMParameters.seedByteCount else {
                throw CryptoError(.invalidLength, "an ML-KEM seed is 64 bytes (d ‖ z), got \(seed.count)")
            }
            storage = MLKEMEngine.generate(Parameters.parameters, seed: seed)
        }

        /// The same from an array holding d ‖ z.
        public init(seed: [UInt8]) throws { try self.init(seed: SecretBytes(seed)) }

        /// KeyGen_internal(d, z) with d and z given separately, as the known-answer files list them.
        public static func _generate(d: [UInt8], z: [UInt8]) throws -> PrivateKey {
            guard d.count == 32, z.count == 32 else { throw CryptoError(.invalidLength, "d and z are 32 bytes each") }
            return try PrivateKey(seed: d + z)
        }

        /// Parses a full FIPS 203 decapsulation key (length, hash check, and the modulus check on the
        /// embedded encapsulation key).
        public init(decapsulationKey: [UInt8]) throws {
            storage = try decapsulationKey.withUnsafeBytes {
                try MLKEMEngine.parsePrivateKey(Parameters.parameters, encoded: $0)
            }
        }

        /// Parses a full decapsulation key held as a secret.
        public init(decapsulationKey: SecretBytes) throws {
            storage = try decapsulationKey.withUnsafeBytes {
                try MLKEMEngine.parsePrivateKey(Parameters.parameters, encoded: $0)
            }
        }

        /// A fresh key from a random seed.
        public static func generate() -> PrivateKey {
            // A 64-byte seed always makes a key.
            try! PrivateKey(seed: SecretBytes(randomCount: MLKEMParameters.seedByteCount))
        }

        /// The seed d ‖ z, when the key was made from one (nil for a parsed full key).
        public var seed: SecretBytes? { storage.seed }

        /// The full FIPS 203 decapsulation key dk = ŝ ‖ ek ‖ H(ek) ‖ z.
        public var decapsulationKey: SecretBytes { MLKEMEngine.encodePrivateKey(storage) }

        /// The matching encapsulation key.
        public var publicKey: PublicKey { PublicKey(storage: storage.publicKey) }

        /// ML-KEM.Decaps with implicit rejection. Throws `.invalidLength` only for a ciphertext of the wrong
        /// length; any other ciphertext yields a key (a pseudorandom one when it was not made for us).
        public func decapsulate(_ ciphertext: [UInt8]) throws -> SecretBytes {
            try MLKEMEngine.decapsulate(storage, ciphertext: ciphertext)
        }
    }
}
