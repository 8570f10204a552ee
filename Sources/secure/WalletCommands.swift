import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

let walletOptions: Set<String> = ["wallet", "token", "pin-source", "module-args", "wait"]
let walletFlags: Set<String> = ["confirm-final-try", "allow-unenforced-pin", "allow-unproven-origin"]
/// `--json`, only on the commands that print JSON: a flag a command accepts and ignores would print text to a
/// script that asked for JSON.
let jsonFlag: Set<String> = ["json"]
/// The flags of a command that appends entries: `--accept-clock` dates an entry by a clock that runs more
/// than `Wallet.clockJumpMillisecondsMax` past the last entry (see `openWallet`).
let appendingFlags: Set<String> = walletFlags.union(["accept-clock"])

/// Opens the wallet a command names: --wallet DIR (or the XDG default), its recorded token (or --token),
/// and a PIN from --pin-source. A command that appends (or writes in any way) opens it `.appending`: the
/// wallet then takes its lock, after the PIN was read. A command that only reads opens it `.reading`: no
/// lock, a read-only snapshot, and anything that needs a repair is reported with the command that makes it.
func openWallet(_ arguments: Arguments, _ access: WalletAccess) throws -> Wallet {
    if let wait = arguments.value("wait") {
        // A writer given --wait queues for the wallet's lock instead of failing busy at once.
        guard let seconds = Double(wait), seconds >= 0, seconds <= 86_400 else {
            throw UsageError("--wait takes seconds, 0 to 86400")
        }
        WalletLock.waitSeconds = seconds
    }
    let (paths, recorded) = try recordedWallet(arguments)
    try checkDefaultedPINSource(arguments, paths: paths)
    guard let tokenText = arguments.value("token") ?? recorded?.token else {
        throw StoreError(
            .walletMissing, "no wallet at \(paths.directory); make one with `secure wallet init`, or pass --wallet DIR")
    }
    let uri = try parseURI(tokenText, arguments)
    // Only the recorded URI is looked past: a --token the person typed names the token they mean.
    let found = try WalletTokenSearch.token(uri, paths: paths, recorded: arguments.value("token") == nil)
    let session = try openSession(arguments, token: found.token, uri: uri)
    let wallet: Wallet
    do {
        wallet = try Wallet.open(paths: paths, token: session, access: access)
        if found.moved {
            let recorded = try WalletTokenSearch.record(found.token, for: wallet)
            printError(
                "secure: note: no token matches the recorded \(uri.withoutPIN.tokenOnly); the token \"\(found.token.label)\" "
                    + "(serial \(found.token.serial)) holds the wallet's keys (the key-agreement key keys.bin wraps to, "
                    + "and the signing key in force), so it is used and wallet.json now records \(recorded)")
        }
    } catch {
        session.close()
        throw error
    }
    // The signed settings decide what the token is allowed to lack, from now on in this command.
    session.policy = try tokenPolicy(arguments, allowances: wallet.settings.tokenAllowances)
    if let repair = wallet.repairNeeded { printError("secure: note: \(repair)") }
    wallet.acceptsClockJump = arguments.flag("accept-clock")
    return wallet
}

/// SECURE_PIN_SOURCE and the config file's PIN source are the PIN of the wallet they go with (SECURE_WALLET,
/// the config's, or the default wallet). Sent to another wallet's token, that PIN is a wrong try on it; three
/// such slips lock a real token. So a PIN source that was not typed is used only for that wallet: a command
/// whose --wallet names another must give its own --pin-source.
func checkDefaultedPINSource(_ arguments: Arguments, paths: WalletPaths) throws {
    guard !arguments.isGiven("pin-source"), arguments.value("pin-source") != nil, arguments.isGiven("wallet") else {
        return
    }
    let resolved = { (path: String) in URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }
    let defaultWallet = WalletPaths(directory: Arguments.defaults["wallet"]).directory
    guard resolved(paths.directory) == resolved(defaultWallet) else {
        throw UsageError(
            "the PIN source from SECURE_PIN_SOURCE (or the config file) is the PIN of the wallet at \(defaultWallet); "
                + "--wallet names \(paths.directory): give its own --pin-source, so no token is sent another's PIN")
    }
}

