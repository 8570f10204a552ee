internal import CValgrindShim

// ML-KEM's internal algorithms (FIPS 203 §5–6) on pre-parsed keys. Keccak is OpenSSL's, through one
// reusable `KeccakContext` per operation.

/// The numbers that distinguish ML-KEM-512, -768 and -1024 (FIPS 203 Table 2).
public struct MLKEMParameters: Sendable, Equatable {
    /// "ML-KEM-768" and so on.
    public let name: String
    let k: Int
    let eta1: Int
    let eta2: Int
    let du: Int
    let dv: Int

    /// ML-KEM-512.
    public static let mlkem512 = MLKEMParameters(name: "ML-KEM-512", k: 2, eta1: 3, eta2: 2, du: 10, dv: 4)
    /// ML-KEM-768.
    public static let mlkem768 = MLKEMParameters(name: "ML-KEM-768", k: 3, eta1: 2, eta2: 2, du: 10, dv: 4)
    /// ML-KEM-1024.
    public static let mlkem1024 = MLKEMParameters(name: "ML-KEM-1024", k: 4, eta1: 2, eta2: 2, du: 11, dv: 5)

    /// Bytes in an encapsulation key: ByteEncode₁₂(t̂) ‖ ρ.
    public var encapsulationKeyByteCount: Int { 384 * k + 32 }
    /// Bytes in a full decapsulation key: ByteEncode₁₂(ŝ) ‖ ek ‖ H(ek) ‖ z.
    public var decapsulationKeyByteCount: Int { 768 * k + 96 }
    /// Bytes in a ciphertext: c₁ ‖ c₂.
    public var ciphertextByteCount: Int { 32 * (du * k + dv) }
    /// Bytes in the seed d ‖ z.
    public static let seedByteCount = 64
    /// Bytes in a shared secret.
    public static let sharedSecretByteCount = 32

    var c1ByteCount: Int { 32 * du * k }
}

/// A parsed encapsulation key: the encoded bytes, H(ek), t̂ and the matrix Â expanded from ρ, kept so that
/// encapsulation does not redo the SHAKE128 sampling (FIPS 203 permits keeping such precomputed values).
final class MLKEMPublicKeyStorage: @unchecked Sendable {
    let parameters: MLKEMParameters
    let encoded: [UInt8]
    let hash: [UInt8]
    /// t̂ (k polynomials, in [0, q)) followed by Â (k² polynomials, Â[i][j] at index i·k + j).
    let polynomials: Coefficients

    var tHat: Coefficients { polynomials }
    var matrix: Coefficients { polynomials + parameters.k * 256 }

    init(parameters: MLKEMParameters, encoded: [UInt8], hash: [UInt8], polynomials: Coefficients) {
        self.parameters = parameters
        self.encoded = encoded
        self.hash = hash
        self.polynomials = polynomials
    }

    deinit { polynomials.deallocate() }
}

/// A parsed decapsulation key. ŝ and z are secret and wiped on release; the rest is the public key.
final class MLKEMPrivateKeyStorage: @unchecked Sendable {
    let publicKey: MLKEMPublicKeyStorage
    /// ŝ: k polynomials in the NTT domain, centred.
    let sHat: Coefficients
    /// The implicit-rejection secret z.
    let z: SecretBytes
    /// d ‖ z when the key was made from a seed.
    let seed: SecretBytes?

    init(publicKey: MLKEMPublicKeyStorage, sHat: Coefficients, z: SecretBytes, seed: SecretBytes?) {
        self.publicKey = publicKey
        self.sHat = sHat
        self.z = z
        self.seed = seed
    }

    deinit {
        secureZero(sHat, publicKey.parameters.k * 256 * 2)
        sHat.deallocate()
    }
}

/// Scratch memory for one operation: polynomials and bytes, wiped and freed afterwards.
final class MLKEMScratch {
    static let byteCapacity = 4096
    let polynomials: Coefficients
    let polynomialCount: Int
    let bytes: UnsafeMutablePointer<UInt8>
    let keccak = KeccakContext()

    init(polynomialCount: Int) {
        self.polynomialCount = polynomialCount
        polynomials = Coefficients.allocate(capacity: polynomialCount * 256)
        polynomials.initialize(repeating: 0, count: polynomialCount * 256)
        bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: MLKEMScratch.byteCapacity)
        bytes.initialize(repeating: 0, count: MLKEMScratch.byteCapacity)
    }

    deinit {
        secureZero(polynomials, polynomialCount * 512)
        secureZero(bytes, MLKEMScratch.byteCapacity)
        polynomials.deallocate()
        bytes.deallocate()
    }

    func polynomial(_ index: Int) -> Coefficients { polynomials + index * 256 }
}

