import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken
import SecureWallet

/// The one place that carries out what the pure payer and payee machines ask for: send, look up the peer
/// (following its key-event log first), ask the person, check the payment on the wallet's clock, range and
/// sign, persist, commit, credit, keep receipts, evidence and key events. `PeerDriver` (the CLI, over a
/// SecureChannel), the simulator (SecureSimulation, over a seeded link) and the benchmarks drive it; what
/// differs between them is a `PeerEnvironment`.
///
/// Callers feed it in arrival order: `start()`, then each message (`deliver`), timeout and link drop, and
/// carry out every action returned with `perform`, feeding the actions that returns back in, in order.
public final class PeerActions {
    /// The machine of this side of the session.
    public enum Machine {
        case payer(PayerMachine)
        case payee(PayeeMachine)
    }

    /// The PIN is held for the machine-speed steps after an approval, and never longer than this.
    public static let pinHoldMillisecondsMax = PeerLimits.pinHoldMillisecondsMax

    public let wallet: Wallet
    let environment: PeerEnvironment
    /// Serializes use of the wallet when one process serves several sessions at once.
    let walletLock: NSLock
    private var machine: Machine
    /// The peer's wallet key, from its hello, for checking its receipts and refusals.
    public private(set) var peerKey: P256.PublicKey?
    /// The size of this wallet's checkpoint in its hello (consistency proofs run from the peer's held one to it).
    private let helloSize: UInt64
    /// The peer's key-event log while it arrives page by page. The lookup waits for the whole log
    /// (`deferredLookup`), so the first session after a peer's rotation checks the peer's checkpoint against
    /// the rotated log, not the one known before. The machine's lookup wait bounds it.
    private var keyEventFetch: KeyEventFetch?
    private var deferredLookup: PeerIdentity?
    /// Protocol messages that arrived while the lookup waits for the peer's key events, in arrival order.
    /// The machine is still looking the peer up, so they are handed to it once the lookup is answered.
    private var heldMessages: [PeerMessage] = []
    /// The peer's key-event log as this wallet knew it when the hello came, while no newer log was followed
    /// since: the lookup then need not read and verify it again.
    private var knownPeerLog: (walletID: WalletID, log: KeyEventLog?)?
    /// The peer's key-event log the lookup answered the machine with (nil: none known).
    public private(set) var lookedUpKeyLog: KeyEventLog?
    /// This session's hold on the unlocked token. The environment's timer ends it at its deadline whatever the
    /// session is doing (blocked on a ranging source, a stalled peer); the session ends it at its end.
    private let hold = PINHold()
    /// How long an approval's PIN is held: `pinHoldMillisecondsMax`, or less in tests.
    public let pinHoldMilliseconds: Int64
    /// When the PIN's hold ends, on the environment's clock; nil while this session holds no token.
    public var pinHeldUntil: Int64? { hold.until }
    /// Whether this session's PIN hold ran out: every later step that needs a signature then fails.
    public var pinHoldExpired: Bool { hold.expired }
    /// A planted bug for the simulator's broken variant (nil in production): the lookup is answered at once
    /// with the key-event log as known before, instead of waiting for the peer's rotated log.
    @_spi(Simulation) public var answersLookupBeforeKeyEvents = false

    // MARK: Till hooks (docs/TILL.md §1.4); all off by default

    /// The decision deadline's length in milliseconds (`TillLimits.decisionMilliseconds`), or nil (off). On:
    /// a payee fixes `decisionDeadline` when its `request` goes out; a payer when a `request` arrives, less
    /// `TillLimits.payerDecisionMarginMilliseconds`. Set before `start()`.
    public var decisionMilliseconds: Int64?
    /// The decision deadline on the environment's clock (milliseconds), once fixed; nil while none is.
    public private(set) var decisionDeadline: Int64?
    /// When the payee was handed the offer, on the environment's clock (with a decision deadline only).
    private var offerDeliveredAt: Int64?
    /// A payee approval given before the session (a till's lock-in PIN): when set, an approval that answers
    /// this wallet's own request exactly (`needsConfirmation == false`) is given without a prompt and without
    /// a PIN, against the token's live login, which this session then holds until the absolute time the
    /// closure returns (environment clock, milliseconds). Nil from the closure, a time already past or a
    /// locked token end the session with `localFailure` (14). Other approvals go to the person as ever.
    public var approvalHoldUntil: (() -> Int64?)?
    /// Called when the machine asks to look up the peer, before the lookup; a throw ends the session with
    /// `localFailure` (14). A till asks its operator for the PIN again there when its hold is short.
    public var beforeLookUp: (() throws -> Void)?
    /// Whether this payee session stored its ready record (the payer may have debited from then on).
    public private(set) var readyStored = false
    /// Whether this payee session credited (or answered) a retried transfer of an earlier session.
    public private(set) var servedRetry = false
    /// True when the session ended `paid` but keeping the receipt failed (token removed, storage): the
    /// payment is paid, yet `secure pending` still lists it until `secure retry` records the receipt, so a
    /// driver says "settled: unresolved".
    public private(set) var receiptUnrecorded = false

