import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

enum LedgerCommands {
    static let help = """
        Usage:
          secure balance [--json]                     balances per asset, from the latest signed checkpoint
          secure history [--json | --csv] [--since DATE] [--until DATE] [--utc] [--category C] [--peer ID]
                         [--kind KIND] [--limit N]
                                                      entries grouped by date, with the counterparty (and its
                                                      name when it is a contact) and the note; dates are ISO
                                                      8601 in $TZ (UTC with --utc); --peer takes the start of a
                                                      wallet id; --limit keeps the most recent N. --csv writes
                                                      RFC 4180 CSV for accounting tools (date, kind,
                                                      counterparty, category, note, amount, currency, issuer,
                                                      entry, transfer_id, contact); a text cell that starts
                                                      with = + - @ TAB or CR gets a leading '
          secure ledger verify [--json] [--accept-rollback]
                                                      replay every entry; check the chain, the Merkle tree, every
                                                      checkpoint's signature and state, every entry's signed
                                                      statement, every database row, and the anchor. A failure
                                                      locks the wallet until a verification succeeds.
                                                      --accept-rollback leaves a rollback lock: it re-anchors and
                                                      records a signed statement that you did
          secure ledger repair                        (writes) upgrade an older schema; move an anchor a crash left
                                                      behind forward; write the anchor an interrupted init missed
          secure ledger prove --entry ID [--out FILE] an inclusion proof of an entry (hex id) in the latest checkpoint
          secure ledger consistency --from N --to M [--out FILE]
                                                      a consistency proof between the checkpoints of sizes N and M
          secure ledger verify-proof FILE (--pubkey PEM | --key-events BUNDLE)
                                                      check a proof offline with the wallet's public key alone
        Common options: --wallet DIR, --pin-source SPEC, --token URI.
        """

    static func balance(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let assets = wallet.state.balances.sorted { $0.key < $1.key }
        let word = wallet.isIssuer ? "outstanding" : "issued by"
        if arguments.flag("json") {
            JSONOutput.print(
                .balance,
                [
                    "walletID": wallet.walletID.hex, "entries": wallet.size, "issuer": wallet.isIssuer,
                    "balances": assets.map { JSONOutput.amount($0.value, issuer: $0.key.issuer) },
                    "locked": JSONOutput.nullable(wallet.lockReason?.description),
                ])
        } else if assets.isEmpty {
            print(
                wallet.isIssuer
                    ? "0 outstanding (nothing minted yet; `secure mint --to CARD` signs a voucher)"
                    : "0 (no money yet; `secure deposit VOUCHER` credits an issuer's voucher)")
        } else {
            for (asset, amount) in assets {
                print(
                    wallet.isIssuer
                        ? "\(MoneyText.format(amount)) \(word)"
                        : "\(MoneyText.format(amount))  \(word) \(Asset.shortID(asset.issuer))")
            }
        }
        if let lock = wallet.lockReason { printError("secure: warning: the wallet is LOCKED: \(lock)") }
        return .success
    }

    /// The filters `history` takes: dates in $TZ (or UTC with --utc), category, counterparty, kind, count.
    struct HistoryFilter {
        var since: Int64?
        var until: Int64?
        var category: String?
        var peer: String?
        var kind: String?

