import Foundation
import SecureCrypto

// `secure-bench kem [--json]`: µs per operation for ML-KEM-512/768/1024 and X-Wing, and, in the same
// run, OpenSSL 4's ML-KEM through Python cryptography (scripts/oracles/mlkem_bench.py) with the ratios.
// Run it from a release build; debug figures mean nothing.

/// One timed operation.
struct KEMBenchFigure: Codable {
    let kem: String
    let operation: String
    let microseconds: Double
}

/// One Swift-versus-OpenSSL comparison; ratio = Swift / OpenSSL (below 1 means Swift is faster).
struct KEMBenchComparison: Codable {
    let kem: String
    let operation: String
    let swiftMicroseconds: Double
    let opensslMicroseconds: Double
    let ratio: Double
}

struct KEMBenchReport: Codable {
    /// The load average at the start of the run.
    let loadAverage: String
    let figures: [KEMBenchFigure]
    let openssl: String?
    let comparisons: [KEMBenchComparison]
    let note: String?
}

/// The median over `batchCount` batches of the mean time per call, in µs. Each batch runs for about
/// `batchSeconds` after a calibration run.
private func medianMicroseconds(
    batchCount: Int = 31, batchSeconds: Double = 0.01, _ body: () throws -> Void
) rethrows -> Double {
    let clock = ContinuousClock()
    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
    let calibration = 20
    let start = clock.now
    for _ in 0..<calibration { try body() }
    let perCall = max(seconds(clock.now - start) / Double(calibration), 1e-9)
    let iterations = max(1, Int(batchSeconds / perCall))
    var samples: [Double] = []
    for _ in 0..<batchCount {
        let batchStart = clock.now
        for _ in 0..<iterations { try body() }
        samples.append(seconds(clock.now - batchStart) / Double(iterations) * 1e6)
    }
    samples.sort()
    return samples[samples.count / 2]
}

private func benchMLKEM<P>(_ kem: MLKEM<P>.Type) throws -> [KEMBenchFigure] {
    let name = MLKEM<P>.name
    let seed = SecretBytes(randomCount: 64)
    let key = try MLKEM<P>.PrivateKey(seed: seed)
    let encapsulationKey = key.publicKey.rawRepresentation
    let decapsulationKey = key.decapsulationKey
    let publicKey = try MLKEM<P>.PublicKey(rawRepresentation: encapsulationKey)
    let privateKey = try MLKEM<P>.PrivateKey(decapsulationKey: decapsulationKey)
    let (_, ciphertext) = publicKey.encapsulate()
    var sink = 0
    let keygen = try medianMicroseconds {
        sink &+= try MLKEM<P>.PrivateKey(seed: seed).publicKey.rawRepresentation.count
    }
    let encaps = medianMicroseconds { sink &+= publicKey.encapsulate().ciphertext.count }
    let decaps = try medianMicroseconds { sink &+= try privateKey.decapsulate(ciphertext).count }
    let parsePublic = try medianMicroseconds {
        sink &+= try MLKEM<P>.PublicKey(rawRepresentation: encapsulationKey).rawRepresentation.count
    }
    let parsePrivate = try medianMicroseconds {
        sink &+= try MLKEM<P>.PrivateKey(decapsulationKey: decapsulationKey).publicKey.rawRepresentation.count
    }
    precondition(sink != 0)
    return [
        KEMBenchFigure(kem: name, operation: "keygen", microseconds: keygen),
        KEMBenchFigure(kem: name, operation: "encaps", microseconds: encaps),
        KEMBenchFigure(kem: name, operation: "decaps", microseconds: decaps),
        KEMBenchFigure(kem: name, operation: "parse-public", microseconds: parsePublic),
        KEMBenchFigure(kem: name, operation: "parse-private", microseconds: parsePrivate),
    ]
}

private func benchXWing() throws -> [KEMBenchFigure] {
    let seed = SecretBytes(randomCount: 32)
    let key = try XWing.PrivateKey(seed: seed)
    let encoded = key.publicKey.rawRepresentation
    let publicKey = try XWing.PublicKey(rawRepresentation: encoded)
    let (_, ciphertext) = publicKey.encapsulate()
    var sink = 0
    let keygen = try medianMicroseconds { sink &+= try XWing.PrivateKey(seed: seed).publicKey.rawRepresentation.count }
    let encaps = medianMicroseconds { sink &+= publicKey.encapsulate().ciphertext.count }
    let decaps = try medianMicroseconds { sink &+= try key.decapsulate(ciphertext).count }
    let parsePublic = try medianMicroseconds {
        sink &+= try XWing.PublicKey(rawRepresentation: encoded).rawRepresentation.count
    }
    precondition(sink != 0)
    return [
        KEMBenchFigure(kem: XWing.name, operation: "keygen", microseconds: keygen),
        KEMBenchFigure(kem: XWing.name, operation: "encaps", microseconds: encaps),
        KEMBenchFigure(kem: XWing.name, operation: "decaps", microseconds: decaps),
        KEMBenchFigure(kem: XWing.name, operation: "parse-public", microseconds: parsePublic),
    ]
}