enum MLKEMEngine {
    // Byte offsets inside MLKEMScratch.bytes.
    private static let prfOffset = 0 // 192 bytes of PRF output
    private static let messageOffset = 256 // m or m′, 32 bytes
    private static let gOffset = 320 // G output K ‖ r, 64 bytes
    private static let rejectOffset = 384 // K̄, 32 bytes
    private static let xofOffset = 512 // 504 bytes of SHAKE128 output
    private static let ciphertextOffset = 1024 // re-encrypted c′, up to 1568 bytes
    /// SHAKE128 blocks squeezed at once for SampleNTT. Three blocks (504 bytes, 336 candidates) suffice
    /// for about 99% of polynomials; the rest are re-squeezed with more output (`sampleNTT`).
    private static let sampleBlockCount = 3

    // MARK: Hash functions of FIPS 203 §4.1

    @inline(__always)
    private static func prf(
        _ keccak: KeccakContext, seed: UnsafePointer<UInt8>, nonce: Int, eta: Int,
        into output: UnsafeMutablePointer<UInt8>
    ) {
        keccak.start(.shake256)
        keccak.absorb(seed, 32)
        var nonceByte = UInt8(truncatingIfNeeded: nonce)
        keccak.absorb(&nonceByte, 1)
        keccak.squeeze(into: output, count: 64 * eta)
    }

    /// SampleNTT(ρ ‖ j ‖ i) into r.
    private static func sampleNTT(
        _ scratch: MLKEMScratch, rho: UnsafePointer<UInt8>, i: Int, j: Int, into r: Coefficients
    ) {
        var indices: (UInt8, UInt8) = (UInt8(truncatingIfNeeded: j), UInt8(truncatingIfNeeded: i))
        let keccak = scratch.keccak
        var blocks = sampleBlockCount
        let buffer = scratch.bytes + xofOffset
        keccak.start(.shake128)
        keccak.absorb(rho, 32)
        withUnsafeBytes(of: &indices) { keccak.absorb($0.baseAddress, 2) }
        keccak.squeeze(into: buffer, count: blocks * 168)
        if MLKEMCoding.sampleUniform(buffer, count: blocks * 168, into: r, start: 0) == 256 { return }
        // Rare: OpenSSL 3.0 cannot squeeze again, so hash again asking for more. SHAKE output is
        // prefix-consistent, so this is the same stream as squeezing further.
        while true {
            blocks *= 2
            let count = blocks * 168
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
            defer { larger.deallocate() }
            keccak.start(.shake128)
            keccak.absorb(rho, 32)
            withUnsafeBytes(of: &indices) { keccak.absorb($0.baseAddress, 2) }
            keccak.squeeze(into: larger, count: count)
            if MLKEMCoding.sampleUniform(larger, count: count, into: r, start: 0) == 256 { return }
        }
    }

    /// Â from ρ: Â[i][j] = SampleNTT(ρ ‖ j ‖ i).
    private static func expandMatrix(
        _ scratch: MLKEMScratch, k: Int, rho: UnsafePointer<UInt8>, into matrix: Coefficients
    ) {
        for i in 0..<k {
            for j in 0..<k {
                sampleNTT(scratch, rho: rho, i: i, j: j, into: matrix + (i * k + j) * 256)
            }
        }
    }

    // MARK: Keys

    /// Parses and checks an encapsulation key (FIPS 203 §7.2: length and modulus check), and expands Â.
    static func parsePublicKey(_ parameters: MLKEMParameters, encoded: [UInt8]) throws -> MLKEMPublicKeyStorage {
        let k = parameters.k
        guard encoded.count == parameters.encapsulationKeyByteCount else {
            throw CryptoError(
                .invalidLength,
                "an \(parameters.name) encapsulation key is \(parameters.encapsulationKeyByteCount) bytes, got \(encoded.count)"
            )
        }
        let polynomials = Coefficients.allocate(capacity: (k + k * k) * 256)
        var outOfRange: UInt16 = 0
        let scratch = MLKEMScratch(polynomialCount: 0)
        encoded.withUnsafeBufferPointer { ek in
            let base = ek.baseAddress!
            for i in 0..<k { outOfRange |= MLKEMCoding.decode12(base + 384 * i, into: polynomials + 256 * i) }
            expandMatrix(scratch, k: k, rho: base + 384 * k, into: polynomials + k * 256)
        }
        guard outOfRange == 0 else {
            polynomials.deallocate()
            throw CryptoError(
                .invalidKey, "the \(parameters.name) encapsulation key fails the modulus check: a coefficient is ≥ q")
        }
        let hash = hashH(scratch.keccak, encoded)
        return MLKEMPublicKeyStorage(parameters: parameters, encoded: encoded, hash: hash, polynomials: polynomials)
    }

