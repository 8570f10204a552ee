import CValgrindShim
import SecureCrypto

// The constant-time harness. scripts/ct-check runs it under valgrind memcheck with only the secrets
// marked undefined; memcheck then reports every branch and every memory index that depends on them.
// Outputs are declassified before they are compared, as a caller would after the operation.
//
// Secrets marked: ML-KEM's ŝ and z inside the decapsulation key (ρ, t̂, H(ek) and the ciphertext are
// public); the seed d ‖ z for key generation; m for encapsulation; the AES-GCM key; both inputs of
// ConstantTime.equal.
#if canImport(Glibc)
    import Glibc
#endif

nonisolated(unsafe) var failures = 0

func fail(_ message: String) {
    print("ct-harness: FAIL: \(message)")
    failures += 1
}

func markSecret(_ bytes: inout [UInt8], _ range: Range<Int>) {
    bytes.withUnsafeMutableBytes { secure_ct_mark_secret($0.baseAddress! + range.lowerBound, range.count) }
}

func declassify(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { secure_ct_mark_public($0.baseAddress!, $0.count) }
}

func checkMLKEM<P>(_ kem: MLKEM<P>.Type, k: Int) throws {
    let seed = (0..<64).map { UInt8($0) }
    let key = try MLKEM<P>.PrivateKey(seed: seed)
    var decapsulationKey = key.decapsulationKey.copyBytes()
    let (expected, ciphertext) = try key.publicKey._encapsulate(message: [UInt8](repeating: 0x42, count: 32))
    var tampered = ciphertext
    tampered[5] ^= 0x10
    let expectedRejection = try key.decapsulate(tampered).copyBytes()

    // ŝ is the first 384·k bytes, z the last 32; everything between is public.
    markSecret(&decapsulationKey, 0..<(384 * k))
    markSecret(&decapsulationKey, (decapsulationKey.count - 32)..<decapsulationKey.count)
    let secretKey = try MLKEM<P>.PrivateKey(decapsulationKey: decapsulationKey)
    for (name, input, want) in [("valid", ciphertext, expected.copyBytes()), ("rejected", tampered, expectedRejection)]
    {
        var secret = try secretKey.decapsulate(input).copyBytes()
        declassify(&secret)
        if secret != want { fail("\(MLKEM<P>.name) decapsulation of the \(name) ciphertext gave the wrong key") }
    }
}

/// Key generation with d and z secret, and encapsulation with m secret. ρ is declassified inside key
/// generation (it is public); the outputs are declassified here before they are compared.
func checkKeyGenerationAndEncapsulation<P>(_ kem: MLKEM<P>.Type) throws {
    let seedBytes = (0..<64).map { UInt8($0 &* 3) }
    let reference = try MLKEM<P>.PrivateKey(seed: seedBytes)
    let message = [UInt8](repeating: 0x17, count: 32)
    let (referenceSecret, referenceCiphertext) = try reference.publicKey._encapsulate(message: message)

    var secretSeed = seedBytes
    markSecret(&secretSeed, 0..<64)
    let key = try MLKEM<P>.PrivateKey(seed: secretSeed)
    var encapsulationKey = key.publicKey.rawRepresentation
    declassify(&encapsulationKey)
    if encapsulationKey != reference.publicKey.rawRepresentation {
        fail("\(MLKEM<P>.name) key generation gave the wrong ek")
    }

    var secretMessage = message
    markSecret(&secretMessage, 0..<32)
    let (secret, ciphertext) = try reference.publicKey._encapsulate(message: secretMessage)
    var secretCopy = secret.copyBytes(), ciphertextCopy = ciphertext
    declassify(&secretCopy)
    declassify(&ciphertextCopy)
    if secretCopy != referenceSecret.copyBytes() || ciphertextCopy != referenceCiphertext {
        fail("\(MLKEM<P>.name) encapsulation gave the wrong result")
    }
}

func checkAESGCM() throws {
    var key = (0..<32).map { UInt8($0 &* 7) }
    let nonce = [UInt8](repeating: 9, count: 12)
    let plaintext = Array("constant-time check of the AES-GCM tag".utf8)
    let sealed = try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: [1, 2, 3])
    var forged = sealed
    forged[forged.count - 1] ^= 1
    markSecret(&key, 0..<32)
    var opened = try AES256GCM.open(sealed, key: key, nonce: nonce, associatedData: [1, 2, 3])
    declassify(&opened)
    if opened != plaintext { fail("AES-256-GCM open returned the wrong plaintext") }
    do {
        _ = try AES256GCM.open(forged, key: key, nonce: nonce, associatedData: [1, 2, 3])
        fail("AES-256-GCM accepted a forged tag")
    } catch {}
}

func checkConstantTimeEqual() {
    var a = [UInt8](repeating: 0x5a, count: 64)
    var b = a
    var c = a
    c[40] ^= 1
    markSecret(&a, 0..<64)
    markSecret(&b, 0..<64)
    markSecret(&c, 0..<64)
    if !ConstantTime.equal(a, b) { fail("ConstantTime.equal said equal inputs differ") }
    if ConstantTime.equal(a, c) { fail("ConstantTime.equal said different inputs are equal") }
}

/// The negative control: branch on a secret on purpose, so scripts/ct-check can prove that valgrind
/// sees marked secrets at all (a check that cannot fail proves nothing).
func leakOnPurpose() {
    var secret: [UInt8] = [0x2a]
    markSecret(&secret, 0..<1)
    if secret.withUnsafeBufferPointer({ $0[0] }) > 0x10 { print("ct-harness: branched on a secret on purpose") }
}

if CommandLine.arguments.dropFirst().first == "--leak-on-purpose" {
    leakOnPurpose()
    exit(0)
}

do {
    try checkMLKEM(MLKEM512.self, k: 2)
    try checkMLKEM(MLKEM768.self, k: 3)
    try checkMLKEM(MLKEM1024.self, k: 4)
    try checkKeyGenerationAndEncapsulation(MLKEM512.self)
    try checkKeyGenerationAndEncapsulation(MLKEM768.self)
    try checkKeyGenerationAndEncapsulation(MLKEM1024.self)
    try checkAESGCM()
    checkConstantTimeEqual()
} catch {
    fail("unexpected error: \(error)")
}
let underValgrind = secure_ct_running_on_valgrind() != 0
print(
    "ct-harness: \(failures == 0 ? "ok" : "\(failures) failure(s)")\(underValgrind ? " (under valgrind)" : " (not under valgrind: secrets were not tracked)")"
)
exit(failures == 0 ? 0 : 1)
