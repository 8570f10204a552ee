import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureDiscovery
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// `secure till` and `secure pay --till` (issue 18, docs/TILL.md): a wallet that receives at a counter. The
/// operator locks an amount (its approval, with the PIN), the till announces itself and counts down, the first
/// payer that speaks takes it, and both screens say how it ended. Every payment rule is the payee's and the
/// payer's machines' own; this file adds the till's states (`TillMachine`) and what each side shows.
enum TillCommands {
    static let help = """
        Usage:
          secure till --amount AMOUNT [--note TEXT] [--countdown SECONDS] [--label LABEL] [--repeat]
                      [--listen ADDR] [--no-announce] [--rehearse FILE]
          secure pay --till [--label LABEL | --pick N] [--expect-payee NAME|CARD|WALLET-ID] [--category C]
                     [--to ADDR] [--rehearse FILE]
          secure retry --till [TRANSFER_ID] [--label LABEL | --to ADDR]
        A till locks AMOUNT (the PIN is read then: locking is the operator's approval, held 60 s at most; a payer
        who comes later makes the till ask the PIN again) and announces itself on the local network as
        LABEL-XXXX (_secure-till._tcp; the name is public, the amount is never announced). The countdown
        (default 60 s, 5 to 3600) stops when a payer speaks; a second payer meanwhile is told "till busy". After
        how it ended the till exits, or with --repeat locks the next amount (asked on a terminal; otherwise the
        same amount again, with a new PIN).
        `pay --till` browses, lists the tills it finds, and connects to the one --label names, or the only one.
        It shows the amount, the till's name, the channel code, the till's fingerprint and "unverified till"
        (or the contact's name), then asks. The payer decides within 18 s: the till's decision deadline is 20 s
        from its request. --expect-payee refuses any other wallet (anyone can announce any label).
        --to ADDR pays a till at a known address without browsing. Ranging options as `secure pay`.
        A till exits 0 when paid, 12 when unresolved (the payer may have paid: it retries), 11 otherwise.
        --rehearse FILE plays the other side from FILE with throwaway wallets in memory (rehearsals/):
        no real wallet, token or socket is touched, and every line says REHEARSAL.
        """

    static let options: Set<String> = PeerCommands.options.union(["countdown", "label", "rehearse"])
    static let flags: Set<String> = PeerCommands.flags.union(["repeat", "no-announce", "till"])

    // MARK: The till

