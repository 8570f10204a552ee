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
          secure history [--json]                     entries grouped by date
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
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let assets = wallet.state.balances.sorted { $0.key < $1.key }
        let word = wallet.isIssuer ? "outstanding" : "issued by"
        if arguments.flag("json") {
            printJSON(
                [
                    "balances": assets.map { MoneyText.format($0.value) }, "entries": wallet.size,
                    "locked": wallet.lockReason != nil, "issuer": wallet.isIssuer,
                    "assets": assets.map {
                        [
                            "amount": MoneyText.format($0.value), "currency": $0.key.currency.code,
                            "issuer": $0.key.issuer.hex,
                        ]
                    },
                ] as [String: Any])
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

    static func history(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let dayFormat = DateFormatter()
        dayFormat.dateFormat = "yyyy-MM-dd"
        let timeFormat = DateFormatter()
        timeFormat.dateFormat = "HH:mm:ss"
        var rows: [[String: Any]] = []
        var currentDay = ""
        try wallet.ledger.forEachEntry { entry in
            let date = Date(timeIntervalSince1970: Double(entry.time) / 1000)
            let row = describe(entry)
            if arguments.flag("json") {
                rows.append(row.merging(["date": dayFormat.string(from: date), "time": entry.time]) { $1 })
                return
            }
            let day = dayFormat.string(from: date)
            if day != currentDay {
                print(day)
                currentDay = day
            }
            let amount = (row["amount"] as? String).map { ($0.hasPrefix("-") ? "" : " ") + $0 } ?? ""
            print(
                "  \(timeFormat.string(from: date))  \(String(describing: row["kind"]!).padding(toLength: 15, withPad: " ", startingAt: 0))"
                    + "\(amount.padding(toLength: 16, withPad: " ", startingAt: 0)) \(row["category"] ?? "")"
                    + ((row["note"] as? String).map { "  " + PeerText.quoted($0) } ?? ""))
        }
        if arguments.flag("json") { printJSON(rows) }
        return .success
    }

    static func describe(_ entry: LedgerEntry) -> [String: Any] {
        let kinds: [EntryKind: String] = [
            .deposit: "deposit", .paymentOut: "payment out", .paymentIn: "payment in", .reversal: "reversal",
            .budgetChange: "budget change", .keyEvent: "key event", .rollbackAccepted: "rollback accepted",
            .statementRefused: "refused", .conflictingStatement: "conflict", .confirmation: "confirmation",
            .settings: "settings", .mint: "mint", .redemption: "redemption",
        ]
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
            words, options: walletOptions, flags: appendingFlags.union(["accept-rollback"]))
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
        var problems = report.problems
        if let lock = wallet.lockReason, !isVerificationLock(lock) { problems.append("anchor: \(lock)") }
        if arguments.flag("json") {
            printJSON([
                "valid": problems.isEmpty, "entries": report.entries, "checkpoints": report.checkpoints,
                "problems": problems, "anchor": wallet.anchorKind,
                "balances": report.state.balances.sorted { $0.key < $1.key }.map { MoneyText.format($0.value) },
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