        init(_ arguments: Arguments, timeZone: TimeZone) throws {
            func time(_ name: String, endOfDay: Bool) throws -> Int64? {
                guard let text = arguments.value(name) else { return nil }
                let day = DateFormatter()
                day.timeZone = timeZone
                day.locale = Locale(identifier: "en_US_POSIX")
                day.dateFormat = "yyyy-MM-dd"
                if let date = day.date(from: text), text.count == 10 {
                    let seconds = date.timeIntervalSince1970 + (endOfDay ? 86_400 : 0)
                    return Int64(seconds * 1000) - (endOfDay ? 1 : 0)
                }
                let full = ISO8601DateFormatter()
                full.timeZone = timeZone
                for options: ISO8601DateFormatter.Options in [
                    [.withInternetDateTime],
                    [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate],
                ] {
                    full.formatOptions = options
                    if let date = full.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
                }
                // ISO 8601 lets a time stop at the minute (2026-12-01T10:00, with or without a zone); like a
                // date, a minute as --until covers the whole of it.
                let minute = DateFormatter()
                minute.timeZone = timeZone
                minute.locale = Locale(identifier: "en_US_POSIX")
                for (format, zoned) in [("yyyy-MM-dd'T'HH:mm", false), ("yyyy-MM-dd'T'HH:mmXXXXX", true)] {
                    minute.dateFormat = format
                    // The length tells the forms apart: a parser that stops early never drops a zone or seconds.
                    let shape = zoned ? text.count > 16 && text.dropFirst(16).first != ":" : text.count == 16
                    if shape, let date = minute.date(from: text) {
                        return Int64(date.timeIntervalSince1970 * 1000) + (endOfDay ? 59_999 : 0)
                    }
                }
                throw UsageError(
                    "--\(name) takes an ISO 8601 date (2026-12-01) or time (2026-12-01T09:30, 2026-12-01T09:30:00+01:00)"
                )
            }
            since = try time("since", endOfDay: false)
            until = try time("until", endOfDay: true)
            if let since, let until, since > until {
                throw UsageError(
                    "--since \(arguments.value("since") ?? "") is after --until \(arguments.value("until") ?? ""): "
                        + "the range is empty")
            }
            category = arguments.value("category")
            peer = arguments.value("peer")?.lowercased()
            if let peer, peer.isEmpty || !peer.allSatisfy(\.isHexDigit) {
                throw UsageError("--peer takes the start of a wallet id, in hex")
            }
            kind = arguments.value("kind")
            if let kind, !LedgerCommands.kindNames.values.contains(kind) {
                throw UsageError(
                    "--kind is one of: " + LedgerCommands.kindNames.values.sorted().joined(separator: ", "))
            }
        }

        func admits(_ entry: LedgerEntry) -> Bool {
            if let since, entry.time < since { return false }
            if let until, entry.time > until { return false }
            if let category, entry.category != category { return false }
            if let peer, !Hex.encode(entry.counterparty).hasPrefix(peer) { return false }
            if let kind, LedgerCommands.kindNames[entry.kind] != kind { return false }
            return true
        }
    }

