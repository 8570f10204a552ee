import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureStore
@testable import SecureWallet

/// Tampering with the database with its key in hand: every case must be detected, by opening or by
/// `ledger verify`. An attacker with the key can rewrite rows but cannot sign checkpoints.
@Suite("Tamper detection", .serialized)
struct TamperTests {
    /// A wallet with a few entries, closed, and its database opened raw with the key.
    static func prepared(_ name: String) throws -> (TestWallet, LedgerStore) {
        let test = try TestWallet(name)
        for (index, category) in ["food", "rent", "fun", "travel"].enumerated() {
            test.now += 60_000
            try test.setBudget(category, "\(index + 1)0.00 EUR")
        }
        let key = try test.databaseKey()
        test.close()
        let wrapped = try WrappedKeyFile(encoded: Array(FileManager.default.contents(atPath: test.paths.wrappedKey)!))
        let store = try LedgerStore.open(
            path: test.paths.database, key: key, expectedSalt: wrapped.databaseSalt,
            walletID: try WalletMetadata.load(test.paths).parsedWalletID())
        return (test, store)
    }

    /// How a tampered wallet was caught. Every test names the one outcome it expects, so a wallet that
    /// fails for some other reason (a token error, a bug in the test's own tampering) does not pass.
    enum Outcome: Equatable, CustomStringConvertible {
        /// Opening threw an error with this code (the case name of the error's `code`).
        case refused(code: String)
        /// The wallet opened locked, for this reason.
        case locked(WalletLockReason)
        /// The wallet opened unlocked and `ledger verify` found these problems.
        case failsVerification(problems: [String])
        /// Nothing noticed.
        case undetected

        var description: String {
            switch self {
            case .refused(let code): return "refused to open (\(code))"
            case .locked(let reason): return "locked: \(reason)"
            case .failsVerification(let problems): return "fails verification: \(problems)"
            case .undetected: return "undetected"
            }
        }

        /// The first problem `ledger verify` reported, if that is how the wallet was caught.
        var firstProblem: String? {
            if case .failsVerification(let problems) = self { return problems.first }
            return nil
        }
    }

    /// The code of a thrown error by its case name (`corrupted`), whichever error type carries it.
    static func codeName(_ error: any Error) -> String {
        guard let code = Mirror(reflecting: error).children.first(where: { $0.label == "code" })?.value else {
            return "\(type(of: error)): \(error)"
        }
        return "\(code)"
    }

    /// Reopens the tampered wallet and says how it was caught.
    static func outcome(_ test: TestWallet) -> Outcome {
        do {
            let wallet = try test.reopen()
            defer { test.close() }
            if let reason = wallet.lockReason { return .locked(reason) }
            let report = try LedgerVerifier.verify(wallet.ledger, walletID: wallet.walletID)
            return report.isValid ? .undetected : .failsVerification(problems: report.problems)
        } catch {
            return .refused(code: codeName(error))
        }
    }

    /// Re-encodes entry `position` with one field changed, keeping its row otherwise as it was.
    static func rewrite(_ store: LedgerStore, position: UInt64, _ change: (LedgerEntry) throws -> LedgerEntry) throws {
        let entry = try #require(try store.entry(at: position))
        let changed = try change(entry)
        try store.database.prepare("UPDATE entries SET encoded = ?, id = ?, link = ?, leaf = ? WHERE position = ?")
            .bind([
                .blob(changed.encoded), .blob(changed.id.bytes), .blob(changed.link.bytes),
                .blob(Merkle.leafHash(changed.encoded).bytes),
                .integer(Int64(position)),
            ]).run()
    }

    /// Overwrites entry `position`'s encoding only, leaving its id, link and leaf columns as they were.
    static func setEncoded(_ store: LedgerStore, position: UInt64, _ bytes: [UInt8]) throws {
        try store.database.prepare("UPDATE entries SET encoded = ? WHERE position = ?")
            .bind([.blob(bytes), .integer(Int64(position))]).run()
    }

    static func copy(
        _ entry: LedgerEntry, id: StatementID? = nil, category: String? = nil, note: String? = nil, time: Int64? = nil,
        payload: [UInt8]? = nil, previous: Digest32? = nil, position: UInt64? = nil, counterparty: [UInt8]? = nil
    ) throws -> LedgerEntry {
        try LedgerEntry(
            position: position ?? entry.position, id: id ?? entry.id, kind: entry.kind, flags: entry.flags,
            amount: entry.amount,
            category: category ?? entry.category, counterparty: counterparty ?? entry.counterparty,
            note: note ?? entry.note,
            time: time ?? entry.time, statement: entry.statement, payload: payload ?? entry.payload,
            previousLink: previous ?? entry.previousLink)
    }

