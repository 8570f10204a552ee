import Foundation

// Argument parsing and plain output for the project's executables (`secure`, `secure-bench`). It holds no
// wallet code and imports nothing of the project, so either executable can link it without the other's parts.

/// A usage error: the arguments are wrong. Exit code 2.
public struct UsageError: Error, CustomStringConvertible {
    /// The sentence shown to the user.
    public let description: String
    /// A usage error with the sentence to show.
    public init(_ description: String) { self.description = description }
}

/// What a command's parser declares, thrown by `Arguments` when a command is called with the probe word
/// alone (`[OptionList.probe]`): the man page and the completions read the options from the parsers.
public struct OptionList: Error, Sendable {
    /// The word that asks a command for its option table instead of running it.
    public static let probe = "--secure-option-table"
    /// Options that take a value.
    public let options: Set<String>
    /// Flags, which take none.
    public let flags: Set<String>
}

/// "Did you mean …": the closest known word to a typo, when it is close enough to be a typo.
public enum Suggestion {
    /// The candidate at the smallest edit distance from `word`, if that distance is at most a third of the
    /// word's length (and at least 1, at most 3); ties go to the first in sorted order.
    public static func closest(to word: String, among candidates: some Collection<String>) -> String? {
        let limit = min(3, max(1, word.count / 3))
        let scored = candidates.sorted().map { ($0, distance(word, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance, with a transposition of neighbours counting as one edit ("lsit" for "list").
    static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty || y.isEmpty { return max(x.count, y.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { table[i][0] = i }
        for j in 0...y.count { table[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[x.count][y.count]
    }
}

/// A command's declared options and flags, and what was passed. A small hand-written parser: no
/// outside packages can be fetched here.
public struct Arguments: Sendable {
    /// The words that are not options, in order.
    public private(set) var positional: [String] = []
    private var values: [String: String] = [:]
    private var present: Set<String> = []
    /// The options the command declares (a default applies only to those).
    private var declared: Set<String> = []
    /// Values for options not given on the command line: `secure` fills this from its environment
    /// (SECURE_WALLET, SECURE_PIN_SOURCE) and config file before it runs a command. Flags win over both.
    nonisolated(unsafe) public static var defaults: [String: String] = [:]

    /// Parses `words` against the options (which take a value) and flags (which do not) a command declares.
    /// `--name=value` and `--name value` both work; `--` ends options.
    public init(_ words: [String], options: Set<String>, flags: Set<String>) throws {
        // The option table's probe: the man page and the shell completions ask each command for the options
        // its parser declares, so they cannot drift from it.
        if words == [OptionList.probe] { throw OptionList(options: options, flags: flags) }
        declared = options
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
                let guess = Suggestion.closest(to: name, among: options.union(flags)).map { "did you mean --\($0)? " }
                throw UsageError(
                    "unknown option --\(name)"
                        + (known.isEmpty ? "" : "; " + (guess ?? "") + "this command takes: \(known)"))
            }
        }
    }

    /// An option's value, if given.
    public func value(_ name: String) -> String? {
        values[name] ?? (declared.contains(name) ? Self.defaults[name] : nil)
    }

    /// Whether the option was given on the command line (not filled from `defaults`).
    public func isGiven(_ name: String) -> Bool { values[name] != nil }

    /// An option's value, or a usage error naming it.
    public func required(_ name: String) throws -> String {
        guard let value = value(name) else { throw UsageError("--\(name) is required") }
        return value
    }

    /// Whether a flag was given.
    public func flag(_ name: String) -> Bool { present.contains(name) }

    /// Every option and flag given on the command line (not from `defaults`), sorted.
    public var given: [String] { (Array(values.keys) + Array(present)).sorted() }

    /// Exactly `count` positional arguments, or a usage error naming what is expected.
    public func positionals(_ count: Int, _ what: String) throws -> [String] {
        guard positional.count == count else {
            throw UsageError("expected \(what), got \(positional.count) argument\(positional.count == 1 ? "" : "s")")
        }
        return positional
    }

    /// A positive integer option with a default and an upper bound.
    public func integer(_ name: String, default fallback: Int, max: Int) throws -> Int {
        guard let text = values[name] else { return fallback }
        guard let number = Int(text), number > 0, number <= max else {
            throw UsageError("--\(name) must be a whole number from 1 to \(max)")
        }
        return number
    }
}

/// Writes to standard error.
public func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes bytes to standard output.
public func writeOut(_ bytes: [UInt8]) {
    FileHandle.standardOutput.write(Data(bytes))
}

/// Prints a JSON value with sorted keys, one document per line.
public func printJSON(_ value: Any) {
    print(jsonLine(value))
}

/// A JSON value as one line: sorted keys, no insignificant whitespace, slashes unescaped.
public func jsonLine(_ value: Any) -> String {
    let data =
        (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// Prints a listing's rows: with `json`, one JSON object that holds them in an array (a bare array could not
/// carry the document's format, so `json` gives the object's other fields, its format among them, and the key
/// of the array); else one `line` each, or `whenEmpty` when there are none.
public func printRows(
    _ rows: [[String: Any]], json: (fields: [String: Any], key: String)?, whenEmpty: () -> Void,
    line: ([String: Any]) -> String
) {
    if let json {
        printJSON(json.fields.merging([json.key: rows]) { _, new in new })
    } else if rows.isEmpty {
        whenEmpty()
    } else {
        for row in rows { print(line(row)) }
    }
}

/// Reads a whole file, with an error that names it.
public func readFile(_ path: String, what: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw UsageError("cannot read \(what) \(path): no such file, or not readable")
    }
    return Array(data)
}
