import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureToken
import SecureWallet

/// `secure policy`, `secure wallet anchor` and `secure wallet allow`: the wallet's signed settings (docs/PROTOCOL.md, "Settings
/// entries"). Each change is a signed ledger entry; `wallet.json` and the database's tables decide nothing.
enum PolicyCommands {
    static let help = """
        Usage:
          secure policy set --offline-limit AMOUNT [--window day|week|month]
              The most this wallet credits from one payer in AMOUNT's currency within a rolling window
              (default day), offline. A peer payment above it is refused before `ready`, so the payer debits
              nothing; a transfer file above it is refused by policy, nothing is signed, and the same file is
              accepted once the window has room. The change is a signed ledger entry (PIN).
              Without one, a currency's limit is 150 of its major units a day (150.00 EUR).
          secure policy show [--json]
              The offline limits in force per currency, the default for the others, the anchor kind and the
              token safeguards given up (`secure wallet allow`).
        """

    static func set(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["offline-limit", "window"]), flags: appendingFlags)
        _ = try arguments.positionals(0, "no positional arguments")
        let amount = try MoneyText.parse(try arguments.required("offline-limit"))
        let windowName = arguments.value("window") ?? "day"
        guard let window = OfflineWindow(name: windowName) else {
            throw UsageError("--window must be day, week or month")
        }
        let wallet = try openWallet(arguments, .appending)
        let entry = try wallet.setOfflineLimit(OfflineLimit(amount: amount, window: window))
        print(
            "offline limit: at most \(MoneyText.format(amount)) from one payer per \(window) "
                + "(signed as entry \(entry.position))")
        return .success
    }

    static func show(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: walletFlags.union(jsonFlag))
        _ = try arguments.positionals(0, "no positional arguments")
        let wallet = try openWallet(arguments, .reading)
        let settings = wallet.settings
        let limits = settings.offlineLimits.values.sorted { $0.amount.currency.code < $1.amount.currency.code }
        if arguments.flag("json") {
            JSONOutput.print(
                .policy,
                [
                    "offlineLimits": limits.map {
                        [
                            "currency": $0.amount.currency.code, "limit": JSONOutput.amount($0.amount, issuer: nil),
                            "window": "\($0.window)",
                        ]
                    },
                    "defaultOfflineLimit": ["majorUnits": OfflineLimit.defaultMajorUnits, "window": "day"],
                    "anchor": "\(settings.anchorKind)",
                    "allow": settings.tokenAllowances.map(\.description).sorted(),
                ])
            return .success
        }
        for limit in limits {
            print("offline limit  \(MoneyText.format(limit.amount)) per payer per \(limit.window)")
        }
        print("offline limit  \(OfflineLimit.defaultMajorUnits) major units per payer per day in any other currency")
        print("anchor         \(settings.anchorKind)")
        let allowances = settings.tokenAllowances.map { "--allow-\($0)" }.sorted()
        print("allow          \(allowances.isEmpty ? "none" : allowances.joined(separator: " "))")
        return .success
    }

    /// `secure wallet anchor token|file`.
    static func anchor(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let name = try arguments.positionals(1, "token or file")[0]
        guard let kind = AnchorKind(name: name) else { throw UsageError("the anchor is token or file, not \(name)") }
        let wallet = try openWallet(arguments, .appending)
        try wallet.changeAnchor(to: kind)
        print("anchor kept by the \(kind) from entry \(wallet.size - 1) on (a signed settings entry)")
        if kind == .file {
            printError(
                "secure: a file anchor catches a rollback of the database alone, not of the whole wallet folder "
                    + "(docs/THREAT-MODEL.md)")
        }
        return .success
    }

    /// `wallet allow unenforced-pin|unproven-origin on|off`: a signed settings entry (docs/PROTOCOL.md, tags 5
    /// and 6). Turning one on is this command's own consent, so the session allows it for the signature
    /// that records it; turning one off is signed while it is still allowed.
    static func allow(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: walletOptions, flags: appendingFlags)
        let positional = try arguments.positionals(2, "unenforced-pin or unproven-origin, then on or off")
        guard let allowance = TokenAllowance(name: positional[0]) else {
            throw UsageError("the safeguards are unenforced-pin and unproven-origin, not \(positional[0])")
        }
        guard ["on", "off"].contains(positional[1]) else { throw UsageError("say on or off, not \(positional[1])") }
        let allowed = positional[1] == "on"
        let wallet = try openWallet(arguments, .appending)
        if allowed, let session = wallet.token as? TokenSession {
            session.policy = try tokenPolicy(arguments, allowances: wallet.settings.tokenAllowances.union([allowance]))
        }
        let entry = try wallet.setTokenAllowance(allowance, allowed: allowed)
        let what = allowed ? "given up" : "required"
        if let entry {
            print(
                "--allow-\(allowance): the safeguard is \(what) from entry \(entry.position) on (a signed settings entry)"
            )
        } else {
            print("--allow-\(allowance): the safeguard was already \(what); nothing was signed")
        }
        return .success
    }
}
