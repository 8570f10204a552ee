import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import SecureWallet
import Testing

/// Every `--json` output of the real binary, from a real wallet on real SoftHSM tokens, checked against its
/// JSON Schema in docs/schemas by an independent Python oracle (scripts/oracles/json_schemas.py, the
/// `jsonschema` package), with its amounts checked against the fixture's amounts and the text output.
@Suite("secure --json output and its schemas", .serialized)
struct JSONSchemaCLITests {
    typealias World = WalletCLITests.World

    static var python: String { Run.projectRoot + "/.venv/bin/python" }
    static var oracle: String { Run.projectRoot + "/scripts/oracles/json_schemas.py" }
    static var schemas: String { Run.projectRoot + "/docs/schemas" }

    /// Commands whose `--json` output is another command's, by the same code: `retry` runs `pay`'s session
    /// (PeerCommands.pay) and prints the same event lines. It needs a payment left unconfirmed by a peer
    /// session to run at all, so the test exercises the stream through `pay` and `receive`.
    static let sharedOutputs = ["retry": "pay"]

    /// A wallet holding one contact, made through the Wallet API on this process's own SoftHSM tokens
    /// (TestTokens; the world's tokens have a configuration of their own), for `contact list` and
    /// `contact show`: `contact add` (the exchange) is the only command that makes a contact. Returns the
    /// arguments that name the wallet to the binary, with the environment that finds its tokens.
    static func walletWithContact() throws -> (arguments: [String], environment: [String: String]) {
        func make(_ name: String) throws -> (wallet: Wallet, arguments: [String]) {
            let main = try TestTokens.fresh(name), backup = try TestTokens.fresh(name + "-bk")
            let paths = WalletPaths(
                directory: TestTokens.layout.directory + "/wallet-\(name)-\(UUID().uuidString.prefix(8))")
            let backupSession = try backup.session()
            defer { backupSession.close() }
            let options = Wallet.InitOptions(
                tokenURI: main.uri, backup: (backupSession, backup.uri), allowFileAnchor: false)
            let wallet = try Wallet.create(paths: paths, token: try main.session(), options: options)
            return (wallet, ["--wallet", paths.directory, "--pin-source", "file:" + main.pinPath])
        }
        let (dana, arguments) = try make("json-dana")
        let (erin, _) = try make("json-erin")
        let record = try ContactRecord(
            walletID: erin.walletID, log: erin.keyLog,
            contactKey: SystemRandom.bytes(ContactRecord.contactKeyByteCount),
            name: "Erin", addedAt: 1_767_225_600_000, verification: .verified, rangingSource: .external,
            medianMillimetres: 180, trustedIssuers: [erin.walletID])
        try dana.addContact(record, secret: SecretBytes(randomCount: 32))
        for wallet in [dana, erin] { (wallet.token as? TokenSession)?.close() }
        return (arguments, ["SOFTHSM2_CONF": TestTokens.layout.configPath])
    }

    /// One output for the oracle: the command, the format it must name, its output, whether it is one
    /// document per line, the command's text output (each amount must appear in it) and the fixture's amounts
    /// (signed minor units) it must hold.
    struct Case {
        let command: String
        let format: String
        let output: [UInt8]
        var lines = false
        var text: String?
        var amounts: [Int64] = []
    }

    /// The commands whose synopsis in `secure --help` (the command table) offers `--json`.
    static func commandsOfferingJSON() throws -> Set<String> {
        let help = try Run.program(Run.secure, ["--help"]).output
        var names: Set<String> = []
        for line in help.split(separator: "\n").map(String.init) where line.hasPrefix("  ") && line.contains("--json") {
            let name = line.dropFirst(2).split(separator: " ").prefix { word in
                word.first?.isLetter == true && word == word.lowercased()
            }
            names.insert(name.joined(separator: " "))
        }
        return names
    }

