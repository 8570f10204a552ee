import Foundation
import SecureTestSupport
import Testing

/// Issue 16, first part: less to type (SECURE_WALLET, SECURE_PIN_SOURCE and the config file, flags winning),
/// `--version`, `-h` and "did you mean".
@Suite("Daily use: defaults, version and suggestions", .serialized)
struct DailyUseCLITests {
    typealias World = WalletCLITests.World

    static func run(_ world: World, _ arguments: [String], _ extra: [String: String]) throws -> ProcessResult {
        try Run.program(
            Run.secure, arguments, environment: world.environment.merging(extra) { $1 }, directory: world.directory)
    }

    @Test func theEnvironmentAndTheConfigFileStandForFlagsAndFlagsWin() throws {
        let world = try World()
        try world.fund("alice", "50.00 EUR")
        let alice = ["SECURE_WALLET": "alice", "SECURE_PIN_SOURCE": "file:toks/alice.pin"]
        let fromEnvironment = try Self.run(world, ["balance"], alice)
        #expect(
            fromEnvironment.status == 0 && fromEnvironment.output.contains("50.00 EUR"), "\(fromEnvironment.stderr)")
        // A flag wins over the environment.
        let flagged = try Self.run(world, ["balance"] + world.wallet("bob"), alice)
        #expect(flagged.status == 0 && !flagged.output.contains("50.00 EUR"), "\(flagged.output)")
        // The config file, when nothing else says.
        let config = world.directory + "/config"
        try FileManager.default.createDirectory(atPath: config + "/secure", withIntermediateDirectories: true)
        let file = config + "/secure/config"
        try "# my wallet\nSECURE_WALLET = alice\nSECURE_PIN_SOURCE=file:toks/alice.pin\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let fromFile = try Self.run(world, ["balance"], ["XDG_CONFIG_HOME": config])
        #expect(fromFile.status == 0 && fromFile.output.contains("50.00 EUR"), "\(fromFile.stderr)")
        // The environment wins over the file.
        let both = try Self.run(
            world, ["balance"],
            ["XDG_CONFIG_HOME": config, "SECURE_WALLET": "bob", "SECURE_PIN_SOURCE": "file:toks/bob.pin"])
        #expect(both.status == 0 && !both.output.contains("50.00 EUR"), "\(both.output)")
        // A file others may write is refused, and so is a line that is not KEY=VALUE.
        chmod(file, 0o666)
        let open = try Self.run(world, ["balance"], ["XDG_CONFIG_HOME": config])
        #expect(open.status == 2 && open.stderr.contains("chmod go-w"), "\(open.stderr)")
        try "SECURE_WALET=alice\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let typo = try Self.run(world, ["balance"], ["XDG_CONFIG_HOME": config])
        #expect(typo.status == 2 && typo.stderr.contains("line 1"), "\(typo.stderr)")
    }

    @Test func versionHelpAndSuggestions() throws {
        let world = try World()
        let version = try Self.run(world, ["--version"], [:])
        #expect(version.status == 0 && version.output.hasPrefix("secure "), "\(version.output)")
        let help = try Self.run(world, ["keys", "list", "-h"], [:])
        #expect(help.status == 0 && help.output.contains("Usage"))
        let command = try Self.run(world, ["walet", "show"], [:])
        #expect(command.status == 2 && command.stderr.contains("did you mean `secure wallet`?"), "\(command.stderr)")
        let member = try Self.run(world, ["keys", "lst"], [:])
        #expect(member.status == 2 && member.stderr.contains("did you mean `secure keys list`?"), "\(member.stderr)")
        let option = try Self.run(world, ["balance", "--jsn"], [:])
        #expect(option.status == 2 && option.stderr.contains("did you mean --json?"), "\(option.stderr)")
        // The generators answer for every command (each parser's options), and the man page renders.
        for shell in ["bash", "zsh", "fish"] {
            let completion = try Self.run(world, ["completion", shell], [:])
            #expect(
                completion.status == 0 && completion.output.contains("expect-payee"), "\(shell): \(completion.stderr)")
        }
        let manual = try Self.run(world, ["manual"], [:])
        #expect(manual.status == 0 && manual.output.contains(".SH \"EXIT STATUS\""))
    }

    /// A writer given --wait queues for the wallet's lock instead of failing busy (exit 9) at once.
    @Test func aWriterWithWaitQueuesForTheLock() throws {
        let world = try World()
        try world.fund("alice", "50.00 EUR")
        let lockPath = world.directory + "/alice/lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT, 0o600)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0, "the test holds the wallet's lock")
        let busy = try world.run(["budget", "set", "food", "20.00 EUR"] + world.wallet("alice"))
        #expect(busy.status == 9 && busy.stderr.contains("--wait"), "\(busy.stderr)")
        let release = Thread {
            Thread.sleep(forTimeInterval: 1.5)
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
        release.start()
        let started = Date()
        let waited = try world.run(["budget", "set", "food", "20.00 EUR", "--wait", "20"] + world.wallet("alice"))
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(Date().timeIntervalSince(started) >= 1.0, "it waited for the lock")
        let bad = try world.run(["budget", "set", "food", "20.00 EUR", "--wait", "soon"] + world.wallet("alice"))
        #expect(bad.status == 2)
    }

    /// History for accounting: filters, RFC 4180 CSV with formula-looking peer text neutralised, counterparty
    /// and note in text rows.
    @Test func historyFiltersAndCSV() throws {
        let world = try World()
        try world.fund("alice", "50.00 EUR")
        let notes = ["Coffee, with milk", "say \"hi\"", "=1+1", "<svg onload=alert(1)>", "+49 30 1234"]
        for (index, note) in notes.enumerated() {
            let spent = try world.run(
                [
                    "spend", "--to", "bob.card", "--amount", "1.0\(index) EUR", "--category",
                    index < 3 ? "food" : "fun",
                    "--note", note, "--out", "t\(index).transfer",
                ] + world.wallet("alice"))
            #expect(spent.status == 0, "\(spent.stderr)")
        }
        let csv = try world.run(["history", "--csv", "--utc"] + world.wallet("alice"))
        #expect(
            csv.status == 0
                && csv.output.hasPrefix(
                    "date,kind,counterparty,category,note,amount,currency,issuer,entry,transfer_id\r\n"),
            "\(csv.output)")
        let script = """
            import csv, io, json, sys
            rows = list(csv.DictReader(io.StringIO(sys.stdin.read(), newline="")))
            print(json.dumps([[r["kind"], r["note"], r["amount"], r["currency"]] for r in rows]))
            """
        let parsed = try Run.program(
            RotationCLITests.python, ["-c", script], environment: world.environment, input: Array(csv.output.utf8),
            directory: world.directory)
        let rows = try JSONSerialization.jsonObject(with: Data(parsed.output.utf8)) as? [[String]] ?? []
        let payments = rows.filter { $0[0] == "payment out" }
        #expect(payments.count == notes.count, "\(parsed.output) \(parsed.stderr)")
        for (index, row) in payments.enumerated() {
            let note = notes[index]
            let expected = "=+-@".contains(note.first!) ? "'" + note : note
            #expect(row[1] == expected, "the note round-trips: \(row[1]) for \(note)")
            #expect(row[2] == "-1.0\(index)" && row[3] == "EUR", "\(row)")
        }
        func count(_ extra: [String]) throws -> Int {
            let result = try world.run(["history", "--csv"] + extra + world.wallet("alice"))
            #expect(result.status == 0, "\(extra): \(result.stderr)")
            return result.output.split(separator: "\r\n").count - 1
        }
        #expect(try count(["--category", "food"]) == 3)
        #expect(try count(["--kind", "payment out"]) == 5)
        #expect(try count(["--kind", "payment out", "--limit", "2"]) == 2)
        let bob = try SoundMoneyCLITests.card(world, "bob").walletID.hex
        #expect(try count(["--peer", String(bob.prefix(6))]) == 5)
        #expect(try count(["--since", "2999-01-01"]) == 0)
        #expect(try count(["--until", "2000-01-01"]) == 0)
        let bad = try world.run(["history", "--kind", "payments"] + world.wallet("alice"))
        #expect(bad.status == 2 && bad.stderr.contains("payment out"))
        let text = try world.run(["history"] + world.wallet("alice"))
        #expect(text.output.contains("to " + bob.prefix(4).uppercased() + "…"), "\(text.output)")
        #expect(text.output.contains("\"Coffee, with milk\""), "\(text.output)")
    }
}
