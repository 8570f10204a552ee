import SecureCrypto
import Testing

/// C2SP CCTV's accumulated ML-KEM test with the final-FIPS 203 digests (../shared/notes/mlkem-accumulated-test.md):
/// 100 cases in debug builds, 10,000 in release builds.
@Suite("ML-KEM accumulated test")
struct MLKEMAccumulatedTests {
    #if DEBUG
        static let caseCount = 100
        static let expected = [
            "ML-KEM-512": "449120c6e320ef3e9fbfa2316e5f2d2e1e6dd37d8ff5d086d5d2db7d42aff0a1",
            "ML-KEM-768": "8d65b902f28edc683cebee2872962fd165a4d197c9e24ec74caa4470270df0b7",
            "ML-KEM-1024": "c3ffe9ebecfa479c142656cbfbc6417efa05b77e994fe538eef4daed166363df",
        ]
    #else
        static let caseCount = 10_000
        static let expected = [
            "ML-KEM-512": "705dcffc87f4e67e35a09dcaa31772e86f3341bd3ccf1e78a5fef99ae6a35a13",
            "ML-KEM-768": "f959d18d3d1180121433bf0e05f11e7908cf9d03edc150b2b07cb90bef5bc1c1",
            "ML-KEM-1024": "e3bf82b013307b2e9d47dde791ff6dfc82e694e6382404abdb948b908b75bad5",
        ]
    #endif

    @Test func mlkem512() throws { try run(MLKEM512.self) }
    @Test func mlkem768() throws { try run(MLKEM768.self) }
    @Test func mlkem1024() throws { try run(MLKEM1024.self) }

    func run<P>(_ kem: MLKEM<P>.Type) throws {
        let count = Self.caseCount
        let ciphertextCount = MLKEM<P>.ciphertextByteCount
        let perCase = 64 + 32 + ciphertextCount
        // `rng` is one continuous SHAKE128 stream of the empty string; OpenSSL 3.0 squeezes once, so read
        // all of it up front (SHAKE's output is prefix-consistent, so this is the same stream).
        let stream = SHAKE128.hash([], outputByteCount: count * perCase)
        var accumulator = SHAKE128.Hasher()
        for index in 0..<count {
            let base = index * perCase
            let key = try MLKEM<P>.PrivateKey(seed: Array(stream[base..<base + 64]))
            let (secret, ciphertext) = try key.publicKey._encapsulate(message: Array(stream[base + 64..<base + 96]))
            let randomCiphertext = Array(stream[base + 96..<base + perCase])
            let rejected = try key.decapsulate(randomCiphertext)
            accumulator.update(key.publicKey.rawRepresentation)
            accumulator.update(key.decapsulationKey)
            accumulator.update(ciphertext)
            accumulator.update(secret)
            accumulator.update(rejected)
        }
        let digest = Hex.encode(accumulator.finalize(outputByteCount: 32))
        #expect(digest == Self.expected[MLKEM<P>.name], "\(MLKEM<P>.name), \(count) cases")
    }
}