    /// A changed entry 2 still matches the tree peaks kept in the database, so the wallet opens; `ledger
    /// verify` replays the chain and stops at the first entry that breaks it: entry 2 itself when its link
    /// to entry 1 changed, otherwise entry 3, whose link to entry 2 no longer matches.
    @Test(
        "changing one field of an entry fails verification at that entry or the next",
        arguments: ["id", "category", "note", "time", "payload", "link", "counterparty"])
    func changeOneField(_ field: String) throws {
        let (test, store) = try Self.prepared("field-\(field)")
        try Self.rewrite(store, position: 2) { entry in
            switch field {
            case "id": return try Self.copy(entry, id: StatementID(bytes: [UInt8](repeating: 0xaa, count: 16))!)
            case "category": return try Self.copy(entry, category: "rent2")
            case "note": return try Self.copy(entry, note: "changed")
            case "time": return try Self.copy(entry, time: entry.time + 1)
            case "payload":
                let budget = try Budget(
                    category: entry.category, limit: try MoneyText.parse("9999.00 EUR"), window: .month,
                    isHardCap: false, timeZoneIdentifier: "Europe/Berlin")
                return try Self.copy(entry, payload: BudgetChange.set(budget).payload)
            case "link": return try Self.copy(entry, previous: Digest32(bytes: [UInt8](repeating: 7, count: 32))!)
            default: return try Self.copy(entry, counterparty: [1, 2, 3])
            }
        }
        let outcome = Self.outcome(test)
        let culprit = field == "link" ? "entry 2 " : "entry 3 "
        #expect(outcome.firstProblem?.hasPrefix(culprit + "breaks a ledger rule") == true, "\(field): \(outcome)")
    }

    @Test func deletedRowFailsVerificationAtTheGap() throws {
        // The tree peaks kept in the database do not change, so the wallet opens; the replay finds the gap.
        let (test, store) = try Self.prepared("delete")
        try store.database.execute("DELETE FROM entries WHERE position = 2")
        let outcome = Self.outcome(test)
        #expect(outcome.firstProblem == "entry 2 does not decode or is out of place", "\(outcome)")
    }

    @Test func reorderedRowsFailVerificationAtTheFirst() throws {
        let (test, store) = try Self.prepared("reorder")
        let two = try #require(try store.entry(at: 2)), three = try #require(try store.entry(at: 3))
        try Self.rewrite(store, position: 2) { _ in try Self.copy(three, position: 2) }
        try Self.rewrite(store, position: 3) { _ in try Self.copy(two, position: 3) }
        let outcome = Self.outcome(test)
        #expect(outcome.firstProblem?.hasPrefix("entry 2 breaks a ledger rule") == true, "\(outcome)")
    }

    @Test func truncationIsRefusedAsCorrupted() throws {
        // The tree peaks kept in the database still cover 5 entries; the entries and checkpoints cover 3.
        let (test, store) = try Self.prepared("truncate")
        try store.database.execute("DELETE FROM entries WHERE position >= 3; DELETE FROM checkpoints WHERE size > 3")
        #expect(Self.outcome(test) == .refused(code: "corrupted"))
    }

    @Test func truncationWithRewrittenPeaksLocksBehindTheAnchor() throws {
        let (test, store) = try Self.prepared("truncate-peaks")
        try store.database.execute("DELETE FROM entries WHERE position >= 3; DELETE FROM checkpoints WHERE size > 3")
        let peaks = MerkleTree(leafHashes: try store.leafHashes(to: 3))
        var range = MerkleCompactRange()
        for index in 0..<UInt64(3) { range.append(leafHash: peaks.leafHash(at: index)) }
        try store.database.prepare("UPDATE meta SET value = ? WHERE name = 'merkle-peaks'").bind([
            .blob(LedgerStore.encodePeaks(range))
        ]).run()
        // The database is now a consistent older ledger; only the anchor on the token can tell.
        #expect(Self.outcome(test) == .locked(.behindAnchor(databaseSize: 3, anchorSize: 5)))
    }

    /// The index tables are committed by the latest checkpoint's D: a row added, or one stored as text where
    /// the wallet writes a blob (which hashes like the blob but matches no lookup), opens the wallet locked.
    @Test("an index row added or retyped opens the wallet locked", arguments: ["added", "retyped"])
    func indexRowOpensLocked(_ edit: String) throws {
        let (test, store) = try Self.prepared("index-\(edit)")
        try store.database.prepare(
            "INSERT INTO statements (signer, id, kind, digest, position) VALUES (?, ?, 1, ?, 1)"
        ).bind([.blob([UInt8](repeating: 1, count: 32)), .blob([UInt8](repeating: 2, count: 16)), .blob([7])]).run()
        if edit == "retyped" {
            // Put back the tables the checkpoint commits to, then add a row whose transfer id is text.
            try store.database.execute("DELETE FROM statements")
            let before = try #require(try store.indexDigest())
            let textRow = "INSERT INTO outgoing (transfer_id, position, signed, status) VALUES ('x', 1, X'00', 0)"
            try store.database.execute(textRow)
            #expect(try store.indexDigest() == nil)
            try store.database.execute("DELETE FROM outgoing")
            #expect(try store.indexDigest() == before)
            try store.database.execute(textRow)
        }
        #expect(Self.outcome(test) == .locked(.indexMismatch))
    }

