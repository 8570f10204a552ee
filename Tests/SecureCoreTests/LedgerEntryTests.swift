import SecureCrypto
import Testing

@testable import SecureCore

@Suite("Ledger entries and the chain")
struct LedgerEntryTests {
    @Test("every kind round-trips through its canonical encoding")
    func roundTrip() throws {
        for entry in try Fixture.sampleEntries() {
            let decoded = try LedgerEntry.decode(entry.encoded)
            #expect(decoded == entry, "case \(entry.kind)")
            #expect(decoded?.encoded == entry.encoded, "case \(entry.kind)")
        }
    }

    @Test("a known entry has a pinned encoding, digest and link")
    func knownAnswer() throws {
        let entry = try Fixture.sampleEntries()[3]
        #expect(Hex.encode(entry.encoded) == LedgerEntryTests.pinnedEncoding)
        #expect(entry.digest.hex == LedgerEntryTests.pinnedDigest)
        #expect(entry.link.hex == LedgerEntryTests.pinnedLink)
    }

    @Test("every truncation is short input and every extension is trailing bytes")
    func badLengths() throws {
        for entry in try Fixture.sampleEntries() {
            let bytes = entry.encoded
            for length in 0..<bytes.count {
                #expect(
                    try LedgerEntry.decode(Array(bytes.prefix(length))) == nil, "case \(entry.kind) length \(length)")
            }
            #expect(throws: FormatError(.trailingBytes, "")) { try LedgerEntry.decode(bytes + [0]) }
        }
    }

    @Test("every single-bit flip is refused or decodes to an entry with another digest, never a trap")
    func bitFlips() throws {
        var accepted = 0
        var refused = 0
        for entry in try Fixture.sampleEntries() {
            let bytes = entry.encoded
            for index in bytes.indices {
                for bit in 0..<8 {
                    var flipped = bytes
                    flipped[index] ^= 1 << bit
                    do {
                        if let decoded = try LedgerEntry.decode(flipped) {
                            #expect(decoded.digest != entry.digest && decoded.link != entry.link)
                            accepted += 1
                        }
                    } catch is FormatError {
                        refused += 1
                    }
                }
            }
        }
        #expect(accepted > 0 && refused > 0)
    }

    @Test(
        "malformed fields are refused with their code",
        arguments: [
            (0, UInt8(1), FormatError.Code.unsupportedVersion), // version 1, whose amount had no issuer
            (25, 0, .invalidValue), // kind 0 (entry 3: 1+8+16 = offset 25)
            (25, 42, .invalidValue), // unknown kind
            (26, 0x80, .invalidValue), // unknown flag bit
            (27, 2, .invalidValue), // amount presence byte
            (60, UInt8(ascii: "e"), .invalidValue), // lower-case currency letter (after the 32-byte issuer id)
            (63, 3, .invalidValue), // EUR with scale 3
            (64, 0x80, .invalidValue), // negative minor units
            (72, 65, .fieldTooLong), // category length over the limit
        ])
    func malformed(offset: Int, value: UInt8, code: FormatError.Code) throws {
        var bytes = try Fixture.sampleEntries()[3].encoded
        bytes[offset] = value
        #expect(throws: FormatError(code, "")) { try LedgerEntry.decode(bytes) }
    }

    @Test("kind rules: amounts, statements and flags belong to the right kinds")
    func kindRules() throws {
        let link = LedgerChain.genesisLink
        let id: StatementID = Fixture.id(1)
        let time = Fixture.time
        let reference = Fixture.statement(signer: 1, id: 1, payload: 1)
        func make(_ kind: EntryKind, _ amount: Money?, _ statement: StatementReference?, flags: EntryFlags = []) throws
        {
            _ = try LedgerEntry(
                position: 0, id: id, kind: kind, flags: flags,
                amount: amount.map { AssetAmount(issuer: Fixture.issuer, money: $0) }, time: time,
                statement: statement, previousLink: link)
        }
        let invalid = LedgerError(.invalidEntry, "")
        #expect(throws: invalid) { try make(.deposit, nil, reference) }
        #expect(throws: invalid) { try make(.deposit, Fixture.eur(0), reference) }
        #expect(throws: invalid) { try make(.deposit, Fixture.eur(1), nil) }
        #expect(throws: invalid) { try make(.keyEvent, Fixture.eur(1), nil) }
        #expect(throws: invalid) { try make(.keyEvent, nil, reference) }
        #expect(throws: invalid) { try make(.deposit, Fixture.eur(1), reference, flags: .budgetOverride) }
        #expect(throws: invalid) { try make(.budgetChange, nil, nil) }
        #expect(throws: invalid) {
            try LedgerEntry(
                position: 0, id: id, kind: .keyEvent, amount: nil, note: String(repeating: "x", count: 513),
                time: time, previousLink: link)
        }
        #expect(throws: invalid) {
            try LedgerEntry(position: 0, id: id, kind: .keyEvent, amount: nil, time: -1, previousLink: link)
        }
        try make(.paymentOut, Fixture.eur(1), reference, flags: [.budgetOverride, .withoutProximity])
        // A redemption is an issuer's payment in, marked like one; a mint is no payment.
        try make(.redemption, Fixture.eur(1), reference, flags: .withoutProximity)
        #expect(throws: invalid) { try make(.mint, Fixture.eur(1), reference, flags: .withoutProximity) }
    }

    @Test("invalid UTF-8 in the note is refused")
    func invalidUTF8() throws {
        let entry = try LedgerEntry(
            position: 0, id: Fixture.id(1), kind: .keyEvent, amount: nil, note: "ab",
            time: Fixture.time, previousLink: LedgerChain.genesisLink)
        var bytes = entry.encoded
        let noteOffset = 1 + 8 + 16 + 1 + 1 + 1 + 1 + 1 + 2
        #expect(bytes[noteOffset] == UInt8(ascii: "a"))
        bytes[noteOffset] = 0xC0
        #expect(throws: FormatError(.invalidValue, "")) { try LedgerEntry.decode(bytes) }
    }

    @Test("the chain verifies and catches a changed field, a deleted, reordered or truncated entry")
    func chainTamper() throws {
        let entries = try Fixture.sampleEntries()
        let head = try LedgerChain.verify(entries)
        #expect(head == entries.last!.link)
        #expect(try LedgerChain.verify(Array(entries.suffix(3)), start: 7, previousLink: entries[6].link) == head)

        var deleted = entries
        deleted.remove(at: 4)
        #expect(throws: LedgerError(.positionGap, "")) { try LedgerChain.verify(deleted) }
        var swapped = entries
        swapped.swapAt(2, 3)
        #expect(throws: LedgerError(.positionGap, "")) { try LedgerChain.verify(swapped) }
        // A changed field in entry 5 changes its link, so entry 6 no longer links to it.
        let original = entries[5]
        let changed = try LedgerEntry(
            position: 5, id: original.id, kind: original.kind, amount: nil, note: "changed",
            time: original.time, statement: original.statement, previousLink: original.previousLink)
        var tampered = entries
        tampered[5] = changed
        #expect(throws: LedgerError(.linkMismatch, "")) { try LedgerChain.verify(tampered) }
        // A truncated ledger still verifies on its own; the head differs, which checkpoints catch.
        #expect(try LedgerChain.verify(Array(entries.prefix(5))) != head)
    }

    @Test("the chain step is the documented hash")
    func chainStep() throws {
        let entry = try Fixture.sampleEntries()[0]
        var position = [UInt8](repeating: 0, count: 8)
        position[7] = UInt8(entry.position)
        let expected = SHA256.hash(parts: [
            Array("secure-chain-v1".utf8), [0], LedgerChain.genesisLink.bytes, position,
            SHA256.hash(entry.encoded), entry.id.bytes,
        ])
        #expect(entry.link.bytes == expected)
    }

    // Computed independently from docs/PROTOCOL.md (a short Python script) and pinned here.
    static let pinnedEncoding =
        "020000000000000003040404040404040404040404040404040203011a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a"
        + "1a1a1a1a1a1a1a1a1a1a1a1a4555520200000000000001c204666f6f6420eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
        + "eeeeeeeeeeeeeeeeeeeeeeeeeeee000a4b616666656520e298950000018df9e2bdb801b0b0b0b0b0b0b0b0b0b0b0b0b0"
        + "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b002020202020202020202020202020202d2d2d2d2d2d2d2d2d2d2d2d2d2"
        + "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2000000005a943f0295e88dd3cb98c321e74e2d61cd9c9559a16077c8f7"
        + "dd862327aae37e"
    static let pinnedDigest = "d14dd66704b1c35f66528839ec4726dcc4b8f6197626748c1a05f16492640f41"
    static let pinnedLink = "bdbb822c44205f20623d00e6909ad6b5d4cd214315e04dd0debf790539527489"
}