/// The wallet folder a command names and its recorded metadata (nil when unreadable), or "no wallet".
func recordedWallet(_ arguments: Arguments) throws -> (WalletPaths, WalletMetadata?) {
    let paths = WalletPaths(directory: arguments.value("wallet"))
    guard FileManager.default.fileExists(atPath: paths.metadata) else {
        throw StoreError(
            .walletMissing, "no wallet at \(paths.directory); make one with `secure wallet init`, or pass --wallet DIR")
    }
    try paths.checkPermissions()
    return (
        paths,
        try? JSONDecoder().decode(WalletMetadata.self, from: Data(contentsOf: URL(fileURLWithPath: paths.metadata)))
    )
}

/// Builds an entry id: 16 random bytes.
func newEntryID() -> StatementID { .random() }

enum WalletCommands {
    static let help = """
        Usage:
          secure wallet init --token URI --backup-token URI [--backup-pin-source SPEC] [--label L]
                             [--allow-file-anchor] [--wallet DIR] [--pin-source SPEC] [--json]
              Makes the wallet: a signing key and a key-agreement key on the token, the next signing key and a
              backup key-agreement key on the backup token, the signed inception event (whose hash is the
              wallet id), and the encrypted ledger whose key is wrapped to both tokens.
              Keys made by the token's own tool are selected instead of generated with --signing-key URI and
              --agreement-key URI (a PIV card: id=%02 is slot 9C, id=%03 is 9D), and on the backup token with
              --backup-next-key URI and --backup-agreement-key URI. --backup-module-args ARGS: init args for the
              backup token's module. Tokens lacking a safeguard need the flag that names it: --allow-file-anchor,
              --allow-unenforced-pin, --allow-unproven-origin (docs/TOKENS.md). The last two are recorded by
              signed settings entries, so later commands need not repeat them (`secure wallet allow`).
              --recovery-words also shows 24 recovery words on the terminal, once, and asks for three of them
              back; every key event then commits to a recovery key they derive. --recovery-words-file FILE
              writes them to FILE (new, mode 0600) instead, for scripts. Anyone who has the words controls
              the wallet: keep them like a key.
          secure wallet recover --backup-token URI [--backup-pin-source SPEC] --token NEWURI [--pin-source SPEC]
              After losing the token: open the wallet with the backup token and rewrap its key to a new token.
          secure wallet recover --recovery-words [--recovery-words-file FILE] --token NEWURI [--pin-source SPEC]
              After losing every token: the recovery words open the wallet and sign one recovery rotation that
              puts a key made on the new token in force (docs/PROTOCOL.md, "Recovery words").
          secure wallet anchor token|file
              Moves the anchor (the latest checkpoint kept outside the database) to the token or to a file, by
              a signed settings entry; refused while the wallet is locked. The ledger's entries decide the
              anchor, never wallet.json; while the token holds the wallet's anchor object, that object decides.
          secure wallet allow unenforced-pin|unproven-origin on|off
              Gives up (on) or requires again (off) one safeguard of the wallet's token for every later command,
              by a signed settings entry (PIN); the ledger decides, never wallet.json. A --allow-… flag on one
              command still allows it for that command only.
          secure wallet show [--json | --card]
              The wallet id, the current public key (PEM and fingerprint), the token, the anchor and the
              safeguards given up (allow). --card
              prints a wallet card (the wallet id and its key-event log) for others to mint or pay to.
        Every wallet command takes --wallet DIR (default $XDG_DATA_HOME/secure/wallet), --pin-source SPEC,
        and --token URI to override the token recorded at init. A command that appends an entry refuses
        when the clock runs more than 31 days past the last entry; --accept-clock says the clock is right.
        A command that changes the wallet while another holds it fails busy (exit 9) unless given
        --wait SECONDS, which queues for the wallet's lock that long.
        """