    /// Prepares one side of a session. `helloSize` is the checkpoint size of this wallet's hello.
    public init(
        wallet: Wallet, machine: Machine, helloSize: UInt64, environment: PeerEnvironment,
        walletLock: NSLock = NSLock(), pinHoldMilliseconds: Int64 = PeerActions.pinHoldMillisecondsMax
    ) {
        precondition(
            pinHoldMilliseconds > 0 && pinHoldMilliseconds <= Self.pinHoldMillisecondsMax,
            "the PIN hold may only be shortened, for tests")
        self.pinHoldMilliseconds = pinHoldMilliseconds
        self.wallet = wallet
        self.machine = machine
        self.helloSize = helloSize
        self.environment = environment
        self.walletLock = walletLock
    }

    /// This wallet's hello: key, name, fresh tokens from `randomBytes`, latest checkpoint, evidence digests,
    /// key-event head. The caller holds the wallet's lock.
    public static func hello(wallet: Wallet, displayName: String, randomBytes: (Int) -> [UInt8]) throws -> PeerHello {
        guard let latest = wallet.latest else { throw WalletError(.notFound, "the wallet has no checkpoint") }
        let evidence = try wallet.ledger.evidence().map { EvidenceDigest(of: $0) }
        return try PeerHello(
            walletKey: wallet.signingKey, displayName: displayName, rangingToken: randomBytes(16),
            nonceContribution: NonceContribution(exactly: randomBytes(NonceContribution.byteCount)), checkpoint: latest,
            evidenceDigests: Array(evidence.prefix(PeerHello.evidenceDigestCountMax)),
            keyEventHead: wallet.keyLog.head)
    }

    // MARK: The machine

    /// How the session ended, once it has.
    public var outcome: PeerOutcome? {
        switch machine {
        case .payer(let payer): payer.outcome
        case .payee(let payee): payee.outcome
        }
    }

    /// What the machine waits for; its driver restarts a timer whenever this changes.
    public var wait: PeerWait? {
        switch machine {
        case .payer(let payer): payer.wait
        case .payee(let payee): payee.wait
        }
    }

    public var isPayer: Bool {
        if case .payer = machine { return true }
        return false
    }

    /// The absolute deadline (environment clock, milliseconds) that replaces `wait.seconds` for this wait, or
    /// nil: the decision deadline, for a payee's `offer` wait and a payer's `category` and `approval` waits.
    public func deadline(for wait: PeerWait) -> Int64? {
        guard let decisionDeadline else { return nil }
        switch wait {
        case .offer: return isPayer ? nil : decisionDeadline
        case .category, .approval: return isPayer ? decisionDeadline : nil
        case .peerHello, .peerLookup, .request, .paymentCheck, .reply, .ranging, .peerMeasurement, .readyPersist,
            .ready, .debit, .transfer, .readyRecord, .credit, .receipt:
            return nil
        }
    }

    /// Whether a payer's person answered after the decision deadline: its answer then is a timeout.
    private var decidedTooLate: Bool {
        guard isPayer, let decisionDeadline else { return false }
        return environment.now() > decisionDeadline
    }

    /// The payer's person answered too late: the session times out (failure 3) instead of going on.
    private func decisionTimedOut() -> [PeerAction] {
        environment.person.event(
            "timeout", ["wait": "decision"], "the decision deadline passed before the answer; nothing moved")
        return timeoutExpired()
    }

    /// A payee with a decision deadline stores no ready record (and so never sends `ready`) when the offer came
    /// after the deadline, or when its PIN hold would end within `TillLimits.afterReadyMilliseconds`: the
    /// credit after `ready` needs the token.
    private var tooLateForReady: Bool {
        guard !isPayer, decisionMilliseconds != nil else { return false }
        if let decisionDeadline, let offerDeliveredAt, offerDeliveredAt > decisionDeadline { return true }
        if hold.expired { return true }
        if let holdEnd = hold.until, environment.now() > holdEnd - TillLimits.afterReadyMilliseconds { return true }
        return false
    }

    /// Fixes the decision deadline and the offer's arrival when a message comes (till sessions only).
    private func noteArrival(_ message: PeerMessage) {
        guard let decisionMilliseconds else { return }
        if isPayer, decisionDeadline == nil, case .request = message {
            decisionDeadline = environment.now() + decisionMilliseconds - TillLimits.payerDecisionMarginMilliseconds
        }
        if !isPayer, offerDeliveredAt == nil, case .offer = message { offerDeliveredAt = environment.now() }
    }

    private func mutate(payer: (inout PayerMachine) -> [PeerAction], payee: (inout PayeeMachine) -> [PeerAction])
        -> [PeerAction]
    {
        switch machine {
        case .payer(var machineValue):
            defer { machine = .payer(machineValue) }
            return payer(&machineValue)
        case .payee(var machineValue):
            defer { machine = .payee(machineValue) }
            return payee(&machineValue)
        }
    }