    static func till(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: options, flags: flags)
        if arguments.value("rehearse") != nil { return try RehearsalCommands.alias(arguments, thisSide: .till) }
        _ = try arguments.positionals(0, "no positional arguments")
        let amountText = try arguments.required("amount")
        let money = try MoneyText.parse(amountText)
        guard !money.isZero else { throw UsageError("a till's amount must be positive") }
        let countdown = try countdownMilliseconds(arguments)
        let label = try tillLabel(arguments)
        let note = try plainText(arguments, "note") ?? ""
        let announcing = !arguments.flag("no-announce")
        guard announcing || arguments.value("listen") != nil else {
            throw UsageError("--no-announce needs --listen ADDR: a till nobody can find must say where it listens")
        }
        let (host, port) = try PeerCommands.address(arguments.value("listen") ?? "0.0.0.0:0")
        let limits = try PeerCommands.listenerLimits()
        let (wallet, person) = try PeerCommands.openLockedWallet(arguments)
        let (rangingSource, policy) = try PeerCommands.ranging(arguments, person: person)
        person.contacts = try PeerCommands.contactNames(wallet)
        let instance = TillRecord.instanceName(label: label)
        let listener = try TCPListener(host: host, port: port)
        defer { listener.close() }
        let server = PeerServer(listener: listener, limits: limits) { person.event($0, $1, $2) }
        let state = TillState(wallet: wallet)
        let signals = cancelOnSignals(state: state, server: server, person: person)
        defer { signals.forEach { $0.cancel() } }
        person.event(
            "listening", ["address": "\(host):\(listener.port)"],
            "till \(instance) listening on \(host):\(listener.port)")
        let walletLock = NSLock()
        nonisolated(unsafe) let shared = (wallet, person, rangingSource)
        let serving = Thread {
            server.serve(sessions: { session in
                Self.serveSession(
                    session, state: state, shared: shared, policy: policy, instance: instance, walletLock: walletLock)
            })
        }
        serving.start()
        defer {
            server.stop()
            state.waitForServer(serving)
        }
        var lastCode = ExitCode.refused
        var nextMoney = money
        while true {
            lastCode = try runAmount(
                nextMoney, note: note, countdown: countdown, instance: instance, port: listener.port,
                host: host, announcing: announcing, arguments: arguments, wallet: wallet, person: person, state: state)
            guard arguments.flag("repeat"), !state.stopRequested else { break }
            guard let next = try nextAmount(after: nextMoney, person: person) else { break }
            nextMoney = next
        }
        return lastCode
    }

    /// One amount, from the lock-in to its ending; returns the till's exit code for it.
    private static func runAmount(
        _ money: Money, note: String, countdown: Int64, instance: String, port: UInt16, host: String,
        announcing: Bool, arguments: Arguments, wallet: Wallet, person: TerminalPerson, state: TillState
    ) throws -> ExitCode {
        let amount = try wallet.requestAsset(for: money, issuer: arguments.value("issuer"))
        let request = try PaymentRequest(requestID: .random(), amount: amount, note: note)
        var machine = TillMachine(countdownMilliseconds: countdown)
        // The lock-in: the operator's approval. A wrong or locked PIN ends the till here, nothing announced.
        person.event(
            "till", ["state": "locking", "instance": instance], amounts: ["amount": amount],
            "till \(instance): locking \(MoneyText.format(amount)); the PIN approves it")
        do {
            try state.hold.begin(pin: try person.readPIN())
        } catch {
            person.event(
                "till", ["state": "ended", "instance": instance, "outcome": "failed:localFailure", "settled": "final"],
                amounts: ["amount": amount], "PIN REFUSED; the amount is not offered: \(error)")
            throw error
        }
        let announcer =
            announcing
            ? try announceTill(instance: instance, host: host, port: port, person: person) : nil
        defer {
            announcer?.stop()
            state.hold.end()
        }
        machine.opened(now: Wallet.systemClock())
        state.begin(machine: machine, request: request)
        var lastShown: Int64 = -1
        while true {
            let now = Wallet.systemClock()
            let (current, ending) = state.poll(now: now)
            if let ending { return report(ending, amount: amount, instance: instance, person: person) }
            if let left = current.millisecondsLeft(now: now) {
                let seconds = (left + 999) / 1000
                if seconds != lastShown {
                    lastShown = seconds
                    person.showCountdown(instance: instance, amount: amount, secondsLeft: seconds)
                }
            }
            usleep(100_000)
        }
    }

    /// What the till shows when an amount ends, and its exit code.
    private static func report(_ ending: TillEnding, amount: AssetAmount, instance: String, person: TerminalPerson)
        -> ExitCode
    {
        let formatted = MoneyText.format(amount)
        let text: String
        let outcomeName: String
        var code = ExitCode.refused
        switch ending.state {
        case .expired:
            outcomeName = "expired"
            text = "EXPIRED: nobody paid \(formatted) before the countdown ran out"
        case .cancelled:
            outcomeName = "cancelled"
            text = "CANCELLED; nothing moved"
        case .ended(let outcome):
            outcomeName = PeerActions.name(of: outcome)
            text = tillLine(outcome, settlement: ending.settlement, amount: formatted)
            if ending.settlement == .unresolved {
                code = .pending
            } else if case .received = outcome {
                code = .success
            }
        case .locking, .countingDown, .busy:
            preconditionFailure("an amount ends only in a final state")
        }
        person.event(
            "till",
            [
                "state": "ended", "instance": instance, "outcome": outcomeName,
                "settled": ending.settlement.rawValue,
            ], amounts: ["amount": amount], text)
        return code
    }

    /// The till's ending line (docs/TILL.md §2, the till's column).
    static func tillLine(_ outcome: PeerOutcome, settlement: Settlement, amount: String) -> String {
        switch outcome {
        case .received: return "PAID \(amount)"
        case .refusedTransfer(let reason):
            return "REFUSED the transfer (\(reason)) with a signed refusal; the payer's wallet reverses it"
        case .failed(let reason, let byPeer):
            if settlement == .unresolved {
                switch reason {
                case .timeout: return "TIMED OUT after ready: the payer may have paid; unresolved until it retries"
                case .transferInvalid:
                    return "NOT RECORDED: the transfer was not credited; unresolved until the payer retries"
                default:
                    return "UNRESOLVED after ready (\(reason)): the payer may have paid; it retries with secure retry"
                }
            }
            switch (reason, byPeer) {
            case (.declined, true): return "DECLINED by the payer; nothing moved"
            case (.withdrawn, true): return "The payer withdrew; nothing moved"
            case (.withdrawn, false): return "CANCELLED; nothing moved"
            case (.timeout, false): return "TIMED OUT: the payer did not decide in time; nothing moved"
            case (.timeout, true): return "The payer gave up waiting; nothing moved"
            case (.refusedByPayerWallet, _), (.insufficientFunds, _), (.overBudget, _):
                return "REFUSED by the payer's wallet; nothing moved"
            case (.localFailure, true): return "The payer's wallet could not approve or sign; nothing moved"
            case (.localFailure, false): return "FAILED here (token, PIN or link); nothing moved"
            default: return "FAILED (\(reason)); nothing moved"
            }
        case .paid, .reversed, .unconfirmed: return "\(outcome)"
        }
    }

    /// One connection, past its handshake: the session that takes the till, or a refusal (busy, closed).
    private static func serveSession(
        _ session: PeerServer.Session, state: TillState, shared: (Wallet, TerminalPerson, RangingConfiguration),
        policy: RangingPolicy, instance: String, walletLock: NSLock
    ) {
        let channel = session.channel
        guard let request = state.currentRequest else {
            PeerDriver.refuse(channel: channel, reason: .timeout) { shared.1.event($0, $1, $2) }
            return
        }
        let markBusy = { session.markBusy() }
        do {
            let person = try shared.1.session(sas: channel.sas.digits)
            let driver = try PeerDriver(
                wallet: shared.0, channel: channel, role: .receive(request: request),
                interface: session.watch(person), ranging: shared.2, policy: policy, displayName: instance,
                walletLock: walletLock, till: true)
            // The till's session: admitted when its first payment message comes, approved from the operator's
            // hold (renewed at connect when short), with the decision deadline.
            driver.admit = { [unowned driver] in
                let refusal = state.admit(requestID: request.requestID, driver: driver)
                if refusal == nil { markBusy() }
                return refusal
            }
            driver.actions.approvalHoldUntil = { state.hold.until }
            driver.actions.beforeLookUp = { try state.renewHoldIfShort(person: person) }
            let outcome = driver.run()
            state.sessionEnded(
                driver: driver, outcome: outcome, request: request, person: shared.1, instance: instance)
        } catch {
            shared.1.event("error", ["error": "\(error)"], "session failed: \(error)")
        }
    }

    /// SIGINT and SIGTERM cancel: a counting-down till closes, a session before `ready` is withdrawn, and a
    /// session past it finishes (the payer may have debited). A second signal stops the server, dropping live
    /// sessions (after `ready` that leaves the payment unresolved until the payer retries).
    private static func cancelOnSignals(state: TillState, server: PeerServer, person: TerminalPerson)
        -> [DispatchSourceSignal]
    {
        nonisolated(unsafe) let person = person
        return [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if state.requestStop() {
                    person.event(
                        "stopping", ["signal": "\(number)"], "stopping: live sessions are dropped (second signal)")
                    server.stop()
                    server.stop()
                } else {
                    person.event(
                        "stopping", ["signal": "\(number)"],
                        "cancelling: the till closes; a payer's session before ready is withdrawn")
                    state.cancel(person: person)
                }
            }
            source.resume()
            return source
        }
    }

    /// `--countdown SECONDS` (5 to 3600; default 60).
    static func countdownMilliseconds(_ arguments: Arguments) throws -> Int64 {
        guard let text = arguments.value("countdown") else { return TillMachine.countdownMillisecondsDefault }
        let range = TillMachine.countdownRange
        guard let seconds = Int64(text), range.contains(seconds * 1000) else {
            throw UsageError("--countdown takes \(range.lowerBound / 1000) to \(range.upperBound / 1000) seconds")
        }
        return seconds * 1000
    }

    static func tillLabel(_ arguments: Arguments) throws -> String {
        switch TillRecord.label(arguments.value("label") ?? TillRecord.defaultLabel) {
        case .success(let label): return label
        case .failure(let error): throw UsageError("--label: \(error.message)")
        }
    }

    /// With `--repeat`: a terminal asks for the next amount (Enter keeps the last, "q" stops); a script locks
    /// the same amount again (each is a new approval, with the PIN read again).
    private static func nextAmount(after money: Money, person: TerminalPerson) throws -> Money? {
        guard isatty(STDIN_FILENO) == 1, !person.yes else { return money }
        guard
            let answer = TerminalPerson.ask(
                "Next amount [\(MoneyText.format(money))], q to stop: ", timeoutSeconds: 3600)
        else { return nil }
        if answer.lowercased() == "q" { return nil }
        if answer.isEmpty { return money }
        let next = try MoneyText.parse(answer)
        guard !next.isZero else { throw UsageError("a till's amount must be positive") }
        return next
    }

    private static func announceTill(instance: String, host: String, port: UInt16, person: TerminalPerson) throws
        -> Announcer
    {
        let addresses = NetworkInterfaces.multicastIPv4(only: host == "0.0.0.0" ? nil : host)
        guard !addresses.isEmpty else {
            throw DiscoveryError(
                .noInterface, "no network interface that is up and carries multicast has an IPv4 address to announce")
        }
        let announcer = try Announcer(
            type: TillRecord.serviceType, port: port, txt: TillRecord.txt(), addresses: addresses,
            instanceName: instance, hostLabel: DiscoveryRecord.randomHostLabel())
        person.event(
            "announced",
            [
                "instance": announcer.instanceName, "host": announcer.hostName, "port": "\(port)",
                "addresses": addresses.map(\.address).joined(separator: ","),
            ],
            "announced as till \(announcer.instanceName) (\(TillRecord.serviceType), port \(port)); "
                + "the announcement holds no amount")
        return announcer
    }
}

