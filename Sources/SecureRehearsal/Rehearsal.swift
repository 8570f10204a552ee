import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// How a rehearsal ended: the ending it reached, the sides' outcomes, and the money check.
public struct RehearsalResult: Sendable {
    /// The ending reached (a name of docs/TILL.md §4.3), from the first session.
    public let ending: String
    /// The ending the file asked for.
    public let expected: String
    public let payerOutcome: PeerOutcome?
    public let tillOutcome: PeerOutcome?
    /// Whether a retry was played to settle an unresolved side, and how it ended on the payer's side.
    public let retryOutcome: PeerOutcome?
    /// Payer and till balances of the rehearsal asset before the payment and after everything (retry included).
    public let before: (payer: AssetAmount, till: AssetAmount)
    public let after: (payer: AssetAmount, till: AssetAmount)

    /// Whether payer + till held the same money before and after.
    public var conserved: Bool { before.payer.money + before.till.money == after.payer.money + after.till.money }
    /// Whether the file's ending was reached and money was conserved.
    public var passed: Bool { ending == expected && conserved }
}

extension Money {
    fileprivate static func + (lhs: Money, rhs: Money) -> Money {
        (try? lhs.adding(rhs)) ?? lhs
    }
}

/// The rehearsal engine (issue 18, docs/TILL.md §4): both sides of a till payment in one process, with the real
/// payer and payee machines driven through the real `PeerActions`, over a real `SecureChannel` handshake on an
/// in-memory link, in one single-threaded loop on a rehearsal clock. This side's person is the terminal
/// (`RehearsalPerson`); the other side's person, ranging, token and link come from the file. Everything runs
/// inside `SignatureDomain.rehearsal`, on rehearsal tokens and wallets in a tmpfs folder: a rehearsal can never
/// move real money.
public final class Rehearsal {
    static let messageRecordType: UInt8 = 1
    static let fragmentRecordType: UInt8 = 2
    /// Readings per measurement, as real ranging takes.
    static let sampleCount = 16
    /// Steps one session may take; an honest session takes about a hundred.
    static let stepCountMax = 20_000
    /// The handshake runs at machine speed in memory.
    static let handshakeSeconds = 10.0

    /// The parsed rehearsal file (`RehearsalFile.parse`).
    public let file: RehearsalFile
    let person: RehearsalPerson
    let output: (RehearsalEvent) -> Void
    var world: RehearsalWorld!
    var clock: RehearsalClock { world.clock }
    var payer: RehearsalSessionEnd!
    var till: RehearsalSessionEnd!
    var gate: TillMachine
    let instance: String
    /// Payment messages delivered so far (§4.2's numbering), and whether the fault has fired.
    var delivered = 0
    var firedFault = false
    /// The fault being played: the file's, none during the settling retry, the prelude's before `paid-retry`.
    var fault: RehearsalFault?
    /// Whether the file's delays apply (not in the prelude or the settling retry).
    var delaysOn = true
    /// Whether this payment retries one the prelude left pending (`paid-retry`).
    var retrying: TransferMessage?
    /// When the till operator's PIN hold ends (lock-in, or the re-ask at connect), on the rehearsal clock.
    var holdEnd: Int64?
    /// Whether the till rules (decision deadline, lock-in hold, re-ask at connect) apply: not to the prelude
    /// or the settling retry, which are not sessions at a counting-down till.
    var tillRules = true
    var cancelAt: Int64?

    /// Prepares a rehearsal; `output` gets every event, in order.
    public init(file: RehearsalFile, person: RehearsalPerson, output: @escaping (RehearsalEvent) -> Void) {
        self.file = file
        self.person = person
        self.output = output
        gate = TillMachine(
            countdownMilliseconds: min(
                max(file.countdownMilliseconds, TillMachine.countdownRange.lowerBound),
                TillMachine.countdownRange.upperBound))
        instance = "TILL-" + Hex.encode(SystemRandom.bytes(2)).uppercased()
        fault = file.fault
    }

    var this: RehearsalSessionEnd { file.plays == .payer ? till : payer }
    var other: RehearsalSessionEnd { file.plays == .payer ? payer : till }

