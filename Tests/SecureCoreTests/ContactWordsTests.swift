import Foundation
import SecureCrypto
import Testing

@testable import SecureCore

/// secure-contact-words-v1 (issue 17): the EFF list compiled in is Debian's, the words are the ones the
/// independent Python oracle scripts/oracles/contact_words.py computes from docs/PROTOCOL.md, every input byte
/// counts, the walk has no bias, and nothing chosen after the commitment can be an input.
/// Recovery words (RecoveryWordsTests) are the other, secret, kind of words: this suite never touches them.
@Suite("Contact words")
struct ContactWordsTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path
    static let oracle = repositoryRoot.appendingPathComponent("scripts/oracles/contact_words.py").path

    /// Debian's diceware 0.10 ships the EFF large list here, one "dice number<TAB>word" a line.
    static let debianList = "/usr/lib/python3/dist-packages/diceware/wordlists/wordlist_en_eff.txt"
    static let debianListInstalled = FileManager.default.fileExists(atPath: debianList)
    /// SHA-256 of that file as Debian ships it (with the dice numbers).
    static let debianFileSHA256 = "addd35536511597a02fa0a9ff1e5284677b8883b83e986e43f15a3db996b903e"
    /// SHA-256 of the words alone, one a line: the same value as `ContactWords.listSHA256`, written out again
    /// so that changing the constant alone fails here.
    static let wordsSHA256 = "6d557f0693958fb5e650b68b5bee585eb82cf4da32965505c789e924743bc522"

    @Test func theListIsPinned() {
        let list = ContactWords.list
        #expect(list.count == ContactWords.listCount)
        #expect(Set(list).count == list.count)
        #expect(list == list.sorted())
        let text = list.joined(separator: "\n") + "\n"
        #expect(Hex.encode(SHA256.hash(Array(text.utf8))) == ContactWords.listSHA256)
        #expect(ContactWords.listSHA256 == Self.wordsSHA256)
        #expect(
            list.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (97...122).contains($0) } }
        )
    }

    /// Word by word and dice number by dice number against Debian's file, and by the file's own SHA-256.
    /// Skipped (and shown as skipped) where the diceware package is not installed.
    @Test(.enabled(if: ContactWordsTests.debianListInstalled, "needs Debian's diceware package"))
    func theListIsDebiansWordForWord() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.debianList))
        #expect(Hex.encode(SHA256.hash(Array(data))) == Self.debianFileSHA256)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == ContactWords.listCount + 1 && lines.last == "", "one line per word, final newline")
        for (index, line) in lines.dropLast().enumerated() {
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard columns.count == 2, index < ContactWords.list.count else {
                Issue.record("line \(index + 1) is not a dice number, a tab and a word: \(line)")
                return
            }
            #expect(columns[0] == Self.diceNumber(of: index), "line \(index + 1)")
            #expect(columns[1] == ContactWords.list[index], "line \(index + 1)")
        }
    }

    /// A list index as the five dice that pick it on paper: base-6 digits, each plus one.
    static func diceNumber(of index: Int) -> Substring {
        var digits = ""
        var rest = index
        for _ in 0..<5 {
            digits = String(rest % 6 + 1) + digits
            rest /= 6
        }
        return Substring(digits)
    }

    /// The vectors of docs/PROTOCOL.md ("Contact verification words"), computed there with the oracle. Base:
    /// commitment 32 × 01, contribution_I 32 × 02, contribution_R 32 × 03.
    static let protocolVectors: [(name: String, input: ContactWordsInput, encodingSHA256: String, words: String)] = [
        (
            "base", input(), "7e1ffb40b716ddca45f3f96b2ccddc1fb2a839eeed96e165d9841e7d9580c307",
            "valid devotee curvy gab agility"
        ),
        (
            "contributions swapped", input(initiatorContribution: 0x03, responderContribution: 0x02),
            "fc886dcea1a867ebaa89098c9436a73c622746c1e68fa3234f905d52e0792e7f",
            "frosting parcel countdown stamp decree"
        ),
        (
            "a draw out of range", input(initiatorContributionTail: [0x00, 0x03]),
            "56fb93b3fe9fe849d81b79488ef685b20c43988bef9f5548f471e218181b5c76",
            "subdued mustiness egotism research violin"
        ),
        (
            "a draw repeated", input(initiatorContributionTail: [0x04, 0xe1]),
            "83bb6bc3b84d581f96aafe68f80cd746b168fdde85dd06f87d3f81b145fff4fb",
            "surrogate aspire grape untamed darkening"
        ),
        (
            "empty fields", ContactWordsInput(commitment: [], initiatorContribution: [], responderContribution: []),
            "d0e65289995ebeba12abaf34316d67d30f732926d6126e8a85f73d5d60d6c6a9", "record crablike riches sacred almighty"
        ),
    ]

    static func input(
        initiatorContributionTail: [UInt8] = [], initiatorContribution: UInt8 = 0x02,
        responderContribution: UInt8 = 0x03
    ) -> ContactWordsInput {
        ContactWordsInput(
            commitment: [UInt8](repeating: 0x01, count: 32),
            initiatorContribution: [UInt8](
                repeating: initiatorContribution, count: 32 - initiatorContributionTail.count)
                + initiatorContributionTail,
            responderContribution: [UInt8](repeating: responderContribution, count: 32))
    }

    @Test func theProtocolVectors() {
        for vector in Self.protocolVectors {
            #expect(Hex.encode(SHA256.hash(vector.input.encoded)) == vector.encodingSHA256, "\(vector.name)")
            #expect(ContactWords(vector.input).text == vector.words, "\(vector.name)")
        }
        // The base encoding, byte for byte as the document writes it out.
        #expect(
            Hex.encode(Self.input().encoded)
                == Hex.encode(Array("secure-contact-words-v1".utf8)) + "00"
                + "0020" + String(repeating: "01", count: 32) + "0020" + String(repeating: "02", count: 32)
                + "0020" + String(repeating: "03", count: 32))
    }

    /// Inputs of the sizes a real exchange has: a 32-byte commitment and two 1,238-byte X-Wing contributions,
    /// filled from a seeded SHAKE256 stream so the cases are fixed but unpatterned.
    static func realisticInput(seed: UInt8) -> ContactWordsInput {
        let bytes = SHAKE256.hash([seed], outputByteCount: 32 + 1_238 + 1_238)
        return ContactWordsInput(
            commitment: Array(bytes[0..<32]), initiatorContribution: Array(bytes[32..<1_270]),
            responderContribution: Array(bytes[1_270..<2_508]))
    }

    struct OracleCase: Codable {
        let commitment, initiatorContribution, responderContribution: String
    }

    struct OracleResult: Codable {
        let encodingSHA256, streamPrefix: String
        let indices: [Int]
        let words: [String]
    }

    struct OracleRequest: Codable {
        let list: [String]
        let cases: [OracleCase]
    }

    /// Runs the oracle with `standardInput`; returns its exit status and output.
    static func runOracle(_ arguments: [String], standardInput: [UInt8] = []) throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [oracle] + arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // The request is a few hundred kilobytes at most; the oracle reads all of it before it writes.
        input.fileHandleForWriting.write(Data(standardInput))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    @Test func theOracleComputesTheSameWords() throws {
        let inputs = Self.protocolVectors.map(\.input) + (0..<8).map { Self.realisticInput(seed: $0) }
        let cases = inputs.map {
            OracleCase(
                commitment: Hex.encode($0.commitment), initiatorContribution: Hex.encode($0.initiatorContribution),
                responderContribution: Hex.encode($0.responderContribution))
        }
        let request = try JSONEncoder().encode(OracleRequest(list: ContactWords.list, cases: cases))
        let (status, output) = try Self.runOracle(["words"], standardInput: Array(request))
        #expect(status == 0, "contact_words.py: \(String(decoding: output, as: UTF8.self))")
        let results = try JSONDecoder().decode([OracleResult].self, from: output)
        try #require(results.count == inputs.count)
        for (index, (input, result)) in zip(inputs, results).enumerated() {
            let encoded = input.encoded
            #expect(Hex.encode(SHA256.hash(encoded)) == result.encodingSHA256, "case \(index): encoding")
            #expect(
                Hex.encode(SHAKE256.hash(encoded, outputByteCount: 16)) == result.streamPrefix, "case \(index): stream")
            let words = ContactWords(input)
            #expect(words.indices == result.indices, "case \(index)")
            #expect(words.words == result.words, "case \(index)")
        }
    }

    /// The document's claim that 64 bytes run out with probability below 2^-105, computed exactly.
    @Test func runningOutOfTheFirstStreamIsBelowTwoToTheMinus105() throws {
        let (status, output) = try Self.runOracle(["probability"])
        #expect(status == 0)
        let log2 = try #require(
            Double(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(log2 < -105)
    }

    /// Flipping any one bit of any one byte of any input field changes the words, and so does moving a byte
    /// across a field boundary (the lengths are part of the encoding).
    @Test func everyInputByteCounts() {
        let input = Self.realisticInput(seed: 42)
        let words = ContactWords(input).indices
        var fields = [input.commitment, input.initiatorContribution, input.responderContribution]
        func make(_ fields: [[UInt8]]) -> ContactWordsInput {
            ContactWordsInput(commitment: fields[0], initiatorContribution: fields[1], responderContribution: fields[2])
        }
        var unchanged: [String] = []
        for field in fields.indices {
            for position in fields[field].indices {
                let bit = UInt8(1) << UInt8(position % 8)
                fields[field][position] ^= bit
                if ContactWords(make(fields)).indices == words { unchanged.append("field \(field) byte \(position)") }
                fields[field][position] ^= bit
            }
        }
        #expect(unchanged.isEmpty, "words unchanged by \(unchanged.prefix(8))")
        #expect(make(fields) == input)
        // The last byte of the commitment moved to the front of contribution_I: the same bytes, other fields.
        var moved = fields
        moved[1].insert(moved[0].removeLast(), at: 0)
        #expect(ContactWords(make(moved)).indices != words)
        // Roles matter: both sides must put the channel's initiator first.
        let swapped = ContactWordsInput(
            commitment: input.commitment, initiatorContribution: input.responderContribution,
            responderContribution: input.initiatorContribution)
        #expect(ContactWords(swapped).indices != words)
    }

    /// Every 16-bit first draw: each of the 7,776 words comes first for exactly 8 of them (the 3 high bits are
    /// ignored), and the other 8 × 416 = 3,328 are skipped, so the word the rest of the stream gives (word 0
    /// here) comes first for those. Later draws skip chosen words the same way, so every ordered set of five
    /// distinct words is equally likely: nothing is reduced modulo 7,776.
    @Test func theWalkHasNoBias() {
        var counts = [Int](repeating: 0, count: ContactWords.listCount)
        let rest: [UInt8] = [0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00, 0x05]
        for draw in 0...Int(UInt16.max) {
            guard let indices = ContactWords.indices(fromStream: [UInt8(draw >> 8), UInt8(draw & 0xff)] + rest) else {
                Issue.record("the walk ran out after first draw \(draw)")
                return
            }
            counts[indices[0]] += 1
        }
        #expect(counts[0] == 8 + 8 * (8_192 - 7_776))
        #expect(counts.dropFirst().allSatisfy { $0 == 8 })
    }

    @Test func theWalkSkipsOutOfRangeAndRepeatedDrawsAndCanRunOut() {
        let stream: [UInt8] = [
            0x1f, 0xff, // 8,191: out of range
            0x1e, 0x60, // 7,776: the first value out of range
            0xe0, 0x00, // 0: the high 3 bits are ignored
            0x00, 0x00, // 0 again: skipped
            0x00, 0x01, 0x20, 0x01, 0x00, 0x02, // 1, 1 (skipped), 2
            0x1e, 0x5f, // 7,775: the last word
            0x00, 0x03, // not needed
        ]
        #expect(ContactWords.indices(fromStream: stream) == [0, 1, 2, 7_775, 3])
        #expect(ContactWords.indices(fromStream: Array(stream.prefix(16))) == nil)
        #expect(ContactWords.indices(fromStream: Array(stream.prefix(17))) == nil, "half a draw is no draw")
        #expect(ContactWords.indices(fromStream: []) == nil)
    }

    @Test func wordsNeverRepeatWithinACode() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20_000 {
            let input = ContactWordsInput(
                commitment: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) },
                initiatorContribution: [UInt8(round & 0xff)], responderContribution: [UInt8(round >> 8)])
            let words = ContactWords(input)
            if Set(words.words).count != ContactWords.wordCount {
                Issue.record("repeated words \(words.words) from \(Hex.encode(input.encoded))")
                return
            }
        }
    }

    /// Only values fixed by the commitment are inputs: the input type has exactly these three fields, none
    /// secret, so a ciphertext, a shared secret (`SecretBytes`), the channel binding or a wallet id (which a
    /// relay could mint after seeing everything else) has nowhere to go.
    @Test func onlyValuesFixedByTheCommitmentAreInputs() {
        let fields = Mirror(reflecting: Self.input()).children
        #expect(fields.map(\.label) == ["commitment", "initiatorContribution", "responderContribution"])
        #expect(fields.allSatisfy { !($0.value is SecretBytes) })
        #expect(Mirror(reflecting: ContactWords(Self.input())).children.map(\.label) == ["indices"])
    }
}
