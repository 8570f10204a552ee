import Foundation
import SecureCore
import SecureTestSupport
import Testing

/// The wallet's signed settings with the real binary: the payee's offline limit per payer (`secure policy`),
/// in file and peer mode, and the anchor kind (`secure wallet anchor`).
@Suite("Signed settings: offline limits and the anchor kind", .serialized)
struct SettingsCLITests {
    typealias World = WalletCLITests.World

    static func balance(_ world: World, _ name: String) throws -> String {
        try world.run(["balance"] + world.wallet(name)).output
    }

    /// File mode: Bob credits Alice at most 150.00 EUR a day by default. A second file past that gets a policy
    /// refusal: nothing is recorded, no refusal is signed (the payer cannot reverse, and its payment stays
    /// pending), and the same file is credited once Bob raises his limit with a signed settings entry.
    @Test func aFilePaymentOverTheDefaultLimitIsRefusedByPolicyAndSignsNothing() throws {
        let world = try World()
        try SoundMoneyCLITests.fund(world, "alice", "500.00 EUR")
        for (file, amount) in [("t1", "100.00 EUR"), ("t2", "60.00 EUR")] {
            let spend = try world.run(
                ["spend", "--to", "bob.card", "--amount", amount, "--category", "x", "--out", file]
                    + world.wallet("alice"))
            #expect(spend.status == 0, "\(spend.stderr)")
        }
        #expect(try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob")).status == 0)
        let before = try SoundMoneyCLITests.entries(world, "bob")
        let over = try world.run(
            ["accept", "t2", "--no-proximity", "--refusal-out", "refusal"] + world.wallet("bob"))
        #expect(over.status == 11, "exit \(over.status): \(over.stderr)")
        #expect(over.stderr.contains("150.00 EUR a day") && over.stderr.contains("100.00 EUR"), "\(over.stderr)")
        #expect(over.stderr.contains("nothing was signed"), "\(over.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/refusal"), "a policy refusal signs nothing")
        #expect(try SoundMoneyCLITests.entries(world, "bob") == before, "a policy refusal records nothing")
        #expect(try Self.balance(world, "bob").contains("100.00 EUR"))
        // The payer sees its payment pending: no receipt, and no refusal it could reverse with.
        let pending = try world.run(["pending"] + world.wallet("alice"))
        #expect(pending.output.contains("60.00 EUR"), "\(pending.output)")

        let set = try world.run(["policy", "set", "--offline-limit", "200.00 EUR"] + world.wallet("bob"))
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.output.contains("200.00 EUR") && set.output.contains("per day"), "\(set.output)")
        let show = try world.run(["policy", "show", "--json"] + world.wallet("bob"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout)) as? [String: Any])
        let limits = try #require(json["offlineLimits"] as? [[String: Any]])
        #expect(
            limits.count == 1 && (limits[0]["limit"] as? [String: Any])?["minorUnits"] as? Int == 20000
                && limits[0]["currency"] as? String == "EUR" && limits[0]["window"] as? String == "day")
        #expect(json["anchor"] as? String == "token")
        #expect(try world.run(["policy", "show"] + world.wallet("bob")).output.contains("150 major units"))
        let again = try world.run(["accept", "t2", "--no-proximity"] + world.wallet("bob"))
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Self.balance(world, "bob").contains("160.00 EUR"))
        #expect(try world.run(["history", "--json"] + world.wallet("bob")).output.contains("\"settings\""))
        for name in ["alice", "bob"] {
            #expect(try SoundMoneyCLITests.verifies(world, name), "\(name) verifies")
        }
        let badWindow = try world.run(
            ["policy", "set", "--offline-limit", "5.00 EUR", "--window", "year"] + world.wallet("bob"))
        #expect(badWindow.status == 2, "\(badWindow.stderr)")
    }

    /// Peer mode: Bob's limit for one payer is 3.00 EUR; Alice offers 4.50 EUR. Bob refuses the offer before
    /// `ready`, so Alice debits nothing and has nothing pending.
    @Test func aPeerOfferOverTheLimitIsRefusedBeforeReadyAndNothingIsDebited() throws {
        let world = try PeerCLITests.funded()
        let set = try world.run(["policy", "set", "--offline-limit", "3.00 EUR"] + world.wallet("bob"))
        #expect(set.status == 0, "\(set.stderr)")
        let (receiver, payer) = try PeerCLITests.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420", "--json"],
            payer: [
                "--amount", "4.50 EUR", "--category", "food", "--allow-simulated-ranging", "--distance", "400",
            ])
        #expect(payer.status != 0, "\(payer.output) \(payer.stderr)")
        #expect(receiver.status != 0, "\(receiver.output) \(receiver.stderr)")
        #expect(
            receiver.output.contains("offlineLimitExceeded") && payer.output.contains("offlineLimitExceeded"),
            "\(receiver.output) | \(payer.output)")
        #expect(!receiver.output.contains("\"event\":\"credit\""))
        #expect(try Self.balance(world, "alice").contains("20.00 EUR"))
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
        #expect(try Self.balance(world, "bob").contains("no money yet"))

        // Within the limit the same payment goes through.
        #expect(try world.run(["policy", "set", "--offline-limit", "10.00 EUR"] + world.wallet("bob")).status == 0)
        let (receiver2, payer2) = try PeerCLITests.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420", "--json"],
            payer: [
                "--amount", "4.50 EUR", "--category", "food", "--allow-simulated-ranging", "--distance", "400",
            ])
        #expect(payer2.status == 0 && receiver2.status == 0, "\(payer2.output) \(receiver2.output)")
        #expect(try Self.balance(world, "alice").contains("15.50 EUR"))
    }

    /// The anchor moves by a signed settings entry only, and not while the wallet is locked: a restored copy
    /// of Alice's folder is behind the token anchor, so it cannot move to a file anchor the owner would write.
    @Test func movingTheAnchorTakesASignedEntryAndIsRefusedWhileLocked() throws {
        let world = try World()
        let folder = world.directory + "/alice", copy = world.directory + "/alice-copy"
        try FileManager.default.copyItem(atPath: folder, toPath: copy)
        #expect(try world.run(["policy", "set", "--offline-limit", "20.00 EUR"] + world.wallet("alice")).status == 0)
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.moveItem(atPath: copy, toPath: folder)
        let locked = try world.run(["wallet", "anchor", "file"] + world.wallet("alice"))
        #expect(locked.status == 10, "exit \(locked.status): \(locked.stderr)")
        #expect(locked.stderr.contains("locked"), "\(locked.stderr)")
        #expect(try world.run(["wallet", "show"] + world.wallet("alice")).output.contains("anchor       token"))

        // Bob, unlocked, moves to a file anchor and back; each move is a signed entry.
        let toFile = try world.run(["wallet", "anchor", "file"] + world.wallet("bob"))
        #expect(toFile.status == 0, "\(toFile.stderr)")
        #expect(toFile.stderr.contains("whole wallet folder"))
        #expect(try world.run(["wallet", "show"] + world.wallet("bob")).output.contains("anchor       file"))
        #expect(try world.run(["policy", "show"] + world.wallet("bob")).output.contains("anchor         file"))
        #expect(try SoundMoneyCLITests.verifies(world, "bob"))
        // wallet.json decides nothing: edited back to "token", the ledger still keeps the file anchor.
        let metadataPath = world.directory + "/bob/wallet.json"
        let metadata = try String(contentsOfFile: metadataPath, encoding: .utf8)
        try metadata.replacingOccurrences(of: "\"file\"", with: "\"token\"")
            .write(toFile: metadataPath, atomically: true, encoding: .utf8)
        #expect(try world.run(["wallet", "show"] + world.wallet("bob")).output.contains("anchor       file"))
        let toToken = try world.run(["wallet", "anchor", "token"] + world.wallet("bob"))
        #expect(toToken.status == 0, "\(toToken.stderr)")
        #expect(try world.run(["wallet", "show"] + world.wallet("bob")).output.contains("anchor       token"))
        #expect(try SoundMoneyCLITests.verifies(world, "bob"))
        #expect(try world.run(["wallet", "anchor", "disk"] + world.wallet("bob")).status == 2)
    }
}