    /// Plays the file to its end, inside the rehearsal signature domain, and removes the rehearsal wallets.
    public func run() throws -> RehearsalResult {
        try SignatureDomain.rehearsal {
            world = try RehearsalWorld(file: file)
            defer { world.remove() }
            return try play()
        }
    }

    private func play() throws -> RehearsalResult {
        payer = RehearsalSessionEnd(
            role: .payer, played: file.plays == .payer, engine: self, owner: world.payer, displayName: "payer",
            distances: file.plays == .payer ? file.distanceOther : file.distanceThis)
        till = RehearsalSessionEnd(
            role: .till, played: file.plays == .till, engine: self, owner: world.till, displayName: instance,
            distances: file.plays == .till ? file.distanceOther : file.distanceThis)
        let asset = world.asset
        let before = (
            payer: AssetAmount(issuer: asset.issuer, money: world.payer.balance(asset)),
            till: AssetAmount(issuer: asset.issuer, money: world.till.balance(asset))
        )
        emit(
            nil, "rehearsal",
            ["plays": file.plays.rawValue, "expected": file.ending.rawValue, "this": file.plays.other.rawValue],
            "rehearsal of a till payment: this side is the \(file.plays.other.rawValue), the file plays the "
                + "\(file.plays.rawValue); expected ending \(file.ending.rawValue). No real wallet, token or money "
                + "is used.")
        emit(
            nil, "balances", [:], amounts: ["payer": before.payer, "till": before.till],
            "payer \(MoneyText.format(before.payer)), till \(MoneyText.format(before.till))")
        let ending = try playPayment()
        emit(nil, "ending", ["ending": ending], "ended: \(ending)")
        let payerOutcome = payer.outcome
        let tillOutcome = till.outcome
        let retried = try settle()
        let after = (
            payer: AssetAmount(issuer: asset.issuer, money: world.payer.balance(asset)),
            till: AssetAmount(issuer: asset.issuer, money: world.till.balance(asset))
        )
        let result = RehearsalResult(
            ending: ending, expected: file.ending.rawValue, payerOutcome: payerOutcome, tillOutcome: tillOutcome,
            retryOutcome: retried, before: before, after: after)
        emit(
            nil, "balances", ["money": result.conserved ? "conserved" : "not-conserved"],
            amounts: ["payer": after.payer, "till": after.till],
            "payer \(MoneyText.format(after.payer)), till \(MoneyText.format(after.till)): money "
                + (result.conserved ? "conserved" : "NOT conserved")
                + " (payer + till \(MoneyText.format(before.payer.money + before.till.money)) before, "
                + "\(MoneyText.format(after.payer.money + after.till.money)) after)")
        return result
    }

    // MARK: The till's life and the first session

    /// Locks the amount, counts down, lets the payer connect, and plays the session; returns the ending.
    private func playPayment() throws -> String {
        if file.ending == .paidRetry { try prelude() }
        for side in [payer!, till!] {
            side.owner.token.resetPINEntries()
            side.owner.token.pinAnswer = side.played ? file.pinOther : file.pinThis
            side.owner.token.pinAnswerFromEntry = side.played ? file.pinOtherFromEntry : file.pinThisFromEntry
        }
        // Locking: the operator's PIN (entry 1) unlocks the till's token; then the till opens.
        let lockPIN = try till.readPIN()
        do {
            try world.till.token.unlock(pin: lockPIN, confirmFinalTry: false)
            holdEnd = clock.now + Int64(TillLimits.pinHoldSeconds) * 1_000
        } catch {
            emit(till, "pin", ["error": "\(error)"], "the token refused: \(error); the amount is not offered")
            return "pin-refused-till"
        }
        gate.opened(now: clock.now)
        emitTill()
        let connectAt: Int64?
        switch file.connect {
        case .after(let milliseconds): connectAt = clock.now + milliseconds
        case .never: connectAt = nil
        }
        // Counting down until the payer connects (or never).
        while true {
            if gate.tick(now: clock.now) {
                emit(
                    till, "till", ["state": "expired"],
                    "EXPIRED: nobody paid within \(gate.countdownMilliseconds / 1000) s")
                return "expired"
            }
            if let connectAt, clock.now >= connectAt { break }
            guard let left = gate.millisecondsLeft(now: clock.now) else { break }
            clock.now = min(connectAt ?? Int64.max, clock.now + left)
        }
        try connect()
        try runLoop()
        if case .busy = gate.state, let outcome = till.outcome {
            gate.sessionEnded(outcome, servedRequest: retrying == nil, now: clock.now)
        }
        return ending()
    }

