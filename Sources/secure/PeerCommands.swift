import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// The person at the terminal: prompts on /dev/tty with a timeout, or `--yes` for scripts; events as text
/// lines or, with `--json`, one JSON object per line.
final class TerminalPerson: PeerInterface {
    let arguments: Arguments
    let tokenURI: PKCS11URI
    let tokenLabel: String
    let json: Bool
    let yes: Bool
    let category: String?
    /// `--expect-payee` / `--expect-payer`: the only wallet this session may pay or be paid by. The peer's
    /// wallet id is the one its key-event log proves for the key that signs its measurement, so a stranger
    /// at the address is declined before any PIN or debit.
    let expectedPeer: WalletID?
    /// `--max-amount`: the most a request may ask for and still be approved, with `--yes` or at a prompt.
    let maxAmount: Money?
    /// This wallet's contacts by wallet id, to name them at the prompt ("contact NAME (proof pending)").
    var contacts: [WalletID: String] = [:]
    /// `pay --to NAME`: the contact's wallet id, the only wallet this session may pay.
    var expectedContact: WalletID?
    /// The contact the person approved in this session: named "verified" once its measurement checked.
    private var approvedContact: String?
    /// `pay --till`: the till's name as picked (its announced instance, peer text), shown with the amount; in
    /// till mode this wallet's own refusals are "refused by the payer's wallet" (code 21) and the payer has the
    /// till's decision deadline.
    var till: String?
    /// When the till's request arrived: the payer's prompts close `TillLimits.decisionSeconds` minus a margin
    /// after it.
    private var requestArrived: Date?
    /// One lock for every session's output, so two sessions' event lines never interleave.
    private static let output = NSLock()
    /// The session's channel code (the SAS), named in each question so a person with two sessions open knows
    /// which one asks; nil before the channel is up.
    private(set) var sas: String?
    /// One person, one prompt at a time: every question and every PIN read of every session of this process
    /// takes this lock first. A session that finds it taken waits with its own timer running (its decision
    /// timeout) and then fails "busy", so two sessions never share the terminal and a PIN read is never
    /// interleaved with another session's question.
    static let promptQueue = NSLock()
    /// How long a question or a PIN read may wait, the wait for the prompt queue included:
    /// `PeerLimits.decisionTimeoutSeconds`, lowered only by SECURE_TEST_RECEIVER_LIMITS' `decision-seconds`.
    nonisolated(unsafe) static var decisionSeconds = Double(PeerLimits.decisionTimeoutSeconds)

    init(arguments: Arguments, tokenURI: PKCS11URI, tokenLabel: String) throws {
        self.arguments = arguments
        self.tokenURI = tokenURI
        self.tokenLabel = tokenLabel
        json = arguments.flag("json")
        yes = arguments.flag("yes")
        category = arguments.value("category")
        expectedPeer = try (arguments.value("expect-payee") ?? arguments.value("expect-payer")).map(Self.walletID)
        maxAmount = try arguments.value("max-amount").map { try MoneyText.parse($0) }
    }

    /// The same person for one session, whose questions name that session's channel code.
    func session(sas: String) throws -> TerminalPerson {
        let person = try TerminalPerson(arguments: arguments, tokenURI: tokenURI, tokenLabel: tokenLabel)
        person.sas = sas
        person.contacts = contacts
        person.expectedContact = expectedContact
        person.till = till
        return person
    }

    /// A wallet id from 64 hex digits or from a wallet card file.
    static func walletID(_ text: String) throws -> WalletID {
        if let id = WalletID(hex: text.lowercased()) { return id }
        return try readWalletCard(text).walletID
    }

