import Foundation
import SecureCrypto
import Testing

/// Interoperability with OpenSSL 4's ML-KEM through Python cryptography 50.0.2 (which offers ML-KEM-768
/// and -1024): the same seed gives the same encapsulation key, and ciphertexts made by each side
/// decapsulate to the same secret on the other, for 1000 random seeds per parameter set.
@Suite("ML-KEM interoperability with OpenSSL 4 (Python cryptography)")
struct MLKEMInteropTests {
    static let caseCount = 1000

    @Test func mlkem768() throws { try run(MLKEM768.self, parameterSet: "768") }
    @Test func mlkem1024() throws { try run(MLKEM1024.self, parameterSet: "1024") }

    func run<P>(_ kem: MLKEM<P>.Type, parameterSet: String) throws {
        let python = try Oracles.requirePython()
        let script = Oracles.repositoryRoot.appendingPathComponent("scripts/oracles/mlkem_interop.py")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mlkem-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var seeds: [[UInt8]] = []
        var keys: [MLKEM<P>.PrivateKey] = []
        var ourSecrets: [SecretBytes] = []
        var input = ""
        for _ in 0..<Self.caseCount {
            let seed = SystemRandom.bytes(64)
            let key = try MLKEM<P>.PrivateKey(seed: seed)
            let (secret, ciphertext) = key.publicKey.encapsulate()
            seeds.append(seed)
            keys.append(key)
            ourSecrets.append(secret)
            input += Hex.encode(seed) + " " + Hex.encode(ciphertext) + "\n"
        }
        let inputFile = directory.appendingPathComponent("input")
        let outputFile = directory.appendingPathComponent("output")
        try input.write(to: inputFile, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = python
        process.arguments = [script.path, parameterSet, inputFile.path, outputFile.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the oracle failed: \(errorText)")

        let lines = try String(contentsOf: outputFile, encoding: .utf8).split(separator: "\n")
        try #require(lines.count == Self.caseCount, "the oracle returned \(lines.count) lines")
        var failures = 0
        for (index, line) in lines.enumerated() {
            let fields = line.split(separator: " ").map { Hex.decode(String($0)) ?? [] }
            let name = "\(MLKEM<P>.name) case \(index), seed \(Hex.encode(seeds[index]))"
            let sameKey = fields[0] == keys[index].publicKey.rawRepresentation
            let theirsDecapsulatedHere = try keys[index].decapsulate(fields[1]).copyBytes() == fields[2]
            let oursDecapsulatedThere = fields[3] == ourSecrets[index].copyBytes()
            #expect(sameKey, "\(name): OpenSSL's encapsulation key differs")
            #expect(theirsDecapsulatedHere, "\(name): OpenSSL's ciphertext decapsulates to another secret here")
            #expect(oursDecapsulatedThere, "\(name): our ciphertext decapsulates to another secret in OpenSSL")
            if !(sameKey && theirsDecapsulatedHere && oursDecapsulatedThere) { failures += 1 }
            if failures >= 5 { break }
        }
    }
}