    /// Runs the oracle over the cases; returns its exit status and report.
    static func check(_ cases: [Case], in directory: String) throws -> (Int32, String) {
        var documents: [[String: Any]] = []
        for (index, item) in cases.enumerated() {
            let file = directory + "/json-output-\(index)"
            try Data(item.output).write(to: URL(fileURLWithPath: file))
            documents.append([
                "command": item.command, "format": item.format, "file": file, "lines": item.lines,
                "text": item.text ?? NSNull(), "amounts": item.amounts,
            ])
        }
        let casesFile = directory + "/json-cases.json"
        try JSONSerialization.data(withJSONObject: documents).write(to: URL(fileURLWithPath: casesFile))
        let result = try Run.program(python, [oracle, schemas, casesFile])
        return (result.status, result.output + result.stderr)
    }

    /// A command's JSON output, after checking that it succeeded.
    static func json(_ world: World, _ arguments: [String]) throws -> [UInt8] {
        let result = try world.run(arguments)
        try #require(result.status == 0, "secure \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// The first object of a JSON document (for ids the next commands need).
    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// A wallet with an issuer, two currencies, a budget, an offline limit, a file payment left pending and a
    /// peer payment; every `--json` output of it, validated by the oracle.
    @Test func everyJSONOutputMatchesItsSchema() throws {
        let world = try World()
        var cases: [Case] = []
        func add(
            _ command: String, _ format: String, _ arguments: [String], text: [String]? = nil, amounts: [Int64] = []
        )
            throws
        {
            let output = try Self.json(world, arguments)
            let textOutput = try text.map { try world.run($0).output }
            cases.append(Case(command: command, format: format, output: output, text: textOutput, amounts: amounts))
        }
        // Tokens, a wallet and an issuer made with --json.
        for label in ["carol", "carol-bk"] {
            try add(
                "token init-demo", "secure-demo-token-v2",
                ["token", "init-demo", "--dir", world.directory + "/toks", "--label", label, "--json"])
        }
        try add(
            "wallet init", "secure-wallet-v3",
            [
                "wallet", "init", "--token", "pkcs11:token=carol?module-name=softhsm2", "--backup-token",
                "pkcs11:token=carol-bk?module-name=softhsm2", "--backup-pin-source", "file:toks/carol-bk.pin", "--json",
            ] + world.wallet("carol"))
        try add(
            "issuer init", "secure-wallet-v3",
            [
                "issuer", "init", "--token", "pkcs11:token=issuer?module-name=softhsm2", "--backup-token",
                "pkcs11:token=issuer-bk?module-name=softhsm2", "--backup-pin-source", "file:toks/issuer-bk.pin",
                "--json",
            ] + world.wallet("issuer"))
        let card = try world.run(["wallet", "show", "--card"] + world.wallet("issuer"))
        try card.output.write(toFile: world.directory + "/issuer.card", atomically: true, encoding: .utf8)

        // Money: 50.00 EUR and 1200 JPY (scale 0) for alice, a budget, bob's offline limit, a file payment of
        // 4.50 EUR with a note that bob accepts and alice never confirms (pending), and a peer payment of 2.25 EUR.
        try world.fund("alice", "50.00 EUR")
        try world.fund("alice", "1200 JPY")
        for (arguments, name) in [
            (["budget", "set", "food", "10.00 EUR", "--time-zone", "Europe/Berlin"], "alice"),
            (["policy", "set", "--offline-limit", "80.00 EUR"], "bob"),
            (
                [
                    "spend", "--to", "bob.card", "--amount", "4.50 EUR", "--category", "food", "--note", "Kaffee",
                    "--out", "t1",
                ],
                "alice"
            ),
            (["accept", "t1", "--no-proximity"], "bob"),
        ] {
            let result = try world.run(arguments + world.wallet(name))
            try #require(result.status == 0, "\(arguments): \(result.stderr)")
        }
        let (receiver, payer) = try PeerCLITests.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420", "--json"],
            payer: [
                "--amount", "2.25 EUR", "--category", "food", "--note", "Tee", "--allow-simulated-ranging",
                "--distance", "400", "--json",
            ])
        try #require(payer.status == 0 && receiver.status == 0, "\(payer.stderr) \(receiver.stderr)")
        cases.append(
            Case(
                command: "pay", format: "secure-peer-event-v4", output: payer.stdout, lines: true, amounts: [225, 4325])
        )
        cases.append(
            Case(
                command: "receive", format: "secure-peer-event-v4", output: receiver.stdout, lines: true,
                amounts: [225, 675]))

        // A rehearsal (the hidden `secure rehearse`, docs/TILL.md §4): its own format, never a peer event's.
        let rehearsal = try Run.program(
            Run.secure, ["rehearse", Run.projectRoot + "/rehearsals/paid.txt", "--yes", "--json"])
        try #require(rehearsal.status == 0, "secure rehearse: \(rehearsal.stderr)")
        cases.append(
            Case(
                command: "rehearse", format: "secure-rehearsal-event-v1", output: rehearsal.stdout, lines: true,
                amounts: [450, 2000, 1550]))

        // Every reading command, with its text output where it shows the same amounts.
        let alice = world.wallet("alice")
        try add(
            "token list", "secure-token-list-v2",
            ["token", "list", "--token", "pkcs11:?module-name=softhsm2", "--json"])
        try add(
            "keys generate", "secure-key-v2",
            [
                "keys", "generate", "--token", "pkcs11:token=carol?module-name=softhsm2", "--label", "spare",
                "--pin-source", "file:toks/carol.pin", "--json",
            ])
        try add(
            "keys list", "secure-key-list-v2",
            ["keys", "list", "--wallet", "alice", "--token", "pkcs11:token=alice?module-name=softhsm2", "--json"])
        try add("wallet show", "secure-wallet-v3", ["wallet", "show", "--json"] + alice)
        try add(
            "budget show", "secure-budgets-v2", ["budget", "show", "--json"] + alice, text: ["budget", "show"] + alice,
            amounts: [1000, 675])
        try add(
            "policy show", "secure-policy-v2", ["policy", "show", "--json"] + world.wallet("bob"),
            text: ["policy", "show"] + world.wallet("bob"), amounts: [8000])
        try add(
            "balance", "secure-balance-v2", ["balance", "--json"] + alice, text: ["balance"] + alice,
            amounts: [4325, 1200])
        try add(
            "history", "secure-history-v3", ["history", "--json"] + alice, text: ["history"] + alice,
            amounts: [5000, 1200, -450, -225])
        try add(
            "pending", "secure-pending-v2", ["pending", "--json"] + alice, text: ["pending"] + alice, amounts: [450])
        try add(
            "issuer show", "secure-issuer-v2", ["issuer", "show", "--json"] + world.wallet("issuer"),
            text: ["issuer", "show"] + world.wallet("issuer"), amounts: [5000, 1200])
        let (dana, danaEnvironment) = try Self.walletWithContact()
        for (command, format, arguments) in [
            ("contact list", "secure-contact-list-v1", ["contact", "list", "--json"]),
            ("contact show", "secure-contact-v1", ["contact", "show", "Erin", "--json"]),
        ] {
            let result = try Run.program(Run.secure, arguments + dana, environment: danaEnvironment)
            try #require(result.status == 0, "secure \(command): \(result.stderr)")
            cases.append(Case(command: command, format: format, output: result.stdout))
        }
        try add(
            "ledger verify", "secure-ledger-verification-v2", ["ledger", "verify", "--json"] + alice,
            amounts: [4325, 1200])

        // Proof files and audit bundles.
        let history = try Self.object(try Self.json(world, ["history", "--json"] + alice))
        let entries = try #require(history["entries"] as? [[String: Any]])
        let spent = try #require(entries.first { $0["note"] as? String == "Kaffee" })
        #expect((spent["amount"] as? [String: Any])?["minorUnits"] as? Int == -450, "\(spent)")
        let entryID = try #require(spent["id"] as? String)
        _ = try Self.json(world, ["ledger", "prove", "--entry", entryID, "--out", "inclusion.json"] + alice)
        _ = try Self.json(
            world,
            ["ledger", "consistency", "--from", "2", "--to", "\(entries.count)", "--out", "consistency.json"] + alice)
        for (command, format, file) in [
            ("ledger prove", "secure-inclusion-proof-v1", "inclusion.json"),
            ("ledger consistency", "secure-consistency-proof-v1", "consistency.json"),
        ] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: world.directory + "/" + file))
            cases.append(Case(command: command, format: format, output: Array(bytes)))
        }
        _ = try Self.json(world, ["audit", "export", "--out", "bundle.json"] + alice)
        try add("audit verify", "secure-audit-verification-v2", ["audit", "verify", "bundle.json", "--json"])
        try add("keys audit", "secure-key-audit-v3", ["keys", "audit", "--json"] + alice)
        try add(
            "keys rotate", "secure-key-rotation-v3",
            ["keys", "rotate", "--backup-pin-source", "file:toks/alice-bk.pin", "--json"] + alice)

        // Last, since it moves money (the outputs above show balances): a till and its payer (issue 18): the till's countdown and ending events, the payer's till screen.
        let (till, port) = try TillCLITests.till(world, amount: "1.00 EUR")
        let tillPayer = try TillCLITests.pay(world, port: port, ["--expect-payee", "bob.card"])
        try #require(TillCLITests.finish(till) == 0 && tillPayer.status == 0, "\(till.seen) \(tillPayer.stderr)")
        cases.append(
            Case(
                command: "till", format: "secure-peer-event-v4", output: Array(till.seen.utf8), lines: true,
                amounts: [100]))
        cases.append(
            Case(
                command: "pay --till", format: "secure-peer-event-v4", output: tillPayer.stdout, lines: true,
                amounts: [100]))
        let (status, report) = try Self.check(cases, in: world.directory)
        #expect(status == 0, "\(report)")

        // Every command that offers --json was run here (or prints another's output by the same code).
        let exercised = Set(cases.map(\.command))
        let offered = try Self.commandsOfferingJSON()
        #expect(offered.count >= 20, "\(offered.sorted())")
        for command in offered.sorted() {
            #expect(
                exercised.contains(command) || Self.sharedOutputs[command].map(exercised.contains) == true,
                "secure \(command) offers --json but its output is not checked against a schema here")
        }
    }

    /// The oracle fails on drift: a row that lost a key, an amount given as text, an amount whose text
    /// disagrees with its minor units, a bare array, and an unknown format.
    @Test func theOracleRejectsDrift() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-json-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let issuer = String(repeating: "ab", count: 32)
        func amount(_ units: Int, _ text: String) -> String {
            #"{"minorUnits":\#(units),"currency":"EUR","scale":2,"issuer":"\#(issuer)","text":"\#(text)"}"#
        }
        func pending(_ amountJSON: String) -> [UInt8] {
            Array(
                (#"{"format":"secure-pending-v2","payments":[{"transferID":"\#(String(repeating: "0", count: 32))","#
                    + #""amount":\#(amountJSON),"payee":"\#(issuer)","position":3}]}"#).utf8)
        }
        let good = Case(command: "pending", format: "secure-pending-v2", output: pending(amount(450, "4.50 EUR")))
        #expect(try Self.check([good], in: directory).0 == 1, "one schema used: the others are reported unexercised")
        let (_, goodReport) = try Self.check([good], in: directory)
        #expect(goodReport.contains("ok pending") && !goodReport.contains("FAIL pending"), "\(goodReport)")
        let drifts: [(String, [UInt8])] = [
            ("an amount as text", pending(#""4.50 EUR""#)),
            ("text that is not the minor units", pending(amount(450, "45.00 EUR"))),
            ("a missing key", Array(#"{"format":"secure-pending-v2"}"#.utf8)),
            ("a bare array", Array("[]".utf8)),
            ("an extra key", Array(#"{"format":"secure-pending-v2","payments":[],"extra":1}"#.utf8)),
        ]
        for (what, output) in drifts {
            let (_, report) = try Self.check(
                [Case(command: "pending", format: "secure-pending-v2", output: output)], in: directory)
            #expect(report.contains("FAIL pending"), "\(what) passed: \(report)")
        }
        let wrong = Case(command: "balance", format: "secure-balance-v2", output: pending(amount(450, "4.50 EUR")))
        #expect(try Self.check([wrong], in: directory).1.contains("FAIL balance"))
    }
}
