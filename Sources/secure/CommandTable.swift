import Foundation

// The one table of `secure`'s commands. The dispatcher in main.swift and `secure --help` both read it, so
// the help cannot list a command the parser does not know, or miss one it does. The man page and the shell
// completions (ShellSupport.swift) read it too, with each command's options from its own parser.

/// One command: the words that name it, how it is called, what it does, and the function that runs it.
struct Command: Sendable {
    /// The section of `secure --help` the command is listed in, in this order.
    enum Section: String, CaseIterable {
        case tokens = "Tokens and keys"
        case wallet = "The wallet"
        case money = "Money"
        case peers = "Paying another wallet"
        case ledger = "The ledger, proofs and audits"
        case shell = "Help and the shell"
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
        group(
            .tokens, help: TokenCommands.help,
            [
                ("token list", "[--token URI] [--json]", "modules, tokens, flags and PIN state", TokenCommands.list),
                (
                    "token init-demo", "--dir DIR [--label L] [--json]",
                    "make a SoftHSM token under DIR (demos and tests)", TokenCommands.initDemo
                ),
            ]),
        group(
            .tokens, help: KeyCommands.help,
            [
                (
                    "keys generate", "--token URI --label L [--json]", "make a P-256 key on the token",
                    KeyCommands.generate
                ),
                (
                    "keys list", "[--token URI] [--wallet DIR] [--json]", "the P-256 keys on the tokens",
                    KeyCommands.list
                ),
                ("keys export", "URI [--pem]", "the key's SubjectPublicKeyInfo on stdout", KeyCommands.export),
                (
                    "keys rotate", "[--destroy-old] [--json]",
                    "put the committed next key in force (pre-rotation)", KeyCommands.rotate
                ),
                (
                    "keys audit", "[--json]", "findings per wallet key: attributes, usage, key-event log",
                    KeyCommands.audit
                ),
            ]),
        group(
            .tokens, help: SignCommands.signHelp,
            [
                (
                    "sign", "--key URI FILE", "a DER signature of FILE on stdout (label secure-file-v1)",
                    SignCommands.sign
                )
            ]),
        group(
            .tokens, help: SignCommands.verifyHelp,
            [
                (
                    "verify", "--pubkey PEM --sig SIG FILE",
                    "check a signature with OpenSSL only; no token needed", SignCommands.verify
                )
            ]),
        // The wallet
        group(
            .wallet, help: WalletCommands.help,
            [
                (
                    "wallet init", "--token URI --backup-token URI [--json]",
                    "make the wallet: keys on both tokens, the ledger, the anchor", WalletCommands.initialize
                ),
                (
                    "wallet show", "[--json | --card]",
                    "the wallet id, key, token and anchor; --card for others", WalletCommands.show
                ),
                (
                    "wallet recover", "--backup-token URI | --recovery-words, --token NEWURI",
                    "after losing the token: rewrap the wallet to a new one", WalletCommands.recover
                ),
                (
                    "wallet anchor", "token|file", "move the anchor, by a signed settings entry",
                    PolicyCommands.anchor
                ),
                (
                    "wallet allow", "unenforced-pin|unproven-origin on|off",
                    "give up or require a token safeguard, by a signed settings entry", PolicyCommands.allow
                ),
            ]),
        group(
            .wallet, help: BudgetCommands.help,
            [
                (
                    "budget set", "CATEGORY LIMIT [--window W] [--hard-cap]",
                    "a category's limit per day, week or month", BudgetCommands.set
                ),
                ("budget show", "[--json]", "each budget with this window's spending", BudgetCommands.show),
            ]),
        group(
            .wallet, help: PolicyCommands.help,
            [
                (
                    "policy set", "--offline-limit AMOUNT [--window W]",
                    "the most credited from one payer offline", PolicyCommands.set
                ),
                ("policy show", "[--json]", "offline limits and anchor kind in force", PolicyCommands.show),
            ]),
        // Money
        group(
            .money, help: LedgerCommands.help,
            [
                ("balance", "[--json]", "balances per currency, from the latest checkpoint", LedgerCommands.balance),
                (
                    "history", "[--json | --csv] [--since D] [--category C]",
                    "entries by date, filtered; CSV for accounting", LedgerCommands.history
                ),
            ]),
        group(
            .money, help: ReportCommands.help,
            [
                (
                    "report", "--html FILE [--since D] [--until D]",
                    "a self-contained HTML page: charts, payments, keys, verification", ReportCommands.report
                )
            ]),
        group(
            .money, help: MoneyCommands.help,
            [
                ("pending", "[--json]", "payments out without a receipt or reversal", MoneyCommands.pending),
                (
                    "issuer init", "--token URI --backup-token URI [--json]", "make an issuer's wallet",
                    MoneyCommands.issuerInit
                ),
                (
                    "issuer show", "[ID] [--json]", "an issuer's outstanding total per currency, its clearing",
                    MoneyCommands.issuerShow
                ),
                (
                    "issuer delegate-clearing", "--clearing-key URI --tls-key FILE --url URL",
                    "name the issuer's clearing in its key-event log", MoneyCommands.issuerDelegateClearing
                ),
                ("issuer trust", "CARD", "trust an issuer for deposits and payments", MoneyCommands.issuerTrust),
                ("issuer untrust", "ID", "stop taking an issuer's money", MoneyCommands.issuerUntrust),
                (
                    "mint", "--to CARD --amount A --out FILE",
                    "an issuer signs a voucher for a wallet", MoneyCommands.mint
                ),
                ("deposit", "FILE", "credit a voucher, once", MoneyCommands.deposit),
                (
                    "spend", "--to CARD|CONTACT --amount A --category C [--issuer ID] --out FILE",
                    "pay by file: a signed transfer with no proximity proof", MoneyCommands.spend
                ),
                ("accept", "FILE [--no-proximity]", "credit a transfer file, idempotently", MoneyCommands.accept),
                (
                    "reverse", "REFUSAL_FILE",
                    "append the reversal a payee's signed refusal allows", MoneyCommands.reverse
                ),
                (
                    "confirm", "RECEIPT_FILE", "record the payee's countersigned receipt",
                    MoneyCommands.confirm
                ),
            ]),
        // Paying another wallet
        group(
            .peers, help: PeerCommands.help,
            [
                (
                    "receive", "[--listen ADDR] [--request AMOUNT] [--count N] [--announce] [--json]",
                    "wait for payers on loopback or a LAN, with ranging", PeerCommands.receive
                ),
                (
                    "pay", "--to ADDR | --near | --till [--amount A --category C] [--json]",
                    "pay a receiving wallet, or answer its request", PeerCommands.pay
                ),
                (
                    "retry", "[TRANSFER_ID] --to ADDR | --till [--json]", "re-send an unconfirmed payment, unchanged",
                    PeerCommands.retry
                ),
            ]),
        group(
            .peers, help: TillCommands.help,
            [
                (
                    "till", "--amount AMOUNT [--countdown S] [--label L] [--repeat] [--json]",
                    "receive at a counter: lock an amount, announce it, count down", TillCommands.till
                )
            ]),
        group(
            .peers, help: ContactCommands.addHelp + "\n" + ContactListCommands.help,
            [
                (
                    "contact add", "--near | --listen ADDR | --to ADDR --name NAME",
                    "exchange contacts with a wallet held next to this one", ContactCommands.add
                ),
                ("contact list", "[--json]", "the contacts, verified or unconfirmed", ContactListCommands.list),
                (
                    "contact show", "NAME [--json]", "one contact: wallet id, keys, how verified",
                    ContactListCommands.show
                ),
                ("contact rename", "NAME NEW", "rename a contact (signed settings entry)", ContactListCommands.rename),
                (
                    "contact remove", "NAME [--yes]", "remove a contact; the ledger keeps the entry",
                    ContactListCommands.remove
                ),
            ]),
        // The ledger, proofs and audits
        group(
            .ledger, help: LedgerCommands.help,
            [
                (
                    "ledger verify", "[--json] [--accept-rollback]",
                    "replay and check every entry, checkpoint and the anchor", LedgerCommands.verify
                ),
                ("ledger repair", "", "move a lagging anchor forward; upgrade an older schema", LedgerCommands.repair),
                (
                    "ledger prove", "--entry ID [--out FILE]",
                    "an inclusion proof of an entry in the latest checkpoint", LedgerCommands.prove
                ),
                (
                    "ledger consistency", "--from N --to M [--out FILE]",
                    "a consistency proof between two checkpoints", LedgerCommands.consistency
                ),
                (
                    "ledger verify-proof", "FILE (--pubkey PEM | --key-events FILE)",
                    "check a proof offline with public keys alone", LedgerCommands.verifyProof
                ),
            ]),
        group(
            .money, help: SyncCommands.help,
            [
                (
                    "sync", "[--clearing URL] [--issuer ID] [--chunk-entries N]",
                    "send the ledger to the issuer's clearing; take its cosignature and list", SyncCommands.sync
                )
            ]),
        group(
            .ledger, help: EvidenceCommands.help,
            [
                ("evidence export", "--out DIR", "write the fork evidence this wallet holds", EvidenceCommands.export),
                (
                    "evidence fetch", "DIGEST --out FILE", "download listed evidence from the issuer's clearing",
                    EvidenceCommands.fetch
                ),
                ("evidence verify", "FILE", "check fork evidence offline", EvidenceCommands.verify),
            ]),
        group(
            .ledger, help: AuditCommands.help,
            [
                (
                    "audit export", "--out FILE [--from N --to M]",
                    "an audit bundle for offline checking", AuditCommands.export
                ),
                ("audit verify", "FILE [--json]", "check an audit bundle with no token", AuditCommands.verify),
            ]),
        // Help and the shell
        group(
            .shell, help: ShellCommands.completionHelp,
            [("completion", "bash|zsh|fish", "shell completion from this table", ShellCommands.completion)]),
        group(.shell, help: ShellCommands.manualHelp, [("manual", "", "the man page (roff)", ShellCommands.manual)]),
    ].flatMap { $0 }

