import SecureCrypto
import Testing

/// FIPS 203 §7 input checks and Go-style bad-length sweeps: every truncation, and extensions, of
/// encapsulation keys, decapsulation keys and ciphertexts are refused with an error, never a trap.
@Suite("ML-KEM input checks")
struct MLKEMInputTests {
    static let extensionByteCountMax = 64

    static func variants(of encoded: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = (0..<encoded.count).map { Array(encoded.prefix($0)) }
        for extra in 1...extensionByteCountMax {
            result.append(encoded + [UInt8](repeating: UInt8(extra), count: extra))
        }
        result.append(encoded + encoded)
        return result
    }

    @Test func mlkem512() throws { try run(MLKEM512.self) }
    @Test func mlkem768() throws { try run(MLKEM768.self) }
    @Test func mlkem1024() throws { try run(MLKEM1024.self) }

    func run<P>(_ kem: MLKEM<P>.Type) throws {
        let name = MLKEM<P>.name
        let key = MLKEM<P>.PrivateKey.generate()
        let encapsulationKey = key.publicKey.rawRepresentation
        let decapsulationKey = key.decapsulationKey.copyBytes()
        let (_, ciphertext) = key.publicKey.encapsulate()
        #expect(encapsulationKey.count == MLKEM<P>.publicKeyByteCount)
        #expect(decapsulationKey.count == MLKEM<P>.decapsulationKeyByteCount)
        #expect(ciphertext.count == MLKEM<P>.ciphertextByteCount)

        for candidate in Self.variants(of: encapsulationKey) {
            #expect(throws: CryptoError(.invalidLength, ""), "\(name): ek of \(candidate.count) bytes") {
                try MLKEM<P>.PublicKey(rawRepresentation: candidate)
            }
        }
        for candidate in Self.variants(of: decapsulationKey) {
            #expect(throws: CryptoError(.invalidLength, ""), "\(name): dk of \(candidate.count) bytes") {
                try MLKEM<P>.PrivateKey(decapsulationKey: candidate)
            }
        }
        for candidate in Self.variants(of: ciphertext) {
            #expect(throws: CryptoError(.invalidLength, ""), "\(name): ciphertext of \(candidate.count) bytes") {
                try key.decapsulate(candidate)
            }
        }
        for length in [0, 32, 63, 65, 96] {
            #expect(throws: CryptoError(.invalidLength, ""), "\(name): seed of \(length) bytes") {
                try MLKEM<P>.PrivateKey(seed: [UInt8](repeating: 7, count: length))
            }
        }
    }

    /// Sets the 12-bit coefficient `index` of an encoded polynomial vector.
    static func setCoefficient(_ encoded: inout [UInt8], index: Int, value: UInt16) {
        let byte = (index / 2) * 3
        if index % 2 == 0 {
            encoded[byte] = UInt8(value & 0xff)
            encoded[byte + 1] = (encoded[byte + 1] & 0xf0) | UInt8(value >> 8)
        } else {
            encoded[byte + 1] = (encoded[byte + 1] & 0x0f) | UInt8((value & 0x0f) << 4)
            encoded[byte + 2] = UInt8(value >> 4)
        }
    }

    @Test func modulusCheck() throws {
        try modulusCheck(MLKEM512.self)
        try modulusCheck(MLKEM768.self)
        try modulusCheck(MLKEM1024.self)
    }

    func modulusCheck<P>(_ kem: MLKEM<P>.Type) throws {
        let name = MLKEM<P>.name
        let key = MLKEM<P>.PrivateKey.generate()
        let encoded = key.publicKey.rawRepresentation
        let coefficientCount = (encoded.count - 32) / 384 * 256
        for index in [0, 1, 255, 256, 511, coefficientCount - 2, coefficientCount - 1] {
            for value: UInt16 in [3328, 3329, 3330, 4095] {
                var candidate = encoded
                Self.setCoefficient(&candidate, index: index, value: value)
                if value < 3329 {
                    #expect(throws: Never.self, "\(name): coefficient \(index) = \(value) is valid") {
                        try MLKEM<P>.PublicKey(rawRepresentation: candidate)
                    }
                } else {
                    #expect(throws: CryptoError(.invalidKey, ""), "\(name): coefficient \(index) = \(value) ≥ q") {
                        try MLKEM<P>.PublicKey(rawRepresentation: candidate)
                    }
                }
            }
        }
    }

    @Test func decapsulationKeyHashCheck() throws {
        let key = MLKEM768.PrivateKey.generate()
        let encoded = key.decapsulationKey.copyBytes()
        #expect(try MLKEM768.PrivateKey(decapsulationKey: encoded).publicKey == key.publicKey)
        for offset in [1152, 1152 + 600, 2304 + 31, 2336, 2367] {
            var tampered = encoded
            tampered[offset] ^= 0x04
            #expect(throws: CryptoError(.invalidKey, ""), "byte \(offset) of dk changed") {
                try MLKEM768.PrivateKey(decapsulationKey: tampered)
            }
        }
        // The seed round-trips and a seedless parsed key still decapsulates.
        let (secret, ciphertext) = key.publicKey.encapsulate()
        #expect(try MLKEM768.PrivateKey(decapsulationKey: encoded).decapsulate(ciphertext) == secret)
        #expect(try MLKEM768.PrivateKey(decapsulationKey: encoded).seed == nil)
        #expect(try MLKEM768.PrivateKey(seed: key.seed!).decapsulationKey == key.decapsulationKey)
    }

    @Test func implicitRejection() throws {
        let key = MLKEM768.PrivateKey.generate()
        let (secret, ciphertext) = key.publicKey.encapsulate()
        var tampered = ciphertext
        tampered[0] ^= 1
        let rejected = try key.decapsulate(tampered)
        #expect(rejected != secret)
        #expect(try key.decapsulate(tampered) == rejected, "implicit rejection is deterministic")
    }
}