    /// One CSV cell (RFC 4180): quoted when it holds a comma, quote, CR or LF. Text that a spreadsheet would
    /// run as a formula (starting with = + - @ TAB or CR) gets a leading ' first: notes and names come from
    /// other wallets. Every test is on Unicode scalars, never on Characters: "\r\n" is one Character, equal
    /// to neither "\r" nor "\n", and "=" followed by a combining mark is one Character that is not "=".
    /// Controls other than TAB, CR and LF (ESC, BEL, DEL, C1) and the bidirectional overrides and isolates
    /// are written as \u{…}, as on the terminal: `cat history.csv` must not run a peer's escape sequences.
    static func csvCell(_ text: String, isText: Bool = true) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let control =
                (value < 0x20 && value != 0x09 && value != 0x0a && value != 0x0d) || (0x7f...0x9f).contains(value)
            let bidi = (0x202a...0x202e).contains(value) || (0x2066...0x2069).contains(value)
            if control || bidi {
                scalars.append(contentsOf: "\\u{\(String(value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                scalars.append(scalar)
            }
        }
        if isText, let first = scalars.first, "=+-@\t\r".unicodeScalars.contains(first) {
            scalars.insert("'", at: scalars.startIndex)
        }
        guard scalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else {
            return String(scalars)
        }
        var quoted = String.UnicodeScalarView()
        quoted.append("\"")
        for scalar in scalars {
            if scalar == "\"" { quoted.append("\"") }
            quoted.append(scalar)
        }
        quoted.append("\"")
        return String(quoted)
    }

    static let csvHeader = "date,kind,counterparty,category,note,amount,currency,issuer,entry,transfer_id,contact"

    /// The current contacts' names by wallet id, for `history`: a payment with a contact shows its name. A
    /// contacts table that no longer matches the ledger shows no names, with a warning, rather than names
    /// from rows no signed entry vouches for.
    static func contactNames(_ wallet: Wallet) throws -> [[UInt8]: String] {
        do {
            return Dictionary(uniqueKeysWithValues: try wallet.contacts().map { ($0.walletID.bytes, $0.name) })
        } catch {
            printError("secure: history shows no contact names: \(error)")
            return [:]
        }
    }

    static func history(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["since", "until", "category", "peer", "kind", "limit"]),
            flags: walletFlags.union(jsonFlag).union(["csv", "utc"]))
        _ = try arguments.positionals(0, "no positional arguments")
        guard !(arguments.flag("csv") && arguments.flag("json")) else {
            throw UsageError("--csv and --json are two formats; pick one")
        }
        let timeZone = arguments.flag("utc") ? TimeZone(identifier: "UTC")! : try Defaults.localTimeZone()
        let filter = try HistoryFilter(arguments, timeZone: timeZone)
        let limit = try arguments.value("limit").map { text -> Int in
            guard let count = Int(text), count > 0 else { throw UsageError("--limit takes a positive count") }
            return count
        }
        let wallet = try openWallet(arguments, .reading)
        let contacts = try contactNames(wallet)
        var entries: [LedgerEntry] = []
        try wallet.ledger.forEachEntry { entry in
            guard filter.admits(entry) else { return }
            entries.append(entry)
            // --limit keeps the most recent N.
            if let limit, entries.count > limit { entries.removeFirst() }
        }
        let dayFormat = DateFormatter()
        dayFormat.timeZone = timeZone
        dayFormat.dateFormat = "yyyy-MM-dd"
        let timeFormat = DateFormatter()
        timeFormat.timeZone = timeZone
        timeFormat.dateFormat = "HH:mm:ss"
        let stamp = ISO8601DateFormatter()
        stamp.timeZone = timeZone
        if arguments.flag("json") {
            JSONOutput.print(
                .history,
                [
                    "timeZone": timeZone.identifier,
                    "entries": entries.map { entry in
                        let date = Date(timeIntervalSince1970: Double(entry.time) / 1000)
                        return jsonRow(entry).merging([
                            "date": dayFormat.string(from: date), "timestamp": stamp.string(from: date),
                            "contact": JSONOutput.nullable(contacts[entry.counterparty]),
                        ]) { $1 }
                    },
                ])
            return .success
        }
        if arguments.flag("csv") {
            var out = csvHeader + "\r\n"
            for entry in entries {
                let date = Date(timeIntervalSince1970: Double(entry.time) / 1000)
                var amount = "", currency = "", issuer = ""
                if let value = entry.amount {
                    let text = MoneyText.format(value.money).split(separator: " ")
                    amount = (entry.kind == .paymentOut ? "-" : "") + String(text[0])
                    currency = value.money.currency.code
                    issuer = value.issuer.hex
                }
                let cells = [
                    csvCell(stamp.string(from: date), isText: false), csvCell(kindNames[entry.kind] ?? "?"),
                    csvCell(Hex.encode(entry.counterparty), isText: false), csvCell(entry.category),
                    csvCell(entry.note), csvCell(amount, isText: false), csvCell(currency, isText: false),
                    csvCell(issuer, isText: false), String(entry.position),
                    csvCell(entry.statement?.id.hex ?? "", isText: false), csvCell(contacts[entry.counterparty] ?? ""),
                ]
                out += cells.joined(separator: ",") + "\r\n"
            }
            print(out, terminator: "")
            return .success
        }
        var currentDay = ""
        for entry in entries {
            let date = Date(timeIntervalSince1970: Double(entry.time) / 1000)
            let row = describe(entry)
            let day = dayFormat.string(from: date)
            if day != currentDay {
                print(day)
                currentDay = day
            }
            // Amounts are never cut: the column is 16 wide and grows for a longer one.
            let amount = (row["amount"] as? String).map { ($0.hasPrefix("-") ? "" : " ") + $0 } ?? ""
            let padded = amount.count >= 16 ? amount + " " : amount.padding(toLength: 16, withPad: " ", startingAt: 0)
            let who =
                entry.counterparty.isEmpty
                ? ""
                : "  " + (entry.kind == .paymentOut ? "to " : "from ")
                    + (contacts[entry.counterparty].map { "contact " + PeerText.quoted($0) + " " } ?? "")
                    + shortWalletID(entry.counterparty)
            print(
                "  \(timeFormat.string(from: date))  \(String(describing: row["kind"]!).padding(toLength: 15, withPad: " ", startingAt: 0))"
                    + "\(padded) \(row["category"] ?? "")" + who
                    + ((row["note"] as? String).map { "  " + PeerText.quoted($0) } ?? ""))
        }
        return .success
    }

    /// A wallet id as people compare it: the first and last four hex digits.
    static func shortWalletID(_ bytes: [UInt8]) -> String {
        let hex = Hex.encode(bytes).uppercased()
        return hex.count <= 8 ? hex : String(hex.prefix(4)) + "…" + String(hex.suffix(4))
    }

    /// The kinds as `history` names them (and `--kind` takes them).
    static let kindNames: [EntryKind: String] = [
        .deposit: "deposit", .paymentOut: "payment out", .paymentIn: "payment in", .reversal: "reversal",
        .budgetChange: "budget change", .keyEvent: "key event", .rollbackAccepted: "rollback accepted",
        .statementRefused: "refused", .conflictingStatement: "conflict", .confirmation: "confirmation",
        .settings: "settings", .mint: "mint", .redemption: "redemption",
    ]

    /// One entry of `history --json` (format `secure-history-v3`, whose `contact` the caller adds): every key on every row, null when the
    /// entry has no such value; the amount signed (negative for a payment out).
    static func jsonRow(_ entry: LedgerEntry) -> [String: Any] {
        [
            "position": entry.position, "id": entry.id.hex, "kind": kindNames[entry.kind] ?? "?", "time": entry.time,
            "amount": JSONOutput.nullable(
                entry.amount.map { JSONOutput.amount($0, negative: entry.kind == .paymentOut) }),
            "category": JSONOutput.nullable(entry.category.isEmpty ? nil : entry.category),
            "note": JSONOutput.nullable(entry.note.isEmpty ? nil : entry.note),
            "counterparty": JSONOutput.nullable(entry.counterparty.isEmpty ? nil : Hex.encode(entry.counterparty)),
            // The signed statement's id: the voucher id of a deposit, the transfer id of a payment or reversal
            // (scripts/crash-test matches the two ledgers by it).
            "statement": JSONOutput.nullable(entry.statement?.id.hex),
            "withoutProximity": entry.flags.contains(.withoutProximity),
            "budgetOverride": entry.flags.contains(.budgetOverride),
        ]
    }

    /// One entry as the text listing shows it.
    static func describe(_ entry: LedgerEntry) -> [String: Any] {
        let kinds = kindNames
        var row: [String: Any] = [
            "position": entry.position, "id": entry.id.hex, "kind": kinds[entry.kind] ?? "?",
        ]
        if let amount = entry.amount {
            row["amount"] = (entry.kind == .paymentOut ? "-" : "") + MoneyText.format(amount.money)
            row["issuer"] = amount.issuer.hex
        }
        if !entry.category.isEmpty { row["category"] = entry.category }
        if !entry.note.isEmpty { row["note"] = entry.note }
        if !entry.counterparty.isEmpty { row["counterparty"] = Hex.encode(entry.counterparty) }
        // The signed statement's id: the voucher id of a deposit, the transfer id of a payment or reversal
        // (scripts/crash-test matches the two ledgers by it).
        if let statement = entry.statement { row["statement"] = statement.id.hex }
        if entry.flags.contains(.withoutProximity) { row["proximity"] = "none (file transfer)" }
        if entry.flags.contains(.budgetOverride) { row["budgetOverride"] = true }
        return row
    }

    static func verify(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions, flags: appendingFlags.union(jsonFlag).union(["accept-rollback"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, arguments.flag("accept-rollback") ? .appending : .reading)
        // Checks every statement and every row, and records the outcome on the token: a failure locks the
        // wallet at every later open until a verification succeeds.
        let report = try wallet.verifyLedger()
        if arguments.flag("accept-rollback"), let lock = wallet.lockReason {
            guard report.isValid else {
                printError(
                    "secure: the ledger itself does not verify, so the rollback cannot be accepted: restore a good copy"
                )
                return .integrity
            }
            let entry = try wallet.acceptRollback()
            printError(
                "secure: accepted the rollback (\(lock)); recorded as signed entry \(entry.position) and re-anchored")
        }
        let problems = verificationProblems(report, wallet)
        if arguments.flag("json") {
            JSONOutput.print(
                .ledgerVerification,
                [
                    "walletID": wallet.walletID.hex, "valid": problems.isEmpty, "entries": report.entries,
                    "checkpoints": report.checkpoints, "problems": problems.map { "\($0)" },
                    "anchor": "\(wallet.anchorKind)",
                    "balances": report.state.balances.sorted { $0.key < $1.key }.map {
                        JSONOutput.amount($0.value, issuer: $0.key.issuer)
                    },
                ])
        } else {
            print("wallet      \(wallet.walletID.hex)")
            print("entries     \(report.entries), chained and replayed")
            print(
                "checkpoints \(report.checkpoints), signatures and states checked on \(ProcessInfo.processInfo.activeProcessorCount) cores"
            )
            print(
                "anchor      on the \(wallet.anchorKind)"
                    + (wallet.lockReason == nil ? ", consistent with the database" : ""))
            if problems.isEmpty {
                print("ledger OK")
            } else {
                print("ledger has PROBLEMS:")
                problems.forEach { print("  - \($0)") }
                print(
                    "What to do: restore the wallet folder (\(wallet.paths.directory)) from the newest backup, then run "
                        + "`secure ledger verify` again. The wallet refuses to spend until it verifies.")
            }
        }
        return problems.isEmpty ? .success : .integrity
    }
}

