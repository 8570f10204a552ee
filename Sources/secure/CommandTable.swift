import Foundation

// The one table of `secure`'s commands. The dispatcher in main.swift and `secure --help` both read it, so
// the help cannot list a command the parser does not know, or miss one it does. A later man page and
// shell completion are meant to read it too.

/// One command: the words that name it, how it is called, what it does, and the function that runs it.
struct Command: Sendable {
    /// The section of `secure --help` the command is listed in, in this order.
    enum Section: String, CaseIterable {
        case tokens = "Tokens and keys"
        case wallet = "The wallet"
        case money = "Money"
        case peers = "Paying another wallet"
        case ledger = "The ledger, proofs and audits"
    }

    /// The words that name the command: `["balance"]`, `["ledger", "verify"]`.
    let words: [String]
    /// Its arguments and main options, as the top-level help shows them.
    let synopsis: String
    /// What it does, in one line.
    let summary: String
    let section: Section
    /// The detailed help that `secure WORDS --help` prints (shared by the commands of one group).
    let help: String
    /// Runs the command with the words after its name.
    let handler: @Sendable ([String]) throws -> ExitCode

    /// The command's name as typed: "ledger verify".
    var name: String { words.joined(separator: " ") }
}

enum CommandTable {
    static let commands: [Command] = [
        // Tokens and keys
        Command(words: ["token", "list"], synopsis: "[--token URI] [--json]",
                summary: "modules, tokens, flags and PIN state",
                section: .tokens, help: TokenCommands.help, handler: TokenCommands.list),
        Command(words: ["token", "init-demo"], synopsis: "--dir DIR [--label L]",
                summary: "make a SoftHSM token under DIR (demos and tests)", section: .tokens, help: TokenCommands.help,
                handler: TokenCommands.initDemo),
        Command(words: ["keys", "generate"], synopsis: "--token URI --label L",
                summary: "make a P-256 key on the token",
                section: .tokens, help: KeyCommands.help, handler: KeyCommands.generate),
        Command(words: ["keys", "list"], synopsis: "[--token URI] [--json]", summary: "the P-256 keys on the tokens",
                section: .tokens, help: KeyCommands.help, handler: KeyCommands.list),
        Command(words: ["keys", "export"], synopsis: "URI [--pem]", summary: "the key's SubjectPublicKeyInfo on stdout",
                section: .tokens, help: KeyCommands.help, handler: KeyCommands.export),
        Command(words: ["keys", "rotate"], synopsis: "[--destroy-old]",
                summary: "put the committed next key in force (pre-rotation)", section: .tokens, help: KeyCommands.help,
                handler: KeyCommands.rotate),
        Command(words: ["keys", "audit"], synopsis: "[--json]",
                summary: "findings per wallet key: attributes, usage, key-event log", section: .tokens,
                help: KeyCommands.help, handler: KeyCommands.audit),
        Command(words: ["sign"], synopsis: "--key URI FILE",
                summary: "a DER signature of FILE on stdout (label secure-file-v1)",
                section: .tokens, help: SignCommands.signHelp, handler: SignCommands.sign),
        Command(words: ["verify"], synopsis: "--pubkey PEM --sig SIG FILE",
                summary: "check a signature with OpenSSL only; no token needed", section: .tokens,
                help: SignCommands.verifyHelp, handler: SignCommands.verify),
        // The wallet
        Command(words: ["wallet", "init"], synopsis: "--token URI --backup-token URI",
                summary: "make the wallet: keys on both tokens, the ledger, the anchor", section: .wallet,
                help: WalletCommands.help, handler: WalletCommands.initialize),
        Command(words: ["wallet", "show"], synopsis: "[--json | --card]",
                summary: "the wallet id, key, token and anchor; --card for others", section: .wallet,
                help: WalletCommands.help, handler: WalletCommands.show),
        Command(words: ["wallet", "recover"], synopsis: "--backup-token URI --token NEWURI",
                summary: "after losing the token: rewrap the wallet to a new one", section: .wallet,
                help: WalletCommands.help, handler: WalletCommands.recover),
        Command(words: ["budget", "set"], synopsis: "CATEGORY LIMIT [--window W] [--hard-cap]",
                summary: "a category's limit per day, week or month", section: .wallet, help: BudgetCommands.help,
                handler: BudgetCommands.set),
        Command(words: ["budget", "show"], synopsis: "[--json]", summary: "each budget with this window's spending",
                section: .wallet, help: BudgetCommands.help, handler: BudgetCommands.show),
        // Money
        Command(words: ["balance"], synopsis: "[--json]", summary: "balances per currency, from the latest checkpoint",
                section: .money, help: LedgerCommands.help, handler: LedgerCommands.balance),
        Command(words: ["history"], synopsis: "[--json]", summary: "entries grouped by date", section: .money,
                help: LedgerCommands.help, handler: LedgerCommands.history),
        Command(words: ["pending"], synopsis: "[--json]", summary: "payments out without a receipt or reversal",
                section: .money, help: MoneyCommands.help, handler: MoneyCommands.pending),
        Command(words: ["issuer", "init"], synopsis: "--token URI [--label L]",
                summary: "make an issuer key on a token",
                section: .money, help: MoneyCommands.help, handler: MoneyCommands.issuerInit),
        Command(words: ["issuer", "trust"], synopsis: "PEM", summary: "trust an issuer's public key for deposits",
                section: .money, help: MoneyCommands.help, handler: MoneyCommands.issuerTrust),
        Command(words: ["mint"], synopsis: "--issuer KEYURI --to WALLET --amount A --out FILE",
                summary: "sign a voucher for a wallet", section: .money, help: MoneyCommands.help,
                handler: MoneyCommands.mint),
        Command(words: ["deposit"], synopsis: "FILE", summary: "credit a voucher, once", section: .money,
                help: MoneyCommands.help, handler: MoneyCommands.deposit),
        Command(words: ["spend"], synopsis: "--to WALLET --amount A --category C --out FILE",
                summary: "pay by file: a signed transfer with no proximity proof", section: .money,
                help: MoneyCommands.help, handler: MoneyCommands.spend),
        Command(words: ["accept"], synopsis: "FILE [--no-proximity]", summary: "credit a transfer file, idempotently",
                section: .money, help: MoneyCommands.help, handler: MoneyCommands.accept),
        Command(words: ["reverse"], synopsis: "REFUSAL_FILE --payee CARD",
                summary: "append the reversal a payee's signed refusal allows", section: .money,
                help: MoneyCommands.help, handler: MoneyCommands.reverse),
        Command(words: ["confirm"], synopsis: "RECEIPT_FILE --payee CARD",
                summary: "record the payee's countersigned receipt",
                section: .money, help: MoneyCommands.help, handler: MoneyCommands.confirm),
        // Paying another wallet
        Command(words: ["receive"], synopsis: "[--listen ADDR] [--request AMOUNT] [--count N]",
                summary: "wait for payers on loopback or a LAN, with ranging", section: .peers, help: PeerCommands.help,
                handler: PeerCommands.receive),
        Command(words: ["pay"], synopsis: "--to ADDR [--amount A --category C]",
                summary: "pay a receiving wallet, or answer its request", section: .peers, help: PeerCommands.help,
                handler: PeerCommands.pay),
        Command(words: ["retry"], synopsis: "[TRANSFER_ID] --to ADDR",
                summary: "re-send an unconfirmed payment, unchanged",
                section: .peers, help: PeerCommands.help, handler: PeerCommands.retry),
        // The ledger, proofs and audits
        Command(words: ["ledger", "verify"], synopsis: "[--json] [--accept-rollback]",
                summary: "replay and check every entry, checkpoint and the anchor", section: .ledger,
                help: LedgerCommands.help, handler: LedgerCommands.verify),
        Command(words: ["ledger", "repair"], synopsis: "",
                summary: "move a lagging anchor forward; upgrade an older schema", section: .ledger,
                help: LedgerCommands.help, handler: LedgerCommands.repair),
        Command(words: ["ledger", "prove"], synopsis: "--entry ID [--out FILE]",
                summary: "an inclusion proof of an entry in the latest checkpoint", section: .ledger,
                help: LedgerCommands.help, handler: LedgerCommands.prove),
        Command(words: ["ledger", "consistency"], synopsis: "--from N --to M [--out FILE]",
                summary: "a consistency proof between two checkpoints", section: .ledger, help: LedgerCommands.help,
                handler: LedgerCommands.consistency),
        Command(words: ["ledger", "verify-proof"], synopsis: "FILE (--pubkey PEM | --key-events FILE)",
                summary: "check a proof offline with public keys alone", section: .ledger, help: LedgerCommands.help,
                handler: LedgerCommands.verifyProof),
        Command(words: ["evidence", "export"], synopsis: "--out DIR",
                summary: "write the fork evidence this wallet holds",
                section: .ledger, help: EvidenceCommands.help, handler: EvidenceCommands.export),
        Command(words: ["evidence", "verify"], synopsis: "FILE", summary: "check fork evidence offline",
                section: .ledger, help: EvidenceCommands.help, handler: EvidenceCommands.verify),
        Command(words: ["audit", "export"], synopsis: "--out FILE [--from N --to M]",
                summary: "an audit bundle for offline checking", section: .ledger, help: AuditCommands.help,
                handler: AuditCommands.export),
        Command(words: ["audit", "verify"], synopsis: "FILE [--json]", summary: "check an audit bundle with no token",
                section: .ledger, help: AuditCommands.help, handler: AuditCommands.verify),
    ]

