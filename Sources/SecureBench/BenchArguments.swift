import Foundation

// Argument parsing and output for `secure-bench`. The parser is the `secure` command's (Sources/secure/
// Arguments.swift), copied because the wallet's executable must not link this module and no module below
// both holds command-line code; a shared one is left for when the two parsers need to grow together.

/// secure-bench's exit codes: the first three of `secure`'s.
enum ExitCode: Int32 {
    case success = 0, failure = 1, usage = 2
}

/// A usage error: the arguments are wrong. Exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A command's declared options and flags, and what was passed.
struct Arguments {
    private(set) var positional: [String] = []
    private var values: [String: String] = [:]
    private var present: Set<String> = []

    /// Parses `words` against the options (which take a value) and flags (which do not) a command declares.
    /// `--name=value` and `--name value` both work; `--` ends options.
    init(_ words: [String], options: Set<String>, flags: Set<String>) throws {
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || !word.hasPrefix("--") || word == "-" {
                positional.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            var name = String(word.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if options.contains(name) {
                guard values[name] == nil else { throw UsageError("--\(name) is given twice") }
                if let inline {
                    values[name] = inline
                } else {
                    guard index < words.count else { throw UsageError("--\(name) needs a value") }
                    values[name] = words[index]
                    index += 1
                }
            } else if flags.contains(name) {
                guard inline == nil else { throw UsageError("--\(name) takes no value") }
                present.insert(name)
            } else {
                let known = (options.map { "--\($0) VALUE" } + flags.map { "--\($0)" }).sorted().joined(separator: ", ")
                throw UsageError("unknown option --\(name)" + (known.isEmpty ? "" : "; this command takes: \(known)"))
            }
        }
    }

    /// An option's value, if given.
    func value(_ name: String) -> String? { values[name] }

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { present.contains(name) }

    /// Exactly `count` positional arguments, or a usage error naming what is expected.
    func positionals(_ count: Int, _ what: String) throws -> [String] {
        guard positional.count == count else {
            throw UsageError("expected \(what), got \(positional.count) argument\(positional.count == 1 ? "" : "s")")
        }
        return positional
    }

    /// A positive integer option with a default and an upper bound.
    func integer(_ name: String, default fallback: Int, max: Int) throws -> Int {
        guard let text = values[name] else { return fallback }
        guard let number = Int(text), number > 0, number <= max else {
            throw UsageError("--\(name) must be a whole number from 1 to \(max)")
        }
        return number
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Prints a JSON value with sorted keys, one document per line.
func printJSON(_ value: Any) {
    let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    print(String(decoding: data, as: UTF8.self))
}