    /// The payer connects: a real handshake on an in-memory link, then the payer's session starts (hello): it
    /// answers the till's request, or retries the payment the prelude left pending.
    private func connect() throws {
        let (initiator, responder) = try Self.handshake()
        emit(
            nil, "channel", ["sas": initiator.sas.digits, "sasWords": initiator.sas.words.joined(separator: " ")],
            "secure channel up (a real handshake, in memory); code \(initiator.sas)")
        let payerContext = try payer.context(initiator)
        let machine =
            retrying.map { PayerMachine(retrying: $0, context: payerContext) }
            ?? PayerMachine(answeringRequestWith: payerContext, transferID: .random())
        payer.begin(.payer(machine), on: initiator)
        till.channel = responder
    }

    /// Before `paid-retry`: an earlier payment at this till whose link dropped after the debit (as
    /// link-lost-after-debit.txt), so the payer holds a pending transfer when the till opens again.
    private func prelude() throws {
        emit(nil, "prelude", [:], "first, an earlier payment at this till loses its link after the debit")
        fault = .dropAfter(message: 8)
        tillRules = false
        delaysOn = false
        gate.opened(now: clock.now)
        try connect()
        try runLoop()
        gate = TillMachine(countdownMilliseconds: gate.countdownMilliseconds)
        retrying = try pendingTransfers().first
        guard retrying != nil else {
            throw RehearsalError(.setup, "the prelude of paid-retry left no pending payment")
        }
        fault = file.fault
        delaysOn = true
        tillRules = true
        delivered = 0
        firedFault = false
        for side in [payer!, till!] { side.reset() }
        emit(nil, "prelude", [:], "the payer's payment is pending; the till opens again")
    }

    /// A real SecureChannel handshake over a `MemoryLink`: the initiator on a short-lived thread (the handshake
    /// driver blocks), the responder here; nothing is signed in it, so the signature domain need not follow.
    static func handshake() throws -> (initiator: SecureChannel, responder: SecureChannel) {
        final class Box: @unchecked Sendable {
            var result: Result<SecureChannel, Error>?
        }
        let link = MemoryLink()
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let end = link.initiatorEnd
        Thread {
            box.result = Result { try SecureChannel.initiate(over: end, timeoutSeconds: handshakeSeconds) }
            done.signal()
        }.start()
        let responder = Result { try SecureChannel.respond(over: link.responderEnd, timeoutSeconds: handshakeSeconds) }
        done.wait()
        return (try box.result!.get(), try responder.get())
    }

    /// The till's hooks (docs/TILL.md §1.4) on a session's `PeerActions`: both sides know the decision deadline;
    /// the till approves its own request against the lock-in hold, and asks its operator for the PIN again
    /// when a payer connects with less than `TillLimits.pinReserveAtConnectSeconds` of the hold left.
    func installTillHooks(_ actions: PeerActions, on side: RehearsalSessionEnd) {
        guard tillRules else { return }
        actions.decisionMilliseconds = TillLimits.decisionMilliseconds
        guard side.role == .till else { return }
        actions.approvalHoldUntil = { [unowned self] in holdEnd }
        actions.beforeLookUp = { [unowned self, unowned side] in
            let reserve = Int64(TillLimits.pinReserveAtConnectSeconds) * 1_000
            guard (holdEnd ?? clock.now) - clock.now < reserve else { return }
            emit(side, "pin", [:], "the lock-in PIN hold is short: the operator types the PIN again")
            world.till.token.lock()
            holdEnd = nil
            do {
                try world.till.token.unlock(pin: try side.readPIN(), confirmFinalTry: false)
            } catch {
                emit(side, "pin", ["error": "\(error)"], "PIN REFUSED; the amount is not offered: \(error)")
                throw error
            }
            holdEnd = clock.now + Int64(TillLimits.pinHoldSeconds) * 1_000
        }
    }

    // MARK: The loop