extension LedgerCommands {
    /// What `ledger verify` (and `report`) call problems: the verification's, and an anchor's lock.
    static func verificationProblems(_ report: LedgerVerifier.Report, _ wallet: Wallet) -> [String] {
        var problems = report.problems
        if let lock = wallet.lockReason, !isVerificationLock(lock) { problems.append("anchor: \(lock)") }
        return problems
    }

    /// Whether the lock is one this verification decides or reports itself: the one a failed verification
    /// left, or a tampered index (which the report names); the others are the anchor's.
    static func isVerificationLock(_ lock: WalletLockReason) -> Bool {
        switch lock {
        case .verificationFailed, .indexMismatch: true
        case .behindAnchor, .divergent, .anchorMissing: false
        }
    }

    /// Opens the wallet for appending, which repairs what reading commands only report: it upgrades an
    /// older schema, moves an anchor that a crash left behind forward over entries that verify, and writes
    /// the first anchor an interrupted `wallet init` missed. A rollback lock is not repaired here.
    static func repair(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .appending)
        if let lock = wallet.lockReason {
            printError("secure: the wallet is LOCKED and `ledger repair` does not lift it: \(lock)")
            return .integrity
        }
        print(
            "wallet \(wallet.walletID.hex): \(wallet.size) entries; the anchor on the \(wallet.anchorKind) "
                + "is at the latest checkpoint")
        return .success
    }

    static func prove(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions.union(["entry", "out"]), flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        guard let id = StatementID(hex: try arguments.required("entry")) else {
            throw UsageError("--entry takes an entry id: 32 hex digits, as `secure history --json` shows")
        }
        let wallet = try openWallet(arguments, .reading)
        try write(try LedgerProof.inclusion(of: id, in: wallet), arguments)
        return .success
    }

    static func consistency(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions.union(["from", "to", "out"]), flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        guard let from = UInt64(try arguments.required("from")), let to = UInt64(try arguments.required("to")) else {
            throw UsageError("--from and --to take checkpoint sizes (whole numbers)")
        }
        let wallet = try openWallet(arguments, .reading)
        try write(try LedgerProof.consistency(from: from, to: to, in: wallet), arguments)
        return .success
    }

    private static func write(_ proof: LedgerProof, _ arguments: Arguments) throws {
        let data = try JSONSerialization.data(withJSONObject: proof.json, options: [.sortedKeys, .prettyPrinted])
        if let out = arguments.value("out") {
            try DurableFile.write(Array(data) + [0x0a], to: out, mode: 0o644)
            printError("secure: wrote \(out)")
        } else {
            print(String(decoding: data, as: UTF8.self))
        }
    }

    static func verifyProof(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["pubkey", "key-events"], flags: [])
        let path = try arguments.positionals(1, "one proof FILE")[0]
        let proof = try LedgerProof(json: Data(try readFile(path, what: "the proof")))
        let verify: () throws -> String
        switch (arguments.value("pubkey"), arguments.value("key-events")) {
        case (let pem?, nil):
            let key = try P256.PublicKey(
                pem: String(decoding: try readFile(pem, what: "the public key"), as: UTF8.self))
            verify = { try proof.verify(key: key) }
        case (nil, let bundle?):
            let log = try AuditBundleFile.keyEventLog(json: Data(try readFile(bundle, what: "the key-event log")))
            verify = { try proof.verify(log: log) }
        default:
            throw WalletError(.invalidInput, "give exactly one of --pubkey PEM and --key-events FILE")
        }
        do {
            print("proof OK: " + (try verify()))
            return .success
        } catch let error as WalletError {
            printError("secure: proof INVALID: \(error)")
            return .verification
        }
    }
}
