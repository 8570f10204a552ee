import SecureCore
import SecureCrypto
import Testing

/// What a wallet's DNS-SD announcement holds (docs/PROTOCOL.md, "Discovery"): the TXT record's shape, its
/// strict reading, and the tag's known answer (computed with Python's hmac: docs/PROTOCOL.md's vector).
@Suite("Discovery records")
struct DiscoveryRecordTests {
    @Test func theTagMatchesItsKnownAnswer() {
        let key = SecretBytes(Array(0..<32))
        let nonce = [UInt8](repeating: 0, count: 16)
        #expect(Hex.encode(DiscoveryRecord.tag(key: key, nonce: nonce)) == "11149d61b477fe7de776ff9570ae2658")
        let record = DiscoveryRecord(nonce: nonce, tags: [DiscoveryRecord.tag(key: key, nonce: nonce)])
        #expect(record.tagChecks(under: key))
        #expect(!record.tagChecks(under: SecretBytes(Array(1..<33))))
        #expect(!DiscoveryRecord(nonce: nonce, tags: []).tagChecks(under: key))
        // A fresh announcement for three contacts: eight slots, each contact's tag in one of them, and the
        // filler matches no other key.
        let keys = (1...3).map { SecretBytes([UInt8](repeating: UInt8($0), count: 32)) }
        let fresh = DiscoveryRecord.fresh(discoveryKeys: keys)
        #expect(fresh.tags.count == DiscoveryRecord.tagSlotCount)
        #expect(keys.allSatisfy { fresh.tagChecks(under: $0) })
        #expect(!fresh.tagChecks(under: key))
    }

    @Test func aFreshRecordRoundTripsAndNamesNothing() throws {
        let record = DiscoveryRecord.fresh()
        #expect(record.txt.count == 10 && record.txt[0] == "v=1" && record.txt[1].hasPrefix("n="))
        #expect(record.txt[2...].enumerated().allSatisfy { $0.element.hasPrefix("t\($0.offset)=") })
        #expect(record.tags.count == 8 && Set(record.tags).count == 8, "eight random filler tags")
        let pairs = record.txt.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            return (key: parts[0], value: parts[1])
        }
        #expect(try DiscoveryRecord(txt: pairs) == record)
        #expect(DiscoveryRecord.fresh() != record, "a new nonce each time")
        let name = DiscoveryRecord.randomInstanceName()
        #expect(name.hasPrefix("secure-") && name.count == 19 && name != DiscoveryRecord.randomInstanceName())
        #expect(DiscoveryRecord.randomHostLabel().count == 17)
    }

    @Test func malformedRecordsAreRefused() {
        let nonce = String(repeating: "ab", count: 16)
        let cases: [(String, [(key: String, value: String)], DiscoveryError.Code)] = [
            ("no version", [("n", nonce)], .malformedRecord),
            ("another version", [("v", "2"), ("n", nonce)], .unsupportedVersion),
            ("no nonce", [("v", "1")], .malformedRecord),
            ("short nonce", [("v", "1"), ("n", "abcd")], .malformedRecord),
            ("nonce not hex", [("v", "1"), ("n", String(repeating: "zz", count: 16))], .malformedRecord),
            ("short tag", [("v", "1"), ("n", nonce), ("t0", "00")], .malformedRecord),
            ("repeated key", [("v", "1"), ("v", "1"), ("n", nonce)], .malformedRecord),
            ("long value", [("v", "1"), ("n", nonce), ("x", String(repeating: "a", count: 65))], .malformedRecord),
        ]
        for (name, pairs, code) in cases {
            #expect(throws: DiscoveryError(code, ""), "\(name)") { try DiscoveryRecord(txt: pairs) }
        }
        // Unknown keys are ignored.
        #expect((try? DiscoveryRecord(txt: [("v", "1"), ("n", nonce), ("future", "x")])) != nil)
    }
}
