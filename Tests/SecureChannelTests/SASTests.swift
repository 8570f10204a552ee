import Foundation
import SecureCrypto
import Testing

@testable import SecureChannel

/// secure-sas-v2 (issue 16): three distinct words, the vectors in docs/PROTOCOL.md, and a word list with no
/// look-alikes, checked by the independent Python oracle scripts/oracles/sas_words.py (jellyfish).
@Suite("SAS words")
struct SASTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path
    static let oracle = repositoryRoot.appendingPathComponent("scripts/oracles/sas_words.py").path

    /// Runs the oracle; returns its exit status and output.
    static func runOracle(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [oracle] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func theCompiledListHasNoLookAlikes() throws {
        let file = NSTemporaryDirectory() + "sas-words-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try (SASWords.list.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (status, output) = try Self.runOracle(["check", file])
        #expect(status == 0, "sas_words.py: \(output)")
        #expect(output == "ok\n")
    }

    @Test func theOracleNamesOffenders() throws {
        let file = NSTemporaryDirectory() + "sas-words-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: file) }
        var list = SASWords.list
        list[list.firstIndex(of: "acid")!] = "goat" // one letter from "boat"
        try (list.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (status, output) = try Self.runOracle(["check", file])
        #expect(status == 1)
        #expect(output.contains("edit distance 1"), "\(output)")
    }

    /// The vectors of docs/PROTOCOL.md ("Short authentication string"), computed there in Python.
    @Test(arguments: [
        (
            "0000000000000000", "72eea0d721097c81041bc2174b2d49b95549cbbf83620175d44816455eadc247", "241367",
            ["frog", "tooth", "leopard"]
        ),
        (
            "00000000000000a2", "eeee5b155d797810142162b68648723fc0101599eaf2c6e7c4acca8ed02f9912", "598293",
            ["tooth", "dolphin", "bagel"]
        ),
    ])
    func protocolVectors(initiator: String, hash: String, digits: String, words: [String]) throws {
        let sas = KeySchedule.shortAuthenticationString(
            commitment: [UInt8](repeating: 0x01, count: 32), initiator: try hex(initiator),
            responder: [UInt8](repeating: 0x02, count: 32))
        #expect(sas.value == (try hex(hash)))
        #expect(sas.digits == digits)
        #expect(sas.words == words)
    }

    @Test func wordsNeverRepeat() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let words = ShortAuthenticationString(bytes).words
            #expect(words.count == 3)
            if Set(words).count != 3 {
                Issue.record("repeated words \(words) from \(bytes)")
                return
            }
        }
    }

    @Test func theWalkTakesBytesInOrderAndCompletesFromTheList() {
        #expect(
            ShortAuthenticationString.wordIndices([7, 7, 9, 7, 3] + [UInt8](repeating: 1, count: 27)) == [7, 9, 3])
        #expect(ShortAuthenticationString.wordIndices([UInt8](repeating: 0, count: 32)) == [0, 1, 2])
        #expect(ShortAuthenticationString.wordIndices([UInt8](repeating: 1, count: 31) + [5]) == [1, 5, 0])
    }

    func hex(_ text: String) throws -> [UInt8] {
        let characters = Array(text.utf8)
        return try stride(from: 0, to: characters.count, by: 2).map {
            try #require(UInt8(String(decoding: characters[$0..<$0 + 2], as: UTF8.self), radix: 16))
        }
    }
}