/// How one amount ended at the till.
struct TillEnding {
    let state: TillMachine.State
    let settlement: Settlement
}

/// The till's shared state: its machine for the current amount, the operator's hold, and the session that
/// holds the till. Sessions run on the server's threads, the countdown on the main thread, cancels on a
/// signal queue: everything goes through `lock`.
final class TillState: @unchecked Sendable {
    let hold: OperatorHold
    private let lock = NSLock()
    private var machine: TillMachine?
    private var request: PaymentRequest?
    private var busyDriver: PeerDriver?
    private var ending: TillEnding?
    private var stops = 0

    init(wallet: Wallet) { hold = OperatorHold(token: wallet.token) }

    var stopRequested: Bool { lock.withLock { stops > 0 } }
    /// The request of the amount now offered; nil between amounts.
    var currentRequest: PaymentRequest? { lock.withLock { machine?.isFinal == false ? request : nil } }

    func begin(machine: TillMachine, request: PaymentRequest) {
        lock.withLock {
            self.machine = machine
            self.request = request
            ending = nil
            busyDriver = nil
        }
    }

    /// The current machine after a clock check, and the ending once the amount reached one.
    func poll(now: Int64) -> (TillMachine, TillEnding?) {
        lock.withLock {
            guard var current = machine else { preconditionFailure("polled before an amount was locked") }
            if current.tick(now: now) { ending = TillEnding(state: current.state, settlement: .final) }
            if case .cancelled = current.state, ending == nil {
                ending = TillEnding(state: current.state, settlement: .final)
            }
            machine = current
            return (current, ending)
        }
    }

