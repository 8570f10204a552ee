import Foundation
import SecureTestSupport
import Testing

/// Journey 7 of issue 14, end to end with the real binary on SoftHSM tokens: an issuer rotates with `keys
/// rotate` (its backup token holds the committed next key, as a wallet's does) and mints on with its new key;
/// holders follow its rotation from its vouchers or its newer card, with no trust by hand; and once a holder
/// knows of the rotation, a voucher of the retired key it had not recorded is refused and kept.
@Suite("Issuers rotate", .serialized)
struct IssuerRotationCLITests {
    typealias World = WalletCLITests.World

    static func entries(_ world: World, _ name: String) throws -> String {
        try SoundMoneyCLITests.entries(world, name)
    }

    @Test func anIssuerMintsRotatesAndMintsAgain() throws {
        let world = try World()
        try world.trustIssuer("alice")
        try world.trustIssuer("bob")
        try world.mint("50.00 EUR", to: "alice", file: "old")
        try world.mint("1.00 EUR", to: "alice", file: "late")
        let deposited = try world.run(["deposit", "old"] + world.wallet("alice"))
        #expect(deposited.status == 0, "\(deposited.stderr)")

        let rotate = try world.run(
            ["keys", "rotate", "--backup-pin-source", "file:toks/issuer-bk.pin", "--json"] + world.wallet("issuer"))
        #expect(rotate.status == 0, "\(rotate.stderr)")
        let rotated = try JSONSerialization.jsonObject(with: Data(rotate.stdout)) as? [String: Any]
        #expect(rotated?["sequence"] as? Int == 2, "\(rotate.output)")
        try world.mint("5.00 EUR", to: "alice", file: "new")
        let show = try world.run(["issuer", "show"] + world.wallet("issuer"))
        #expect(show.status == 0 && show.output.contains("outstanding 56.00 EUR"), "\(show.output)")

        // The new key's voucher carries the issuer's longer log: alice follows it, trusting nothing again.
        let new = try world.run(["deposit", "new"] + world.wallet("alice"))
        #expect(new.status == 0 && new.output.contains("5.00 EUR"), "\(new.stderr)")
        let again = try world.run(["deposit", "old"] + world.wallet("alice"))
        #expect(again.status == 0 && again.output.contains("already recorded"), "\(again.stderr)")

        // A voucher of the retired key alice had not recorded before she learned of the rotation is refused
        // (a thief with the retired key could date one before the rotation) and kept as a refused entry.
        let before = try Self.entries(world, "alice")
        let late = try world.run(["deposit", "late"] + world.wallet("alice"))
        #expect(late.status == 11, "\(late.output) \(late.stderr)")
        #expect(late.stderr.contains("retiredIssuerKey") && late.stderr.contains("rotated away"), "\(late.stderr)")
        #expect(try Self.entries(world, "alice") != before, "the refused voucher is kept")
        let lateAgain = try world.run(["deposit", "late"] + world.wallet("alice"))
        #expect(lateAgain.status == 11 && lateAgain.stderr.contains("retiredIssuerKey"), "\(lateAgain.stderr)")
        let history = try world.run(["history", "--json"] + world.wallet("alice"))
        let listing = try JSONSerialization.jsonObject(with: Data(history.stdout)) as? [String: Any]
        let rows = listing?["entries"] as? [[String: Any]]
        #expect(rows?.filter { $0["kind"] as? String == "refused" }.count == 1, "\(history.output)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("55.00 EUR"))

        // Bob has seen no voucher since: the issuer's newer card moves his trust along its rotation.
        let card = try world.run(["wallet", "show", "--card"] + world.wallet("issuer"))
        try card.output.write(toFile: world.directory + "/issuer-new.card", atomically: true, encoding: .utf8)
        let follow = try world.run(["issuer", "trust", "issuer-new.card"] + world.wallet("bob"))
        #expect(follow.status == 0 && follow.output.contains("now following"), "\(follow.output) \(follow.stderr)")
        let older = try world.run(["issuer", "trust", "issuer.card"] + world.wallet("bob"))
        #expect(older.status == 0 && older.output.contains("nothing changed"), "\(older.output) \(older.stderr)")
        try world.mint("3.00 EUR", to: "bob", file: "bob-new")
        let bobDeposit = try world.run(["deposit", "bob-new"] + world.wallet("bob"))
        #expect(bobDeposit.status == 0, "\(bobDeposit.stderr)")

        // A second rotation deletes the retired keys from the issuer's tokens; alice follows it from the next
        // voucher, and the first rotation's old key stays refused.
        let destroy = try world.run(
            ["keys", "rotate", "--destroy-old", "--yes", "--backup-pin-source", "file:toks/issuer-bk.pin"]
                + world.wallet("issuer"))
        #expect(destroy.status == 0, "\(destroy.stderr)")
        try world.mint("2.00 EUR", to: "alice", file: "newer")
        let newer = try world.run(["deposit", "newer"] + world.wallet("alice"))
        #expect(newer.status == 0 && newer.output.contains("2.00 EUR"), "\(newer.stderr)")
        #expect(try world.run(["deposit", "late"] + world.wallet("alice")).status == 11)
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("57.00 EUR"))

        // Alice pays bob the issuer's money across its rotations; every ledger verifies.
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "2.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("5.00 EUR"))
        for name in ["issuer", "alice", "bob"] {
            let verify = try world.run(["ledger", "verify"] + world.wallet(name))
            #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(name): \(verify.output)")
        }
        // Alice's audit bundle holds deposits of both issuer keys and the refused voucher: it verifies by us
        // and by the independent Python oracle.
        let export = try world.run(["audit", "export", "--out", "alice.json"] + world.wallet("alice"))
        #expect(export.status == 0, "\(export.stderr)")
        let check = try world.run(["audit", "verify", "alice.json"])
        #expect(check.status == 0 && check.output.contains("audit bundle OK"), "\(check.stderr)")
        let oracle = try Run.program(
            RotationCLITests.python, [RotationCLITests.oracle, world.directory + "/alice.json"])
        #expect(oracle.status == 0 && oracle.output.hasPrefix("OK"), "\(oracle.output) \(oracle.stderr)")
    }
}