    /// What the command line asks for.
    enum Lookup {
        /// A command, with the words after its name.
        case command(Command, arguments: [String])
        /// The first word names a group of commands (`wallet`, `ledger`) but no command of it; the group's
        /// detailed help and the word that did not match, if any.
        case group(name: String, help: String, unknown: String?)
        /// No command starts with this word.
        case unknown(String)
    }

    /// Finds the command the words name: the one whose words are the longest prefix of them.
    static func lookup(_ words: [String]) -> Lookup {
        let matches = commands.filter { words.starts(with: $0.words) }
        if let command = matches.max(by: { $0.words.count < $1.words.count }) {
            return .command(command, arguments: Array(words.dropFirst(command.words.count)))
        }
        guard let first = words.first else { return .unknown("") }
        if let member = commands.first(where: { $0.words.count > 1 && $0.words[0] == first }) {
            let next = words.dropFirst().first
            return .group(name: first, help: member.help, unknown: next.flatMap { $0.hasPrefix("-") ? nil : $0 })
        }
        return .unknown(first)
    }

    /// The column where summaries start in `secure --help`.
    static let summaryColumn = 50

    /// `secure --help`: every command of the table by section, then every exit code.
    static var topHelp: String {
        var lines = ["secure: a payment wallet whose signing keys live only inside a PKCS#11 token.", "",
                     "Usage: secure COMMAND [OPTIONS]"]
        for section in Command.Section.allCases {
            lines += ["", section.rawValue + ":"]
            for command in commands where command.section == section {
                let call = "  " + command.name + (command.synopsis.isEmpty ? "" : " " + command.synopsis)
                if call.count + 2 <= summaryColumn {
                    lines.append(call.padding(toLength: summaryColumn, withPad: " ", startingAt: 0) + command.summary)
                } else {
                    lines.append(call)
                    lines.append(String(repeating: " ", count: summaryColumn) + command.summary)
                }
            }
        }
        lines += ["", """
            PINs: every command that logs in takes --pin-source SPEC, where SPEC is prompt (the default on a
            terminal), file:PATH, env:VAR or fd:N. A key URI's pin-source and pin-value are honoured too;
            pin-value is visible to other local users in the process list. A wrong PIN is never retried.

            Keys and tokens are named by RFC 7512 URIs, e.g. pkcs11:token=wallet;object=payments?module-name=softhsm2
            For SoftHSM tokens made by init-demo, export SOFTHSM2_CONF=DIR/softhsm2.conf first.

            Wallet commands take --wallet DIR (default $XDG_DATA_HOME/secure/wallet). Commands that change the
            wallet take its lock once the PIN is read, so two of them never run at once (exit code 9); commands
            that only read it (balance, history, pending, budget show, wallet show, ledger verify …) take no
            lock and are never kept waiting.
            """, "", "Exit codes:"]
        for code in ExitCode.allCases {
            lines.append("  " + String(code.rawValue).padding(toLength: 4, withPad: " ", startingAt: 0) + code.meaning)
        }
        lines += ["", "Run `secure COMMAND --help` for a command's options."]
        return lines.joined(separator: "\n")
    }
}
