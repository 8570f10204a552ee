import Foundation
import SecureTestSupport
import Testing

/// Issue 16, "A report people would rather look at": `secure report --html` on a known fixture wallet made
/// through the real binary (an issuer, two vouchers, a budget, five payments with hostile notes, one of them
/// answering a hostile receiver's request whose note holds a newline, and a key rotation). Python
/// (scripts/oracles/report_check.py) recomputes every point and bar from the fixture's amounts, Chromium
/// renders the page, and the screenshot must show each chart in its colours.
@Suite("secure report", .serialized)
struct ReportCLITests {
    typealias World = WalletCLITests.World

    static var oracle: String { Run.projectRoot + "/scripts/oracles/report_check.py" }

    /// A payment of the fixture: amount in cents, category, note.
    struct Spend {
        let cents: Int
        let category: String
        let note: String
    }

    static let deposits = [5000, 2000]
    static let budgetLimit = 3000
    static let spends = [
        Spend(cents: 1200, category: "food", note: "Lunch, with Bob"),
        Spend(cents: 750, category: "food", note: "say \"hi\""),
        Spend(cents: 325, category: "fun", note: "=1+1"),
        Spend(cents: 400, category: "fun", note: "<svg onload=alert(1)>"),
    ]
    /// The hostile receiver's request: its note holds what `--note` refuses (a newline, a CR LF pair that
    /// starts a would-be formula row, an escape sequence) and markup.
    static let requested = Spend(
        cents: 200, category: "food", note: "first line\n<b>second</b> line\r\n-cmd|' /c calc'!A0\u{1B}[2J")

    static func euros(_ cents: Int) -> String { String(format: "%d.%02d EUR", cents / 100, cents % 100) }

    /// Builds the fixture in alice's wallet and returns its description for the oracle.
    static func fixture(_ world: World) throws -> [String: Any] {
        for amount in deposits { try world.fund("alice", euros(amount)) }
        let budget = try world.run(
            ["budget", "set", "food", euros(budgetLimit), "--window", "month"] + world.wallet("alice"))
        guard budget.status == 0 else { throw CLITests.CLIFailure(budget.stderr) }
        for (index, spend) in spends.enumerated() {
            let spent = try world.run(
                [
                    "spend", "--to", "bob.card", "--amount", euros(spend.cents), "--category", spend.category,
                    "--note", spend.note, "--out", "t\(index).transfer",
                ] + world.wallet("alice"))
            guard spent.status == 0 else { throw CLITests.CLIFailure(spent.stderr) }
        }
        try payHostileRequest(world)
        let rotate = try world.run(
            ["keys", "rotate", "--backup-pin-source", "file:toks/alice-bk.pin"] + world.wallet("alice"))
        guard rotate.status == 0 else { throw CLITests.CLIFailure(rotate.stderr) }
        let all = spends + [requested]
        return [
            "deposits": deposits,
            "spends": all.map { ["amount": $0.cents, "category": $0.category, "note": $0.note] as [String: Any] },
            "budget": ["category": "food", "limit": budgetLimit] as [String: Any],
            "events": deposits.map { ["deposit", $0] as [Any] } + all.map { ["spend", $0.cents] as [Any] },
        ]
    }