    /// Steps both sides until both ended (or the one left is silent with nothing to read), moving the clock to
    /// the next deadline whenever neither can step.
    func runLoop() throws {
        var steps = 0
        while true {
            steps += 1
            guard steps <= Self.stepCountMax else {
                throw RehearsalError(.setup, "the rehearsal did not settle within \(Self.stepCountMax) steps")
            }
            applyFaultsBeforeStep()
            if try step(payer) || step(till) { continue }
            if done { return }
            guard let next = nextEvent(), next > clock.now else {
                // Nothing can happen: a silent side wakes (its peer ended and closed), or the run is over.
                if let sleeper = [payer!, till!].first(where: { $0.silent }) {
                    sleeper.silent = false
                    continue
                }
                return
            }
            clock.now = next
        }
    }

    private var done: Bool {
        [payer!, till!].allSatisfy { side in side.finished || (side.actions == nil && side.channel == nil) }
    }

    /// The earliest time something is due: a wait's deadline, a delayed send, a decision, a countdown, a hold.
    private func nextEvent() -> Int64? {
        var next: Int64?
        func consider(_ time: Int64?) { if let time { next = min(next ?? time, time) } }
        for side in [payer!, till!] where !side.finished && !side.silent {
            consider(side.outbox.first?.sendAt)
            consider(side.decidingUntil)
            if side.actions?.wait != nil { consider(side.deadline) }
            if side.actions == nil, side.channel != nil { consider(side.deadline) }
            consider(side.actions?.pinHeldUntil)
        }
        consider(cancelAt)
        return next
    }

    /// One thing a side can do now; false when it can do nothing until something arrives or a time comes.
    private func step(_ side: RehearsalSessionEnd) throws -> Bool {
        guard !side.finished, !side.silent else { return false }
        if let first = side.outbox.first, first.sendAt <= clock.now {
            side.outbox.removeFirst()
            do { try side.transmit(first.message) } catch {
                if side.outcome == nil { side.queue += side.actions?.linkDropped() ?? [] }
            }
            return true
        }
        // A side that waits before sending does nothing else meanwhile, as a driver blocked in its send: it
        // reads nothing and its timers start again once the message is out.
        if !side.outbox.isEmpty { return false }
        if let until = side.decidingUntil {
            guard until <= clock.now else { return false }
            side.decidingUntil = nil
            try perform(side, side.queue.removeFirst())
            return true
        }
        if let action = side.queue.first {
            if side.played, !side.decisionStarted, case .askApproval(let approval) = action, approval.needsConfirmation
            {
                side.decisionStarted = true
                side.decidingUntil = clock.now + (faultActive(.decline) ? 0 : file.decision.afterMilliseconds)
                return true
            }
            side.queue.removeFirst()
            try perform(side, action)
            return true
        }
        guard let actions = side.actions else { return try awaitConnector(side) }
        if let first = side.firstMessage {
            side.firstMessage = nil
            side.queue = deliver(first, to: side)
            return true
        }
        if actions.outcome != nil {
            finish(side)
            return true
        }
        if actions.hasReleasableMessage {
            side.queue = actions.releaseHeldMessage()
            return true
        }
        if side.linkCut {
            guard !side.linkDropTold else { return false }
            side.linkDropTold = true
            side.queue = actions.linkDropped()
            return true
        }
        if let message = try receive(side) {
            side.queue = deliver(message, to: side)
            return true
        }
        // The read found the link gone: the next step tells the machine, at this same time.
        if side.linkCut { return true }
        actions.releasePINIfExpired()
        guard let wait = actions.wait else { return false }
        if wait != side.currentWait {
            side.currentWait = wait
            side.deadline = actions.deadline(for: wait) ?? clock.now + Int64(wait.seconds) * 1_000
        }
        if clock.now >= side.deadline {
            emit(side, "timeout", ["wait": wait.rawValue], "no answer while waiting for \(wait.rawValue); giving up")
            side.queue = actions.timeoutExpired()
            return true
        }
        return false
    }