    static func initialize(_ words: [String]) throws -> ExitCode { try initialize(words, isIssuer: false) }

    /// `wallet init`, or `issuer init` with `isIssuer`: the same tokens, keys and files, an issuer's inception.
    static func initialize(_ words: [String], isIssuer: Bool) throws -> ExitCode {
        let keyOptions = ["signing-key", "agreement-key", "backup-next-key", "backup-agreement-key"]
        let arguments = try Arguments(
            words,
            options: walletOptions.union([
                "backup-token", "backup-pin-source", "label",
                "backup-module-args", "recovery-words-file",
            ]).union(keyOptions).union(attestationOptions),
            flags: walletFlags.union(jsonFlag).union(["allow-file-anchor", "recovery-words"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let tokenURI = try parseURI(try arguments.required("token"), arguments)
        guard let backupText = arguments.value("backup-token") else {
            throw UsageError(
                "--backup-token is required: a lost token must not lose the money, so the database key is also "
                    + "wrapped to a second token, which also holds the next signing key")
        }
        // --module-args belongs to --token's module; the backup token's module has its own.
        let backupURI = try PKCS11URI(backupText)
        if let backupArguments = arguments.value("backup-module-args") {
            guard let module = backupURI.moduleName ?? backupURI.modulePath else {
                throw UsageError("--backup-module-args needs a backup URI that names its module")
            }
            TokenLibrary.shared.setInitArguments(backupArguments, forModule: module)
        }
        func keyURI(_ option: String) throws -> PKCS11URI? { try arguments.value(option).map { try PKCS11URI($0) } }
        let existingKeys = Wallet.ExistingKeys(
            signing: try keyURI("signing-key"), agreement: try keyURI("agreement-key"),
            next: try keyURI("backup-next-key"),
            backupAgreement: try keyURI("backup-agreement-key"))
        let paths = WalletPaths(directory: arguments.value("wallet"))
        guard arguments.flag("recovery-words") || arguments.value("recovery-words-file") == nil else {
            throw UsageError("--recovery-words-file goes with --recovery-words")
        }
        let session = try openSession(arguments, uri: tokenURI)
        defer { session.close() }
        let backupToken = try TokenLibrary.shared.token(backupURI)
        guard backupToken.serial != session.token.serial || backupToken.label != session.token.label else {
            throw UsageError("--backup-token names the same token as --token; the backup must be a second token")
        }
        let backupSession = try TokenSession(
            token: backupToken, pin: try readBackupPIN(arguments, uri: backupURI, token: backupToken),
            confirmFinalTry: arguments.flag("confirm-final-try"), policy: try tokenPolicy(arguments))
        defer { backupSession.close() }
        // The words are shown and confirmed before anything is made: a person who cannot confirm them gets
        // no wallet that depends on them.
        let recoverySecret = arguments.flag("recovery-words") ? SecretBytes(randomCount: 32) : nil
        if let recoverySecret {
            try RecoveryWordsPrompts.show(recoverySecret, file: arguments.value("recovery-words-file"))
        }
        let options = Wallet.InitOptions(
            tokenURI: tokenURI, backup: (backupSession, backupURI),
            allowFileAnchor: arguments.flag("allow-file-anchor"),
            label: arguments.value("label") ?? (isIssuer ? "issuer" : "wallet"), existingKeys: existingKeys,
            isIssuer: isIssuer, tokenAllowances: tokenAllowances(arguments), recoverySecret: recoverySecret)
        let wallet = try Wallet.create(paths: paths, token: session, options: options)
        // The signing key's origin as the inception records it, on stderr in both forms (INFO for the module's word).
        printError("secure: signing key origin: \(wallet.keyEvent.event.origin.description)")
        if arguments.flag("json") {
            printJSON(describe(wallet))
        } else {
            print(wallet.walletID.hex)
            printError(
                "secure: made \(isIssuer ? "issuer" : "wallet") \(wallet.walletID.hex) in \(paths.directory) "
                    + "(anchor on the \(wallet.anchorKind))"
                    + (isIssuer
                        ? "; wallets trust it with `secure issuer trust CARD` on its card (`secure wallet show --card`)"
                        : ""))
        }
        return .success
    }

    static func recover(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["backup-token", "backup-pin-source", "recovery-words-file"]),
            flags: walletFlags.union(["recovery-words"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let paths = WalletPaths(directory: arguments.value("wallet"))
        guard FileManager.default.fileExists(atPath: paths.metadata) else {
            throw StoreError(.walletMissing, "no wallet at \(paths.directory) to recover; pass --wallet DIR")
        }
        if arguments.flag("recovery-words") { return try recoverFromWords(arguments, paths: paths) }
        let backupURI = try parseURI(try arguments.required("backup-token"), arguments)
        let newURI = try parseURI(try arguments.required("token"), arguments)
        let backupToken = try TokenLibrary.shared.token(backupURI)
        let backup = try TokenSession(
            token: backupToken, pin: try readBackupPIN(arguments, uri: backupURI, token: backupToken),
            confirmFinalTry: arguments.flag("confirm-final-try"))
        defer { backup.close() }
        let newToken = try openSession(arguments, uri: newURI)
        defer { newToken.close() }
        try Wallet.recover(paths: paths, backup: backup, newToken: newToken, newTokenURI: newURI)
        print(
            "recovered: the wallet now opens with \(newURI.withoutPIN.tokenOnly); the backup still holds a copy of the key"
        )
        printError("secure: reading works now; spending resumes after a rotation to a signing key on the new token")
        return .success
    }

    /// `wallet recover --recovery-words`: the words (typed, or from --recovery-words-file) open the database and
    /// sign one recovery rotation to a key made on the new token.
    static func recoverFromWords(_ arguments: Arguments, paths: WalletPaths) throws -> ExitCode {
        guard arguments.value("backup-token") == nil else {
            throw UsageError("--recovery-words recovers without the backup token; pass one or the other")
        }
        let newURI = try parseURI(try arguments.required("token"), arguments)
        let secret = try RecoveryWordsPrompts.read(file: arguments.value("recovery-words-file"))
        let newToken = try openSession(arguments, uri: newURI)
        defer { newToken.close() }
        let rotation = try Wallet.recover(
            paths: paths, recoverySecret: secret, newToken: newToken, newTokenURI: newURI)
        print(
            "recovered: key event \(rotation.event.sequence), signed with the recovery words, puts a key on "
                + "\(newURI.withoutPIN.tokenOnly) in force; the wallet reads and pays again")
        printError(
            "secure: the next key waits on the new token too; run `secure keys rotate --backup-token URI` with a "
                + "second token to move it there")
        return .success
    }

    /// `wallet show --json` and `wallet init --json` (format `secure-wallet-v3`).
    static func describe(_ wallet: Wallet) -> [String: Any] {
        JSONOutput.document(
            .wallet,
            [
                "walletID": wallet.walletID.hex, "publicKeyPEM": wallet.signingKey.pem,
                "fingerprint": Hex.encode(wallet.signingKey.fingerprint),
                "contactKeyFingerprint": JSONOutput.nullable(wallet.keyLog.currentContactKeyDigest?.hex),
                "token": wallet.metadata.token,
                "anchor": "\(wallet.anchorKind)", "entries": wallet.size, "directory": wallet.paths.directory,
                "allow": wallet.settings.tokenAllowances.map(\.description).sorted(), "issuer": wallet.isIssuer,
                "locked": JSONOutput.nullable(wallet.lockReason?.description),
            ])
    }

    /// The contact key in force as people read it: the SHA-256 of its encapsulation key, which the key event
    /// commits to, or how to get one.
    static func contactKeyText(_ log: KeyEventLog) -> String {
        log.currentContactKeyDigest?.hex ?? "none (rotate to add one: `secure keys rotate --backup-token URI`)"
    }

    static func show(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag).union(["card"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        if arguments.flag("json") {
            printJSON(describe(wallet))
            return .success
        }
        if arguments.flag("card") {
            // A wallet card: what others need to mint or pay to this wallet (documented in PROTOCOL.md).
            print(WalletCard(log: wallet.keyLog).text, terminator: "")
            return .success
        }
        print("wallet id    \(wallet.walletID.hex)")
        print("fingerprint  \(Hex.encode(wallet.signingKey.fingerprint))")
        print("contact key  \(contactKeyText(wallet.keyLog))")
        print("token        \(wallet.metadata.token)")
        print("anchor       \(wallet.anchorKind)")
        let allowances = wallet.settings.tokenAllowances.map { "--allow-\($0)" }.sorted()
        print(
            "allow        \(allowances.isEmpty ? "none (every token safeguard required)" : allowances.joined(separator: " "))"
        )
        print("entries      \(wallet.size)")
        if let lock = wallet.lockReason { print("LOCKED       \(lock)") }
        print(wallet.signingKey.pem, terminator: "")
        return .success
    }
}

enum BudgetCommands {
    static let help = """
        Usage:
          secure budget set CATEGORY LIMIT [--window day|week|month] [--hard-cap] [--time-zone ZONE]
              Sets a category's limit per window (default month), counted in an IANA time zone (default the
              local one). Payments above 80% alert; above 100% they need --override-budget, or are refused
              in a hard-cap category. The change is a signed ledger entry. A budget counts the payments made
              after it is set: a new budget, or a new window, zone or currency, starts its window at zero
              (a new limit alone keeps what the window has spent).
          secure budget show [--json]
              Each budget with the open window's spending, as a bar with the 80% and 100% marks, and the
              window's first and last day in the budget's time zone. On a terminal the bar is green below
              80%, yellow from 80% and red above 100%; NO_COLOR (or TERM=dumb, or output that is not a
              terminal) turns colour off.
        """

    static func set(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["window", "time-zone"]), flags: appendingFlags.union(["hard-cap"]))
        let positional = try arguments.positionals(2, "CATEGORY and LIMIT, e.g. food \"200.00 EUR\"")
        let limit = try MoneyText.parse(positional[1])
        // A limit of zero or less would make every payment "over budget"; the ledger still replays one an
        // older version wrote (Budget itself accepts it), but a new one is refused here.
        guard limit.minorUnits > 0 else {
            throw UsageError("a budget's limit must be more than zero, not \(MoneyText.format(limit))")
        }
        let windowNames: [String: BudgetWindowKind] = ["day": .day, "week": .week, "month": .month]
        guard let window = windowNames[arguments.value("window") ?? "month"] else {
            throw UsageError("--window must be day, week or month")
        }
        let zone = try arguments.value("time-zone") ?? Defaults.localTimeZone().identifier
        let budget = try Budget(
            category: positional[0], limit: limit, window: window, isHardCap: arguments.flag("hard-cap"),
            timeZoneIdentifier: zone)
        let wallet = try openWallet(arguments, .appending)
        try wallet.append { position, previous, time in
            try LedgerEntry(
                position: position, id: newEntryID(), kind: .budgetChange, amount: nil, category: budget.category,
                time: time, payload: BudgetChange.set(budget).payload, previousLink: previous)
        }
        print(
            "budget \(budget.category): \(MoneyText.format(limit)) per \(arguments.value("window") ?? "month")"
                + (budget.isHardCap ? " (hard cap)" : "") + ", counted in \(zone)")
        return .success
    }

    static func show(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let budgets = wallet.state.budgets.values.sorted { $0.category < $1.category }
        var rows: [[String: Any]] = []
        for budget in budgets {
            let spent = try wallet.spent(in: budget)
            let days = windowDays(budget, try wallet.currentWindow(of: budget))
            rows.append([
                "category": budget.category, "limit": JSONOutput.amount(budget.limit, issuer: nil),
                "spent": JSONOutput.amount(spent, issuer: nil), "window": "\(budget.window)",
                "hardCap": budget.isHardCap, "timeZone": budget.timeZoneIdentifier,
                "windowFirstDay": days.first, "windowLastDay": days.last,
            ])
            if !arguments.flag("json") {
                print(
                    bar(category: budget.category, spent: spent, limit: budget.limit, colour: BarColour.wanted)
                        + (budget.isHardCap ? "  hard cap" : ""))
                let span = days.first == days.last ? days.first : "\(days.first) to \(days.last)"
                print(String(repeating: " ", count: 15) + "\(budget.window) \(span), \(budget.timeZoneIdentifier)")
            }
        }
        if arguments.flag("json") {
            JSONOutput.print(.budgets, ["budgets": rows])
        } else if budgets.isEmpty {
            print("no budgets; set one with `secure budget set`")
        }
        return .success
    }

    /// Colour for the bar: only on a terminal, never with NO_COLOR set to anything (no-color.org) or on
    /// TERM=dumb.
    enum BarColour {
        static var wanted: Bool {
            let environment = ProcessInfo.processInfo.environment
            return isatty(STDOUT_FILENO) == 1 && (environment["NO_COLOR"] ?? "").isEmpty
                && environment["TERM"] != "dumb"
        }
        static let green = "\u{1B}[32m"
        static let yellow = "\u{1B}[33m"
        static let red = "\u{1B}[31m"
        static let reset = "\u{1B}[0m"
    }

    /// The window's first and last day (YYYY-MM-DD) in the budget's zone: the text shows them as
    /// "month 2026-12-01 to 2026-12-31, Europe/Berlin", JSON as windowFirstDay and windowLastDay.
    static func windowDays(_ budget: Budget, _ window: BudgetWindow) -> (first: String, last: String) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = TimeZone(identifier: budget.timeZoneIdentifier)
        formatter.dateFormat = "yyyy-MM-dd"
        let first = formatter.string(from: Date(timeIntervalSince1970: Double(window.start) / 1000))
        // The last day is the one holding the window's last millisecond.
        let last = formatter.string(from: Date(timeIntervalSince1970: Double(window.end - 1) / 1000))
        return (first, last)
    }

    /// A 40-column bar with marks at 80% (|) and 100% (‖), in integers only; with `colour`, the filled
    /// cells are green below 80%, yellow from 80% and red above 100% (the same thresholds as the verdict).
    static func bar(category: String, spent: Money, limit: Money, colour: Bool = false) -> String {
        let width = 40
        let limitUnits = max(limit.minorUnits, 1)
        // Filled cells: spent / limit of the 100% mark at cell 40·(100/125) = 32; the bar shows up to 125%.
        let full = 32
        let filled = Int(
            min(Int64(width), spent.minorUnits.multipliedReportingOverflow(by: Int64(full)).partialValue / limitUnits))
        var cells = (0..<width).map { $0 < filled ? "█" : "·" }
        cells[full * 4 / 5] = filled > full * 4 / 5 ? "▌" : "|"
        cells[full] = filled > full ? "▐" : "‖"
        let percent = spent.minorUnits.multipliedReportingOverflow(by: 100).partialValue / limitUnits
        var drawn = cells.joined()
        if colour && filled > 0 {
            // 5·spent > 4·limit is the alert, spent > limit over budget: the verdict's own integer tests.
            let (fifths, overflow) = spent.minorUnits.multipliedReportingOverflow(by: 5)
            let over = spent.minorUnits > limit.minorUnits
            let alert = overflow || fifths > limit.minorUnits.multipliedReportingOverflow(by: 4).partialValue
            let tint = over ? BarColour.red : alert ? BarColour.yellow : BarColour.green
            drawn = tint + cells[..<filled].joined() + BarColour.reset + cells[filled...].joined()
        }
        // A zero limit (only an older version could set one) has no percentage: any spending is over it.
        let share = limit.minorUnits > 0 ? "(\(percent)%)" : "(limit 0: any spending is over it)"
        return category.padding(toLength: 14, withPad: " ", startingAt: 0) + " " + drawn
            + "  \(MoneyText.format(spent)) of \(MoneyText.format(limit)) \(share)"
    }
}
