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
        // `secure help COMMAND` is that command's help; an unknown one is a usage error with a guess.
        let helpHistory = try Self.run(world, ["help", "history"], [:])
        #expect(helpHistory.status == 0 && helpHistory.output.contains("  secure history ["), "\(helpHistory.output)")
        #expect(helpHistory.output == (try Self.run(world, ["history", "-h"], [:])).output)
        #expect(!helpHistory.output.contains("  secure ledger verify"), "only history's lines: \(helpHistory.output)")
        #expect(try Self.run(world, ["--help"], [:]).output.contains("`secure help COMMAND`"))
        let nonsense = try Self.run(world, ["help", "nonsense"], [:])
        #expect(nonsense.status == 2 && nonsense.stderr.contains("unknown command \"nonsense\""), "\(nonsense.stderr)")
        let typoHelp = try Self.run(world, ["help", "histroy"], [:])
        #expect(
            typoHelp.status == 2 && typoHelp.stderr.contains("did you mean `secure history`?"), "\(typoHelp.stderr)")
        let group = try Self.run(world, ["help", "ledger"], [:])
        #expect(group.status == 0 && group.output.contains("secure ledger verify"), "\(group.output)")
        // A command of a group with one help text shows its own lines, not the whole group's.
        let spendHelp = try Self.run(world, ["spend", "-h"], [:])
        let calls = spendHelp.output.split(separator: "\n").filter { $0.hasPrefix("  secure ") }
        #expect(spendHelp.status == 0 && calls.count == 1 && calls[0].hasPrefix("  secure spend --to"), "\(calls)")
        #expect(spendHelp.output.contains("Budget check, PIN, sign") && spendHelp.output.contains("secure mint"))
        let pendingHelp = try Self.run(world, ["pending", "--help"], [:]).output
        #expect(pendingHelp.contains("secure pending [--json]") && pendingHelp.contains("secure pending --export"))
        // A budget's limit must be more than zero (an older ledger's zero limit still replays).
        let zero = try Self.run(world, ["budget", "set", "food", "0.00 EUR"], [:])
        #expect(zero.status == 2 && zero.stderr.contains("more than zero"), "\(zero.stderr)")
        let command = try Self.run(world, ["walet", "show"], [:])
        #expect(command.status == 2 && command.stderr.contains("did you mean `secure wallet`?"), "\(command.stderr)")
        let member = try Self.run(world, ["keys", "lst"], [:])
        #expect(member.status == 2 && member.stderr.contains("did you mean `secure keys list`?"), "\(member.stderr)")
        let option = try Self.run(world, ["balance", "--jsn"], [:])
        #expect(option.status == 2 && option.stderr.contains("did you mean --json?"), "\(option.stderr)")
        // A command that prints no JSON does not take --json: a script asking for JSON never gets text.
        for command in [["budget", "set", "food", "1.00 EUR"], ["deposit", "voucher.bin"], ["ledger", "repair"]] {
            let refused = try Self.run(world, command + ["--json"], [:])
            #expect(refused.status == 2 && refused.stderr.contains("--json"), "\(command): \(refused.stderr)")
        }
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
                    "date,kind,counterparty,category,note,amount,currency,issuer,entry,transfer_id,contact\r\n"),
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
        // ISO 8601 times to the minute, with or without a zone; a range that ends before it starts is refused.
        let all = try count([])
        #expect(try count(["--since", "2000-01-01T10:00"]) == all)
        #expect(try count(["--until", "2000-01-01T10:00"]) == 0)
        #expect(try count(["--since", "2999-01-01T10:00+01:00"]) == 0)
        #expect(try count(["--until", "2999-01-01T10:00"]) == all)
        let backwards = try world.run(
            ["history", "--since", "2026-12-05", "--until", "2026-12-01"] + world.wallet("alice"))
        #expect(
            backwards.status == 2 && backwards.stderr.contains("2026-12-05") && backwards.stderr.contains("2026-12-01"),
            "\(backwards.stderr)")
        let sameDay = try world.run(
            ["history", "--since", "2026-12-01T10:00", "--until", "2026-12-01"] + world.wallet("alice"))
        #expect(sameDay.status == 0, "a time inside the --until day is not after it: \(sameDay.stderr)")
        let bad = try world.run(["history", "--kind", "payments"] + world.wallet("alice"))
        #expect(bad.status == 2 && bad.stderr.contains("payment out"))
        let text = try world.run(["history"] + world.wallet("alice"))
        #expect(text.output.contains("to " + bob.prefix(4).uppercased() + "…"), "\(text.output)")
        #expect(text.output.contains("\"Coffee, with milk\""), "\(text.output)")
    }

    /// Runs `secure` on a pseudo-terminal and returns the raw bytes it wrote (escape sequences kept), with
    /// `extra` in its environment and no NO_COLOR otherwise (a test runner may set one of its own).
    static func onATerminal(_ world: World, _ arguments: [String], _ extra: [String: String] = [:]) throws -> String {
        let script = """
            import os, pty, sys
            split = sys.argv.index("--")
            os.environ.pop("NO_COLOR", None)
            os.environ.update(pair.split("=", 1) for pair in sys.argv[1:split])
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[split + 1], sys.argv[split + 1:])
            out = b""
            while True:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(out.decode("utf-8", "replace") + "\\nexit %d\\n" % os.waitstatus_to_exitcode(status))
            """
        return try Run.program(
            RotationCLITests.python, ["-c", script] + extra.map { "\($0)=\($1)" } + ["--", Run.secure] + arguments,
            environment: world.environment, directory: world.directory
        ).output.replacingOccurrences(of: "\r\n", with: "\n")
    }

    /// `budget show` names each window's first and last day in the budget's zone, and colours the bar by the
    /// verdict's thresholds on a terminal only: not into a pipe, not with NO_COLOR, not on TERM=dumb.
    /// zsh does not search PREFIX/share/zsh/site-functions for a PREFIX of its own choosing, nor bash-completion
    /// any folder but its user one: scripts/install says what to add (here without building: --hints).
    @Test func installSaysHowShellsFindTheCompletions() throws {
        func hints(_ prefix: String) throws -> String {
            let result = try Run.program(
                "/bin/bash", [Run.projectRoot + "/scripts/install", "--prefix", prefix, "--hints"],
                environment: ["HOME": "/home/someone", "XDG_DATA_HOME": "/home/someone/.local/share"])
            #expect(result.status == 0, "\(prefix): \(result.stderr)")
            return result.output
        }
        #expect(try hints("/usr/local").isEmpty && hints("/usr").isEmpty, "zsh and bash search these already")
        let local = try hints("/home/someone/.local")
        #expect(
            local
                == "zsh: add  fpath=(/home/someone/.local/share/zsh/site-functions $fpath)  to ~/.zshrc before compinit\n",
            "\(local)")
        let opt = try hints("/opt/secure/")
        #expect(opt.contains("fpath=(/opt/secure/share/zsh/site-functions $fpath)"), "\(opt)")
        #expect(opt.contains("source /opt/secure/share/bash-completion/completions/secure"), "\(opt)")
    }

    @Test func budgetShowHasWindowDatesAndColourOnATerminalOnly() throws {
        let world = try World()
        try world.fund("alice", "50.00 EUR")
        for (category, limit) in [("food", "10.00 EUR"), ("rent", "100.00 EUR")] {
            let set = try world.run(
                ["budget", "set", category, limit, "--window", "month", "--time-zone", "Pacific/Auckland"]
                    + world.wallet("alice"))
            #expect(set.status == 0, "\(set.stderr)")
        }
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "9.00 EUR", "--category", "food", "--out", "t1"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        // The expected window, computed here from the calendar of the budget's zone.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Pacific/Auckland")!
        let month = try #require(calendar.dateInterval(of: .month, for: Date()))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = "yyyy-MM-dd"
        let expected =
            "month \(formatter.string(from: month.start)) to "
            + "\(formatter.string(from: month.end.addingTimeInterval(-1))), Pacific/Auckland"
        let piped = try world.run(["budget", "show"] + world.wallet("alice"))
        #expect(piped.status == 0 && piped.output.contains(expected), "\(piped.output)\nexpected \(expected)")
        #expect(!piped.output.contains("\u{1B}["), "no colour into a pipe: \(piped.output)")
        // 9.00 of 10.00 is past 80%: yellow; 0 of 100 draws no filled cell, so no colour at all on that line.
        let coloured = try Self.onATerminal(world, ["budget", "show"] + world.wallet("alice"), ["TERM": "xterm"])
        #expect(coloured.contains("exit 0"), "\(coloured)")
        let food = try #require(coloured.split(separator: "\n").first { $0.hasPrefix("food") }, "\(coloured)")
        #expect(food.contains("\u{1B}[33m█") && food.contains("\u{1B}[0m"), "\(food)")
        let rent = try #require(coloured.split(separator: "\n").first { $0.hasPrefix("rent") }, "\(coloured)")
        #expect(!rent.contains("\u{1B}["), "\(rent)")
        for extra in [["NO_COLOR": "1", "TERM": "xterm"], ["TERM": "dumb"]] {
            let plain = try Self.onATerminal(world, ["budget", "show"] + world.wallet("alice"), extra)
            #expect(
                plain.contains("exit 0") && plain.contains("food") && !plain.contains("\u{1B}["), "\(extra): \(plain)")
        }
        // Over the limit is red (with --override-budget, as a soft cap asks).
        let over = try world.run(
            [
                "spend", "--to", "bob.card", "--amount", "2.00 EUR", "--category", "food", "--override-budget", "--out",
                "t2",
            ]
                + world.wallet("alice"))
        #expect(over.status == 0, "\(over.stderr)")
        let red = try Self.onATerminal(world, ["budget", "show"] + world.wallet("alice"), ["TERM": "xterm"])
        #expect(red.contains("\u{1B}[31m█"), "\(red)")
    }

    /// The backup token asks for its PIN on a terminal as the main one does, naming the backup token; with no
    /// terminal and no source, the error names --backup-pin-source (exit 3); SECURE_PIN_SOURCE is the main
    /// token's and never fills the backup's.
    @Test func theBackupTokenPromptsOnATerminalLikeTheMainOne() throws {
        let world = try World()
        let pin = try String(contentsOfFile: world.directory + "/toks/alice-bk.pin", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let noTerminal = try world.run(["keys", "rotate"] + world.wallet("alice"))
        #expect(
            noTerminal.status == 3 && noTerminal.stderr.contains("--backup-pin-source")
                && noTerminal.stderr.contains("alice-bk"), "\(noTerminal.stderr)")
        let fromEnvironment = try Self.run(
            world, ["keys", "rotate"], ["SECURE_WALLET": "alice", "SECURE_PIN_SOURCE": "file:toks/alice.pin"])
        #expect(fromEnvironment.status == 3 && fromEnvironment.stderr.contains("--backup-pin-source"))
        // SECURE_PIN_SOURCE is the PIN of SECURE_WALLET's wallet: another --wallet must give its own, and bob's
        // token is not sent alice's PIN (its PIN state stays ok).
        let other = try Self.run(
            world, ["balance", "--wallet", "bob"],
            ["SECURE_WALLET": "alice", "SECURE_PIN_SOURCE": "file:toks/alice.pin"])
        #expect(other.status == 2 && other.stderr.contains("give its own --pin-source"), "\(other.stderr)")
        let tokens = try world.run(["token", "list", "--token", "pkcs11:token=bob?module-name=softhsm2"])
        #expect(!tokens.output.contains("count-low") && !tokens.output.contains("final"), "\(tokens.output)")
        let screen = try Run.program(
            RotationCLITests.python,
            [
                HostilePeerTextTests.screen, "--until", "PIN for backup token", "--answer", pin, "--timeout", "60",
                "--", Run.secure, "keys", "rotate",
            ] + world.wallet("alice"),
            environment: world.environment, directory: world.directory)
        #expect(screen.output.contains("PIN for backup token \"alice-bk\":"), "\(screen.output)")
        #expect(screen.output.contains("exit 0"), "\(screen.output)")
        #expect(!screen.output.contains(pin), "the PIN is not echoed: \(screen.output)")
        let audit = try world.run(
            ["keys", "audit", "--backup-pin-source", "file:toks/alice-bk.pin"] + world.wallet("alice"))
        #expect(audit.status == 0, "\(audit.stderr)")
    }

    /// What a hostile tester found, refused with a clear error: a wallet folder or wallet.json that others
    /// may write or another user owns (wallet.json names the module loaded: code as you, before any PIN); a
    /// report written over a device, a link or into a folder that does not exist; a TZ that is a POSIX rule
    /// Foundation reads backwards, or no zone at all.
    @Test func unsafeFilesOutputsAndTimeZonesAreRefused() throws {
        let world = try World()
        let alice = world.directory + "/alice"
        for (path, mode) in [(alice, mode_t(0o777)), (alice + "/wallet.json", mode_t(0o666))] {
            let original = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
            chmod(path, mode)
            let open = try world.run(["balance"] + world.wallet("alice"))
            #expect(open.status == 2 && open.stderr.contains("chmod go-w"), "\(path): \(open.stderr)")
            chmod(path, mode_t(original))
        }
        chown(alice + "/wallet.json", 65534, 65534)
        let foreign = try world.run(["balance"] + world.wallet("alice"))
        #expect(foreign.status == 2 && foreign.stderr.contains("belongs to user 65534"), "\(foreign.stderr)")
        chown(alice + "/wallet.json", getuid(), getgid())
        #expect(try world.run(["balance"] + world.wallet("alice")).status == 0)

        let device = try world.run(["report", "--html", "/dev/null"] + world.wallet("alice"))
        #expect(device.status == 2 && device.stderr.contains("not a regular file"), "\(device.stderr)")
        try FileManager.default.createSymbolicLink(
            atPath: world.directory + "/link.html", withDestinationPath: "/dev/null")
        let link = try world.run(["report", "--html", "link.html"] + world.wallet("alice"))
        #expect(link.status == 2 && link.stderr.contains("symbolic link"), "\(link.stderr)")
        let folder = try world.run(["report", "--html", "missing/r.html"] + world.wallet("alice"))
        #expect(folder.status == 2 && folder.stderr.contains("does not exist"), "\(folder.stderr)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/missing"), "no folder was made")
        let stdout = try world.run(["report", "--html", "-"] + world.wallet("alice"))
        #expect(stdout.status == 0 && stdout.output.hasPrefix("<!DOCTYPE html>"), "\(stdout.stderr)")

        for zone in ["UTC+5", "Bogus/Zone", "<+0330>-3:30"] {
            let refused = try Self.run(world, ["history"] + world.wallet("alice"), ["TZ": zone])
            #expect(
                refused.status == 2 && refused.stderr.contains("not an IANA time zone"), "\(zone): \(refused.stderr)")
        }
        for zone in ["Etc/GMT-5", ":Europe/Berlin", "/usr/share/zoneinfo/Asia/Tokyo", "Etc/UTC"] {
            let read = try Self.run(world, ["history"] + world.wallet("alice"), ["TZ": zone])
            #expect(read.status == 0, "\(zone): \(read.stderr)")
        }
    }
}