    /// A connection's first payment message arrived: nil takes the till, or the reason to refuse it with.
    func admit(requestID: OfferID, driver: PeerDriver) -> PeerFailureReason? {
        lock.withLock {
            guard var current = machine, request?.requestID == requestID else { return .timeout }
            let admission = current.payerArrived(now: Wallet.systemClock())
            machine = current
            switch admission {
            case .take:
                busyDriver = driver
                return nil
            case .busy: return .tillBusy
            case .closed:
                if case .expired = current.state, ending == nil {
                    ending = TillEnding(state: current.state, settlement: .final)
                }
                return .timeout
            }
        }
    }

    /// The session that held the till ended: the amount ends with its outcome, or (a payer's retry of an
    /// earlier payment) the countdown goes on with the time it had left.
    func sessionEnded(
        driver: PeerDriver, outcome: PeerOutcome, request: PaymentRequest, person: TerminalPerson, instance: String
    ) {
        let secondsLeft: Int64? = lock.withLock {
            guard busyDriver === driver, var current = machine else { return nil }
            busyDriver = nil
            // A session that only credited a payer's retry of an earlier payment did not answer this request.
            let now = Wallet.systemClock()
            current.sessionEnded(outcome, servedRequest: !driver.actions.servedRetry, now: now)
            machine = current
            if current.isFinal {
                ending = TillEnding(
                    state: current.state, settlement: Settlement.payee(outcome, readyStored: driver.readyStored))
            }
            return driver.actions.servedRetry ? current.millisecondsLeft(now: now).map { ($0 + 999) / 1000 } : nil
        }
        // A retry is never this sale: the operator must not take it for one (the `finished` event above it
        // says "received" for the earlier payment, or for a duplicate already credited before).
        guard let secondsLeft else { return }
        let earlier: String
        switch outcome {
        case .received(let receipt):
            earlier = "CREDITED AN EARLIER PAYMENT of \(MoneyText.format(receipt.payload.amount)) (a payer's retry)"
        default: earlier = "A RETRY of an earlier payment ended (\(PeerActions.name(of: outcome)))"
        }
        person.event(
            "till",
            [
                "state": "countingDown", "instance": instance, "outcome": PeerActions.name(of: outcome),
                "secondsLeft": "\(secondsLeft)",
            ], amounts: ["amount": request.amount],
            earlier
                + "; NOT this sale of \(MoneyText.format(request.amount)), which is still open, \(secondsLeft) s left")
    }