    private static func hashH(_ keccak: KeccakContext, _ bytes: [UInt8]) -> [UInt8] {
        keccak.compute(.sha3With256Bits, parts: [bytes], outputByteCount: 32, isXOF: false)
    }

    /// ML-KEM.KeyGen_internal(d, z) (Algorithms 13 and 16).
    static func generate(_ parameters: MLKEMParameters, seed: SecretBytes) -> MLKEMPrivateKeyStorage {
        precondition(seed.count == MLKEMParameters.seedByteCount)
        let k = parameters.k
        let scratch = MLKEMScratch(polynomialCount: 1)
        let keccak = scratch.keccak
        let rhoSigma = scratch.bytes + gOffset
        // (ρ, σ) = G(d ‖ k)
        keccak.start(.sha3With512Bits)
        seed.withUnsafeBytes { keccak.absorb($0.baseAddress, 32) }
        var kByte = UInt8(k)
        keccak.absorb(&kByte, 1)
        keccak.finish(into: rhoSigma, count: 64)
        // ρ becomes part of the public key; tell the constant-time check so (SampleNTT branches on it).
        secure_ct_mark_public(rhoSigma, 32)
        let sigma = UnsafePointer(rhoSigma + 32)

        let publicPolynomials = Coefficients.allocate(capacity: (k + k * k) * 256)
        let tHat = publicPolynomials
        let matrix = publicPolynomials + k * 256
        expandMatrix(scratch, k: k, rho: rhoSigma, into: matrix)

        let sHat = Coefficients.allocate(capacity: k * 256)
        let noise = scratch.bytes + prfOffset
        for i in 0..<k {
            prf(keccak, seed: sigma, nonce: i, eta: parameters.eta1, into: noise)
            MLKEMCoding.sampleCBD(noise, eta: parameters.eta1, into: sHat + i * 256)
            MLKEMPoly.ntt(sHat + i * 256)
        }
        let error = scratch.polynomial(0)
        for i in 0..<k {
            let row = tHat + i * 256
            MLKEMPoly.multiplyAccumulate(into: row, a: matrix + i * k * 256, aStride: 1, b: sHat, count: k)
            MLKEMPoly.toMontgomery(row)
            prf(keccak, seed: sigma, nonce: k + i, eta: parameters.eta1, into: noise)
            MLKEMCoding.sampleCBD(noise, eta: parameters.eta1, into: error)
            MLKEMPoly.ntt(error)
            MLKEMPoly.add(row, error)
            for j in 0..<256 { row[j] = MLKEMField.toCanonical(MLKEMField.barrettReduce(row[j])) }
        }
        var encoded = [UInt8](repeating: 0, count: parameters.encapsulationKeyByteCount)
        encoded.withUnsafeMutableBufferPointer { ek in
            for i in 0..<k { MLKEMCoding.encode12(tHat + i * 256, into: ek.baseAddress! + 384 * i) }
            (ek.baseAddress! + 384 * k).update(from: rhoSigma, count: 32)
        }
        let publicKey = MLKEMPublicKeyStorage(
            parameters: parameters, encoded: encoded, hash: hashH(keccak, encoded),
            polynomials: publicPolynomials)
        let z = seed.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[32..<64])) }
        return MLKEMPrivateKeyStorage(publicKey: publicKey, sHat: sHat, z: z, seed: seed)
    }

    /// Parses a full decapsulation key with the checks of FIPS 203 §7.3 (length, and H(ek) matches the
    /// stored hash), plus the modulus check on the embedded ek.
    static func parsePrivateKey(
        _ parameters: MLKEMParameters, encoded: UnsafeRawBufferPointer
    ) throws -> MLKEMPrivateKeyStorage {
        let k = parameters.k
        guard encoded.count == parameters.decapsulationKeyByteCount else {
            throw CryptoError(
                .invalidLength,
                "an \(parameters.name) decapsulation key is \(parameters.decapsulationKeyByteCount) bytes, got \(encoded.count)"
            )
        }
        let bytes = encoded.bindMemory(to: UInt8.self)
        let ekRange = (384 * k)..<(768 * k + 32)
        let publicKey = try parsePublicKey(parameters, encoded: Array(bytes[ekRange]))
        // The stored hash is public (it is H of the public key), so an ordinary comparison is fine.
        guard publicKey.hash.elementsEqual(bytes[(768 * k + 32)..<(768 * k + 64)]) else {
            throw CryptoError(
                .invalidKey, "the \(parameters.name) decapsulation key fails the hash check: H(ek) does not match")
        }
        let sHat = Coefficients.allocate(capacity: k * 256)
        for i in 0..<k {
            // Values up to 4095 are accepted as FIPS 203 does for ŝ; reducing keeps the arithmetic bounded.
            MLKEMCoding.decode12(bytes.baseAddress! + 384 * i, into: sHat + i * 256)
            MLKEMPoly.reduce(sHat + i * 256)
        }
        let z = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: encoded[(768 * k + 64)..<(768 * k + 96)]))
        return MLKEMPrivateKeyStorage(publicKey: publicKey, sHat: sHat, z: z, seed: nil)
    }

    /// The full FIPS 203 decapsulation key.
    static func encodePrivateKey(_ key: MLKEMPrivateKeyStorage) -> SecretBytes {
        let parameters = key.publicKey.parameters
        let k = parameters.k
        let output = SecretBytes(zeroedCount: parameters.decapsulationKeyByteCount)
        output.storage.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for i in 0..<k { MLKEMCoding.encode12(key.sHat + i * 256, into: base + 384 * i) }
            var cursor = base + 384 * k
            cursor.update(from: key.publicKey.encoded, count: key.publicKey.encoded.count)
            cursor += key.publicKey.encoded.count
            cursor.update(from: key.publicKey.hash, count: 32)
            cursor += 32
            key.z.withUnsafeBytes { cursor.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: 32) }
        }
        return output
    }

    // MARK: K-PKE

    /// K-PKE.Encrypt(ek, m, r) (Algorithm 14) into `ciphertext`. Uses scratch polynomials from `first`
    /// on (k + 3 of them) and the PRF area of the scratch bytes.
    private static func encrypt(
        _ key: MLKEMPublicKeyStorage, message: UnsafePointer<UInt8>, randomness: UnsafePointer<UInt8>,
        scratch: MLKEMScratch, first: Int, ciphertext: UnsafeMutablePointer<UInt8>
    ) {
        let parameters = key.parameters
        let k = parameters.k
        let keccak = scratch.keccak
        let noise = scratch.bytes + prfOffset
        let yHat = scratch.polynomial(first)
        let result = scratch.polynomial(first + k)
        let error = scratch.polynomial(first + k + 1)
        let messagePolynomial = scratch.polynomial(first + k + 2)
        for i in 0..<k {
            prf(keccak, seed: randomness, nonce: i, eta: parameters.eta1, into: noise)
            MLKEMCoding.sampleCBD(noise, eta: parameters.eta1, into: yHat + i * 256)
            MLKEMPoly.ntt(yHat + i * 256)
        }
        // u[i] = NTT⁻¹(Σ_j Â[j][i] ∘ ŷ[j]) + e₁[i]
        for i in 0..<k {
            MLKEMPoly.multiplyAccumulate(into: result, a: key.matrix + i * 256, aStride: k, b: yHat, count: k)
            MLKEMPoly.inverseNTT(result)
            prf(keccak, seed: randomness, nonce: k + i, eta: parameters.eta2, into: noise)
            MLKEMCoding.sampleCBD(noise, eta: parameters.eta2, into: error)
            MLKEMPoly.add(result, error)
            MLKEMCoding.compressAndEncode(result, bits: parameters.du, into: ciphertext + 32 * parameters.du * i)
        }
        // v = NTT⁻¹(t̂ᵀ ∘ ŷ) + e₂ + Decompress₁(m)
        MLKEMPoly.multiplyAccumulate(into: result, a: key.tHat, aStride: 1, b: yHat, count: k)
        MLKEMPoly.inverseNTT(result)
        prf(keccak, seed: randomness, nonce: 2 * k, eta: parameters.eta2, into: noise)
        MLKEMCoding.sampleCBD(noise, eta: parameters.eta2, into: error)
        MLKEMPoly.add(result, error)
        MLKEMCoding.decodeMessage(message, into: messagePolynomial)
        MLKEMPoly.add(result, messagePolynomial)
        MLKEMCoding.compressAndEncode(result, bits: parameters.dv, into: ciphertext + parameters.c1ByteCount)
    }

    /// K-PKE.Decrypt(dk, c) (Algorithm 15): writes m′ to `message`. Uses scratch polynomials 0 ..< k + 2.
    private static func decrypt(
        _ key: MLKEMPrivateKeyStorage, ciphertext: UnsafePointer<UInt8>, scratch: MLKEMScratch,
        message: UnsafeMutablePointer<UInt8>
    ) {
        let parameters = key.publicKey.parameters
        let k = parameters.k
        let uHat = scratch.polynomial(0)
        let w = scratch.polynomial(k)
        let v = scratch.polynomial(k + 1)
        for i in 0..<k {
            MLKEMCoding.decodeAndDecompress(
                ciphertext + 32 * parameters.du * i, bits: parameters.du, into: uHat + i * 256)
            MLKEMPoly.ntt(uHat + i * 256)
        }
        MLKEMPoly.multiplyAccumulate(into: w, a: key.sHat, aStride: 1, b: uHat, count: k)
        MLKEMPoly.inverseNTT(w)
        MLKEMCoding.decodeAndDecompress(ciphertext + parameters.c1ByteCount, bits: parameters.dv, into: v)
        MLKEMPoly.subtractFrom(w, v)
        MLKEMCoding.encodeMessage(w, into: message)
    }

    // MARK: ML-KEM

    /// ML-KEM.Encaps_internal(ek, m) (Algorithm 17).
    static func encapsulate(
        _ key: MLKEMPublicKeyStorage, message: UnsafeRawBufferPointer
    ) -> (sharedSecret: SecretBytes, ciphertext: [UInt8]) {
        precondition(message.count == 32)
        let parameters = key.parameters
        let scratch = MLKEMScratch(polynomialCount: parameters.k + 3)
        let keccak = scratch.keccak
        let kr = scratch.bytes + gOffset
        // (K, r) = G(m ‖ H(ek))
        keccak.start(.sha3With512Bits)
        keccak.absorb(message.baseAddress, 32)
        keccak.absorb(key.hash)
        keccak.finish(into: kr, count: 64)
        let messageCopy = scratch.bytes + messageOffset
        messageCopy.update(from: message.bindMemory(to: UInt8.self).baseAddress!, count: 32)
        var ciphertext = [UInt8](repeating: 0, count: parameters.ciphertextByteCount)
        ciphertext.withUnsafeMutableBufferPointer { output in
            encrypt(
                key, message: messageCopy, randomness: kr + 32, scratch: scratch, first: 0,
                ciphertext: output.baseAddress!)
        }
        return (SecretBytes(copying: UnsafeRawBufferPointer(start: kr, count: 32)), ciphertext)
    }

    /// ML-KEM.Decaps_internal(dk, c) (Algorithm 18) after the ciphertext length check of §7.3. On a
    /// mismatch the implicit-rejection key J(z ‖ c) is selected with a mask, without a branch.
    static func decapsulate(_ key: MLKEMPrivateKeyStorage, ciphertext: [UInt8]) throws -> SecretBytes {
        let parameters = key.publicKey.parameters
        guard ciphertext.count == parameters.ciphertextByteCount else {
            throw CryptoError(
                .invalidLength,
                "an \(parameters.name) ciphertext is \(parameters.ciphertextByteCount) bytes, got \(ciphertext.count)")
        }
        let k = parameters.k
        let scratch = MLKEMScratch(polynomialCount: 2 * k + 5)
        let keccak = scratch.keccak
        let message = scratch.bytes + messageOffset
        let kr = scratch.bytes + gOffset
        let rejection = scratch.bytes + rejectOffset
        let reencrypted = scratch.bytes + ciphertextOffset
        return ciphertext.withUnsafeBufferPointer { received in
            let count = received.count
            decrypt(key, ciphertext: received.baseAddress!, scratch: scratch, message: message)
            // (K′, r′) = G(m′ ‖ h)
            keccak.start(.sha3With512Bits)
            keccak.absorb(message, 32)
            keccak.absorb(key.publicKey.hash)
            keccak.finish(into: kr, count: 64)
            // K̄ = J(z ‖ c)
            keccak.start(.shake256)
            key.z.withUnsafeBytes { keccak.absorb($0.baseAddress, 32) }
            keccak.absorb(received.baseAddress, count)
            keccak.squeeze(into: rejection, count: 32)
            encrypt(
                key.publicKey, message: message, randomness: kr + 32, scratch: scratch, first: k + 2,
                ciphertext: reencrypted)
            let difference = ConstantTime.differenceOf(
                UnsafeRawBufferPointer(received), UnsafeRawBufferPointer(start: reencrypted, count: count))
            let keep = ConstantTime.maskIfZero(difference)
            let result = SecretBytes(zeroedCount: 32)
            result.storage.withUnsafeMutableBytes { output in
                for index in 0..<32 {
                    output[index] = (kr[index] & keep) | (rejection[index] & ~keep)
                }
            }
            return result
        }
    }
}
