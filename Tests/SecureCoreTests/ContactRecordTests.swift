import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Contact records (issue 17): the canonical encoding, checked field by field and hashed by the independent
/// Python oracle scripts/oracles/contact_record.py from docs/PROTOCOL.md ("Contact records"), the name rules,
/// and the settings entries (tags 7–9) that carry only the record's digest.
@Suite("Contact records")
struct ContactRecordTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path
    static let oracle = repositoryRoot.appendingPathComponent("scripts/oracles/contact_record.py").path

    /// The contact key of the documented vector: byte i is i mod 251.
    static let vectorContactKey = (0..<ContactRecord.contactKeyByteCount).map { UInt8($0 % 251) }

    /// The key-event log of the documented vector (one inception event, signed once by a software key),
    /// as a wallet card encodes it: u16 count ‖ u16 length ‖ signed event.
    static let vectorLogHex =
        "0001015e0115020000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        + "046fe2bc34861bd7faf40250900c174b165f460580ae5b5803d30f616077f318a9498a1314eb8fd16777add92f036cc7"
        + "931c2da1ddf86e066bfd09d39ff8a62535156c161c0fdb6ead5fa0eaf1f170fbe291c8781f2d2b3e7e193a4251d9191b"
        + "8604a286e8d22aad0300c881cc05e2d5c8aa03c5d06a0708f97bdaa79aa0bf5faca7fb0ca542e8a2fdf7f1e7db7aa3e5"
        + "fa6849deb714bb9378f49306c45fa3a71dae000000000000000000000000000000000000000000000000000000000000"
        + "000000000000000000000000000000000000000000000000000000000000000000000000000000000000004630440220"
        + "166382788f25750891755fc306bc2372030629876ad3c2a17f225b38265cfcb402207b029081d81fd21321a5e286687d"
        + "e66261cddeafa8e5d569e2090adbd89abb33"

    /// The documented vector's digest (docs/PROTOCOL.md, "Contact records").
    static let vectorDigest = "c30303568bba43e3db798c44e60de6e1d770200168ade0df1ab9f54eda743c1d"

    static func log() throws -> KeyEventLog {
        let keys = try KeyChain(count: 2)
        return try KeyEventLog(inception: try keys.inception())
    }

    static func record(
        name: String = "Ana", log: KeyEventLog? = nil, issuers: [WalletID] = [],
        verification: ContactVerification = .verified
    ) throws -> ContactRecord {
        let log = try log ?? Self.log()
        return try ContactRecord(
            walletID: log.walletID, log: log, contactKey: vectorContactKey, name: name, addedAt: 1_767_225_600_000,
            verification: verification, rangingSource: .external, medianMillimetres: 180, trustedIssuers: issuers)
    }

    static func vectorRecord() throws -> ContactRecord {
        var reader = ByteReader(try #require(Hex.decode(vectorLogHex)))
        let log = try #require(try KeyEventLog.decode(from: &reader))
        return try record(log: log, issuers: [Fixture.id(0x1A)])
    }

    @Test func theEncodingRoundTripsAndItsDigestIsSHA256() throws {
        let record = try Self.record(issuers: [Fixture.id(0x3C), Fixture.id(0x1A), Fixture.id(0x3C)])
        #expect(record.trustedIssuers == [Fixture.id(0x1A), Fixture.id(0x3C)], "sorted and distinct")
        #expect(try ContactRecord.decode(record.encoded) == record)
        #expect(record.digest.bytes == SHA256.hash(record.encoded))
        #expect(record.encoded.first == ContactRecord.encodingVersion)
        #expect(try record.renamed("Bea").digest != record.digest, "the name is hashed")
    }

    /// Go's TestBadLengths: every truncation and an extension fail to decode, never trap.
    @Test func everyTruncationAndExtensionIsRefused() throws {
        let encoded = try Self.record(issuers: [Fixture.id(0x1A)]).encoded
        for count in 0..<encoded.count {
            #expect(throws: FormatError.self, "truncated to \(count)") {
                try ContactRecord.decode(Array(encoded.prefix(count)))
            }
        }
        #expect(throws: FormatError.self) { try ContactRecord.decode(encoded + [0]) }
    }

    @Test func malformedFieldsAreRefused() throws {
        let record = try Self.record(issuers: [Fixture.id(0x1A), Fixture.id(0x3C)])
        let encoded = record.encoded
        let tail = encoded.count - 1 - 2 * 32 // the issuer count
        func patched(_ offset: Int, _ value: UInt8) -> [UInt8] {
            var bytes = encoded
            bytes[offset] = value
            return bytes
        }
        // Issuers out of order: swap the two ids.
        var swapped = Array(encoded.prefix(tail + 1))
        swapped += Array(encoded.suffix(32)) + Array(encoded[(tail + 1)..<(tail + 33)])
        #expect(throws: FormatError(.notCanonical, "")) { try ContactRecord.decode(swapped) }
        #expect(throws: FormatError.self) { try ContactRecord.decode(patched(0, 2)) }
        #expect(throws: FormatError.self) { try ContactRecord.decode(patched(tail - 6, 3)) } // verification
        #expect(throws: FormatError.self) { try ContactRecord.decode(patched(tail - 5, 9)) } // ranging source
        #expect(throws: FormatError.self) { try ContactRecord.decode(patched(1, encoded[1] ^ 1)) } // wallet id
        #expect(throws: FormatError.self, "a key of another length") {
            try ContactRecord(
                walletID: record.walletID, log: record.log, contactKey: [1, 2, 3], name: "Ana", addedAt: 0,
                verification: .verified, rangingSource: .simulated, medianMillimetres: 0)
        }
        #expect(throws: FormatError.self, "another wallet's log") {
            try ContactRecord(
                walletID: Fixture.id(7), log: record.log, contactKey: Self.vectorContactKey, name: "Ana", addedAt: 0,
                verification: .verified, rangingSource: .simulated, medianMillimetres: 0)
        }
        let tooMany = (0...ContactRecord.trustedIssuerCountMax).map {
            WalletID(bytes: [UInt8](repeating: UInt8($0), count: 32))!
        }
        #expect(throws: FormatError.self) { try Self.record(issuers: tooMany) }
    }

    @Test(arguments: [
        ("", false), ("Ana", true), ("Ana María", true), ("アナ", true), ("Bob 2", true), ("R2-D2", true),
        ("localhost:7464", false), ("7464", false), ("192.168.1.20:7464", false), ("[::1]:7464", false),
        ("host:", true), ("Ana:Bea", true), ("::1", false),
        ("9a39c3c7", false), ("9A39-C3C7", false), ("9A39…C3C7", false), (String(repeating: "ab", count: 32), false),
        ("cafe", true), ("deadbeef", false), ("Ana\u{202E}", false), ("\u{2066}Ana", false), ("A\u{200B}na", false),
        ("Ana\n", false), ("Ana\u{1B}[2J", false), (" Ana", false), ("Ana ", false), ("\u{FFFD}", false),
        ("Ana\u{FFFD}", false),
        (String(repeating: "z", count: 64), true), (String(repeating: "z", count: 65), false),
        (String(repeating: "é", count: 32), true), (String(repeating: "é", count: 33), false),
    ])
    func nameRules(name: String, allowed: Bool) {
        #expect((ContactName.problem(name) == nil) == allowed, "\(PeerText.quoted(name))")
    }

    @Test func aRefusedNameIsRefusedByTheRecordAndTheDecoder() throws {
        #expect(throws: FormatError.self) { try Self.record(name: "10.0.0.2:7464") }
        let record = try Self.record(name: "Ana")
        // The same bytes with the name "746" in place of "Ana": a port number.
        var encoded = record.encoded
        var writer = ByteWriter()
        record.log.encode(into: &writer)
        let nameOffset = 1 + 32 + writer.bytes.count + ContactRecord.contactKeyByteCount
        #expect(encoded[nameOffset] == 3 && Array(encoded[(nameOffset + 1)..<(nameOffset + 4)]) == Array("Ana".utf8))
        encoded.replaceSubrange((nameOffset + 1)..<(nameOffset + 4), with: Array("746".utf8))
        #expect(throws: FormatError.self) { try ContactRecord.decode(encoded) }
    }

    struct OracleCase: Codable {
        let walletID, log, contactKey, name: String
        let addedAt: Int64
        let verification, rangingSource: UInt8
        let medianMillimetres: UInt32
        let trustedIssuers: [String]
        let encoded: String
    }

    struct OracleResult: Codable {
        let encoded, digest: String
        let decoded: Decoded
        struct Decoded: Codable {
            let walletID, log, contactKey, name: String
            let logEventCount: Int
            let addedAt: Int64
            let verification, rangingSource: UInt8
            let medianMillimetres: UInt32
            let trustedIssuers: [String]
        }
    }

    static func oracleCase(_ record: ContactRecord, issuers: [WalletID]) -> OracleCase {
        var writer = ByteWriter()
        record.log.encode(into: &writer)
        return OracleCase(
            walletID: record.walletID.hex, log: Hex.encode(writer.bytes), contactKey: Hex.encode(record.contactKey),
            name: record.name, addedAt: record.addedAt, verification: record.verification.rawValue,
            rangingSource: record.rangingSource.rawValue, medianMillimetres: record.medianMillimetres,
            trustedIssuers: issuers.map(\.hex), encoded: Hex.encode(record.encoded))
    }

    /// The oracle encodes each record from its fields and decodes the wallet's bytes into fields.
    @Test func theOracleEncodesAndHashesTheSame() throws {
        var records: [(ContactRecord, [WalletID])] = [(try Self.vectorRecord(), [Fixture.id(0x1A)])]
        let issuers: [WalletID] = [Fixture.id(0x3C), Fixture.id(0x1A), Fixture.id(0xF0)]
        for (index, name) in ["Bea", "Ana María", "アナ", String(repeating: "z", count: 64)].enumerated() {
            let chosen = Array(issuers.prefix(index))
            let record = try Self.record(
                name: name, issuers: chosen, verification: index % 2 == 0 ? .verified : .unconfirmed)
            records.append((record, chosen))
        }
        let request = try JSONEncoder().encode(records.map { Self.oracleCase($0.0, issuers: $0.1) })
        let result = try Run.program(Self.python, [Self.oracle], input: Array(request))
        try #require(result.status == 0, "contact_record.py: \(result.stderr)")
        let answers = try JSONDecoder().decode([OracleResult].self, from: Data(result.stdout))
        try #require(answers.count == records.count)
        for (index, ((record, _), answer)) in zip(records, answers).enumerated() {
            #expect(answer.encoded == Hex.encode(record.encoded), "case \(index): encoding")
            #expect(answer.digest == record.digest.hex, "case \(index): digest")
            #expect(answer.decoded.name == record.name, "case \(index): name")
            #expect(answer.decoded.walletID == record.walletID.hex, "case \(index)")
            #expect(answer.decoded.logEventCount == record.log.events.count, "case \(index)")
            #expect(answer.decoded.trustedIssuers == record.trustedIssuers.map(\.hex), "case \(index): issuers")
            #expect(answer.decoded.verification == record.verification.rawValue, "case \(index)")
        }
        #expect(answers[0].digest == Self.vectorDigest, "the documented vector")
    }

    @Test func theDocumentedVector() throws {
        let record = try Self.vectorRecord()
        #expect(record.digest.hex == Self.vectorDigest)
        #expect(record.walletID.hex == "a551ef7624457d9b50c497176d888d8e6d8998985914b7552a7e70d6d56cf6fa")
        #expect(
            record.encoded.count == 1 + 32 + Hex.decode(Self.vectorLogHex)!.count + 1568 + 1 + 3 + 8 + 1 + 1 + 4 + 1
                + 32)
    }

    // MARK: Settings entries

    @Test func contactSettingsPayloadsCarryOnlyDigests() throws {
        let old: Digest32 = Fixture.id(0xAA), new: Digest32 = Fixture.id(0xBB)
        let cases: [(SettingsChange, String)] = [
            (.contactAdded(old), "07" + String(repeating: "aa", count: 32)),
            (.contactRemoved(old), "08" + String(repeating: "aa", count: 32)),
            (
                .contactReplaced(old: old, new: new),
                "09" + String(repeating: "aa", count: 32) + String(repeating: "bb", count: 32)
            ),
        ]
        for (change, hex) in cases {
            #expect(Hex.encode(change.payload) == hex, "\(change)")
            #expect(try SettingsChange.decode(payload: change.payload) == change)
            #expect(change.isContactChange)
            for count in 1..<change.payload.count {
                #expect(throws: FormatError.self) {
                    try SettingsChange.decode(payload: Array(change.payload.prefix(count)))
                }
            }
            #expect(throws: FormatError.self) { try SettingsChange.decode(payload: change.payload + [0]) }
        }
        #expect(!SettingsChange.anchorKind(.file).isContactChange)
    }

    @Test func replayKeepsTheCurrentContactDigests() throws {
        let a: Digest32 = Fixture.id(1), b: Digest32 = Fixture.id(2), c: Digest32 = Fixture.id(3)
        var settings = WalletSettings()
        for change in [
            SettingsChange.contactAdded(a), .contactAdded(b), .contactReplaced(old: a, new: c), .contactRemoved(b),
        ] {
            settings = try settings.applying(change)
        }
        #expect(settings.contactDigests == [c])
        #expect(throws: FormatError.self) { try settings.applying(.contactAdded(c)) }
        #expect(throws: FormatError.self) { try settings.applying(.contactRemoved(a)) }
        #expect(throws: FormatError.self) { try settings.applying(.contactReplaced(old: b, new: a)) }
        #expect(throws: FormatError.self) { try settings.applying(.contactReplaced(old: c, new: c)) }
        #expect(try settings.applying(.contactAdded(a)).contactDigests == [a, c], "a removed digest may come back")
    }
}
