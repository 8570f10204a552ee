import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The fixed test keys FuzzDecoders re-signs fuzzed statements with (docs/FUZZING.md): a key from a
/// private scalar is the same in every process, and a wallet built with fixed keys signs with them.
@Suite struct FixedKeySignerTests {
    /// d = 1 gives the generator itself (SEC 2, secp256r1 G in uncompressed form).
    @Test func scalarOneIsTheGenerator() throws {
        let signer = try SoftwareSigner(privateKey: [UInt8](repeating: 0, count: 31) + [1])
        let generator = Hex.decode(
            "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!
        #expect(signer.publicKey.x963 == generator)
    }

    @Test func sameScalarSameKeyAndItsSignaturesVerify() throws {
        let scalar = [UInt8](repeating: 0x42, count: 32)
        let first = try SoftwareSigner(privateKey: scalar), second = try SoftwareSigner(privateKey: scalar)
        #expect(first.publicKey == second.publicKey)
        let label = SignatureLabel("secure-test-v1")
        let signature = try first.sign([1, 2, 3], label: label)
        #expect(label.verify(signature, of: [1, 2, 3], by: second.publicKey))
        #expect(!label.verify(signature, of: [1, 2, 4], by: second.publicKey))
    }

    @Test func walletWithFixedKeysSignsWithThem() throws {
        let keys = (
            signer: try SoftwareSigner(privateKey: [UInt8](repeating: 0, count: 31) + [2]),
            next: try SoftwareSigner(privateKey: [UInt8](repeating: 0, count: 31) + [3])
        )
        let first = try SoftwareWallet(seed: 1, keys: keys), second = try SoftwareWallet(seed: 1, keys: keys)
        #expect(first.key == keys.signer.publicKey)
        #expect(first.walletID == second.walletID)
        #expect(try first.checkpoint().checkpoint.encoded == second.checkpoint().checkpoint.encoded)
    }
}