    /// The operator cancelled.
    func cancel(person: TerminalPerson) {
        let withdraw: PeerDriver? = lock.withLock {
            guard var current = machine else { return nil }
            let result = current.cancel()
            machine = current
            switch result {
            case .closed, .none: return nil
            case .withdrawSession: return busyDriver
            }
        }
        if let withdraw {
            if !withdraw.requestWithdraw() {
                person.event(
                    "till", ["state": "busy"],
                    "cannot cancel now: the payer may already have paid; waiting for the transfer")
            }
        }
    }

    /// Counts a stop request; true from the second on.
    func requestStop() -> Bool {
        lock.withLock {
            stops += 1; return stops > 1
        }
    }

    /// When a payer comes with less of the operator's hold left than a payment needs, the PIN is asked again,
    /// at connect (docs/TILL.md §1.4).
    func renewHoldIfShort(person: TerminalPerson) throws {
        let reserve = Int64(TillLimits.pinReserveAtConnectSeconds) * 1000
        if let until = hold.until, until - Wallet.systemClock() >= reserve { return }
        person.event("pin", [:], "a payer connected; the till's PIN hold is short: the PIN approves the amount again")
        try hold.begin(pin: try person.readPIN())
    }

    func waitForServer(_ thread: Thread) {
        while !thread.isFinished { usleep(20_000) }
    }
}

// MARK: Paying a till

