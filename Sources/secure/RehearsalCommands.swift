import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureRehearsal
import SecureToken

/// This side's person in a rehearsal: the terminal (/dev/tty, as `pay` and `receive` ask), or `--yes`, which
/// confirms and types the rehearsal PIN.
final class RehearsalTerminalPerson: RehearsalPerson {
    let yes: Bool

    init(yes: Bool) { self.yes = yes }

    func confirm(_ question: String) -> Bool {
        if yes { return true }
        let answer = TerminalPerson.ask("REHEARSAL " + question + " [y/N] ")?.lowercased()
        return answer == "y" || answer == "yes"
    }

    func readPIN(_ prompt: String) throws -> PIN {
        if yes { return try PIN(RehearsalToken.pin) }
        return try PINSource.prompt.read(prompt: "REHEARSAL " + prompt)
    }
}

/// `secure rehearse FILE [--yes] [--json]` (hidden; `secure till --rehearse FILE` and
/// `secure pay --till --rehearse FILE` will be its names): plays a till payment with this side at the terminal
/// and the other side from the file (docs/TILL.md §4). It opens no wallet folder, no token and no socket.
enum RehearsalCommands {
    static let help = """
        Usage:
          secure rehearse FILE [--yes] [--json]
        Rehearses a till payment (docs/TILL.md §4): this side is the person at the terminal (or --yes, which
        confirms and types the rehearsal PIN 0000), the other side is played from FILE (`rehearsal 1`, see
        rehearsals/). Both sides run the real payment machines over a real channel handshake in memory, on
        rehearsal tokens and wallets in a tmpfs folder that is removed at the end, on a clock that jumps to the
        next deadline. It never opens the real wallet folder, a token or a socket, every line it prints starts
        with REHEARSAL, and its signatures use a label no real statement accepts: it can never move real money.
        Ends with `REHEARSAL reached ENDING` (exit 0) or `REHEARSAL expected ENDING, reached OTHER` (exit 1);
        a bad FILE is `FILE:LINE: message` (exit 2). --json prints secure-rehearsal-event-v1 lines.
        """

    /// The command, registered outside the listed table (CommandTable.lookup): it is not in `secure --help`.
    static let command = Command(
        words: ["rehearse"], synopsis: "FILE [--yes] [--json]", summary: "rehearse a till payment from a file",
        section: .peers, help: help, handler: rehearse)

    static func rehearse(_ words: [String]) throws -> ExitCode {
        // The wallet options are taken and ignored: a rehearsal never opens the real wallet or its token.
        let arguments = try Arguments(words, options: ["wallet", "pin-source"], flags: ["yes", "json"])
        let path = try arguments.positionals(1, "one rehearsal FILE")[0]
        return try play(path, yes: arguments.flag("yes"), json: arguments.flag("json"), thisSide: nil)
    }

    /// `secure till --rehearse FILE` (this side is the till, the file plays the payer) and
    /// `secure pay --till --rehearse FILE` (the other way round). Only --yes and --json go with it (and the
    /// wallet options, ignored): the file sets the amount, the countdown, the distances and the rest.
    static func alias(_ arguments: Arguments, thisSide: RehearsalSide) throws -> ExitCode {
        let allowed: Set<String> = ["rehearse", "wallet", "pin-source", "yes", "json", "till"]
        if let other = arguments.given.first(where: { !allowed.contains($0) }) {
            throw UsageError(
                "--\(other) does not go with --rehearse: the rehearsal file sets the amount, countdown, distances and "
                    + "faults (rehearsals/README.md)")
        }
        _ = try arguments.positionals(0, "no positional arguments with --rehearse FILE")
        return try play(
            try arguments.required("rehearse"), yes: arguments.flag("yes"), json: arguments.flag("json"),
            thisSide: thisSide)
    }

    /// Plays FILE; with `thisSide`, the file must play the other side.
    static func play(_ path: String, yes: Bool, json: Bool, thisSide: RehearsalSide?) throws -> ExitCode {
        let file: RehearsalFile
        do {
            file = try RehearsalFile.parse(try readRehearsal(path), name: path)
        } catch let error as RehearsalFileError {
            printError("secure: \(error)")
            return .usage
        }
        if let thisSide, file.plays == thisSide {
            throw UsageError(
                "\(path) plays the \(file.plays.rawValue): rehearse it with "
                    + (file.plays == .till ? "`secure pay --till --rehearse FILE`" : "`secure till --rehearse FILE`"))
        }
        // Interrupted (at a prompt, say): the rehearsal wallets are removed from tmpfs before the process ends.
        let signals = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                RehearsalWorld.removeLiveFolders()
                printError("secure: rehearsal interrupted; its rehearsal wallets are removed")
                exit(128 + number)
            }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        let rehearsal = Rehearsal(
            file: file, person: RehearsalTerminalPerson(yes: yes)
        ) {
            show($0, json: json)
        }
        let result = try rehearsal.run()
        let verdict =
            result.ending == result.expected
            ? "reached \(result.ending)" : "expected \(result.expected), reached \(result.ending)"
        let text = verdict + (result.conserved ? "" : "; money NOT conserved")
        if json {
            print(
                CommandLineSupport.jsonLine(
                    JSONOutput.document(
                        .rehearsalEvent,
                        [
                            "rehearsal": true, "event": "result", "text": text, "side": NSNull(), "played": false,
                            "reached": result.ending, "expected": result.expected, "conserved": result.conserved,
                        ])))
        } else {
            print("REHEARSAL " + text)
        }
        return result.passed ? .success : .failure
    }

    /// The file's bytes, at most one more than a rehearsal file can hold (the parser refuses a longer one).
    static func readRehearsal(_ path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw UsageError("cannot read the rehearsal file \(path)")
        }
        defer { try? handle.close() }
        return [UInt8](try handle.read(upToCount: RehearsalFile.byteCountMax + 1) ?? Data())
    }

    /// One event: text lines that each start with REHEARSAL, or one secure-rehearsal-event-v1 JSON line.
    static func show(_ event: RehearsalEvent, json: Bool) {
        let who = event.side.map { $0.rawValue + ($0 == .till ? " " : "") + (event.played ? " (file)" : " (you) ") }
        if json {
            var object: [String: Any] = [
                "rehearsal": true, "event": event.name, "text": event.text,
                "side": event.side?.rawValue ?? NSNull(), "played": event.played,
                "elapsedMilliseconds": event.elapsedMilliseconds,
            ]
            for (key, value) in event.fields {
                object[key] = TerminalPerson.integerKeys.contains(key) ? Int64(value) ?? value : value
            }
            for (key, amount) in event.amounts { object[key] = JSONOutput.amount(amount) }
            print(CommandLineSupport.jsonLine(JSONOutput.document(.rehearsalEvent, object)))
        } else if event.name != "distance" {
            // Each reading is in --json; text shows the measurement's summary line instead of 32 lines.
            let stamp = String(format: "%7.3fs", Double(event.elapsedMilliseconds) / 1000)
            for line in event.text.split(separator: "\n", omittingEmptySubsequences: false) {
                print("REHEARSAL \(stamp) \(who ?? "rehearsal     ") \(line)")
            }
        }
        fflush(nil)
    }
}
