import Foundation
import SecureTestSupport
import Testing

/// The wallet's token, as the person set it up: the safeguards given up at `wallet init` persist in the
/// signed settings (tags 5 and 6), and a token whose label or serial changed is found by the wallet's keys.
/// With the real binary and SoftHSM.
@Suite("The wallet's token: recorded allowances and a token that changed its label", .serialized)
struct TokenSettingsCLITests {
    typealias World = WalletCLITests.World

    static func json(_ result: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
    }

    static func metadata(_ world: World, _ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: world.directory + "/\(name)/wallet.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func writeMetadata(_ world: World, _ name: String, _ metadata: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: metadata, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: world.directory + "/\(name)/wallet.json"))
    }

    /// `--allow-unenforced-pin` and `--allow-unproven-origin` at init are signed settings entries: `wallet show`
    /// lists them (text and JSON) without the flags, wallet.json only repeats them (editing it changes
    /// nothing), and `wallet allow … off|on` changes them by another signed entry.
    @Test func allowancesGivenAtInitAreSignedSettingsThatLaterCommandsUse() throws {
        let world = try World(wallets: ["alice"])
        for label in ["carol", "carol-bk"] {
            let made = try world.run(["token", "init-demo", "--dir", "toks", "--label", label])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let carol = world.wallet("carol")
        let made = try world.run(
            [
                "wallet", "init", "--token", "pkcs11:token=carol?module-name=softhsm2",
                "--backup-token", "pkcs11:token=carol-bk?module-name=softhsm2", "--backup-pin-source",
                "file:toks/carol-bk.pin", "--allow-unenforced-pin", "--allow-unproven-origin",
            ] + carol)
        #expect(made.status == 0, "\(made.stderr)")
        let show = try world.run(["wallet", "show", "--json"] + carol)
        #expect(try Self.json(show)["allow"] as? [String] == ["unenforced-pin", "unproven-origin"], "\(show.output)")
        let text = try world.run(["wallet", "show"] + carol).output
        #expect(text.contains("allow        --allow-unenforced-pin --allow-unproven-origin"), "\(text)")
        let history = try world.run(["history", "--json"] + carol).output
        #expect(history.components(separatedBy: "\"settings\"").count - 1 == 2, "two settings entries: \(history)")
        #expect(try Self.metadata(world, "carol")["allow"] as? [String] == ["unenforced-pin", "unproven-origin"])
        let plain = try world.run(["wallet", "show", "--json"] + world.wallet("alice"))
        #expect(try Self.json(plain)["allow"] as? [String] == [], "a wallet made without the flags gives up nothing")

        // wallet.json decides nothing: emptying its cache leaves the signed allowances in force.
        var metadata = try Self.metadata(world, "carol")
        metadata["allow"] = [String]()
        try Self.writeMetadata(world, "carol", metadata)
        #expect(
            try Self.json(try world.run(["policy", "show", "--json"] + carol))["allow"] as? [String]
                == ["unenforced-pin", "unproven-origin"])

        let off = try world.run(["wallet", "allow", "unenforced-pin", "off"] + carol)
        #expect(off.status == 0 && off.output.contains("required from entry"), "\(off.output) \(off.stderr)")
        let again = try world.run(["wallet", "allow", "unenforced-pin", "off"] + carol)
        #expect(again.status == 0 && again.output.contains("nothing was signed"), "\(again.output)")
        #expect(
            try Self.json(try world.run(["wallet", "show", "--json"] + carol))["allow"] as? [String]
                == ["unproven-origin"])
        #expect(try Self.metadata(world, "carol")["allow"] as? [String] == ["unproven-origin"])
        let on = try world.run(["wallet", "allow", "unenforced-pin", "on"] + carol)
        #expect(on.status == 0 && on.output.contains("given up from entry"), "\(on.output) \(on.stderr)")
        for bad in [["unenforced-pins", "on"], ["unproven-origin", "yes"], ["unproven-origin"]] {
            let refused = try world.run(["wallet", "allow"] + bad + carol)
            #expect(refused.status == 2, "\(bad): \(refused.stderr)")
        }
        let verify = try world.run(["ledger", "verify"] + carol)
        #expect(verify.status == 0, "\(verify.output) \(verify.stderr)")
    }

    /// wallet.json records a URI by label or serial; when that matches no token, the token holding the
    /// wallet's keys is found, named on stderr, used, and recorded. A token holding other keys under the
    /// same CKA_IDs is never picked.
    @Test func aTokenWhoseLabelOrSerialChangedIsFoundByTheWalletsKeys() throws {
        let world = try World(wallets: ["alice"])
        let original = try Self.metadata(world, "alice")
        let signingID = try #require(original["signingKeyID"] as? String)
        let agreementID = try #require(original["agreementKeyID"] as? String)
        // A decoy token in the same module, whose keys carry the wallet's CKA_IDs but are other keys.
        #expect(try world.run(["token", "init-demo", "--dir", "toks", "--label", "decoy"]).status == 0)
        try Self.makeKeys(world, config: "toks", label: "decoy", ids: [signingID, agreementID])

        var moved = original
        moved["token"] = "pkcs11:token=alice%20before;serial=0000000000000000?module-name=softhsm2"
        try Self.writeMetadata(world, "alice", moved)
        let budget = try world.run(["budget", "set", "food", "10.00 EUR"] + world.wallet("alice"))
        #expect(budget.status == 0, "\(budget.stderr)")
        #expect(
            budget.stderr.contains("no token matches the recorded") && budget.stderr.contains("\"alice\"")
                && budget.stderr.contains("wallet.json now records"), "\(budget.stderr)")
        let recorded = try #require(try Self.metadata(world, "alice")["token"] as? String)
        #expect(recorded.contains("token=alice;") && recorded.contains("serial="), "\(recorded)")
        #expect(!recorded.contains("decoy"))
        let next = try world.run(["budget", "set", "food", "12.00 EUR"] + world.wallet("alice"))
        #expect(next.status == 0 && !next.stderr.contains("no token matches"), "\(next.stderr)")
        #expect(try world.run(["ledger", "verify"] + world.wallet("alice")).status == 0)

        // Only the decoy present (a token folder without alice's token): it is not picked, and wallet.json
        // keeps its URI.
        #expect(try world.run(["token", "init-demo", "--dir", "toks2", "--label", "decoy"]).status == 0)
        try Self.makeKeys(world, config: "toks2", label: "decoy", ids: [signingID, agreementID])
        try Self.writeMetadata(world, "alice", moved)
        let alone = try Run.program(
            Run.secure, ["budget", "set", "food", "13.00 EUR"] + world.wallet("alice"),
            environment: world.environment.merging(["SOFTHSM2_CONF": world.directory + "/toks2/softhsm2.conf"]) {
                $1
            }, directory: world.directory)
        #expect(alone.status == 5 && alone.stderr.contains("no token matches"), "exit \(alone.status): \(alone.stderr)")
        #expect(try Self.metadata(world, "alice")["token"] as? String == moved["token"] as? String)

        // A --token the person typed is taken at its word.
        let typed = try world.run(
            ["budget", "set", "food", "14.00 EUR", "--token", "pkcs11:token=nothing?module-name=softhsm2"]
                + world.wallet("alice"))
        #expect(typed.status == 5 && !typed.stderr.contains("holds the wallet's keys"), "\(typed.stderr)")
    }

    /// P-256 key pairs with the given CKA_IDs on a SoftHSM token, made with pkcs11-tool (OpenSC).
    static func makeKeys(_ world: World, config: String, label: String, ids: [String]) throws {
        let pin = try String(contentsOfFile: world.directory + "/\(config)/\(label).pin", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        for (index, id) in ids.enumerated() {
            let made = try Run.program(
                "/usr/bin/pkcs11-tool",
                [
                    "--module", "/usr/lib/softhsm/libsofthsm2.so", "--token-label", label, "--login", "--pin", pin,
                    "--keypairgen", "--key-type", "EC:prime256v1", "--id", id, "--label", "decoy-\(index)",
                ], environment: ["SOFTHSM2_CONF": world.directory + "/\(config)/softhsm2.conf"])
            #expect(made.status == 0, "pkcs11-tool: \(made.stderr)")
        }
    }
}