    /// The commands of one section that share one detailed help: (words, synopsis, summary, handler) each,
    /// the words space-separated.
    private static func group(
        _ section: Command.Section, help: String,
        _ entries: [(String, String, String, @Sendable ([String]) throws -> ExitCode)]
    ) -> [Command] {
        entries.map { words, synopsis, summary, handler in
            Command(
                words: words.split(separator: " ").map(String.init), synopsis: synopsis, summary: summary,
                section: section, help: help, handler: handler)
        }
    }

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
        if words.first == "rehearse" { return .command(RehearsalCommands.command, arguments: Array(words.dropFirst())) }
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

    /// What `secure WORDS --help` prints for one command: the lines of its group's help about that command
    /// (each block that starts "  secure NAME", with the lines under it), after the help's heading, and a
    /// pointer to the group's other commands. A help of one command, or one whose blocks do not name the
    /// command, is printed whole.
    static func help(for command: Command) -> String {
        let siblings = commands.filter { $0.help == command.help }
        let lines = command.help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        /// The command a block's first line names: the longest sibling name after "  secure ".
        func owner(_ line: String) -> String? {
            guard line.hasPrefix("  secure ") else { return nil }
            let call = line.dropFirst("  secure ".count)
            return siblings.map(\.name).filter { call == $0 || call.hasPrefix($0 + " ") }.max { $0.count < $1.count }
                ?? ""
        }
        var heading: [String] = []
        var own: [String] = []
        var current: String?
        for line in lines {
            if let name = owner(line) { current = name }
            if current == nil {
                heading.append(line)
            } else if current == command.name {
                own.append(line)
            }
        }
        guard siblings.count > 1, !own.isEmpty else { return command.help }
        let others = siblings.filter { $0.name != command.name }.map { "secure " + $0.name }
        return (heading + own + ["", "Also under this help: " + others.joined(separator: ", ") + "."])
            .joined(separator: "\n")
    }