extension TillCommands {
    /// `secure pay --till` and `secure retry --till`: find the till, connect, and answer its request with an
    /// unchanged payer machine; refusals by this wallet go out as "refused by the payer's wallet" (21).
    static func pay(_ arguments: Arguments, retrying: String??) throws -> ExitCode {
        if arguments.value("rehearse") != nil {
            guard retrying == nil else {
                throw UsageError("a rehearsal plays its retry itself: `secure pay --till --rehearse FILE`")
            }
            return try RehearsalCommands.alias(arguments, thisSide: .payer)
        }
        guard !arguments.flag("near") else { throw UsageError("--till browses for tills itself; drop --near") }
        guard arguments.value("amount") == nil else {
            throw UsageError("a till asks its own amount: drop --amount (--max-amount caps what a script approves)")
        }
        guard retrying != nil || !arguments.flag("yes") || arguments.value("max-amount") != nil else {
            throw UsageError(
                "paying a till with --yes approves whatever it asks: give --max-amount AMOUNT, the most this script "
                    + "may pay")
        }
        guard !arguments.flag("yes") || arguments.value("to") != nil || arguments.value("expect-payee") != nil else {
            throw UsageError(
                "pay --till --yes needs --expect-payee NAME|CARD|WALLET-ID: anyone on the network can announce a "
                    + "till under any label, so a script must name the wallet it means to pay")
        }
        let (wallet, person) = try PeerCommands.openLockedWallet(arguments)
        guard !wallet.isIssuer else {
            throw UsageError("an issuer's wallet mints and takes back its money; it pays no one")
        }
        person.contacts = try PeerCommands.contactNames(wallet)
        if let expected = arguments.value("expect-payee") {
            person.expectedContact = try expectedWallet(expected, wallet: wallet)
        }
        let role: PeerDriver.Role =
            try retrying.map { .retry(try PeerCommands.pendingMessage(wallet, id: $0)) } ?? .answerRequest
        let (rangingSource, policy) = try PeerCommands.ranging(arguments, person: person)
        let (host, port, shown) = try findTill(arguments, person: person)
        person.till = shown
        let channel = try SecureChannel.initiate(over: try TCPTransport.connect(host: host, port: port))
        let session = try person.session(sas: channel.sas.digits)
        let driver = try PeerDriver(
            wallet: wallet, channel: channel, role: role, interface: session, ranging: rangingSource, policy: policy,
            displayName: try plainText(arguments, "name") ?? "payer", till: true)
        let outcome = driver.run()
        let settlement = Settlement.payer(outcome, receiptRecorded: !driver.actions.receiptUnrecorded)
        session.event(
            "till",
            [
                "state": "ended", "instance": shown, "outcome": PeerActions.name(of: outcome),
                "settled": settlement.rawValue,
            ],
            payerLine(outcome, settlement: settlement, till: PeerText.escaped(shown, limit: 40)))
        if settlement == .unresolved { return .pending }
        return PeerCommands.exitCode(outcome)
    }

    /// The payer's ending line (docs/TILL.md §2, the payer's column).
    static func payerLine(_ outcome: PeerOutcome, settlement: Settlement, till: String) -> String {
        switch outcome {
        case .paid(let receipt):
            let amount = MoneyText.format(receipt.payload.amount)
            return settlement == .final
                ? "PAID \(amount) to \(till) (receipt kept)"
                : "PAID \(amount) to \(till), but the receipt is not recorded: run secure retry --till"
        case .unconfirmed(let transfer):
            return "NOT CONFIRMED: debited, no receipt from \(till); run secure retry --till (transfer \(transfer.hex))"
        case .reversed(let reason): return "REFUSED by the till after the debit (\(reason)); reversed, money back"
        case .failed(let reason, let byPeer):
            switch (reason, byPeer) {
            case (.declined, false): return "DECLINED: you declined; nothing moved"
            case (.withdrawn, false): return "WITHDRAWN before paying; nothing moved"
            case (.withdrawn, true): return "CANCELLED by the till; nothing moved"
            case (.tillBusy, _): return "TILL BUSY: another payer is at \(till); try again"
            case (.timeout, true): return "TOO LATE: the till's decision deadline passed (or it closed); nothing moved"
            case (.timeout, false): return "TOO LATE: no decision in time; nothing moved"
            case (.insufficientFunds, false), (.overBudget, false), (.refusedByPayerWallet, false):
                return "REFUSED by your wallet (\(reason)); nothing moved"
            case (.localFailure, false): return "FAILED here (PIN, token or link); nothing moved"
            case (.localFailure, true): return "The till could not go on (its PIN, token or storage); nothing moved"
            default: return "FAILED (\(reason)); nothing moved"
            }
        case .received, .refusedTransfer: return "\(outcome)"
        }
    }