    func decide(_ approval: Approval) -> PeerDecision {
        if let expectedPeer = expectedPeer ?? expectedContact, approval.peer.walletID != expectedPeer {
            event(
                "refused", ["reason": "unexpected-peer", "walletID": approval.peer.walletID.hex],
                "the other side is wallet \(approval.peer.walletID.hex), not \(expectedPeer.hex) as expected; "
                    + (till == nil ? "declined" : "refused"))
            return till == nil ? .decline : .refuse
        }
        if let maxAmount, approval.amount.currency != maxAmount.currency || approval.amount.money > maxAmount {
            event(
                "refused", ["reason": "over-max-amount"],
                "\(MoneyText.format(approval.amount)) is more than --max-amount \(MoneyText.format(maxAmount)); "
                    + (till == nil ? "declined" : "refused")
            )
            return till == nil ? .decline : .refuse
        }
        // Peer text (the name it chose, the note) goes on lines of its own, escaped; the question line, printed
        // last, holds only what comes from this wallet: the amount, the fingerprint, a name given here and the
        // channel code (so with two sessions open, the person knows which one asks).
        let fingerprint = PeerDriver.shortFingerprint(approval.peer.key)
        // A contact is named by the name given here, "proof pending" until its signed measurement checks under
        // the key its key-event log has in force; any other wallet is "unverified".
        let contact = contacts[approval.peer.walletID]
        approvedContact = contact
        let standing =
            contact.map { "contact " + PeerText.escaped($0) + " (proof pending)" }
            ?? (till == nil ? "unverified" : "unverified till")
        let who =
            fingerprint + " " + standing + (approval.knownName.map { " (" + PeerText.escaped($0) + ")" } ?? "")
            + (sas.map { ", code \($0)" } ?? "")
        var details =
            "  \(approval.role == .payee ? "payer" : "payee"):  \(fingerprint), calls itself "
            + PeerText.quoted(approval.peer.displayName, limit: PeerHello.displayNameByteCountMax) + "\n"
        if !approval.note.isEmpty { details += "  note:   " + PeerText.quoted(approval.note) + "\n" }
        let amount = MoneyText.format(approval.amount)
        var question: String
        switch approval.role {
        case .payee: question = "Accept \(amount) from \(who)?"
        case .payer:
            question =
                "Pay \(amount) to " + (till.map { "till " + PeerText.escaped($0, limit: 40) + ", " } ?? "") + "\(who)?"
        }
        var overriding = false
        switch approval.check {
        case .alert(let usage)?:
            question = "Budget alert: \(usage.category) goes above 80% of \(MoneyText.format(usage.limit)). " + question
        case .overBudget(let usage)?:
            guard arguments.flag("override-budget") || !yes else {
                event(
                    "refused", ["reason": "over-budget"],
                    "over the \(usage.category) budget; pass --override-budget to pay anyway")
                return till == nil ? .decline : .refuse
            }
            question =
                "OVER BUDGET: \(usage.category) would exceed \(MoneyText.format(usage.limit)); pay anyway (recorded)? "
                + question
            overriding = true
        default: break
        }
        if !approval.needsConfirmation {
            event(
                "approval", ["question": question],
                details + "\(question) (your own request, answered exactly: the PIN alone approves)")
            return .approve(overridingBudget: overriding)
        }
        if yes {
            event("approval", ["question": question], details + "\(question) yes (--yes)")
            return .approve(overridingBudget: overriding)
        }
        guard
            let answer = Self.ask(details + question + " [y/N] ", timeoutSeconds: promptSeconds)
        else {
            event("approval", ["answer": "none"], "no answer (or another session held the prompt: busy); declined")
            return .decline
        }
        return answer.lowercased() == "y" || answer.lowercased() == "yes"
            ? .approve(overridingBudget: overriding) : .decline
    }

    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        if let till { return tillCategory(for: request, from: peer, till: till) }
        if let category { return .category(category) }
        guard !yes,
            let answer = Self.ask(
                (request.note.isEmpty ? "" : "  note:   " + PeerText.quoted(request.note) + "\n")
                    + "\(PeerDriver.shortFingerprint(peer.key)) requests \(MoneyText.format(request.amount)). Category: "
            ), !answer.isEmpty
        else { return .decline }
        return .category(answer)
    }

    /// `pay --till`: the expected payee is checked before the amount is shown (another wallet is refused,
    /// code 21); then the till's screen: the amount, the till's name, the channel code, its fingerprint and
    /// whether it is a contact, with the decision deadline. The category is `--category` or "till".
    private func tillCategory(for request: PaymentRequest, from peer: PeerIdentity, till: String) -> CategoryChoice {
        requestArrived = Date()
        if let expected = expectedPeer ?? expectedContact, peer.walletID != expected {
            event(
                "refused", ["reason": "unexpected-peer", "walletID": peer.walletID.hex],
                "NOT THE EXPECTED TILL: wallet \(peer.walletID.hex) is not \(expected.hex); refused, nothing moved")
            return .refuse
        }
        let fingerprint = PeerDriver.shortFingerprint(peer.key)
        let standing = contacts[peer.walletID].map { "contact " + PeerText.escaped($0) + " (proof pending)" }
        var screen =
            "  till:    " + PeerText.quoted(till, limit: 40) + "\n"
            + "  amount:  \(MoneyText.format(request.amount))\n"
        if !request.note.isEmpty { screen += "  note:    " + PeerText.quoted(request.note) + "\n" }
        if peer.displayName != till {
            screen +=
                "  calls itself " + PeerText.quoted(peer.displayName, limit: PeerHello.displayNameByteCountMax) + "\n"
        }
        screen += "  code:    \(sas ?? "-")\n"
        screen += "  wallet:  \(fingerprint) " + (standing ?? "unverified till") + "\n"
        screen += "  decide within \(Int(promptSeconds.rounded(.down))) s (the till's deadline)"
        event("request", ["till": till, "fingerprint": fingerprint], amounts: ["amount": request.amount], screen)
        return .category(category ?? "till")
    }

    /// How long a prompt may stay open: the decision wait, or in till mode what is left of the payer's part of
    /// the till's decision deadline.
    private var promptSeconds: Double {
        guard till != nil, let arrived = requestArrived else { return Self.decisionSeconds }
        // A tenth of a second past the payer's own deadline: an unanswered prompt then ends as "too late"
        // (failure 3) on both sides, not as a decline.
        let budget = Double(TillLimits.decisionMilliseconds - TillLimits.payerDecisionMarginMilliseconds) / 1000 + 0.1
        return max(0, min(Self.decisionSeconds, budget + arrived.timeIntervalSinceNow))
    }

    /// The till's live countdown: one line redrawn on a terminal, a line each 10 s (and the last 5) otherwise.
    func showCountdown(instance: String, amount: AssetAmount, secondsLeft: Int64) {
        let text = "till \(instance): \(MoneyText.format(amount)), \(secondsLeft) s left"
        if !json, isatty(STDOUT_FILENO) == 1 {
            Self.output.withLock {
                guard !Self.promptOpen else { return }
                print("\r\u{1B}[2K" + text, terminator: "")
                Self.liveLineOpen = true
                fflush(nil)
            }
            return
        }
        guard secondsLeft % 10 == 0 || secondsLeft <= 5 else { return }
        event(
            "till", ["state": "countingDown", "instance": instance, "secondsLeft": "\(secondsLeft)"],
            amounts: ["amount": amount], text)
    }

    func readPIN() throws -> PIN {
        let source: PINSource
        if let spec = arguments.value("pin-source") {
            source = try PINSource(spec: spec)
        } else if let fromURI = try PINSource(uri: tokenURI) {
            source = fromURI
        } else {
            source = .prompt
        }
        let deadline = Date(timeIntervalSinceNow: Self.decisionSeconds)
        guard Self.promptQueue.lock(before: deadline) else {
            throw WalletError(.refused, "busy: another session kept the prompt for the whole PIN wait; declined")
        }
        defer { Self.promptQueue.unlock() }
        Self.setPromptOpen(true)
        defer { Self.setPromptOpen(false) }
        return try source.read(prompt: "PIN for token \"\(tokenLabel)\": ")
    }

    /// Whether the last thing written to the terminal is the live distance line, without its newline.
    nonisolated(unsafe) private static var liveLineOpen = false
    /// While a question or PIN read is open, other sessions' event lines wait here (when they would go to the
    /// same terminal), so nothing lands between the question and the answer: a peer that connects while the
    /// person reads a prompt cannot put its own code or fingerprint under the question.
    nonisolated(unsafe) private static var promptOpen = false
    nonisolated(unsafe) private static var deferred: [String] = []
    /// The most lines kept back during one prompt; later ones are counted, not kept.
    static let deferredLineCountMax = 200
    nonisolated(unsafe) private static var deferredDropped = 0

    /// Marks a prompt open (events to the terminal wait) or closed (they are written, in order).
    private static func setPromptOpen(_ open: Bool) {
        output.withLock {
            endLiveLine()
            promptOpen = open
            if !open {
                deferred.forEach { print($0) }
                if deferredDropped > 0 { print("(\(deferredDropped) more lines while the prompt was open)") }
                deferred = []
                deferredDropped = 0
            }
            fflush(nil)
        }
    }

    /// The keys of each event's JSON line besides `format`, `event` and `text` (format `secure-peer-event-v4`):
    /// each line of one event has all of its event's keys, null when that occurrence has no value. Values are
    /// strings, except amounts (`amount`, `balance`: amount objects) and `integerKeys`. docs/schemas holds the
    /// schema.
    static let eventKeys: [String: [String]] = [
        "approval": ["question", "answer"], "cancelled": [], "channel": ["sas", "sasWords"],
        "connection": ["source", "error", "refused", "dropped"], "credit": ["position", "amount"],
        "debit": ["position", "transferID", "amount"], "distance": ["millimetres"], "error": ["error"],
        "finished": ["outcome", "balance"], "keyEvents": ["outcome"], "link": ["error"], "listening": ["address"],
        "measured": ["median", "spread", "source"],
        "peer": ["fingerprint", "name", "walletID", "banned", "keySequence"],
        "pin": ["expired", "error"], "protocol": ["error"], "receipt": ["transferID"],
        "refused": ["reason", "walletID", "outcome", "address"], "reversal": ["reason", "outcome"],
        "stopping": ["signal"],
        "timeout": ["wait"], "warning": ["ranging"],
        "announced": ["instance", "host", "port", "addresses"], "found": ["choice", "instance", "address", "port"],
        "ignored": ["instance", "reason"], "contact": ["contact", "verification"], "probe": ["answered"],
        "till": ["state", "instance", "outcome", "settled", "secondsLeft", "amount"],
        "request": ["till", "fingerprint", "amount"],
    ]

    /// The keys whose values are counts or positions, printed as JSON integers (SecurePeer passes every field
    /// as text).
    static let integerKeys: Set<String> = [
        "position", "millimetres", "median", "spread", "expired", "keySequence", "signal", "port", "choice",
        "secondsLeft",
    ]

    /// An event's JSON line.
    static func jsonLine(
        _ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String
    ) -> String {
        var object: [String: Any] = ["event": name, "text": text]
        for key in eventKeys[name] ?? [] { object[key] = NSNull() }
        for (key, value) in fields { object[key] = integerKeys.contains(key) ? Int64(value) ?? value : value }
        for (key, amount) in amounts { object[key] = JSONOutput.amount(amount) }
        return CommandLineSupport.jsonLine(JSONOutput.document(.peerEvent, object))
    }

    func event(_ name: String, _ fields: [String: String], _ text: String) {
        event(name, fields, amounts: [:], text)
    }

    func event(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String) {
        // The debit (payer) and the credit (payee) come only after the other side's signed measurement, which
        // covers this channel's binding, verified under its key: the contact is now shown as verified.
        if name == "debit" || name == "credit", let contact = approvedContact {
            approvedContact = nil
            show(
                "contact", ["contact": contact, "verification": "verified"],
                amounts: [:],
                "contact \(PeerText.escaped(contact)) verified: its signed measurement checks under its key in force")
        }
        show(name, fields, amounts: amounts, text)
    }

    private func show(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String) {
        // On a terminal, the distance is one line redrawn in place, never while a prompt is open (a prompt
        // holds the queue; a reading that finds it taken is not drawn). Everywhere else each reading is a line.
        if name == "distance", !json, isatty(STDOUT_FILENO) == 1 {
            guard Self.promptQueue.try() else { return }
            defer { Self.promptQueue.unlock() }
            Self.output.withLock {
                print("\r\u{1B}[2K" + text, terminator: "")
                Self.liveLineOpen = true
                fflush(nil)
            }
            return
        }
        Self.output.withLock {
            if Self.promptOpen, isatty(STDOUT_FILENO) == 1 {
                let line = json ? Self.jsonLine(name, fields, amounts: amounts, text) : text
                if Self.deferred.count < Self.deferredLineCountMax {
                    Self.deferred.append(line)
                } else {
                    Self.deferredDropped += 1
                }
                return
            }
            Self.endLiveLine()
            print(json ? Self.jsonLine(name, fields, amounts: amounts, text) : text)
            // Each event is a line a script may be waiting for (`listening`), also when stdout is a file or pipe.
            fflush(nil) // nil: every output stream; naming `stdout` is not concurrency-safe in Swift 6
        }
    }

    /// Ends the live distance line, so what comes next starts on a line of its own. Callers hold `output`.
    private static func endLiveLine() {
        if liveLineOpen {
            print("")
            liveLineOpen = false
        }
    }

    /// Asks on the terminal, waiting at most `timeoutSeconds` for a line, the wait for the prompt queue
    /// included: nil (declined) when another session holds the prompt that long.
    static func ask(_ question: String, timeoutSeconds: Double = decisionSeconds) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        guard promptQueue.lock(before: deadline) else { return nil }
        defer { promptQueue.unlock() }
        setPromptOpen(true)
        defer { setPromptOpen(false) }
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 else { return nil }
        defer { close(terminal) }
        _ = question.withCString { write(terminal, $0, strlen($0)) }
        var descriptor = pollfd(fd: terminal, events: Int16(POLLIN), revents: 0)
        let remaining = max(0, deadline.timeIntervalSinceNow)
        guard poll(&descriptor, 1, Int32(remaining * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(terminal, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A note or name from the command line, which other wallets will show: text with a control or format
/// character (an escape sequence, a bidi override, a zero-width space) is refused, so this wallet never
/// sends what a peer's screen would have to escape.
func plainText(_ arguments: Arguments, _ option: String) throws -> String? {
    guard let text = arguments.value(option) else { return nil }
    guard !PeerText.hasUnsafeCharacters(text) else {
        throw UsageError(
            "--\(option) holds a control or format character (\(PeerText.escaped(text, limit: 40))); "
                + "use plain text on one line")
    }
    guard text.utf8.count <= LedgerEntry.noteByteCountMax else {
        throw UsageError("--\(option) is \(text.utf8.count) bytes; at most \(LedgerEntry.noteByteCountMax)")
    }
    return text
}

enum PeerCommands {
    static let help = """
        Usage:
          secure receive [--listen ADDR] [--request AMOUNT --note TEXT] [--name NAME] [--count N] [--sessions N]
                         [--for SECONDS] [--announce]
          secure pay --to ADDR --amount AMOUNT --category C [--note TEXT] [--override-budget] [--name NAME]
          secure pay --near [--pick N] [--near-seconds S] --amount AMOUNT --category C ...
          secure pay --to ADDR [--category C] [--max-amount A]   answer the receiver's request
          secure retry [TRANSFER_ID] --to ADDR            re-send an unconfirmed payment, unchanged
        ADDR is HOST:PORT or PORT (default 127.0.0.1:7464). Both sides show the channel's six-digit code, the
        other side's key fingerprint and the live distance. Each person approves once, right before their
        wallet's steps, with the PIN; the PIN is wiped after those steps (60 s at most).
        Ranging: --allow-simulated-ranging with --distance MM (simulated, refused by default and shown loudly),
        or --ranging-file PATH (one millimetre reading per line: a file, a pipe, a serial device).
        For scripts: --yes with --pin-source; --json prints events as lines. --expect-payee CARD|WALLET-ID
        (pay) and --expect-payer CARD|WALLET-ID (receive) decline any other wallet before the approval PIN; answering a
        request with --yes needs --max-amount AMOUNT, the most it approves.
        Nearby: `receive --announce` (with --count or --for) announces _secure-pay._tcp by DNS-SD through the
        system's Avahi daemon: a random name, no wallet identity; without --listen it listens on every
        interface. `pay --near` lists the receivers that answer and pays the one picked (--pick N, or asked;
        with --yes it needs --expect-payee: anyone on the network can announce, under any name).
        A receiver serves until SIGINT or SIGTERM (live sessions may finish; a second signal ends them),
        until --for SECONDS passed,
        until --count N payments were received, or until --sessions N sessions ended, whatever their outcome
        (then it exits with the first failed session's code). A failed connection never ends it.
        """

    static let options: Set<String> = walletOptions.union([
        "listen", "to", "amount", "category", "note", "request", "name",
        "distance", "ranging-file", "count", "sessions", "seed", "issuer", "expect-payee", "expect-payer", "max-amount",
        "for", "pick", "near-seconds",
    ])
    static let flags: Set<String> = appendingFlags.union(jsonFlag).union([
        "yes", "allow-simulated-ranging", "override-budget", "announce", "near",
    ])

    static func address(_ text: String?) throws -> (host: String, port: UInt16) {
        let value = text ?? "127.0.0.1:7464"
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        let host = parts.count == 2 ? String(parts[0]) : "127.0.0.1"
        guard let port = UInt16(parts.last ?? ""), parts.count <= 2 else {
            throw UsageError("an address is HOST:PORT or PORT, not \"\(value)\"")
        }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    static func ranging(_ arguments: Arguments, person: TerminalPerson) throws -> (RangingConfiguration, RangingPolicy)
    {
        let allow = arguments.flag("allow-simulated-ranging")
        if let path = arguments.value("ranging-file") {
            // Checked before anything else, so a typo is a usage error and not a failed payment after both
            // approvals. A FIFO or a character device (a UWB board's serial port) is opened only when ranging.
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw UsageError("cannot use --ranging-file \(path): \(String(cString: strerror(errno)))")
            }
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFIFO || kind == S_IFCHR, access(path, R_OK) == 0 else {
                throw UsageError(
                    "cannot use --ranging-file \(path): not a readable file, FIFO or serial device")
            }
            return (.external(path: path), RangingPolicy(allowsSimulated: allow))
        }
        guard allow else {
            throw UsageError(
                "no ranging source: give --ranging-file PATH (a UWB board's readings), or --allow-simulated-ranging "
                    + "with --distance MM for a demo; simulated ranging proves nothing about distance")
        }
        guard let distance = UInt32(arguments.value("distance") ?? "400") else {
            throw UsageError("--distance takes millimetres")
        }
        person.event(
            "warning", ["ranging": "simulated"],
            "WARNING: SIMULATED RANGING (\(distance) mm) is allowed in this session; "
                + "a simulated distance proves nothing about where the other wallet is")
        let seed = UInt64(arguments.value("seed") ?? "") ?? UInt64.random(in: 0...UInt64.max)
        return (.simulated(seed: seed, distanceMillimetres: distance), RangingPolicy(allowsSimulated: true))
    }

    /// Opens the wallet with its PIN, then locks the token until an approval needs it again.
    static func openLockedWallet(_ arguments: Arguments) throws -> (Wallet, TerminalPerson) {
        let wallet = try openWallet(arguments, .appending)
        wallet.token.lock()
        let person = try TerminalPerson(
            arguments: arguments, tokenURI: try PKCS11URI(wallet.metadata.token), tokenLabel: wallet.token.label)
        if let lock = wallet.lockReason { throw WalletError(.locked, "the wallet is locked: \(lock)") }
        return (wallet, person)
    }

    static func exitCode(_ outcome: PeerOutcome) -> ExitCode {
        switch outcome {
        case .paid, .received: return .success
        case .unconfirmed: return .pending
        case .reversed, .refusedTransfer, .failed: return .refused
        }
    }

    static func receive(_ words: [String]) throws -> ExitCode {
        try receive(try Arguments(words, options: options, flags: flags))
    }

    /// `pay` and `retry` also take `--till` and its options (TillCommands).
    static let payOptions = options.union(["label", "rehearse"])
    static let payFlags = flags.union(["till"])

    static func pay(_ words: [String]) throws -> ExitCode {
        try pay(try Arguments(words, options: payOptions, flags: payFlags), retrying: nil)
    }

    static func retry(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: payOptions, flags: payFlags)
        let pending = try arguments.positionals(
            arguments.positional.count <= 1 ? arguments.positional.count : 1,
            "at most one TRANSFER_ID")
        return try pay(arguments, retrying: .some(pending.first))
    }

    /// `secure receive` opens the wallet for appending and holds its lock while it listens: its sessions
    /// append credits from the wallet state it opened with, so no other process may append meanwhile (a
    /// `secure spend` gets "wallet busy"). Reading commands take no lock, so they run while it listens and
    /// while a session appends, and each sees the ledger before or after a credit.
    ///
    /// It serves until SIGINT or SIGTERM, until `--count` payments were received, or until `--sessions`
    /// sessions ended whatever their outcome (scripts and tests that want one session's exit code). Stopping,
    /// it accepts no more connections and waits a bounded time for live sessions to finish. A connection that
    /// fails (garbage, silence, a dropped link) is logged and never ends it; see `PeerServer` for the caps.
    static func receive(_ arguments: Arguments) throws -> ExitCode {
        _ = try arguments.positionals(0, "no positional arguments")
        let (host, port) = try address(try announceListenAddress(arguments))
        let serveSeconds = try serveSeconds(arguments)
        let count = try arguments.value("count").map { _ in try arguments.integer("count", default: 1, max: 1_000_000) }
        let sessionCount = try arguments.value("sessions").map { _ in
            try arguments.integer("sessions", default: 1, max: 1_000_000)
        }
        let limits = try listenerLimits()
        let requested = try arguments.value("request").map { try MoneyText.parse($0) }
        let name = try plainText(arguments, "name") ?? "receiver"
        let note = try plainText(arguments, "note") ?? ""
        let (wallet, person) = try openLockedWallet(arguments)
        let request = try requested.map {
            try PaymentRequest(
                requestID: .random(), amount: try wallet.requestAsset(for: $0, issuer: arguments.value("issuer")),
                note: note)
        }
        let (rangingSource, policy) = try ranging(arguments, person: person)
        person.contacts = try contactNames(wallet)
        let discoveryKeys = try contactDiscoveryKeys(wallet)
        let listener = try TCPListener(host: host, port: port)
        defer { listener.close() }
        let server = PeerServer(listener: listener, limits: limits) { person.event($0, $1, $2) }
        let signals = stopOnSignals(server, person: person)
        defer { signals.forEach { $0.cancel() } }
        person.event("listening", ["address": "\(host):\(listener.port)"], "listening on \(host):\(listener.port)")
        let announcer =
            try arguments.flag("announce")
            ? announce(
                host: host, port: listener.port, person: person,
                record: .fresh(discoveryKeys: Array(discoveryKeys.prefix(DiscoveryRecord.tagSlotCount)))
            ).announcer : nil
        defer { announcer?.stop() }
        if let serveSeconds {
            DispatchQueue.global().asyncAfter(deadline: .now() + serveSeconds) { [server] in server.stop() }
        }
        let walletLock = NSLock()
        final class Results: @unchecked Sendable {
            var codes: [ExitCode] = []
            var received = 0
            let lock = NSLock()
        }
        let results = Results()
        nonisolated(unsafe) let shared = (wallet, person, rangingSource)
        server.serve { channel, watch in
            let code: ExitCode
            do {
                let driver = try PeerDriver(
                    wallet: shared.0, channel: channel, role: .receive(request: request),
                    interface: watch(try shared.1.session(sas: channel.sas.digits)),
                    ranging: shared.2, policy: policy, displayName: name, walletLock: walletLock,
                    probeResponder: { probe, binding in Self.answer(probe, binding: binding, keys: discoveryKeys) })
                code = exitCode(driver.run())
            } catch {
                shared.1.event("error", ["error": "\(error)"], "session failed: \(error)")
                code = .failure
            }
            let stop = results.lock.withLock { () -> Bool in
                results.codes.append(code)
                if code == .success { results.received += 1 }
                return count.map { results.received >= $0 } == true
                    || sessionCount.map { results.codes.count >= $0 } == true
            }
            if stop { server.stop() }
        }
        // With --sessions, the exit code is the first failed session's (as one session's was before); a
        // receiver stopped by a signal or by --count succeeded at serving: each failure was logged.
        guard sessionCount != nil else { return .success }
        return results.lock.withLock { results.codes.first { $0 != .success } ?? .success }
    }

    /// SIGINT and SIGTERM stop the server gracefully; a second one drops the live sessions too.
    static func stopOnSignals(_ server: PeerServer, person: TerminalPerson) -> [DispatchSourceSignal] {
        // The person's events are serialized by its own lock.
        nonisolated(unsafe) let person = person
        return [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                person.event(
                    "stopping", ["signal": "\(number)"],
                    "stopping: no new connections; live sessions may finish (a second signal ends them)")
                server.stop()
            }
            source.resume()
            return source
        }
    }

    /// The receiver's caps and deadlines. SECURE_TEST_RECEIVER_LIMITS, for tests only, lowers them so a test
    /// reaches them with few attackers: comma-separated `handshakes=N`, `sessions=N`, `per-source=N`,
    /// `handshake-seconds=S`, `session-seconds=S`, `drain-seconds=S`, `decision-seconds=S` (only lowered).
    static func listenerLimits() throws -> ListenerLimits {
        var limits = ListenerLimits()
        guard let text = ProcessInfo.processInfo.environment["SECURE_TEST_RECEIVER_LIMITS"] else { return limits }
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let value = Double(parts[1]), value > 0, value <= 1_000_000 else {
                throw UsageError("SECURE_TEST_RECEIVER_LIMITS: \"\(item)\" is not NAME=POSITIVE-NUMBER")
            }
            switch parts[0] {
            case "handshakes": limits.handshakeCountMax = Int(value)
            case "sessions": limits.sessionCountMax = Int(value)
            case "per-source": limits.perSourceCountMax = Int(value)
            case "handshake-seconds": limits.handshakeTimeoutSeconds = value
            case "session-seconds": limits.sessionTimeoutSeconds = value
            case "drain-seconds": limits.drainTimeoutSeconds = value
            case "decision-seconds": TerminalPerson.decisionSeconds = min(value, TerminalPerson.decisionSeconds)
            default: throw UsageError("SECURE_TEST_RECEIVER_LIMITS: unknown limit \"\(parts[0])\"")
            }
        }
        return limits
    }

    static func pay(_ arguments: Arguments, retrying: String??) throws -> ExitCode {
        if arguments.flag("till") { return try TillCommands.pay(arguments, retrying: retrying) }
        for option in ["label", "rehearse"] where arguments.value(option) != nil {
            throw UsageError("--\(option) goes with --till")
        }
        guard arguments.value("to") != nil || arguments.flag("near") else {
            throw UsageError(
                "--to ADDR (the receiver's HOST:PORT) or --near (find it on the local network) is required")
        }
        guard
            retrying != nil || arguments.value("amount") != nil || !arguments.flag("yes")
                || arguments.value("max-amount") != nil
        else {
            throw UsageError(
                "answering a request with --yes approves whatever the receiver asks: give --max-amount AMOUNT, "
                    + "the most this script may pay")
        }
        let (wallet, person) = try openLockedWallet(arguments)
        guard !wallet.isIssuer else {
            throw UsageError("an issuer's wallet mints and takes back its money; it pays no one")
        }
        let role: PeerDriver.Role
        if let retrying {
            role = .retry(try pendingMessage(wallet, id: retrying))
        } else if let amountText = arguments.value("amount") {
            let money = try MoneyText.parse(amountText)
            guard !money.isZero else { throw UsageError("a payment's amount must be positive") }
            let category = try arguments.required("category")
            try Budget.validateCategory(category)
            let amount = try wallet.asset(for: money, issuer: arguments.value("issuer"))
            role = .pay(
                PaymentIntent(
                    offerID: .random(), amount: amount, category: category, note: try plainText(arguments, "note") ?? ""
                ))
        } else {
            role = .answerRequest
        }
        let (rangingSource, policy) = try ranging(arguments, person: person)
        person.contacts = try contactNames(wallet)
        let channel: SecureChannel
        if let name = arguments.value("to"), (try? address(name)) == nil {
            channel = try contactChannel(named: name, wallet: wallet, arguments: arguments, person: person)
        } else {
            let (host, port) =
                try arguments.flag("near") ? nearAddress(arguments, person: person) : address(arguments.value("to"))
            channel = try SecureChannel.initiate(over: try TCPTransport.connect(host: host, port: port))
        }
        let driver = try PeerDriver(
            wallet: wallet, channel: channel, role: role, interface: try person.session(sas: channel.sas.digits),
            ranging: rangingSource,
            policy: policy, displayName: try plainText(arguments, "name") ?? "payer")
        return exitCode(driver.run())
    }

    static func pendingMessage(_ wallet: Wallet, id: String?) throws -> TransferMessage {
        let pending = try wallet.pendingTransfers()
        let chosen: (transfer: SignedTransfer, entry: LedgerEntry)?
        if let id {
            chosen = pending.first { $0.transfer.payload.order.transferID.hex == id.lowercased() }
        } else {
            guard pending.count <= 1 else {
                throw UsageError("\(pending.count) payments are unconfirmed; name one (`secure pending` lists them)")
            }
            chosen = pending.first
        }
        guard let chosen else {
            throw WalletError(.notFound, "no unconfirmed payment" + (id.map { " with id \($0)" } ?? ""))
        }
        guard let bytes = try wallet.ledger.outgoingMessage(transferID: chosen.transfer.payload.order.transferID),
            case .transfer(let message)? = try PeerMessage.decode(bytes)
        else {
            throw WalletError(
                .notFound, "that payment was a file transfer (`secure spend`); give the payee its file again")
        }
        return message
    }
}