    /// Carries out one action, with the token fault the file plants at its step.
    private func perform(_ side: RehearsalSessionEnd, _ action: PeerAction) throws {
        if case .tokenRemoved(let party, let step)? = fault,
            (party == .this ? this : other) === side, Self.step(of: action) == step, !side.owner.token.removed
        {
            side.owner.token.removed = true
            firedFault = true
            emit(
                side, "token", ["removed": step.rawValue],
                "the token was pulled out at the \(step.rawValue) (as the rehearsal file says)")
        }
        guard let actions = side.actions else { return }
        side.queue += try actions.perform(action)
    }

    static func step(of action: PeerAction) -> RehearsalStep? {
        switch action {
        case .measure: .measure
        case .commitDebit: .debit
        case .credit: .credit
        case .keepReceipt: .receipt
        default: nil
        }
    }

    /// The side's session ended: it closes its channel end, as a real driver does.
    private func finish(_ side: RehearsalSessionEnd) {
        side.finished = true
        side.actions?.finishSession()
        side.channel?.close()
        if side === till, case .busy = gate.state, let outcome = side.outcome {
            gate.sessionEnded(outcome, servedRequest: retrying == nil, now: clock.now)
            if case .countingDown = gate.state {
                emit(
                    till, "till", ["state": "countingDown"], "CREDITED an earlier payment (retry); counting down again")
            }
        }
    }

    /// The till says nothing until the connector's first payment message: then the gate admits it (or answers
    /// busy or closed) and the till's session starts.
    private func awaitConnector(_ side: RehearsalSessionEnd) throws -> Bool {
        guard let channel = side.channel else { return false }
        if side.currentWait != .peerHello {
            side.currentWait = .peerHello
            side.deadline = clock.now + Int64(PeerWait.peerHello.seconds) * 1_000
        }
        guard let message = try receive(side) else {
            if clock.now >= side.deadline || side.linkCut {
                emit(side, "connection", ["dropped": "silent"], "the connector said nothing; closed")
                channel.close()
                side.channel = nil
                return true
            }
            return false
        }
        if side.played, fault == .busy {
            // Another payer holds the played till: failure 22 instead of its hello (docs/TILL.md §1.1).
            firedFault = true
            emit(side, "connection", ["refused": "till busy"], "another payer holds the till: answered till busy")
            refuse(side, .tillBusy)
            return true
        }
        switch gate.payerArrived(now: clock.now) {
        case .take:
            emitTill()
            let request = try PaymentRequest(
                requestID: .random(), amount: AssetAmount(issuer: world.asset.issuer, money: file.amount), note: "")
            side.begin(
                .payee(PayeeMachine(context: try side.context(channel), request: request)), on: channel, first: message)
        case .busy:
            refuse(side, .tillBusy)
        case .closed:
            refuse(side, .timeout)
        }
        return true
    }

    /// The till answers a connector with a failure instead of its hello (22 busy, 3 closed), and hangs up.
    private func refuse(_ side: RehearsalSessionEnd, _ reason: PeerFailureReason) {
        try? side.transmit(.failure(PeerFailure(offerID: nil, reason: reason)))
        side.channel?.close()
        side.channel = nil
    }

    /// The next whole message on the side's channel end, or nil. A closed or broken link tells the machine.
    private func receive(_ side: RehearsalSessionEnd) throws -> PeerMessage? {
        guard let channel = side.channel, !side.linkCut else { return nil }
        while true {
            let record: ChannelRecord?
            do {
                record = try channel.receive(timeoutSeconds: 0)
            } catch let error as ChannelError where error.code == .timeout {
                return nil
            } catch {
                return linkGone(side, "\(error)")
            }
            guard let record else { return linkGone(side, "the other side closed the channel") }
            guard record.type == Self.messageRecordType || record.type == Self.fragmentRecordType else { continue }
            side.fragments += record.payload
            guard record.type == Self.messageRecordType else { continue }
            let bytes = side.fragments
            side.fragments = []
            guard let message = try? PeerMessage.decode(bytes) else {
                return linkGone(side, "a message that does not decode")
            }
            return message
        }
    }

    private func linkGone(_ side: RehearsalSessionEnd, _ why: String) -> PeerMessage? {
        side.linkCut = true
        if side.actions != nil { emit(side, "link", ["error": why], "the link dropped: \(why)") }
        return nil
    }