    /// Alice answers a request from `secure-hostile-peer` (bob's wallet), whose note the stock binary would
    /// refuse to send; her debit records it as the payment's note.
    static func payHostileRequest(_ world: World) throws {
        let port = String(Int.random(in: 20_000..<40_000))
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: HostilePeerTextTests.hostilePeer)
        peer.arguments = [
            "--wallet", "bob", "--pin-source", "file:toks/bob.pin", "--listen", port, "--request",
            euros(requested.cents), "--note-hex", Data(requested.note.utf8).map { String(format: "%02x", $0) }.joined(),
        ]
        peer.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
        peer.currentDirectoryURL = URL(fileURLWithPath: world.directory)
        let log = world.directory + "/hostile-peer.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        peer.standardOutput = logHandle
        peer.standardError = logHandle
        try peer.run()
        defer { if peer.isRunning { peer.terminate() } }
        Thread.sleep(forTimeInterval: 1.0)
        let paid = try world.run(
            [
                "pay", "--to", "127.0.0.1:" + port, "--category", requested.category, "--yes", "--max-amount",
                euros(requested.cents), "--allow-simulated-ranging", "--distance", "400",
            ] + world.wallet("alice"))
        peer.waitUntilExit()
        guard paid.status == 0 else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw CLITests.CLIFailure("pay exit \(paid.status): \(paid.output)\nthe receiver: \(said)")
        }
    }

    static func check(_ world: World, _ arguments: [String], input: String = "") throws -> String {
        let result = try Run.program(
            RotationCLITests.python, [oracle] + arguments, environment: world.environment,
            input: Array(input.utf8), directory: world.directory)
        #expect(result.status == 0, "report_check.py \(arguments[0]): \(result.output) \(result.stderr)")
        return result.output
    }

    /// Chromium headless, with a private profile, and a time limit: a screenshot or the DOM it built.
    static func chromium(_ world: World, _ arguments: [String]) throws -> ProcessResult {
        let profile = world.directory + "/chromium-\(UUID().uuidString.prefix(8))"
        // A profile is a few megabytes; the world's folder stays for a failure's post-mortem, the profile need not.
        defer { try? FileManager.default.removeItem(atPath: profile) }
        return try Run.program(
            "/usr/bin/timeout",
            [
                "120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--force-device-scale-factor=1", "--user-data-dir=" + profile, "--no-first-run",
                "--disable-extensions",
            ] + arguments, environment: world.environment, directory: world.directory)
    }

    @Test func theReportDrawsTheFixtureAndShowsPeerTextAsText() throws {
        let world = try World()
        let fixture = try Self.fixture(world)
        let fixtureFile = world.directory + "/fixture.json"
        try JSONSerialization.data(withJSONObject: fixture).write(to: URL(fileURLWithPath: fixtureFile))

        let made = try world.run(["report", "--html", "report.html", "--utc"] + world.wallet("alice"))
        #expect(made.status == 0 && made.stderr.contains("wrote report.html"), "\(made.stderr)")
        let report = world.directory + "/report.html"
        let attributes = try FileManager.default.attributesOfItem(atPath: report)
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "a report of one's money is private")
        let html = try String(contentsOfFile: report, encoding: .utf8)
        #expect(html.contains("Verified") && html.contains("rotation"), "verification and the key events")
        let shown = try world.run(["wallet", "show", "--json"] + world.wallet("alice"))
        let contact = try #require(
            (try JSONSerialization.jsonObject(with: Data(shown.stdout)) as? [String: Any])?["contactKeyFingerprint"]
                as? String)
        #expect(
            html.contains("Contact key (SHA-256)") && html.contains("title=\"\(contact)\""),
            "each key event's contact key, the one in force among them")
        #expect(html.contains("12.00 EUR") && html.contains("41.25 EUR issued by"), "amounts as the CLI writes them")
        _ = try Self.check(world, ["geometry", report, fixtureFile])
        _ = try Self.check(world, ["static", report])

        // The notes through `history --csv`: exactly, with the formula guard's one leading ' and nothing else.
        let csv = try world.run(["history", "--csv", "--utc"] + world.wallet("alice"))
        #expect(csv.status == 0, "\(csv.stderr)")
        _ = try Self.check(world, ["csv", fixtureFile], input: csv.output)

        // Chromium builds the page: the notes are text in their cells and no element was injected.
        let dump = try Self.chromium(world, ["--dump-dom", "file://" + report])
        #expect(dump.status == 0 && dump.stdout.count > 1000, "chromium --dump-dom: \(dump.stderr.suffix(2000))")
        try Data(dump.stdout).write(to: URL(fileURLWithPath: world.directory + "/dom.html"))
        _ = try Self.check(world, ["dom", world.directory + "/dom.html", fixtureFile])

        // Screenshots, wide and narrow: each chart's box holds its colours, and the style sheet applied.
        for (name, size) in [("wide", "1280,3400"), ("narrow", "420,5200")] {
            let shot = world.directory + "/\(name).png"
            let taken = try Self.chromium(
                world, ["--screenshot=" + shot, "--window-size=" + size, "file://" + report])
            #expect(FileManager.default.fileExists(atPath: shot), "chromium --screenshot: \(taken.stderr.suffix(2000))")
            _ = try Self.check(world, ["pixels", shot])
        }
    }

    @Test func datesLimitTheReportAndUsageErrorsSayWhatToDo() throws {
        let world = try World()
        try world.fund("alice", "10.00 EUR")
        let missing = try world.run(["report"] + world.wallet("alice"))
        #expect(missing.status == 2 && missing.stderr.contains("--html FILE"), "\(missing.stderr)")
        let badDate = try world.run(["report", "--html", "r.html", "--since", "soon"] + world.wallet("alice"))
        #expect(badDate.status == 2 && badDate.stderr.contains("ISO 8601"), "\(badDate.stderr)")
        let future = try world.run(
            ["report", "--html", "r.html", "--since", "2999-01-01", "--utc"] + world.wallet("alice"))
        #expect(future.status == 0, "\(future.stderr)")
        let backwards = try world.run(
            ["report", "--html", "b.html", "--since", "2026-12-05", "--until", "2026-12-01"] + world.wallet("alice"))
        #expect(
            backwards.status == 2 && backwards.stderr.contains("--since 2026-12-05 is after --until 2026-12-01"),
            "\(backwards.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/b.html"), "no page for an empty range")
        let minutes = try world.run(
            ["report", "--html", "m.html", "--since", "2000-01-01T10:00", "--until", "2999-01-01T10:00"]
                + world.wallet("alice"))
        #expect(minutes.status == 0, "ISO 8601 times to the minute: \(minutes.stderr)")
        let html = try String(contentsOfFile: world.directory + "/r.html", encoding: .utf8)
        #expect(html.contains("(0 of "), "no entry falls after 2999-01-01")
        #expect(html.contains("10.00 EUR issued by"), "the balance now is still shown")
        // An issuer's report charts what it has outstanding.
        let issuer = try world.run(["report", "--html", "issuer.html"] + world.wallet("issuer"))
        #expect(issuer.status == 0, "\(issuer.stderr)")
        let issued = try String(contentsOfFile: world.directory + "/issuer.html", encoding: .utf8)
        #expect(issued.contains("Issuer report") && issued.contains("10.00 EUR outstanding"), "\(issued.prefix(3000))")
    }
}
