import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureReport
import SecureStore
import SecureWallet

/// `secure report`: reads the wallet like `history` does and writes the page SecureReport draws.
enum ReportCommands {
    static let help = """
        Usage:
          secure report --html FILE [--since DATE] [--until DATE] [--utc]
                                                      one self-contained HTML page: each asset's balance over
                                                      time, spending per budget window against its limit (with
                                                      the 80 % and 100 % lines), the largest payments out, the
                                                      key-event history, and the ledger's verification (the
                                                      checks of `secure ledger verify`). It runs no script and
                                                      loads nothing (Content-Security-Policy default-src
                                                      'none'); notes and names from other wallets are text.
                                                      --since and --until take dates as `history` does; dates are
                                                      shown in $TZ (UTC with --utc). FILE is written 0600 and
                                                      replaced if it is a file; its folder must exist; - writes
                                                      to stdout. Exit code 10 (after writing FILE) when the
                                                      ledger does not verify.
        Common options: --wallet DIR, --pin-source SPEC, --token URI.
        """

    static func report(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["html", "since", "until"]),
            flags: walletFlags.union(["utc"]))
        _ = try arguments.positionals(0, "no positional arguments")
        guard let path = arguments.value("html"), !path.isEmpty else {
            throw UsageError("--html FILE names the page to write (the report's only format)")
        }
        try checkOutput(path)
        let timeZone = arguments.flag("utc") ? TimeZone(identifier: "UTC")! : try Defaults.localTimeZone()
        let filter = try LedgerCommands.HistoryFilter(arguments, timeZone: timeZone)
        let wallet = try openWallet(arguments, .reading)
        var builder = ReportBuilder(range: ReportRange(since: filter.since, until: filter.until))
        try wallet.ledger.forEachEntry { builder.add($0) }
        // The same checks as `secure ledger verify`, with the same effect: a failure is recorded on the token
        // and locks the wallet until a verification succeeds.
        let verified = try wallet.verifyLedger()
        let problems = LedgerCommands.verificationProblems(verified, wallet)
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        let content = ReportContent(
            walletID: wallet.walletID, isIssuer: wallet.isIssuer, generated: now, timeZone: timeZone,
            range: ReportRange(since: filter.since, until: filter.until), entryCount: builder.entryCount,
            entriesInRange: builder.entriesInRange, balances: builder.balances, budgets: builder.budgets(now: now),
            largestPayments: builder.largestPayments, keyEvents: keyEventRows(wallet.keyLog, builder),
            verification: VerificationSummary(
                entries: verified.entries, checkpoints: verified.checkpoints, anchor: wallet.anchorKind,
                problems: problems),
            replayProblem: builder.replayProblem, currentBalances: builder.currentBalances)
        if path == "-" {
            print(ReportPage.html(content), terminator: "")
        } else {
            try DurableFile.write(Array(ReportPage.html(content).utf8), to: path, mode: 0o600)
            printError("secure: wrote \(path)")
        }
        guard problems.isEmpty else {
            printError("secure: the ledger does NOT verify; the report lists the problems (`secure ledger verify`)")
            return .integrity
        }
        return .success
    }

    /// Where the page may go, checked before the wallet is opened: `-` is stdout; otherwise the folder must
    /// exist (no folders are made) and FILE, if it exists, must be a regular file (replaced). A symbolic link,
    /// a device, a FIFO or a folder is refused: the page is written by rename, which would replace the link
    /// or node itself (/dev/stdout is a link), not write through it.
    static func checkOutput(_ path: String) throws {
        guard path != "-" else { return }
        let folder = (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isFolder),
            isFolder.boolValue
        else {
            throw UsageError("cannot write the report to \(path): the folder \(folder) does not exist")
        }
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG else {
            throw UsageError(
                "cannot write the report to \(path): it is not a regular file"
                    + (kind == S_IFLNK ? " but a symbolic link; name the file itself" : "")
                    + " (--html - writes to stdout)")
        }
    }

    /// The key-event log as rows, each dated by the ledger entry that records it.
    static func keyEventRows(_ log: KeyEventLog, _ builder: ReportBuilder) -> [KeyEventRow] {
        log.events.map { signed in
            let event = signed.event
            let kind: String
            switch event.kind {
            case .inception: kind = "inception"
            case .issuerInception: kind = "issuer inception"
            case .rotation: kind = event.isRecovery ? "recovery rotation" : "rotation"
            case .clearingDelegation: kind = "clearing delegation"
            }
            // A delegation puts no key in force: its row shows the clearing key it names and that key's origin.
            let key = event.clearing?.clearingKey ?? event.signingKey
            let origin = event.clearing?.clearingKeyOrigin ?? event.origin
            return KeyEventRow(
                sequence: event.sequence, kind: kind, time: builder.keyEventTime(event.ledgerPosition),
                keyFingerprint: Hex.encode(key.fingerprint), origin: origin.description,
                ledgerPosition: event.ledgerPosition,
                contactKeyFingerprint: event.hasContactKey ? event.contactKeyDigest.hex : nil)
        }
    }
}