    /// Hands one message to a side, counting payment messages and firing the file's faults at their number.
    private func deliver(_ message: PeerMessage, to side: RehearsalSessionEnd) -> [PeerAction] {
        guard let actions = side.actions else { return [] }
        var message = message
        if !message.isSideMessage { delivered += 1 }
        if side.played, side.role == .till, fault == .refuseTransfer,
            case .transfer(let transfer) = message
        {
            // The played till's check refuses finally: the transfer is matched against a proof it does not hold
            // (ready-record mismatch, reason 6), which the real refusal path signs and the payer reverses.
            let proof = transfer.spatialProof
            message = .transfer(
                TransferMessage(
                    offerID: transfer.offerID, transfer: transfer.transfer,
                    spatialProof: SpatialProof(payer: proof.payee, payee: proof.payer)))
            firedFault = true
        }
        let answer = actions.deliver(message)
        if !message.isSideMessage {
            switch fault {
            case .dropAfter(let number)? where number == delivered:
                firedFault = true
                emit(
                    nil, "link", ["error": "dropped"],
                    "the link drops after message \(number) (as the rehearsal file says)")
                for end in [payer!, till!] { end.linkCut = true }
            case .cancelAfter(let number)? where number == delivered:
                firedFault = true
                cancelAt = clock.now
            default: break
            }
        }
        return answer
    }

    /// Faults that act between steps: a cancel that is due, a side that goes silent.
    private func applyFaultsBeforeStep() {
        if let due = cancelAt, due <= clock.now {
            cancelAt = nil
            let side = other
            emit(side, "cancelled", [:], "the \(side.role.rawValue) cancels (as the rehearsal file says)")
            if side.role == .till {
                if gate.cancel() == .withdrawSession { side.queue += side.actions?.withdraw() ?? [] }
            } else {
                side.queue += side.actions?.withdraw() ?? []
            }
        }
        if case .timeOutAt(let wait)? = fault, this.actions?.wait == wait, !other.silent,
            !other.finished
        {
            firedFault = true
            other.silent = true
            emit(other, "silent", ["wait": wait.rawValue], "goes silent (as the rehearsal file says)")
        }
    }

    // MARK: Settling

    /// After an ending that leaves the payer's payment pending, the payer retries on a new channel (as
    /// `secure retry`), with the file's faults off; returns the retry's payer outcome, or nil when none ran.
    private func settle() throws -> PeerOutcome? {
        guard let message = try pendingTransfers().first else { return nil }
        fault = nil
        delaysOn = false
        tillRules = false
        for side in [payer!, till!] {
            side.reset()
            side.owner.token.removed = false
            side.owner.token.pinAnswer = .right
        }
        emit(
            nil, "retry", ["transferID": message.transfer.payload.order.transferID.hex],
            "the payer's payment is pending: it retries (secure retry) on a new channel")
        let (initiator, responder) = try Self.handshake()
        payer.begin(.payer(PayerMachine(retrying: message, context: try payer.context(initiator))), on: initiator)
        till.begin(.payee(PayeeMachine(context: try till.context(responder))), on: responder)
        try runLoop()
        return payer.outcome
    }

    /// The payer's pending payments, as `secure retry` re-sends them.
    private func pendingTransfers() throws -> [TransferMessage] {
        try world.payer.wallet.pendingTransfers().compactMap { pending -> TransferMessage? in
            guard
                let bytes = try world.payer.wallet.ledger.outgoingMessage(
                    transferID: pending.transfer.payload.order.transferID),
                case .transfer(let message)? = try PeerMessage.decode(bytes)
            else { return nil }
            return message
        }
    }

    // MARK: The people

    func faultActive(_ planted: RehearsalFault) -> Bool { fault == planted }

    /// How long the played side waits before sending this message.
    func delay(of message: PeerMessage) -> Int64? {
        delaysOn ? file.delays.first { $0.message.rawValue == message.name }?.milliseconds : nil
    }

    /// Why this side's payer refuses the till, or nil: `expect-payee other` names another wallet.
    func refusesPayee(_ peer: PeerIdentity) -> String? {
        guard file.expectPayee == .other else { return nil }
        return "NOT THE EXPECTED TILL: wallet \(peer.walletID.hex.prefix(8))… is not the one expected; refused"
    }