/// The repository root: the working directory if it holds the oracle script, else the root this file
/// was compiled from.
private func repositoryRoot() -> URL {
    let fileManager = FileManager.default
    let current = URL(fileURLWithPath: fileManager.currentDirectoryPath)
    if fileManager.fileExists(atPath: current.appendingPathComponent("scripts/oracles/mlkem_bench.py").path) {
        return current
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}

private struct OpenSSLBench: Decodable {
    let openssl: String
    let results: [String: [String: Double]]
}

/// Runs the Python oracle; throws with a sentence a person can act on.
private func runOpenSSLBench() throws -> OpenSSLBench {
    let root = repositoryRoot()
    let python = root.appendingPathComponent(".venv/bin/python")
    let script = root.appendingPathComponent("scripts/oracles/mlkem_bench.py")
    guard FileManager.default.isExecutableFile(atPath: python.path) else {
        throw CryptoError(
            .invalidEncoding, "no Python venv at \(python.path): run scripts/bootstrap to compare with OpenSSL 4")
    }
    let process = Process()
    process.executableURL = python
    process.arguments = [script.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CryptoError(.invalidEncoding, "\(script.path) exited with status \(process.terminationStatus)")
    }
    return try JSONDecoder().decode(OpenSSLBench.self, from: data)
}

/// Runs the KEM benchmark and prints it (a table, or JSON with `json`).
func runKEMBenchmark(json: Bool) throws {
    let load = BenchCommands.loadAverage()
    if !json { print("kem benchmark: load average \(load) at the start") }
    var figures: [KEMBenchFigure] = []
    figures += try benchMLKEM(MLKEM512.self)
    figures += try benchMLKEM(MLKEM768.self)
    figures += try benchMLKEM(MLKEM1024.self)
    figures += try benchXWing()

    var comparisons: [KEMBenchComparison] = []
    var opensslVersion: String? = nil
    var note: String? = nil
    do {
        let openssl = try runOpenSSLBench()
        opensslVersion = openssl.openssl
        // keygen, encaps, decaps, and public-key parsing against OpenSSL's from_public_bytes.
        let pairs = [("keygen", "keygen"), ("encaps", "encaps"), ("decaps", "decaps"), ("parse-public", "parse")]
        for (kem, key) in [("ML-KEM-768", "768"), ("ML-KEM-1024", "1024")] {
            for (operation, pythonName) in pairs {
                guard let swift = figures.first(where: { $0.kem == kem && $0.operation == operation }),
                    let theirs = openssl.results[key]?[pythonName], theirs > 0
                else { continue }
                comparisons.append(
                    KEMBenchComparison(
                        kem: kem, operation: operation, swiftMicroseconds: swift.microseconds,
                        opensslMicroseconds: theirs, ratio: swift.microseconds / theirs))
            }
        }
    } catch {
        note = "OpenSSL comparison skipped: \(error)"
    }

    if json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let report = KEMBenchReport(
            loadAverage: load, figures: figures, openssl: opensslVersion, comparisons: comparisons, note: note)
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
        return
    }
    func format(_ value: Double) -> String { String(format: "%8.1f", value) }
    print("KEM benchmark (µs per operation, median of 31 batches; keygen = seed to key bytes,")
    print("encaps with a parsed public key, decaps with a parsed private key)")
    for kem in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024", "X-Wing"] {
        let rows = figures.filter { $0.kem == kem }
        func value(_ operation: String) -> String {
            rows.first { $0.operation == operation }.map { format($0.microseconds) } ?? "     n/a"
        }
        print(
            "\(kem.padding(toLength: 12, withPad: " ", startingAt: 0)) keygen \(value("keygen"))  encaps \(value("encaps"))  decaps \(value("decaps"))"
        )
        let privateParse =
            rows.contains { $0.operation == "parse-private" } ? "  private key \(value("parse-private"))" : ""
        print(
            "\(kem.padding(toLength: 12, withPad: " ", startingAt: 0)) parse  public key \(value("parse-public"))\(privateParse)"
        )
    }
    if let opensslVersion {
        print("compared with \(opensslVersion) through Python cryptography (timeit medians minus an empty call):")
    }
    for comparison in comparisons {
        print(
            "\(comparison.kem) \(comparison.operation): swift \(format(comparison.swiftMicroseconds)) µs, openssl \(format(comparison.opensslMicroseconds)) µs, ratio \(String(format: "%.2f", comparison.ratio))"
        )
    }
    if let note { print(note) }
}
