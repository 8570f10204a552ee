import CommandLineSupport
import Foundation
import SecureChannel
import SecureCrypto
import SecureToken

// The `secure` command: argument parsing, prompts and output formatting; nothing else. The commands are
// in CommandTable.swift, the exit codes in ExitCodes.swift.

/// Runs one command line and returns its exit code.
func run(_ words: [String]) -> ExitCode {
    // `secure help COMMAND...` is `secure COMMAND... --help`: that command's help, or a did-you-mean.
    if words.first == "help", words.count > 1 {
        return run(Array(words.dropFirst()) + ["--help"])
    }
    guard let first = words.first, first != "--help", first != "-h", first != "help" else {
        print(CommandTable.topHelp)
        return words.isEmpty ? .usage : .success
    }
    if first == "--version" || first == "version" {
        print(CommandTable.versionLine)
        return .success
    }
    do {
        try Defaults.load()
        switch CommandTable.lookup(words) {
        case .command(let command, let arguments):
            if arguments.contains("--help") || arguments.contains("-h") {
                print(CommandTable.help(for: command))
                return .success
            }
            return try command.handler(arguments)
        case .group(let name, let help, let unknown):
            if let unknown {
                let members = CommandTable.commands.filter { $0.words.count > 1 && $0.words[0] == name }.map {
                    $0.words[1]
                }
                let guess = Suggestion.closest(to: unknown, among: members).map {
                    "did you mean `secure \(name) \($0)`? "
                }
                throw UsageError(
                    "unknown \(name) command \"\(unknown)\"; \(guess ?? "")`secure \(name) --help` lists them")
            }
            print(help)
            return words.contains("--help") || words.contains("-h") ? .success : .usage
        case .unknown(let word):
            let guess = Suggestion.closest(to: word, among: Set(CommandTable.commands.map { $0.words[0] })).map {
                "did you mean `secure \($0)`? "
            }
            throw UsageError("unknown command \"\(word)\"; \(guess ?? "")`secure --help` lists the commands")
        }
    } catch is OptionList {
        printError("secure: \(OptionList.probe) is for the man page and completion generators only")
        return .usage
    } catch let error as UsageError {
        printError("secure: \(error)")
        return .usage
    } catch let error as any CodedError {
        printError("secure: error: \(error)")
        return ExitCode(error.kind)
    } catch let error as CocoaError {
        // No Foundation error dump reaches a person: the path and the system's cause.
        let path = (error.userInfo[NSFilePathErrorKey] as? String) ?? error.errorUserInfo[NSFilePathErrorKey] as? String
        let cause =
            (error.underlying as? POSIXError).map { String(cString: strerror($0.code.rawValue)) }
            ?? error.localizedDescription
        printError("secure: error: cannot write \(path ?? "a file"): \(cause)")
        return .failure
    } catch let error as POSIXError {
        printError("secure: error: \(String(cString: strerror(error.code.rawValue)))")
        return .failure
    } catch {
        printError("secure: error: \(error)")
        return .failure
    }
}

// Before anything else: a crash must never write the PIN or the database key to disk in a core file.
do {
    try ProcessSafety.disableCoreDumps()
} catch {
    printError("secure: \(error)")
    exit(ExitCode.failure.rawValue)
}
// A key with a touch policy holds its signature until it is touched: say so on stderr, never on stdout.
TouchPrompt.install { printError("secure: \($0)") }
// A test hook (docs/ARCHITECTURE.md, "Test hooks"): SECURE_TEST_CHANNEL_RECORDS=FILE appends every plaintext
// channel record, sent (">") or received ("<"), as "DIRECTION TYPE HEX" lines, so a test checks what crossed
// a channel without trusting this program's own output. Off unless the variable is set.
if let path = ProcessInfo.processInfo.environment["SECURE_TEST_CHANNEL_RECORDS"] {
    guard
        let file = FileHandle(forUpdatingAtPath: path)
            ?? {
                FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
                    ? FileHandle(forUpdatingAtPath: path) : nil
            }()
    else {
        printError("secure: SECURE_TEST_CHANNEL_RECORDS: cannot open \(path)")
        exit(ExitCode.usage.rawValue)
    }
    nonisolated(unsafe) let records = file
    let lock = NSLock()
    SecureChannel.observeRecords { sent, type, payload in
        lock.withLock {
            records.seekToEndOfFile()
            records.write(Data("\(sent ? ">" : "<") \(type) \(Hex.encode(payload))\n".utf8))
        }
    }
}
let code = run(Array(CommandLine.arguments.dropFirst()))
TokenLibrary.shared.shutdown()
exit(code.rawValue)
