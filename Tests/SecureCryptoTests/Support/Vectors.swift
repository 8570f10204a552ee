import Foundation
import SecureCrypto

/// Finds the test oracles and vector files that scripts/bootstrap installs in the repository's `.venv`.
/// Missing files are a setup problem, reported loudly with the fix, never a silently skipped test.
enum Oracles {
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    /// The repository root, from this file's path (Tests/SecureCryptoTests/Support/Vectors.swift).
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var venv: URL { repositoryRoot.appendingPathComponent(".venv") }

    static var python: URL { venv.appendingPathComponent("bin/python") }

    /// site-packages/cryptography_vectors inside the venv, whatever the Python minor version.
    static func cryptographyVectors() throws -> URL {
        let lib = venv.appendingPathComponent("lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        for version in versions.sorted() where version.hasPrefix("python") {
            let candidate = lib.appendingPathComponent(version).appendingPathComponent(
                "site-packages/cryptography_vectors")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        }
        throw Missing(
            description:
                "cryptography_vectors not found under \(lib.path): run scripts/bootstrap to create the venv with cryptography-vectors==50.0.2"
        )
    }

    /// The contents of a file inside cryptography_vectors.
    static func vectorFile(_ relativePath: String) throws -> String {
        let url = try cryptographyVectors().appendingPathComponent(relativePath)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw Missing(
                description: "cannot read \(url.path): is cryptography-vectors==50.0.2 installed by scripts/bootstrap?")
        }
        return text
    }

    static func requirePython() throws -> URL {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw Missing(description: "no Python oracle at \(python.path): run scripts/bootstrap")
        }
        return python
    }
}

/// One record of a NIST-style .rsp file: "name = value" lines, a record starting at each "count = n".
struct RSPRecord {
    let count: String
    let fields: [String: String]

    /// The field decoded from hex; a missing or malformed field names the record.
    func bytes(_ name: String, file: String) throws -> [UInt8] {
        guard let hex = fields[name], let decoded = Hex.decode(hex) else {
            throw Oracles.Missing(description: "\(file) count = \(count): field \(name) missing or not hex")
        }
        return decoded
    }

    static func parse(_ text: String) -> [RSPRecord] {
        var records: [RSPRecord] = []
        var current: [String: String] = [:]
        var count: String? = nil
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0] == "count" {
                if let count { records.append(RSPRecord(count: count, fields: current)) }
                count = parts[1]
                current = [:]
            } else {
                current[parts[0]] = parts[1]
            }
        }
        if let count { records.append(RSPRecord(count: count, fields: current)) }
        return records
    }
}
