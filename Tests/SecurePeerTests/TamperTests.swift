import Foundation
import Testing
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
@testable import SecurePeer
@testable import SecureWallet
@testable import SecureStore

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
        let store = try LedgerStore.open(path: test.paths.database, key: key, expectedSalt: wrapped.databaseSalt,
                                         walletID: try WalletMetadata.load(test.paths).walletIDBytes)
        return (test, store)
    }

    /// Whether the tampered wallet is caught: it fails to open, opens locked, or fails verification.
    static func isDetected(_ test: TestWallet) -> Bool {
        do {
            let wallet = try test.reopen()
            defer { test.close() }
            if wallet.lockReason != nil { return true }
            return !(try LedgerVerifier.verify(wallet.ledger, walletID: wallet.walletID).isValid)
        } catch {
            return true
        }
    }

    /// Re-encodes entry `position` with one field changed, keeping its row otherwise as it was.
    static func rewrite(_ store: LedgerStore, position: UInt64, _ change: (LedgerEntry) throws -> LedgerEntry) throws {
        let entry = try #require(try store.entry(at: position))
        let changed = try change(entry)
        try store.database.prepare("UPDATE entries SET encoded = ?, id = ?, link = ?, leaf = ? WHERE position = ?")
            .bind([.blob(changed.encoded), .blob(changed.id), .blob(changed.link), .blob(Merkle.leafHash(changed.encoded)),
                   .integer(Int64(position))]).run()
    }

    static func copy(_ entry: LedgerEntry, id: [UInt8]? = nil, category: String? = nil, note: String? = nil, time: Int64? = nil,
                     payload: [UInt8]? = nil, previous: [UInt8]? = nil, position: UInt64? = nil, counterparty: [UInt8]? = nil) throws -> LedgerEntry {
        try LedgerEntry(position: position ?? entry.position, id: id ?? entry.id, kind: entry.kind, flags: entry.flags, amount: entry.amount,
                        category: category ?? entry.category, counterparty: counterparty ?? entry.counterparty, note: note ?? entry.note,
                        time: time ?? entry.time, statement: entry.statement, payload: payload ?? entry.payload,
                        previousLink: previous ?? entry.previousLink)
    }

    @Test("changing one field of an entry is detected", arguments: ["id", "category", "note", "time", "payload", "link", "counterparty"])
    func changeOneField(_ field: String) throws {
        let (test, store) = try Self.prepared("field-\(field)")
        try Self.rewrite(store, position: 2) { entry in
            switch field {
            case "id": return try Self.copy(entry, id: [UInt8](repeating: 0xaa, count: 16))
            case "category": return try Self.copy(entry, category: "rent2")
            case "note": return try Self.copy(entry, note: "changed")
            case "time": return try Self.copy(entry, time: entry.time + 1)
            case "payload":
                let budget = try Budget(category: entry.category, limit: try MoneyText.parse("9999.00 EUR"), window: .month,
                                        isHardCap: false, timeZoneIdentifier: "Europe/Berlin")
                return try Self.copy(entry, payload: BudgetChange.set(budget).payload)
            case "link": return try Self.copy(entry, previous: [UInt8](repeating: 7, count: 32))
            default: return try Self.copy(entry, counterparty: [1, 2, 3])
            }
        }
        #expect(Self.isDetected(test))
    }

    @Test func deletedRowIsDetected() throws {
        let (test, store) = try Self.prepared("delete")
        try store.database.execute("DELETE FROM entries WHERE position = 2")
        #expect(Self.isDetected(test))
    }

    @Test func reorderedRowsAreDetected() throws {
        let (test, store) = try Self.prepared("reorder")
        let two = try #require(try store.entry(at: 2)), three = try #require(try store.entry(at: 3))
        try Self.rewrite(store, position: 2) { _ in try Self.copy(three, position: 2) }
        try Self.rewrite(store, position: 3) { _ in try Self.copy(two, position: 3) }
        #expect(Self.isDetected(test))
    }

    @Test func truncationIsDetected() throws {
        let (test, store) = try Self.prepared("truncate")
        try store.database.execute("DELETE FROM entries WHERE position >= 3; DELETE FROM checkpoints WHERE size > 3")
        #expect(Self.isDetected(test))
    }

    @Test func truncationWithRewrittenPeaksIsDetected() throws {
        let (test, store) = try Self.prepared("truncate-peaks")
        try store.database.execute("DELETE FROM entries WHERE position >= 3; DELETE FROM checkpoints WHERE size > 3")
        let peaks = MerkleTree(leafHashes: try store.leafHashes(to: 3))
        var range = MerkleCompactRange()
        for index in 0..<UInt64(3) { range.append(leafHash: peaks.leafHash(at: index)) }
        try store.database.prepare("UPDATE meta SET value = ? WHERE name = 'merkle-peaks'").bind([.blob(LedgerStore.encodePeaks(range))]).run()
        // The database is now a consistent older ledger; only the anchor on the token can tell.
        #expect(Self.isDetected(test))
    }

    @Test func forgedCheckpointIsDetected() throws {
        let (test, store) = try Self.prepared("forged")
        let latest = try #require(try store.latestCheckpoint())
        var bytes = latest.encoded
        bytes[bytes.count - 5] ^= 1
        try store.database.prepare("UPDATE checkpoints SET encoded = ? WHERE size = ?").bind([.blob(bytes), .integer(Int64(latest.size))]).run()
        #expect(Self.isDetected(test))
    }

    @Test func everyFieldEveryEntryAllCaught() throws {
        // Exhaustive over positions: a single flipped byte in any entry's encoding (outside entry 0's
        // signed event, which is checked on its own) is caught.
        let (test, store) = try Self.prepared("flip")
        let size = try store.size()
        for position in 1..<size {
            let original = try #require(try store.entry(at: position)).encoded
            for offset in stride(from: 0, to: original.count, by: max(1, original.count / 12)) {
                var bytes = original
                bytes[offset] ^= 0x01
                try store.database.prepare("UPDATE entries SET encoded = ? WHERE position = ?").bind([.blob(bytes), .integer(Int64(position))]).run()
                #expect(Self.isDetected(test), "flip at entry \(position) byte \(offset) went unnoticed")
                try store.database.prepare("UPDATE entries SET encoded = ? WHERE position = ?").bind([.blob(original), .integer(Int64(position))]).run()
            }
        }
        #expect(!Self.isDetected(test), "the untouched ledger verifies")
    }
}