    public func start() -> [PeerAction] { mutate(payer: { $0.start() }, payee: { $0.start() }) }
    public func timeoutExpired() -> [PeerAction] {
        mutate(payer: { $0.timeoutExpired() }, payee: { $0.timeoutExpired() })
    }
    public func linkDropped() -> [PeerAction] { mutate(payer: { $0.linkDropped() }, payee: { $0.linkDropped() }) }
    public func localFailure() -> [PeerAction] { mutate(payer: { $0.localFailure() }, payee: { $0.localFailure() }) }
    /// The person withdraws: a payee its request (or it stops waiting), a payer its confirmed offer before the
    /// debit (`PayerMachine.userDeclined`: failure 2 after the offer, 1 before it; ignored after the debit).
    public func withdraw() -> [PeerAction] { mutate(payer: { $0.userDeclined() }, payee: { $0.withdraw() }) }

    private func payerOnly(_ body: (inout PayerMachine) -> [PeerAction]) -> [PeerAction] {
        mutate(payer: body, payee: { _ in preconditionFailure("a payer action reached the payee") })
    }

    private func payeeOnly(_ body: (inout PayeeMachine) -> [PeerAction]) -> [PeerAction] {
        mutate(payer: { _ in preconditionFailure("a payee action reached the payer") }, payee: body)
    }

    // MARK: Messages

    /// Decodes one whole message and delivers it; bytes that do not decode end the session.
    public func deliver(bytes: [UInt8]) -> [PeerAction] {
        let message: PeerMessage
        do {
            guard let decoded = try PeerMessage.decode(bytes) else { return protocolViolation("a truncated message") }
            message = decoded
        } catch {
            return protocolViolation("a malformed message: \(error)")
        }
        return deliver(message)
    }

    /// Delivers one message: held while the lookup waits for the peer's key events, else to the machine.
    public func deliver(_ message: PeerMessage) -> [PeerAction] {
        noteArrival(message)
        // While the lookup waits for the peer's key events, the machine cannot take protocol messages yet;
        // side messages (evidence, key events) still pass, or two rotated wallets would wait for each other.
        if keyEventFetch != nil, !message.isSideMessage, !Self.isHello(message) {
            guard heldMessages.count < PeerLimits.heldMessageCountMax else {
                return protocolViolation(
                    "more than \(PeerLimits.heldMessageCountMax) messages while its key events were awaited")
            }
            heldMessages.append(message)
            return []
        }
        if case .hello(let hello) = message, peerKey == nil {
            peerKey = hello.walletKey
            // Best effort: a failed request leaves the log as known, and the consistency check decides.
            try? askForKeyEventsIfNewer(hello)
        }
        return handle(message)
    }

    /// A held message can go to the machine now (the lookup it waited for was answered).
    public var hasReleasableMessage: Bool { keyEventFetch == nil && !heldMessages.isEmpty }

    /// Hands the oldest held message to the machine; call while `hasReleasableMessage`.
    public func releaseHeldMessage() -> [PeerAction] {
        precondition(hasReleasableMessage, "no held message can be released")
        return handle(heldMessages.removeFirst())
    }

    private static func isHello(_ message: PeerMessage) -> Bool {
        if case .hello = message { return true }
        return false
    }

    /// Hands one decoded message to the machine.
    private func handle(_ message: PeerMessage) -> [PeerAction] {
        do {
            switch machine {
            case .payer(var payer):
                defer { machine = .payer(payer) }
                return try payer.receive(message)
            case .payee(var payee):
                defer { machine = .payee(payee) }
                return try payee.receive(message)
            }
        } catch let error as PeerProtocolError {
            environment.person.event(
                "protocol", ["error": error.message], "the other side broke the protocol: \(error.message)")
            return error.actions
        } catch {
            return protocolViolation("\(error)")
        }
    }

    /// Ends the session on bytes that are no message, or a flood: a violation in whatever state the machine is
    /// (a local failure would be an answer the machine did not ask for in most states, and trap).
    private func protocolViolation(_ what: String) -> [PeerAction] {
        environment.person.event("protocol", ["error": what], "received \(what); ending the session")
        return mutate(payer: { $0.malformedMessage(what) }, payee: { $0.malformedMessage(what) })
    }

    // MARK: The token

    /// Lets go of the token at the session's end: it locks when no other session of the process holds it.
    public func finishSession() {
        if hold.end(expired: false) {
            environment.releaseToken(wallet.token)
        } else {
            environment.lockTokenIfUnheld(wallet.token)
        }
    }

    /// Wipes the PIN once its approval's time is up, on the environment's clock (the simulator's loop calls
    /// this; a real session's timer does the same at the deadline). Later token steps then fail and the
    /// payment stays retryable (pending), never lost.
    public func releasePINIfExpired() {
        if let until = hold.until, environment.now() >= until { expireHold(generation: nil) }
    }