    /// The column where summaries start in `secure --help`.
    static let summaryColumn = 50

    /// `secure --help`: every command of the table by section, then every exit code.
    static var topHelp: String {
        var lines = [
            "secure: a payment wallet whose signing keys live only inside a PKCS#11 token.", "",
            "Usage: secure COMMAND [OPTIONS]",
        ]
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
        lines += [
            "",
            """
            PINs: every command that logs in takes --pin-source SPEC, where SPEC is prompt (the default on a
            terminal), file:PATH, env:VAR or fd:N. A key URI's pin-source and pin-value are honoured too;
            pin-value is visible to other local users in the process list. A wrong PIN is never retried.

            Keys and tokens are named by RFC 7512 URIs, e.g. pkcs11:token=wallet;object=payments?module-name=softhsm2
            For SoftHSM tokens made by init-demo, export SOFTHSM2_CONF=DIR/softhsm2.conf first.

            SECURE_WALLET and SECURE_PIN_SOURCE (or the same KEY=VALUE lines in $XDG_CONFIG_HOME/secure/config)
            stand for --wallet and --pin-source; a flag wins over both, the environment over the file.

            Wallet commands take --wallet DIR (default $XDG_DATA_HOME/secure/wallet). Commands that change the
            wallet take its lock once the PIN is read, so two of them never run at once (exit code 9, or give
            --wait SECONDS to queue for it); commands
            that only read it (balance, history, report, pending, budget show, wallet show, ledger verify …) take no
            lock and are never kept waiting.
            """, "", "Exit codes:",
        ]
        for code in ExitCode.allCases {
            lines.append("  " + String(code.rawValue).padding(toLength: 4, withPad: " ", startingAt: 0) + code.meaning)
        }
        lines += [
            "",
            "Run `secure COMMAND --help` (or -h, or `secure help COMMAND`) for a command's options; `secure --version`"
                + " for the version.",
        ]
        return lines.joined(separator: "\n")
    }
}
