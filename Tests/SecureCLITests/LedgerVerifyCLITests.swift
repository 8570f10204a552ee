import Foundation
import SecureTestSupport
import Testing

/// `secure ledger verify` against a real wallet database file with bytes flipped in it, and the lock a
/// failed verification leaves: the stock binary, real SoftHSM tokens, a real SQLCipher file.
@Suite("secure ledger verify: flipped bytes and the verification lock", .serialized)
struct LedgerVerifyCLITests {
    typealias World = WalletCLITests.World

    /// SQLCipher 3's default page size (`PRAGMA cipher_page_size`; LedgerStoreTests pins it).
    static let pageByteCount = 1024
    /// Offsets flipped in every page: early data, the middle, late data, the IV (page size − 48 … − 32) and
    /// the HMAC (− 32 … − 12). Page 1's first 16 bytes are the salt, which the open itself checks.
    /// Measured on this wallet (35 pages, no free page): all 175 flips fail verification; without the
    /// physical checks (integrity_check and every row read) 75 of them passed. The last 12 bytes of each
    /// page (offsets 1012 … 1023, the reserve's padding after the HMAC) are not authenticated by SQLCipher
    /// and hold nothing: flips there pass on every page, and are left out here on purpose.
    static let offsets = [20, 333, 700, 980, 1000]

    /// Alice deposits, pays Bob by file, and confirms Bob's receipt: every table that a wallet fills in file
    /// mode holds rows (entries, checkpoints, nodes, statements, outgoing with its receipt, peer key events).
    static func paidAndConfirmed() throws -> World {
        let world = try World()
        try SoundMoneyCLITests.fund(world, "alice", "50.00 EUR")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "7.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity", "--receipt-out", "r1"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["confirm", "r1"] + world.wallet("alice")).status == 0)
        return world
    }

    static func restore(_ pristine: [UInt8], _ folder: String) throws {
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: folder + "/ledger.db" + suffix) }
        try Data(pristine).write(to: URL(fileURLWithPath: folder + "/ledger.db"))
    }

    /// Every byte flipped in every page of the file (at `offsets`) makes `ledger verify` fail: a non-zero
    /// exit and a problem named. Pages SQLCipher cannot authenticate fail when read; `ledger verify` reads
    /// every page in use (integrity_check, then every row of every table).
    @Test func everyFlippedByteInTheDatabaseFailsVerification() throws {
        let world = try Self.paidAndConfirmed()
        let folder = world.directory + "/alice"
        #expect(try world.run(["ledger", "verify"] + world.wallet("alice")).output.contains("ledger OK"))
        // The last writer checkpointed the WAL into the file on closing: the file alone holds the ledger.
        let wal = (try? FileManager.default.attributesOfItem(atPath: folder + "/ledger.db-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "the WAL still holds \(wal) bytes")
        let pristine = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/ledger.db")))
        #expect(pristine.count % Self.pageByteCount == 0)
        let pages = pristine.count / Self.pageByteCount
        var passed: [String] = []
        for page in 0..<pages {
            for offset in Self.offsets {
                var flipped = pristine
                flipped[page * Self.pageByteCount + offset] ^= 0x5a
                try Self.restore(flipped, folder)
                let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
                let named = verify.output.contains("PROBLEMS") || !verify.stderr.isEmpty
                if verify.status == 0 || !named { passed.append("page \(page + 1) offset \(offset)") }
            }
        }
        #expect(passed.isEmpty, "\(passed.count) of \(pages * Self.offsets.count) flips pass: \(passed)")
        // The good file verifies again, which lifts the lock the failures left.
        try Self.restore(pristine, folder)
        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output)\(verify.stderr)")
    }

    /// After a failed `ledger verify` the wallet signs nothing, even once the file is put back, until a
    /// verification succeeds; deleting files in the wallet folder does not lift the lock (it is on the token).
    @Test func aFailedVerificationLocksUntilAVerificationSucceeds() throws {
        let world = try Self.paidAndConfirmed()
        let folder = world.directory + "/alice"
        let pristine = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/ledger.db")))
        // A byte in the newest page whose damage the open survives, so that `ledger verify` runs and records
        // its failure: a page the open reads (the latest checkpoint, the index tables it hashes) fails the
        // open itself, and which pages those are depends on the order rows were written.
        var failed: ProcessResult?
        for page in (0..<pristine.count / Self.pageByteCount).reversed() {
            var flipped = pristine
            flipped[page * Self.pageByteCount + 333] ^= 0x5a
            try Self.restore(flipped, folder)
            let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
            #expect(verify.status == 10, "page \(page): \(verify.output)\(verify.stderr)")
            if verify.output.contains("ledger has PROBLEMS") {
                failed = verify
                break
            }
        }
        #expect(failed != nil, "no flipped page let the wallet open for `ledger verify`")
        try Self.restore(pristine, folder)
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "1.00 EUR", "--category", "x", "--out", "t2"]
                + world.wallet("alice"))
        #expect(spend.status == 10 && spend.stderr.contains("ledger verify` failed"), "\(spend.stderr)")
        let budget = try world.run(["budget", "set", "food", "3.00 EUR"] + world.wallet("alice"))
        #expect(budget.status == 10 && budget.stderr.contains("locked"), "\(budget.stderr)")
        #expect(try world.run(["balance"] + world.wallet("alice")).stderr.contains("LOCKED"))
        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output)\(verify.stderr)")
        let again = try world.run(
            ["spend", "--to", "bob.card", "--amount", "1.00 EUR", "--category", "x", "--out", "t2"]
                + world.wallet("alice"))
        #expect(again.status == 0, "\(again.stderr)")
    }

    /// `audit verify` and the Python oracle check the statements inside a bundle's entries: Alice's bundle
    /// (a deposit, a payment out, a confirmation) and Bob's (a credit) verify; with the issuer left out of
    /// the trusted set, or the payer's log left out, both verifiers fail and name the entry.
    @Test func auditBundlesCarryAndCheckTheStatements() throws {
        let world = try Self.paidAndConfirmed()
        let python = RotationCLITests.python, oracle = RotationCLITests.oracle
        for (name, field) in [("alice", "trustedIssuers"), ("bob", "peerKeyEvents")] {
            #expect(try world.run(["audit", "export", "--out", "\(name).json"] + world.wallet(name)).status == 0)
            let good = try world.run(["audit", "verify", "\(name).json"])
            #expect(good.status == 0, "\(good.output)\(good.stderr)")
            let checked = try Run.program(python, [oracle, world.directory + "/\(name).json"])
            #expect(checked.status == 0 && checked.output.hasPrefix("OK"), "\(checked.output)\(checked.stderr)")
            let path = world.directory + "/\(name).json"
            var json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            var sources = try #require(json["statementSources"] as? [String: Any])
            sources[field] = [Any]()
            json["statementSources"] = sources
            try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path + ".bad"))
            let bad = try world.run(["audit", "verify", "\(name).json.bad"])
            #expect(bad.status == 7 && bad.stderr.contains("INVALID: entry "), "\(name): \(bad.output)\(bad.stderr)")
            let refused = try Run.program(python, [oracle, path + ".bad"])
            #expect(refused.status == 1 && refused.output.contains("INVALID: entry "), "\(name): \(refused.output)")
        }
    }
}
