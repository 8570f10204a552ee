import Foundation
import SecureTestSupport
import Testing

/// `secure issuer delegate-clearing` end to end with the real binary on SoftHSM tokens (docs/CLEARING.md §1.1):
/// the issuer names its clearing (a key made with pkcs11-tool, not always-authenticate), holders follow it from
/// the issuer's card and show it, refused keys and PINs say why, and money still moves under the issuer's key.
@Suite("Clearing delegation", .serialized)
struct ClearingDelegationCLITests {
    typealias World = WalletCLITests.World

    /// Key pairs on the token "clearing" made with pkcs11-tool: 01 the clearing key, 02 always-authenticate,
    /// 03 on P-384.
    static func makeClearingKeys(_ world: World) throws {
        let made = try Run.program(
            Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", "clearing"])
        #expect(made.status == 0, "\(made.stderr)")
        let pin = try String(contentsOfFile: world.directory + "/toks/clearing.pin", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        for (id, type, extra) in [
            ("01", "EC:prime256v1", []), ("02", "EC:prime256v1", ["--always-auth"]),
            ("03", "EC:secp384r1", []),
        ] {
            let key = try Run.program(
                "/usr/bin/pkcs11-tool",
                [
                    "--module", "/usr/lib/softhsm/libsofthsm2.so", "--token-label", "clearing", "--login", "--pin",
                    pin, "--keypairgen", "--key-type", type, "--id", id, "--label", "clearing-\(id)", "--usage-sign",
                ] + extra, environment: world.environment)
            #expect(key.status == 0, "pkcs11-tool: \(key.stderr)")
        }
    }

    static func delegate(_ world: World, id: String, pinFile: String = "toks/clearing.pin") throws -> ProcessResult {
        try world.run(
            [
                "issuer", "delegate-clearing", "--clearing-key",
                "pkcs11:token=clearing;id=%\(id)?module-name=softhsm2", "--tls-key", "tls.crt",
                "--url", "https://clearing.example.org/v1", "--clearing-pin-source", "file:\(pinFile)",
            ] + world.wallet("issuer"))
    }

    @Test func anIssuerDelegatesItsClearingAndHoldersFollowIt() throws {
        let world = try World()
        try world.fund("alice", "10.00 EUR")
        try Self.makeClearingKeys(world)
        // The TLS key and certificate, and its pin computed by OpenSSL's own tools.
        let tls = try Run.program(
            "/bin/sh",
            [
                "-c",
                "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls.key -out tls.crt "
                    + "-subj /CN=clearing -days 2 2>/dev/null && openssl pkey -in tls.key -pubout -outform DER "
                    + "| sha256sum",
            ], directory: world.directory)
        #expect(tls.status == 0, "\(tls.stderr)")
        let pin = String(tls.output.prefix(64))

        try "000000\n".write(toFile: world.directory + "/wrong.pin", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: world.directory + "/wrong.pin")
        let wrongPIN = try Self.delegate(world, id: "01", pinFile: "wrong.pin")
        #expect(wrongPIN.status != 0 && wrongPIN.stderr.contains("CKR_PIN_INCORRECT"), "\(wrongPIN.stderr)")
        let alwaysAuthenticate = try Self.delegate(world, id: "02")
        #expect(
            alwaysAuthenticate.status != 0 && alwaysAuthenticate.stderr.contains("always-authenticate"),
            "\(alwaysAuthenticate.stderr)")
        let p384 = try Self.delegate(world, id: "03")
        #expect(p384.status != 0 && p384.stderr.contains("P-256"), "\(p384.stderr)")
        let before = try world.run(["issuer", "show"] + world.wallet("issuer"))
        #expect(before.output.contains("clearing: none delegated"), "\(before.output)")

        let delegated = try Self.delegate(world, id: "01")
        #expect(delegated.status == 0, "\(delegated.stderr)")
        #expect(delegated.stderr.contains("wallets built before"), "\(delegated.stderr)")
        #expect(delegated.output.contains("TLS key SHA-256 \(pin)"), "\(delegated.output) vs \(pin)")
        let show = try world.run(["issuer", "show"] + world.wallet("issuer"))
        #expect(show.output.contains("clearing https://clearing.example.org/v1"), "\(show.output)")
        let issuerID = try #require(show.output.split(separator: "\n").first?.split(separator: " ").last)

        // Bob trusts the issuer from its new card and shows the clearing; alice follows the longer log.
        let card = try world.run(["wallet", "show", "--card"] + world.wallet("issuer"))
        try card.output.write(toFile: world.directory + "/issuer-new.card", atomically: true, encoding: .utf8)
        #expect(try world.run(["issuer", "trust", "issuer-new.card"] + world.wallet("bob")).status == 0)
        let bobShows = try world.run(["issuer", "show", String(issuerID)] + world.wallet("bob"))
        #expect(bobShows.status == 0, "\(bobShows.stderr)")
        #expect(bobShows.output.contains("clearing https://clearing.example.org/v1"), "\(bobShows.output)")
        #expect(bobShows.output.contains("TLS key SHA-256 \(pin)"), "\(bobShows.output)")
        let follow = try world.run(["issuer", "trust", "issuer-new.card"] + world.wallet("alice"))
        #expect(follow.status == 0 && follow.output.contains("now following"), "\(follow.output) \(follow.stderr)")

        // The issuer key is still in force: it mints, alice deposits and pays bob; every ledger verifies.
        try world.mint("5.00 EUR", to: "alice", file: "after")
        let deposit = try world.run(["deposit", "after"] + world.wallet("alice"))
        #expect(deposit.status == 0, "\(deposit.stderr)")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "12.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("12.00 EUR"))
        // The issuer rotates after the delegation (the rotation follows the delegation in its log); the clearing
        // stays in force, and bob follows the log with the delegation between rotations from the next voucher.
        let rotate = try world.run(
            ["keys", "rotate", "--backup-pin-source", "file:toks/issuer-bk.pin"] + world.wallet("issuer"))
        #expect(rotate.status == 0, "\(rotate.stderr)")
        let rotated = try world.run(["issuer", "show"] + world.wallet("issuer"))
        #expect(rotated.output.contains("clearing https://clearing.example.org/v1"), "\(rotated.output)")
        try world.mint("1.00 EUR", to: "bob", file: "rotated")
        let bobDeposit = try world.run(["deposit", "rotated"] + world.wallet("bob"))
        #expect(bobDeposit.status == 0, "\(bobDeposit.stderr)")
        let bobFollows = try world.run(["issuer", "show", String(issuerID)] + world.wallet("bob"))
        #expect(bobFollows.output.contains("key in force: event 3 of 4"), "\(bobFollows.output)")
        for name in ["issuer", "alice", "bob"] {
            let verify = try world.run(["ledger", "verify"] + world.wallet(name))
            #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(name): \(verify.output)")
        }
        // Alice's audit bundle carries the issuer's log with its delegation: it verifies by us and by the
        // independent Python oracle.
        let export = try world.run(["audit", "export", "--out", "alice.json"] + world.wallet("alice"))
        #expect(export.status == 0, "\(export.stderr)")
        let check = try world.run(["audit", "verify", "alice.json"])
        #expect(check.status == 0 && check.output.contains("audit bundle OK"), "\(check.stderr)")
        let oracle = try Run.program(
            RotationCLITests.python, [RotationCLITests.oracle, world.directory + "/alice.json"])
        #expect(oracle.status == 0 && oracle.output.hasPrefix("OK"), "\(oracle.output) \(oracle.stderr)")
    }
}