    /// Rows rewritten while the wallet is open (its lock keeps out other writers, not the database key) are
    /// never signed over: the next append finds the tables differ from its latest checkpoint's D, refuses,
    /// and the wallet locks, for every signature.
    @Test func indexRowsRewrittenWhileOpenAreNotSignedOver() throws {
        let test = try TestWallet("index-open")
        try test.setBudget("food", "10.00 EUR")
        let wallet = try #require(test.wallet)
        let size = wallet.size
        try wallet.ledger.database.prepare(
            "INSERT INTO statements (signer, id, kind, digest, position) VALUES (?, ?, 1, ?, 1)"
        ).bind([.blob([UInt8](repeating: 1, count: 32)), .blob([UInt8](repeating: 2, count: 16)), .blob([7])]).run()
        #expect(throws: WalletError(.locked, "")) { try test.setBudget("rent", "10.00 EUR") }
        #expect(wallet.lockReason == .indexMismatch)
        #expect(wallet.size == size, "nothing was appended")
        #expect(try wallet.ledger.size() == size, "nothing was committed")
        #expect(throws: WalletError.self) { _ = try wallet.signer }
        test.close()
    }

    /// A wallet whose checkpoints are version 1 (made before the index commitment) is refused with why, not
    /// opened as if its index were committed.
    @Test func aVersionOneCheckpointIsRefusedAsAnOlderWallet() throws {
        let (test, store) = try Self.prepared("version-one")
        let latest = try #require(try store.latestCheckpoint())
        var bytes = latest.encoded
        #expect(bytes[3] == Checkpoint.encodingVersion, "signed version u8, u16 length, then the checkpoint")
        bytes[3] = 1
        try store.database.prepare("UPDATE checkpoints SET encoded = ? WHERE size = ?").bind([
            .blob(bytes), .integer(Int64(latest.size)),
        ]).run()
        #expect(Self.outcome(test) == .refused(code: "schemaOutdated"))
    }

    @Test func forgedCheckpointIsRefusedAsCorrupted() throws {
        let (test, store) = try Self.prepared("forged")
        let latest = try #require(try store.latestCheckpoint())
        var bytes = latest.encoded
        bytes[bytes.count - 5] ^= 1
        try store.database.prepare("UPDATE checkpoints SET encoded = ? WHERE size = ?").bind([
            .blob(bytes), .integer(Int64(latest.size)),
        ]).run()
        #expect(Self.outcome(test) == .refused(code: "corrupted"))
    }

    /// Every byte of every entry, entry 0's signed inception event included, flipped one at a time: `ledger
    /// verify` on the raw database stops at the flipped entry (or, when the flip breaks its framing, fails to
    /// read it), at the next one (whose link to it no longer matches), or at the checkpoint right after it
    /// (the last entry has no next one).
    @Test("a flip of any byte of any entry fails verification at that entry, the next, or its checkpoint")
    func everyByteOfEveryEntryFlipped() throws {
        let (test, store) = try Self.prepared("flip")
        let walletID = try WalletMetadata.load(test.paths).parsedWalletID()
        let size = try store.size()
        var flips = 0
        for position in 0..<size {
            let original = try #require(try store.entry(at: position)).encoded
            let culprits = [
                "entry \(position) ", "entry \(position)'s ", "entry \(position + 1) ",
                "checkpoint \(position + 1) ", "checkpoint \(position + 1)'s ",
            ]
            for offset in original.indices {
                var bytes = original
                bytes[offset] ^= 0x01
                try Self.setEncoded(store, position: position, bytes)
                // A flip that breaks the encoding's framing makes the read itself throw, naming the entry.
                let problem: String?
                do {
                    problem = try LedgerVerifier.verify(store, walletID: walletID).problems.first
                } catch {
                    problem = "\(error)"
                }
                #expect(
                    problem.map { problem in culprits.contains { problem.hasPrefix($0) } } == true,
                    "flip at entry \(position) byte \(offset): \(problem ?? "went unnoticed")")
                flips += 1
            }
            try Self.setEncoded(store, position: position, original)
        }
        #expect(flips > 500, "every byte of \(size) entries")
        #expect(try LedgerVerifier.verify(store, walletID: walletID).isValid, "the untouched ledger verifies")
        #expect(Self.outcome(test) == .undetected, "and opens unlocked")
    }
}