    /// The question this side's person is asked.
    func question(for approval: Approval) -> String {
        let amount = MoneyText.format(approval.amount)
        let fingerprint = PeerActions.shortFingerprint(approval.peer.key)
        let code = (payer.channel ?? till.channel).map { ", code \($0.sas.digits)" } ?? ""
        switch approval.role {
        case .payer:
            let standing = file.contact.map { "contact " + PeerText.escaped($0) } ?? "unverified till"
            return "Pay \(amount) to "
                + PeerText.quoted(approval.peer.displayName, limit: PeerHello.displayNameByteCountMax)
                + " (\(fingerprint), \(standing)\(code))?"
        case .payee:
            return "Accept \(amount) from \(fingerprint)\(code)?"
        }
    }

    // MARK: The ending

    /// The ending the first session reached, told from both sides' outcomes and what happened (docs/TILL.md §2).
    func ending() -> String {
        switch gate.state {
        case .expired: return "expired"
        case .cancelled: return "cancelled"
        case .locking, .countingDown, .busy, .ended: break
        }
        let payerOutcome = payer.outcome
        let tillOutcome = till.outcome
        if world.payer.token.refusedLogins > 0 { return "pin-refused" }
        if world.till.token.refusedLogins > 0 { return "pin-refused-till" }
        switch payerOutcome {
        case .paid?:
            guard payer.receiptKept else { return "receipt-unrecorded" }
            return retrying == nil ? "paid" : "paid-retry"
        case .reversed?: return "reversed"
        case .unconfirmed?:
            if faultActive(.recordFails) && firedFault { return "not-recorded" }
            if case .failed(.timeout, _)? = tillOutcome { return "unconfirmed-till" }
            return "unconfirmed"
        case .failed(let reason, let byPeer)?:
            if payer.refusedPeer { return "not-expected-payee" }
            if case .failed(let tillReason, _)? = tillOutcome, [.tooFar, .distancesDisagree].contains(tillReason) {
                return "too-far"
            }
            switch reason {
            case .tooFar, .distancesDisagree: return "too-far"
            case .insufficientFunds, .overBudget, .refusedByPayerWallet: return "refused-by-wallet"
            case .tillBusy: return "till-busy"
            case .declined where !byPeer: return "declined"
            case .withdrawn where !byPeer: return "withdrawn"
            case .withdrawn: return "cancelled"
            case .timeout: return "decision-deadline"
            default: break
            }
            if case .tokenRemoved? = fault, firedFault { return "token-removed" }
            if reason == .localFailure, payer.linkCut || till.linkCut {
                if till.readyStored, case .failed(_, false)? = tillOutcome { return "link-lost-after-ready" }
                return "link-lost"
            }
            return "failed:\(reason)"
        case .received?, .refusedTransfer?: return "impossible"
        case nil: return tillOutcome.map { "till " + PeerActions.name(of: $0) } ?? "no outcome"
        }
    }

    // MARK: Output

    func emitTill() {
        switch gate.state {
        case .countingDown(let until):
            emit(
                till, "till",
                ["state": "countingDown", "instance": instance, "secondsLeft": "\((until - clock.now) / 1000)"],
                amounts: ["amount": AssetAmount(issuer: world.asset.issuer, money: file.amount)],
                "\(instance) open for \(MoneyText.format(file.amount)): counting down \((until - clock.now) / 1000) s"
            )
        case .busy(let remaining):
            emit(
                till, "till", ["state": "busy", "instance": instance, "secondsLeft": "\(remaining / 1000)"],
                "a payer connected: the countdown stops with \(remaining / 1000) s left")
        case .locking, .cancelled, .expired, .ended: break
        }
    }

    func emit(
        _ side: RehearsalSessionEnd?, _ name: String, _ fields: [String: String], amounts: [String: AssetAmount] = [:],
        _ text: String
    ) {
        output(
            RehearsalEvent(
                side: side?.role, played: side?.played ?? false, name: name, fields: fields, amounts: amounts,
                text: text, elapsedMilliseconds: clock.now - clock.start))
    }

    func emit(
        side: RehearsalSessionEnd, _ name: String, _ fields: [String: String], amounts: [String: AssetAmount],
        _ text: String
    ) {
        emit(side, name, fields, amounts: amounts, text)
    }
}