    /// `--expect-payee`: a contact's name, a wallet card or 64 hex digits.
    static func expectedWallet(_ text: String, wallet: Wallet) throws -> WalletID {
        if let contact = try wallet.contact(named: text) { return contact.walletID }
        return try TerminalPerson.walletID(text)
    }

    /// Where to connect: `--to ADDR`, or the till picked from those announced (by `--label`, `--pick`, at the
    /// terminal, or the only one). Returns the address and the name to show.
    static func findTill(_ arguments: Arguments, person: TerminalPerson) throws -> (String, UInt16, String) {
        if let to = arguments.value("to") {
            let (host, port) = try PeerCommands.address(to)
            return (host, port, "the till at \(host):\(port)")
        }
        let seconds = try PeerCommands.browseSeconds(arguments)
        let wanted = try arguments.value("label").map { text -> String in
            let upper = text.uppercased()
            if TillRecord.label(ofInstance: upper) != nil { return upper }
            guard case .success(let label) = TillRecord.label(text) else {
                throw UsageError("--label: a till's label is A-Z, 0-9 and \"-\", as it announces (MIZAN or MIZAN-1A2B)")
            }
            return label
        }
        let own = Set(NetworkInterfaces.multicastIPv4().map(\.address))
        var choices: [FoundService] = []
        for service in try Browser.browse(type: TillRecord.serviceType, seconds: seconds)
            .sorted(by: { ($0.instanceName, $0.address) < ($1.instanceName, $1.address) })
        {
            let shown = PeerText.escaped(service.instanceName, limit: 40)
            do {
                guard let label = TillRecord.label(ofInstance: service.instanceName) else {
                    throw DiscoveryError(.malformedRecord, "its name is not a till's (LABEL-XXXX)")
                }
                guard !service.address.hasPrefix("127."), service.address != "0.0.0.0",
                    !own.contains(service.address)
                else { throw DiscoveryError(.malformedRecord, "it points at this machine") }
                try TillRecord.check(txt: service.txtPairs)
                if let wanted, wanted != label, wanted != service.instanceName { continue }
                choices.append(service)
                person.event(
                    "found",
                    [
                        "choice": "\(choices.count)", "instance": service.instanceName, "address": service.address,
                        "port": "\(service.port)",
                    ], "  \(choices.count). till \(shown) at \(service.address):\(service.port)")
            } catch {
                person.event(
                    "ignored", ["instance": service.instanceName, "reason": "\(error)"],
                    "  -  \(shown) at \(service.address):\(service.port): not a till this build can pay (\(error))")
            }
        }
        guard !choices.isEmpty else {
            throw DiscoveryError(
                .notFound,
                "no till" + (wanted.map { " labelled \($0)" } ?? "") + " announced \(TillRecord.serviceType) within "
                    + "\(seconds) s; the till runs `secure till --amount …`, or give its address with --to HOST:PORT")
        }
        let pick = try PeerCommands.pickNumber(
            of: choices.count, arguments, question: "Pay which till?", none: "no till picked; nothing was paid",
            scripted: "\(choices.count) tills found; pass --label LABEL-XXXX or --pick N (a script must say which)",
            onlyOne: true)
        let chosen = choices[pick - 1]
        return (chosen.address, chosen.port, chosen.instanceName)
    }
}