    /// Ends the hold because its time is up (`generation`: only the hold the timer was armed for). Taken
    /// under the wallet's lock, so no signature of this process is halfway through when the token locks.
    private func expireHold(generation: Int?) {
        let ended = walletLock.withLock {
            let ended = hold.end(generation: generation, expired: true)
            if ended { environment.releaseToken(wallet.token) }
            return ended
        }
        if ended {
            let held = hold.milliseconds
            environment.person.event(
                "pin", ["expired": "\(held)"],
                "the PIN hold expired: the PIN was wiped \(Self.seconds(held)) after the approval")
        }
    }

    private static func seconds(_ milliseconds: Int64) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : String(format: "%.1f s", Double(milliseconds) / 1000)
    }

    /// Refuses a step that needs the token once this session's PIN hold ran out: the session ends there, and
    /// a step before the debit records nothing.
    private func requireLiveHold(_ step: String) throws {
        guard hold.expired else { return }
        throw WalletError(
            .refused,
            "PIN hold expired: the PIN was wiped \(Self.seconds(hold.milliseconds)) after the approval, before "
                + "\(step); nothing was recorded by this step")
    }

    /// Starts this session's hold (or renews it after a new PIN) and arms its timer: `pinHoldMilliseconds`
    /// from now, or until `until` (an approval given before the session), never longer.
    private func beginHold(until: Int64? = nil) {
        let now = environment.now()
        let end = min(until ?? now + pinHoldMilliseconds, now + pinHoldMilliseconds)
        let generation = hold.begin(until: end, milliseconds: end - now)
        // Weak: a finished session is not kept alive for the rest of its hold.
        nonisolated(unsafe) weak var actions = self
        environment.armPINTimer(milliseconds: end - now) { actions?.expireHold(generation: generation) }
    }

    /// A retried transfer was approved in its first session (the ready record is that approval), and a
    /// reversal only returns the payer's own money: both may unlock the token without a new prompt. A session
    /// whose own hold ran out does not ask again: it ends.
    private func unlockWithoutPrompt(_ why: String) throws {
        try requireLiveHold("the token was needed to " + why)
        guard hold.until == nil else { return }
        // Hold first: then no other session of this process can lock the token between the check and the use.
        environment.holdToken(wallet.token)
        beginHold()
        guard !wallet.token.isUnlocked else { return }
        environment.person.event("pin", [:], "the token needs the PIN to \(why)")
        try holdUnlocked()
    }

    /// Logs in with this approval's PIN (a wrong one is refused here, even while another session of this
    /// process holds the token) and holds the token for this session until its end or the PIN's time is up.
    private func holdUnlocked() throws {
        if hold.until == nil { environment.holdToken(wallet.token) }
        do {
            try wallet.token.unlock(pin: try environment.person.readPIN(), confirmFinalTry: false)
        } catch {
            _ = hold.end(expired: false)
            environment.releaseToken(wallet.token)
            throw error
        }
        beginHold()
    }

    // MARK: Actions

    /// Carries out one action and returns the machine's answer to it. A failure becomes the answer the
    /// machine expects (a link drop, a local failure) after the environment has seen it; only what the
    /// environment rethrows (a simulated crash) leaves this function.
    public func perform(_ action: PeerAction) throws -> [PeerAction] {
        do {
            return try performThrowing(action)
        } catch {
            // The machine decided `paid` before it asked to keep the receipt; it is paid, but not settled here.
            if case .keepReceipt = action { receiptUnrecorded = true }
            try environment.failed(error, during: action)
            guard outcome == nil else { return [] }
            // A message that cannot be sent means the link is gone; any other failure is in a step the
            // machine asked for (a token, PIN or storage failure), which it expects as a local failure.
            switch action {
            case .send:
                return linkDropped()
            case .lookUpPeer, .chooseCategory, .checkPayment, .askApproval, .measure, .persistReadyRecord, .commitDebit,
                .loadReadyRecord, .credit:
                return localFailure()
            case .keepKeyEvents:
                // The log could not be kept (storage); the lookup goes on with the log as known before.
                return (try? endKeyEventFetch()) ?? localFailure()
            case .cancelApproval, .keepReceipt, .appendReversal, .provideEvidence, .keepEvidence, .provideKeyEvents,
                .finish:
                // Side work the machine did not wait for: the failure is reported, the session goes on.
                return []
            }
        }
    }

    private func performThrowing(_ action: PeerAction) throws -> [PeerAction] {
        let person = environment.person
        switch action {
        case .send(let message):
            try environment.send(message)
            // A till's decision deadline runs from its request (docs/TILL.md §1.4).
            if case .request = message, !isPayer, let decisionMilliseconds, decisionDeadline == nil {
                decisionDeadline = environment.now() + decisionMilliseconds
            }
            return []
        case .lookUpPeer(let identity):
            try beforeLookUp?()
            return try lookUp(identity)
        case .chooseCategory(let request, let peer):
            switch person.chooseCategory(for: request, from: peer) {
            case .decline: return payerOnly { $0.userDeclined() }
            case .refuse: return payerOnly { $0.walletRefused() }
            case .category(let category):
                if decidedTooLate { return decisionTimedOut() }
                return payerOnly { $0.categoryChosen(category) }
            }
        case .checkPayment(let amount, let category):
            // The wallet's clock, as `Wallet.append` dates the debit: budgets' periods agree with the entry.
            let check = try walletLock.withLock {
                try PaymentCheck.evaluate(state: wallet.state, amount: amount, category: category, time: wallet.clock())
            }
            return payerOnly { $0.paymentChecked(check) }
        case .askApproval(let approval): return try approve(approval)
        case .cancelApproval:
            person.event("cancelled", [:], "the other side withdrew; nothing to approve")
            return []
        case .measure(let task): return try measure(task)
        case .persistReadyRecord(let record):
            if tooLateForReady {
                person.event(
                    "timeout", ["wait": "decision"],
                    "the offer came after the decision deadline, or the PIN hold ends too soon after ready; "
                        + "no ready record, nothing moved")
                return payeeOnly { $0.timeoutExpired() }
            }
            try environment.crashPoint(.beforeReadyRecord, of: action)
            try walletLock.withLock {
                try wallet.ledger.storeReadyRecord(
                    offerID: record.offerID, payer: record.payerWalletID, record: record.encoded)
            }
            readyStored = true
            try environment.crashPoint(.afterReadyRecord, of: action)
            return payeeOnly { $0.readyPersisted() }
        case .commitDebit(let task): return try commitDebit(task, action)
        case .loadReadyRecord(let offerID, let payer):
            servedRetry = true
            let stored = try walletLock.withLock { try wallet.ledger.readyRecord(offerID: offerID, payer: payer) }
            let record = try stored.flatMap { try ReadyRecord.decode($0.record) }
            return payeeOnly { $0.readyRecordLoaded(record, consumedBy: stored?.consumedBy) }
        case .credit(let task): return try credit(task, action)
        case .keepReceipt(let receipt, _):
            // The confirmation is a ledger entry, so its checkpoint needs the token (a retry has no approval).
            try unlockWithoutPrompt("record the payee's receipt")
            try environment.crashPoint(.beforeReceipt, of: action)
            try walletLock.withLock { try wallet.confirm(receipt, payeeLog: lookedUpKeyLog) }
            person.event(
                "receipt", ["transferID": receipt.payload.transferID.hex], "the payee's countersigned receipt is kept")
            return []
        case .appendReversal(let refusal, _):
            try unlockWithoutPrompt("record the reversal of a refused payment")
            try environment.crashPoint(.beforeReversal, of: action)
            let outcome = try walletLock.withLock {
                try wallet.applyRefusal(refusal, payeeLog: lookedUpKeyLog)
            }
            person.event(
                "reversal", ["reason": "\(refusal.payload.reason)", "outcome": "\(outcome)"],
                "the payee refused the transfer (\(refusal.payload.reason)); the reversal credits it back: \(outcome)")
            return []
        case .provideEvidence(let digests): return try provideEvidence(digests)
        case .keepEvidence(let evidence, let foundHere):
            // Evidence is checked against the accused's log as this wallet follows it, merged with the one it
            // carries. Evidence another wallet sent is kept to pass on, but never acted on: only evidence this
            // wallet found itself bars a payer.
            try walletLock.withLock {
                let known = try wallet.peerKeyLog(of: evidence.accused)
                guard evidence.verify(knownLog: known).isProven else { return }
                try wallet.ledger.storeEvidence(evidence.encoded, banning: foundHere ? evidence.bannedWallet : nil)
            }
            return []
        case .provideKeyEvents(let walletID, let from):
            // Pages of the whole log, from the inception: a log is only checkable from its start.
            if walletID == wallet.walletID,
                let page = KeyEventsMessage.page(of: wallet.keyLog.events, walletID: walletID, from: from)
            {
                try environment.send(.keyEvents(page))
            }
            return []
        case .keepKeyEvents(let walletID, let from, let total, let events):
            return try keepKeyEventPage(walletID: walletID, from: from, total: total, events: events)
        case .finish(let outcome):
            var amounts: [String: AssetAmount] = [:]
            var text = describe(outcome)
            // A payment ends with the new balance of the asset it moved.
            switch outcome {
            case .paid(let receipt), .received(let receipt):
                let moved = receipt.payload.amount
                let balance = walletLock.withLock { wallet.state.balances[moved.asset] } ?? .zero(moved.money.currency)
                let now = AssetAmount(issuer: moved.issuer, money: balance)
                amounts["balance"] = now
                text += "\nbalance now \(MoneyText.format(now))"
            default: break
            }
            if receiptUnrecorded {
                text +=
                    "\nthe receipt is not recorded here: `secure pending` lists the payment; `secure retry` records it"
            }
            person.event("finished", ["outcome": Self.name(of: outcome)], amounts: amounts, text)
            return []
        }
    }

    // MARK: Key events and the lookup

    /// Asks for the peer's key-event log when its hello names a head this wallet does not know. The log
    /// arrives a page at a time and is kept when whole (`keepKeyEventPage`), through a valid chain only.
    private func askForKeyEventsIfNewer(_ hello: PeerHello) throws {
        guard let head = hello.keyEventHead else { return }
        let known = try walletLock.withLock { try wallet.peerKeyLog(of: hello.walletID) }
        knownPeerLog = (hello.walletID, known)
        if known?.head != head {
            keyEventFetch = KeyEventFetch(walletID: hello.walletID)
            try environment.send(.keyEvents(.request(walletID: hello.walletID, from: 0)))
        }
    }

    /// One page of the awaited log: asks for the next, or follows the whole log and answers the lookup
    /// that waited for it. A page nobody asked for is ignored; a page that does not continue the log ends
    /// the wait with the log as known before, and the checks that follow decide.
    private func keepKeyEventPage(walletID: WalletID, from: UInt32, total: UInt32, events: [SignedKeyEvent]) throws
        -> [PeerAction]
    {
        guard var fetch = keyEventFetch, fetch.walletID == walletID else { return [] }
        let person = environment.person
        guard fetch.accept(from: from, total: total, events: events) else {
            person.event(
                "keyEvents", ["outcome": "refused"], "the peer's key-event log came out of order; not followed")
            return try endKeyEventFetch()
        }
        if !fetch.isComplete {
            keyEventFetch = fetch
            try environment.send(.keyEvents(.request(walletID: walletID, from: UInt32(fetch.events.count))))
            return []
        }
        knownPeerLog = nil
        let outcome = try walletLock.withLock { try wallet.followKeyEvents(of: walletID, events: fetch.events) }
        switch outcome {
        case .followed: person.event("keyEvents", ["outcome": "followed"], "followed the peer's key-event log")
        case .refused(let error):
            person.event("keyEvents", ["outcome": "refused"], "the peer's key events were refused: \(error)")
        case .conflict:
            person.event(
                "keyEvents", ["outcome": "conflict"],
                "the peer signed two key events with one sequence; kept as evidence")
        }
        return try endKeyEventFetch()
    }

    /// Whatever the outcome, the lookup that waited for the log goes on with what is now known.
    private func endKeyEventFetch() throws -> [PeerAction] {
        keyEventFetch = nil
        guard let identity = deferredLookup else { return [] }
        deferredLookup = nil
        return try lookUp(identity)
    }

    private func lookUp(_ identity: PeerIdentity) throws -> [PeerAction] {
        peerKey = identity.key
        if keyEventFetch?.walletID == identity.walletID, !answersLookupBeforeKeyEvents {
            deferredLookup = identity
            return []
        }
        let held = try walletLock.withLock { try wallet.ledger.latestPeerCheckpoint(wallet: identity.walletID) }
            .flatMap { try? SignedCheckpoint.decode($0.encoded) }
        let keyLog: KeyEventLog?
        if let known = knownPeerLog, known.walletID == identity.walletID {
            keyLog = known.log
        } else {
            keyLog = try walletLock.withLock { try wallet.peerKeyLog(of: identity.walletID) }
        }
        lookedUpKeyLog = keyLog
        environment.person.event(
            "peer",
            [
                "fingerprint": Hex.encode(identity.fingerprint), "name": identity.displayName,
                "walletID": identity.walletID.hex,
            ],
            "the other side: \(Self.shortFingerprint(identity.key)), calls itself "
                + PeerText.quoted(identity.displayName, limit: PeerHello.displayNameByteCountMax)
        )
        var banning = try walletLock.withLock { try wallet.refusingEvidence(against: identity.walletID) }
        if let banning {
            environment.person.event(
                "peer", ["banned": banning.hex],
                "this wallet holds proof, its own or its issuer's clearing's, that the other side signed two "
                    + "histories (evidence \(banning.hex))")
        } else if let keyLog, let sequence = keyLog.event(for: identity.key)?.sequence,
            keyLog.nextKeyBearing(after: sequence) != nil
        {
            // A key the peer has rotated away from: refused when held evidence shows it signed after retirement.
            banning = try walletLock.withLock {
                try wallet.retiredKeyEvidence(against: identity.walletID, keySequence: UInt64(sequence))
            }
            if let banning {
                environment.person.event(
                    "peer", ["banned": banning.hex, "keySequence": "\(sequence)"],
                    "this wallet holds proof that the other side's key \(sequence) signed after its retirement "
                        + "(evidence \(banning.hex)); it takes nothing signed by that key")
            }
        }
        // Only a payee counts what it credited from the peer (its offline limit per payer).
        let credits = isPayer ? nil : try walletLock.withLock { try wallet.offlineCredits(from: identity.walletID) }
        return mutate(
            payer: { $0.peerLookedUp(PeerRecord(heldCheckpoint: held, keyLog: keyLog)) },
            payee: {
                $0.peerLookedUp(
                    PeerRecord(heldCheckpoint: held, keyLog: keyLog, banningEvidence: banning, offlineCredits: credits))
            })
    }

    // MARK: The person, ranging and the ledger

    private func approve(_ approval: Approval) throws -> [PeerAction] {
        if approval.role == .payee, !approval.needsConfirmation, let approvalHoldUntil {
            return approveAgainstHold(until: approvalHoldUntil())
        }
        switch environment.person.decide(approval) {
        case .decline:
            // A prompt that closed unanswered at the till's deadline is "too late" on both sides, not a decline.
            if decidedTooLate { return decisionTimedOut() }
            return mutate(payer: { $0.userDeclined() }, payee: { $0.userDeclined() })
        case .refuse:
            return mutate(payer: { $0.walletRefused() }, payee: { $0.userDeclined() })
        case .approve(let overriding):
            if decidedTooLate { return decisionTimedOut() }
            do {
                try holdUnlocked()
            } catch {
                // A wrong or locked PIN is the token's refusal, not the person's: failure 14, nothing recorded.
                environment.person.event("pin", ["error": "\(error)"], "the token refused: \(error)")
                return localFailure()
            }
            // The PIN read is part of the decision (docs/TILL.md §1.4).
            if decidedTooLate { return decisionTimedOut() }
            return mutate(payer: { $0.userApproved(overridingBudget: overriding) }, payee: { $0.userApproved() })
        }
    }

    /// A payee's approval given before the session: the token's live login is held for this session until
    /// `until`, with no prompt and no PIN read; anything less than a live login ends the session (14).
    private func approveAgainstHold(until: Int64?) -> [PeerAction] {
        let person = environment.person
        guard let until, until > environment.now() else {
            person.event("pin", ["error": "hold over"], "the PIN approval given before the session is over")
            return localFailure()
        }
        // Hold first: then no other session of this process can lock the token between the check and the use.
        environment.holdToken(wallet.token)
        guard wallet.token.isUnlocked else {
            environment.releaseToken(wallet.token)
            person.event("pin", ["error": "locked"], "the token is locked: the approval given before is gone")
            return localFailure()
        }
        beginHold(until: until)
        person.event(
            "approval", ["answer": "held"],
            "the amount answers this wallet's own request exactly; approved by the PIN given before the session")
        return payeeOnly { $0.userApproved() }
    }

    private func measure(_ task: MeasurementTask) throws -> [PeerAction] {
        let person = environment.person
        let summary: RangingSummary
        let source: RangingSource
        do {
            let taken = try environment.rangingSamples { millimetres in
                person.event(
                    "distance", ["millimetres": "\(millimetres)"],
                    String(format: "distance %.2f m", Double(millimetres) / 1000))
            }
            source = taken.source
            summary = try RangingSummary(samples: taken.samples)
        } catch let error as RangingError {
            return mutate(payer: { $0.rangingFailed(error) }, payee: { $0.rangingFailed(error) })
        }
        let signed = try walletLock.withLock {
            try requireLiveHold("the measurement was signed")
            return try task.context.measurement(role: task.role, summary: summary, source: source).sign(
                with: try wallet.signer)
        }
        person.event(
            "measured",
            [
                "median": "\(summary.medianMillimetres)", "spread": "\(summary.spreadMillimetres)",
                "source": "\(source)",
            ],
            "measured \(summary.medianMillimetres) mm (spread \(summary.spreadMillimetres) mm, \(source)), signed on the token"
        )
        var proof: [Digest32]?
        if let from = task.consistencyFromSize {
            proof =
                from >= 1 && from <= helloSize
                ? try walletLock.withLock { try wallet.ledger.consistencyProof(oldSize: from, newSize: helloSize) } : []
        }
        return mutate(payer: { $0.measured(signed, consistencyProof: proof) }, payee: { $0.measured(signed) })
    }

    private func commitDebit(_ task: DebitTask, _ action: PeerAction) throws -> [PeerAction] {
        try environment.crashPoint(.beforeDebit, of: action)
        let (debit, transfer) = try walletLock.withLock {
            try requireLiveHold("the debit")
            return try wallet.commitDebit(
                order: task.order, draft: task.draft, expectedPosition: task.position,
                message: { PeerMessage.transfer(task.pending($0)).encoded })
        }
        environment.person.event(
            "debit",
            ["position": "\(debit.position)", "transferID": task.order.transferID.hex],
            amounts: ["amount": task.order.amount],
            "paid \(MoneyText.format(task.order.amount)): debit committed as entry \(debit.position); sending the signed transfer"
        )
        try environment.crashPoint(.afterDebit, of: action)
        return payerOnly { $0.debitCommitted(transfer) }
    }

    private func credit(_ task: CreditTask, _ action: PeerAction) throws -> [PeerAction] {
        let person = environment.person
        try unlockWithoutPrompt("credit the payment approved earlier")
        try environment.crashPoint(.beforeCredit, of: action)
        let outcome = try walletLock.withLock {
            try wallet.accept(
                task.transfer, payerLog: lookedUpKeyLog, policy: task.policy, peerFailure: task.peerFailure,
                readyRecord: task.consumesReadyRecord ? task.offerID : nil)
        }
        try environment.crashPoint(.afterCredit, of: action)
        switch outcome {
        // A new credit, or a re-delivery of a credited transfer (not of a refused one), gets a receipt.
        case .recorded(let entry),
            .duplicate(let entry) where entry.kind == .paymentIn || entry.kind == .redemption:
            let receipt = try walletLock.withLock {
                try wallet.receipt(for: task.transfer, creditPosition: entry.position)
            }
            person.event(
                "credit", ["position": "\(entry.position)"], amounts: ["amount": task.transfer.payload.order.amount],
                "received \(MoneyText.format(task.transfer.payload.order.amount)) as entry \(entry.position); receipt sent"
            )
            return payeeOnly { $0.credited(receipt) }
        case .refused(let reason, _, let refusal?):
            person.event(
                "refused", ["reason": "\(reason)"], "the transfer failed a check (\(reason)); a signed refusal is sent")
            return payeeOnly { $0.refused(refusal) }
        case .recorded, .duplicate, .conflict, .refused, .policyRefusal, .dropped:
            person.event("refused", ["outcome": "\(outcome)"], "the transfer was not credited: \(outcome)")
            return payeeOnly { $0.creditFailed(.transferInvalid) }
        }
    }

    private func provideEvidence(_ digests: [EvidenceDigest]) throws -> [PeerAction] {
        let wanted = Set(digests)
        for bytes in try walletLock.withLock({ try wallet.ledger.evidence() })
        where wanted.contains(EvidenceDigest(of: bytes)) {
            if let evidence = try? ForkEvidence.decode(bytes) { try environment.send(.evidence(.item(evidence))) }
        }
        return []
    }

    // MARK: Names and sentences

    /// The first and last two bytes of a key's fingerprint: "3F2A…9C1B".
    public static func shortFingerprint(_ key: P256.PublicKey) -> String {
        let hex = Hex.encode(key.fingerprint).uppercased()
        return String(hex.prefix(4)) + "…" + String(hex.suffix(4))
    }

    /// One line about a receipt: who countersigned what.
    public static func describe(_ receipt: SignedReceipt) -> String {
        let payload = receipt.payload
        return "\(shortFingerprint(payload.payeeKey)) countersigned transfer \(payload.transferID.hex) of "
            + "\(MoneyText.format(payload.amount)) (credit entry \(payload.creditPosition); payer checkpoint \(payload.checkpointSize) "
            + "cosigned, digest \(Hex.encode(payload.checkpointDigest.bytes.prefix(8)))…)"
    }

    /// A short stable name for `--json`.
    public static func name(of outcome: PeerOutcome) -> String {
        switch outcome {
        case .paid: return "paid"
        case .reversed: return "reversed"
        case .unconfirmed: return "unconfirmed"
        case .received: return "received"
        case .refusedTransfer: return "refused"
        case .failed(let reason, _): return "failed:\(reason)"
        }
    }

    private func describe(_ outcome: PeerOutcome) -> String {
        switch outcome {
        case .paid(let receipt): return "paid; receipt: \(Self.describe(receipt))"
        case .reversed(let reason): return "the payee refused the transfer (\(reason)); the debit was reversed"
        case .unconfirmed(let id):
            return "debited but not confirmed: `secure pending` lists \(id.hex); `secure retry` re-sends it"
        case .received(let receipt): return "received; receipt sent: \(Self.describe(receipt))"
        case .refusedTransfer(let reason): return "refused the transfer (\(reason)) with a signed refusal"
        case .failed(let reason, let byPeer):
            // A payee that stored its ready record and then failed itself (link, timeout, token) cannot know
            // whether the payer debited: its retry settles it.
            if readyStored, !byPeer {
                return "NOT SETTLED: \(reason) after the ready record was stored; the payer may have debited, and "
                    + "its `secure retry` will be credited from that record"
            }
            return "nothing moved: \(reason)" + (byPeer ? " (said the other side)" : "")
        }
    }
}

/// A peer's key-event log while its pages arrive: each page must start where the last ended and agree on
/// the log's length, which `KeyEventsMessage` bounds by `KeyEventLog.eventCountMax`.
struct KeyEventFetch {
    let walletID: WalletID
    private(set) var events: [SignedKeyEvent] = []
    private var total: UInt32?

    init(walletID: WalletID) { self.walletID = walletID }

    var isComplete: Bool { total.map { events.count == Int($0) } ?? false }

    /// Adds a page; false when it does not continue the log.
    mutating func accept(from: UInt32, total pageTotal: UInt32, events page: [SignedKeyEvent]) -> Bool {
        guard Int(from) == events.count, total == nil || total == pageTotal,
            events.count + page.count <= Int(pageTotal)
        else { return false }
        total = pageTotal
        events += page
        return true
    }
}
