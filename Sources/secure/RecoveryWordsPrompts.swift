import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto

/// Showing and reading recovery words. The words go to the terminal (/dev/tty) and nowhere else: never to
/// stdout or stderr, which are often logged. A script or test names a file instead with
/// `--recovery-words-file FILE`: `wallet init` writes the words there (a new file, mode 0600) and asks for no
/// confirmation; `wallet recover` reads them from there.
enum RecoveryWordsPrompts {
    /// Positions the person types back at init: three catch a copy that was not written down, or written
    /// down in the wrong order, without making the person type all 24 words.
    static let confirmationCount = 3
    /// Tries per confirmed word before init gives up and makes no wallet.
    static let confirmationTriesMax = 3
    /// A words file holds 24 words of at most 8 letters and their separators, with room for line numbers
    /// and comments a person may have added: 4 KiB bounds what a wrong path makes us read.
    static let wordsFileByteCountMax = 4096

    /// Shows the 24 words of `secret` on the terminal and has the person type back a few at random
    /// positions, or writes them to `file` when one is named. Throws before a wallet is made when the words
    /// cannot be shown or are not confirmed.
    static func show(_ secret: SecretBytes, file: String?) throws {
        let words = RecoveryWords.words(of: secret)
        if let file {
            try writeWordsFile(words, to: file)
            return
        }
        let terminal = try openTerminal("to show the recovery words")
        defer { close(terminal) }
        var text = "\nRecovery words. Write them down, in order, on paper; anyone who has them controls this wallet.\n"
        for row in 0..<6 {
            text +=
                (0..<4).map { column in
                    let index = column * 6 + row
                    return String(repeating: " ", count: index + 1 < 10 ? 2 : 1) + "\(index + 1). "
                        + words[index].padding(toLength: 10, withPad: " ", startingAt: 0)
                }.joined() + "\n"
        }
        _ = readLine(terminal, prompt: text + "\nPress Enter when they are written down. ", echo: true)
        // The words leave the screen (and, where the terminal keeps one, its scrollback) before the check.
        write(terminal, "\u{1B}[2J\u{1B}[3J\u{1B}[H")
        var positions = Set<Int>()
        while positions.count < confirmationCount { positions.insert(Int.random(in: 0..<RecoveryWords.wordCount)) }
        for position in positions.sorted() {
            try confirm(words[position], position: position, terminal: terminal)
        }
        write(terminal, "The recovery words are confirmed.\n")
    }

    private static func confirm(_ word: String, position: Int, terminal: Int32) throws {
        for _ in 0..<confirmationTriesMax {
            let typed = (readLine(terminal, prompt: "Type word \(position + 1): ", echo: false) ?? "").lowercased()
            write(terminal, "\n")
            if typed == word { return }
            write(terminal, RecoveryWords.index(of: typed) == nil ? "That is not a word of the list.\n" : "No.\n")
        }
        throw RecoveryWordsError(
            .notConfirmed,
            "word \(position + 1) was not typed back correctly \(confirmationTriesMax) times; no wallet was made. "
                + "Run `wallet init --recovery-words` again and write the new words down")
    }

    /// Reads the words for `wallet recover`: from `file`, or typed on the terminal with echo off. List
    /// membership and the checksum are checked here; the commitment in the wallet is checked by the wallet.
    static func read(file: String?) throws -> SecretBytes {
        if let file {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                throw UsageError("cannot read the recovery words file \(file)")
            }
            defer { try? handle.close() }
            let data = (try? handle.read(upToCount: wordsFileByteCountMax + 1)) ?? Data()
            guard data.count <= wordsFileByteCountMax else {
                throw UsageError("\(file) is longer than a recovery words file (\(wordsFileByteCountMax) bytes)")
            }
            return try RecoveryWords.secret(of: wordsOnly(String(decoding: data, as: UTF8.self)))
        }
        let terminal = try openTerminal("to type the recovery words")
        defer { close(terminal) }
        let typed =
            readLine(
                terminal, prompt: "Type the 24 recovery words, separated by spaces (they are not shown): ", echo: false)
            ?? ""
        write(terminal, "\n")
        return try RecoveryWords.secret(of: typed)
    }

    /// The words of a words file: `#` starts a comment, and "1." style numbers are dropped.
    static func wordsOnly(_ text: String) -> String {
        text.split(separator: "\n").map { line in
            line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        }.joined(separator: " ").split(separator: " ").filter { !$0.hasSuffix(".") }.joined(separator: " ")
    }

    private static func writeWordsFile(_ words: [String], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw UsageError("cannot create \(path) for the recovery words (it must not exist yet)")
        }
        defer { close(descriptor) }
        let text =
            "# secure recovery words: anyone who has them controls the wallet\n"
            + words.joined(separator: " ") + "\n"
        let written = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        guard written == text.utf8.count, fsync(descriptor) == 0 else {
            throw UsageError("could not write the recovery words to \(path)")
        }
    }

    private static func openTerminal(_ purpose: String) throws -> Int32 {
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 else {
            throw UsageError("no terminal \(purpose); pass --recovery-words-file FILE")
        }
        return terminal
    }

    private static func write(_ terminal: Int32, _ text: String) {
        _ = text.withCString { Glibc.write(terminal, $0, strlen($0)) }
    }

    /// Shows `prompt` and reads one line from the terminal, at most 512 bytes (24 words and their spaces fit
    /// in 216), with echo off unless `echo`. Echo goes off before the prompt is shown: switching it discards
    /// what was typed ahead (TCSAFLUSH), which must never be the answer to this prompt.
    private static func readLine(_ terminal: Int32, prompt: String, echo: Bool) -> String? {
        var saved = termios()
        let canSilence = !echo && tcgetattr(terminal, &saved) == 0
        if canSilence {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(terminal, TCSAFLUSH, &silent)
        }
        defer { if canSilence { _ = tcsetattr(terminal, TCSANOW, &saved) } }
        write(terminal, prompt)
        var buffer = [UInt8](repeating: 0, count: 512)
        defer { for index in buffer.indices { buffer[index] = 0 } }
        let count = Glibc.read(terminal, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
