import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken
import SecureWallet

/// Runs one peer payment session: the pure payer or payee state machine from SecureCore, over an open
/// SecureChannel, with a wallet. This is the only place that does the protocol's I/O: it carries out each
/// action the machine asks for (send, look up, ask the person, range and sign, persist, commit, credit)
/// and feeds the machine the answers, timeouts and link failures, in arrival order.
public final class PeerDriver {
    /// What this side does in the session.
    public enum Role: Sendable {
        /// Payer-initiated: pay this amount.
        case pay(PaymentIntent)
        /// Payer, answering the payee's request (the person picks a category).
        case answerRequest
        /// Payer, re-sending a pending transfer in a new session.
        case retry(TransferMessage)
        /// Payee, optionally opening with a request.
        case receive(request: PaymentRequest?)
    }

    private enum Machine {
        case payer(PayerMachine)
        case payee(PayeeMachine)
    }

    /// The PIN is held for the machine-speed steps after an approval, and never longer than this.
    public static let pinHoldSecondsMax = 60.0
    /// How often the loop wakes to check its timers while waiting for a record.
    static let pollSeconds = 0.25
    /// The channel's record type for a whole peer message, and for a fragment that more fragments follow.
    static let messageRecordType: UInt8 = 1
    static let fragmentRecordType: UInt8 = 2

    let wallet: Wallet
    let channel: SecureChannel
    let interface: PeerInterface
    let ranging: RangingConfiguration
    /// Serializes use of the wallet when one process serves several sessions at once.
    let walletLock: NSLock
    private var machine: Machine
    private var peerKey: P256.PublicKey?
    /// The peer's key-event log while it arrives page by page. The lookup waits for the whole log
    /// (`deferredLookup`), so the first session after a peer's rotation checks the peer's checkpoint against
    /// the rotated log, not the one known before. The machine's lookup wait bounds it.
    private var keyEventFetch: KeyEventFetch?
    private var deferredLookup: PeerIdentity?
    /// Protocol messages that arrived while the lookup waits for the peer's key events, in arrival order.
    /// The machine is still looking the peer up, so they are handed to it once the lookup is answered.
    private var heldMessages: [PeerMessage] = []
    /// While a lookup waits, an honest peer sends at most its offer or request and a failure; anything past
    /// this is a flood, and the session ends before any debit.
    static let heldMessageCountMax = 8
    private var pinHeldUntil: Date?
    private let helloSize: UInt64
    /// Multiplies every wait's timeout; tests of silent links shorten them.
    private let timeoutScale: Double

    /// Prepares a session on an open channel. The wallet's latest checkpoint goes into `hello`.
    public init(wallet: Wallet, channel: SecureChannel, role: Role, interface: PeerInterface, ranging: RangingConfiguration,
                policy: RangingPolicy, displayName: String, walletLock: NSLock = NSLock(), timeoutScale: Double = 1) throws {
        precondition(timeoutScale > 0 && timeoutScale <= 1, "timeouts may only be shortened, for tests of silent links")
        self.timeoutScale = timeoutScale
        self.wallet = wallet
        self.channel = channel
        self.interface = interface
        self.ranging = ranging
        self.walletLock = walletLock
        let (hello, size) = try walletLock.withLock {
            guard let latest = wallet.latest else { throw WalletError(.notFound, "the wallet has no checkpoint") }
            let evidence = try wallet.ledger.evidence().map { SHA256.hash($0) }
            return (try PeerHello(walletKey: wallet.signingKey, displayName: displayName, rangingToken: SystemRandom.bytes(16),
                                  nonceContribution: SystemRandom.bytes(SessionNonce.contributionByteCount),
                                  checkpoint: latest, evidenceDigests: Array(evidence.prefix(PeerHello.evidenceDigestCountMax)),
                                  keyEventHead: wallet.keyLog.head),
                    latest.checkpoint.size)
        }
        helloSize = size
        let context = PeerSessionContext(transcriptHash: channel.summary.transcriptHash, channelBinding: channel.channelBinding,
                                         hello: hello, rangingPolicy: policy)
        switch role {
        case .pay(let intent): machine = .payer(PayerMachine(paying: intent, context: context, transferID: SystemRandom.bytes(16)))
        case .answerRequest: machine = .payer(PayerMachine(answeringRequestWith: context, transferID: SystemRandom.bytes(16)))
        case .retry(let message): machine = .payer(PayerMachine(retrying: message, context: context))
        case .receive(let request): machine = .payee(PayeeMachine(context: context, request: request))
        }
    }

    // MARK: The loop

    /// Runs the session to its end and returns how it ended. The channel is closed and the token locked.
    public func run() -> PeerOutcome {
        interface.event("channel", ["sas": channel.sas.digits, "sasWords": channel.sas.words.joined(separator: " ")],
                        "secure channel up; compare the code with the other person: \(channel.sas)")
        var queue = start()
        var currentWait: PeerWait?
        var deadline = Date()
        var fragments: [UInt8] = []
        defer { finishSession() }
        while true {
            while !queue.isEmpty { queue += perform(queue.removeFirst()) }
            if let outcome { return outcome }
            if keyEventFetch == nil, !heldMessages.isEmpty {
                queue = handle(heldMessages.removeFirst())
                continue
            }
            releasePINIfExpired()
            guard let wait else { return .failed(.localFailure, byPeer: false) }
            if wait != currentWait {
                currentWait = wait
                deadline = Date(timeIntervalSinceNow: Double(wait.seconds) * timeoutScale)
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                interface.event("timeout", ["wait": wait.rawValue], "no answer while waiting for \(wait.rawValue); giving up")
                queue = timeoutExpired()
                continue
            }
            do {
                guard let record = try channel.receive(timeoutSeconds: min(remaining, Self.pollSeconds)) else {
                    queue = linkDropped()
                    continue
                }
                fragments += record.payload
                guard fragments.count <= PeerMessage.encodedByteCountMax else { queue = linkDropped(); continue }
                guard record.type == Self.messageRecordType else { continue }
                let bytes = fragments
                fragments = []
                queue = deliver(bytes)
            } catch let error as ChannelError where error.code == .timeout {
                continue
            } catch {
                interface.event("link", ["error": "\(error)"], "the link dropped: \(error)")
                queue = linkDropped()
            }
        }
    }

    private func deliver(_ bytes: [UInt8]) -> [PeerAction] {
        let message: PeerMessage
        do {
            guard let decoded = try PeerMessage.decode(bytes) else { return protocolViolation("a truncated message") }
            message = decoded
        } catch {
            return protocolViolation("a malformed message: \(error)")
        }
        // While the lookup waits for the peer's key events, the machine cannot take protocol messages yet;
        // side messages (evidence, key events) still pass, or two rotated wallets would wait for each other.
        if keyEventFetch != nil, !message.isSideMessage, !isHello(message) {
            guard heldMessages.count < Self.heldMessageCountMax else {
                return protocolViolation("more than \(Self.heldMessageCountMax) messages while its key events were awaited")
            }
            heldMessages.append(message)
            return []
        }
        // The peer's key, for checking its receipts and refusals; the machine checks the hello itself.
        if case .hello(let hello) = message, peerKey == nil {
            peerKey = hello.walletKey
            // Best effort: a failed request leaves the log as known, and the consistency check decides.
            try? askForKeyEventsIfNewer(hello)
        }
        return handle(message)
    }

    private func isHello(_ message: PeerMessage) -> Bool {
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
            interface.event("protocol", ["error": error.message], "the other side broke the protocol: \(error.message)")
            return error.actions
        } catch {
            return protocolViolation("\(error)")
        }
    }

    private func protocolViolation(_ what: String) -> [PeerAction] {
        interface.event("protocol", ["error": what], "received \(what); ending the session")
        return localFailure()
    }

    private func finishSession() {
        // Other sessions of this process may still hold the token (TokenHolds): it locks when the last ends.
        if pinHeldUntil != nil {
            TokenHolds.shared.release(wallet.token)
        } else {
            TokenHolds.shared.lockIfUnheld(wallet.token)
        }
        pinHeldUntil = nil
        channel.close()
    }

    /// Wipes the PIN once its approval's time is up; later token steps then fail and the payment stays
    /// retryable (pending), never lost.
    private func releasePINIfExpired() {
        if let until = pinHeldUntil, Date() >= until {
            TokenHolds.shared.release(wallet.token)
            pinHeldUntil = nil
            interface.event("pin", [:], "the PIN was wiped after \(Int(Self.pinHoldSecondsMax)) seconds")
        }
    }

    // MARK: Machine access

    private var outcome: PeerOutcome? {
        switch machine {
        case .payer(let payer): payer.outcome
        case .payee(let payee): payee.outcome
        }
    }

    private var wait: PeerWait? {
        switch machine {
        case .payer(let payer): payer.wait
        case .payee(let payee): payee.wait
        }
    }

    private func mutate(payer: (inout PayerMachine) -> [PeerAction], payee: (inout PayeeMachine) -> [PeerAction]) -> [PeerAction] {
        switch machine {
        case .payer(var machineValue):
            defer { machine = .payer(machineValue) }
            return payer(&machineValue)
        case .payee(var machineValue):
            defer { machine = .payee(machineValue) }
            return payee(&machineValue)
        }
    }

    private func start() -> [PeerAction] { mutate(payer: { $0.start() }, payee: { $0.start() }) }
    private func timeoutExpired() -> [PeerAction] { mutate(payer: { $0.timeoutExpired() }, payee: { $0.timeoutExpired() }) }
    private func linkDropped() -> [PeerAction] { mutate(payer: { $0.linkDropped() }, payee: { $0.linkDropped() }) }
    private func localFailure() -> [PeerAction] { mutate(payer: { $0.localFailure() }, payee: { $0.localFailure() }) }

    private func payerOnly(_ body: (inout PayerMachine) -> [PeerAction]) -> [PeerAction] {
        mutate(payer: body, payee: { _ in preconditionFailure("a payer action reached the payee") })
    }

    private func payeeOnly(_ body: (inout PayeeMachine) -> [PeerAction]) -> [PeerAction] {
        mutate(payer: { _ in preconditionFailure("a payee action reached the payer") }, payee: body)
    }

    // MARK: Actions

    private func perform(_ action: PeerAction) -> [PeerAction] {
        do {
            return try performThrowing(action)
        } catch {
            interface.event("error", ["error": "\(error)"], "\(error)")
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
            case .cancelApproval, .keepReceipt, .appendReversal, .provideEvidence, .keepEvidence, .provideKeyEvents, .finish:
                // Side work the machine did not wait for: the failure is reported, the session goes on.
                return []
            }
        }
    }

    private func performThrowing(_ action: PeerAction) throws -> [PeerAction] {
        switch action {
        case .send(let message):
            try send(message)
            return []
        case .lookUpPeer(let identity): return try lookUp(identity)
        case .chooseCategory(let request, let peer):
            guard let category = interface.chooseCategory(for: request, from: peer) else { return payerOnly { $0.userDeclined() } }
            return payerOnly { $0.categoryChosen(category) }
        case .checkPayment(let amount, let category):
            let check = try walletLock.withLock {
                try PaymentCheck.evaluate(state: wallet.state, amount: amount, category: category, time: Wallet.systemClock())
            }
            return payerOnly { $0.paymentChecked(check) }
        case .askApproval(let approval): return try approve(approval)
        case .cancelApproval:
            interface.event("cancelled", [:], "the other side withdrew; nothing to approve")
            return []
        case .measure(let task): return try measure(task)
        case .persistReadyRecord(let record):
            try walletLock.withLock { try wallet.ledger.storeReadyRecord(offerID: record.offerID, record: record.encoded) }
            return payeeOnly { $0.readyPersisted() }
        case .commitDebit(let task): return try commitDebit(task)
        case .loadReadyRecord(let offerID):
            let record = try walletLock.withLock { try wallet.ledger.readyRecord(offerID: offerID) }.flatMap { try ReadyRecord.decode($0) }
            return payeeOnly { $0.readyRecordLoaded(record) }
        case .credit(let task): return try credit(task)
        case .keepReceipt(let receipt, _):
            try walletLock.withLock { try wallet.confirm(receipt, payeeKeys: Set([peerKey].compactMap { $0 })) }
            interface.event("receipt", ["transferID": Hex.encode(receipt.payload.transferID)], "the payee's countersigned receipt is kept")
            return []
        case .appendReversal(let refusal, _):
            try unlockWithoutPrompt("record the reversal of a refused payment")
            let outcome = try walletLock.withLock { try wallet.applyRefusal(refusal, payeeKeys: Set([peerKey].compactMap { $0 })) }
            interface.event("reversal", ["reason": "\(refusal.payload.reason)"], "the payee refused the transfer (\(refusal.payload.reason)); "
                + "the reversal credits it back: \(outcome)")
            return []
        case .provideEvidence(let digests): return try provideEvidence(digests)
        case .keepEvidence(let evidence):
            if evidence.verify().isProven { try walletLock.withLock { try wallet.ledger.storeEvidence(evidence.encoded) } }
            return []
        case .provideKeyEvents(let walletID, let from):
            // Pages of the whole log, from the inception: a log is only checkable from its start.
            if walletID == wallet.walletID,
               let page = KeyEventsMessage.page(of: wallet.keyLog.events, walletID: walletID, from: from) {
                try send(.keyEvents(page))
            }
            return []
        case .keepKeyEvents(let walletID, let from, let total, let events):
            return try keepKeyEventPage(walletID: walletID, from: from, total: total, events: events)
        case .finish(let outcome):
            interface.event("finished", ["outcome": Self.name(of: outcome)], describe(outcome))
            return []
        }
    }

    private func send(_ message: PeerMessage) throws {
        let bytes = message.encoded
        let chunk = ChannelLimits.recordPayloadByteCountMax
        var offset = 0
        while bytes.count - offset > chunk {
            try channel.send(type: Self.fragmentRecordType, payload: Array(bytes[offset..<offset + chunk]))
            offset += chunk
        }
        try channel.send(type: Self.messageRecordType, payload: Array(bytes[offset...]))
    }

    /// Asks for the peer's key-event log when its hello names a head this wallet does not know. The log
    /// arrives a page at a time and is kept when whole (`keepKeyEventPage`), through a valid chain only.
    private func askForKeyEventsIfNewer(_ hello: PeerHello) throws {
        guard let head = hello.keyEventHead else { return }
        let known = try walletLock.withLock { try wallet.peerKeyLog(of: hello.walletID) }
        if known?.head != head {
            keyEventFetch = KeyEventFetch(walletID: hello.walletID)
            try send(.keyEvents(.request(walletID: hello.walletID, from: 0)))
        }
    }

    /// One page of the awaited log: asks for the next, or follows the whole log and answers the lookup
    /// that waited for it. A page nobody asked for is ignored; a page that does not continue the log ends
    /// the wait with the log as known before, and the checks that follow decide.
    private func keepKeyEventPage(walletID: [UInt8], from: UInt32, total: UInt32, events: [SignedKeyEvent]) throws -> [PeerAction] {
        guard var fetch = keyEventFetch, fetch.walletID == walletID else { return [] }
        guard fetch.accept(from: from, total: total, events: events) else {
            interface.event("keyEvents", ["outcome": "refused"], "the peer's key-event log came out of order; not followed")
            return try endKeyEventFetch()
        }
        if !fetch.isComplete {
            keyEventFetch = fetch
            try send(.keyEvents(.request(walletID: walletID, from: UInt32(fetch.events.count))))
            return []
        }
        let outcome = try walletLock.withLock { try wallet.followKeyEvents(of: walletID, events: fetch.events) }
        switch outcome {
        case .followed: break
        case .refused(let error): interface.event("keyEvents", ["outcome": "refused"], "the peer's key events were refused: \(error)")
        case .conflict: interface.event("keyEvents", ["outcome": "conflict"], "the peer signed two key events with one sequence; kept as evidence")
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
        if keyEventFetch?.walletID == identity.walletID {
            deferredLookup = identity
            return []
        }
        let held = try walletLock.withLock { try wallet.ledger.latestPeerCheckpoint(wallet: identity.walletID) }
            .flatMap { try? SignedCheckpoint.decode($0.encoded) }
        let keyLog = try walletLock.withLock { try wallet.peerKeyLog(of: identity.walletID) }
        interface.event("peer", ["fingerprint": Hex.encode(identity.fingerprint), "name": identity.displayName,
                                 "walletID": Hex.encode(identity.walletID)],
                        "the other side: \(Self.shortFingerprint(identity.key)) (\"\(identity.displayName)\", a name it chose itself)")
        return mutate(payer: { $0.peerLookedUp(PeerRecord(heldCheckpoint: held, keyLog: keyLog)) },
                      payee: { $0.peerLookedUp(PeerRecord(heldCheckpoint: held, keyLog: keyLog)) })
    }

    /// The first and last two bytes of a key's fingerprint: "3F2A…9C1B".
    public static func shortFingerprint(_ key: P256.PublicKey) -> String {
        let hex = Hex.encode(key.fingerprint).uppercased()
        return String(hex.prefix(4)) + "…" + String(hex.suffix(4))
    }

    private func approve(_ approval: Approval) throws -> [PeerAction] {
        switch interface.decide(approval) {
        case .decline:
            return mutate(payer: { $0.userDeclined() }, payee: { $0.userDeclined() })
        case .approve(let overriding):
            do {
                try holdUnlocked()
            } catch {
                interface.event("pin", ["error": "\(error)"], "the token refused: \(error)")
                return mutate(payer: { $0.userDeclined() }, payee: { $0.userDeclined() })
            }
            return mutate(payer: { $0.userApproved(overridingBudget: overriding) }, payee: { $0.userApproved() })
        }
    }

    private func measure(_ task: MeasurementTask) throws -> [PeerAction] {
        let summary: RangingSummary
        let source: RangingSource
        do {
            let taken = try ranging.samples { millimetres in
                interface.event("distance", ["millimetres": "\(millimetres)"], String(format: "distance %.2f m", Double(millimetres) / 1000))
            }
            source = taken.source
            summary = try RangingSummary(samples: taken.samples)
        } catch let error as RangingError {
            return mutate(payer: { $0.rangingFailed(error) }, payee: { $0.rangingFailed(error) })
        }
        let signed = try walletLock.withLock {
            try task.context.measurement(role: task.role, summary: summary, source: source).sign(with: try wallet.signer)
        }
        interface.event("measured", ["median": "\(summary.medianMillimetres)", "spread": "\(summary.spreadMillimetres)",
                                     "source": "\(source)"],
                        "measured \(summary.medianMillimetres) mm (spread \(summary.spreadMillimetres) mm, \(source)), signed on the token")
        var proof: [[UInt8]]?
        if let from = task.consistencyFromSize {
            proof = from >= 1 && from <= helloSize
                ? try walletLock.withLock { try wallet.ledger.consistencyProof(oldSize: from, newSize: helloSize) } : []
        }
        return mutate(payer: { $0.measured(signed, consistencyProof: proof) }, payee: { $0.measured(signed) })
    }

    private func commitDebit(_ task: DebitTask) throws -> [PeerAction] {
        let (debit, transfer) = try walletLock.withLock {
            try wallet.commitDebit(order: task.order, draft: task.draft, expectedPosition: task.position,
                                   message: { PeerMessage.transfer(task.pending($0)).encoded })
        }
        interface.event("debit", ["position": "\(debit.position)", "transferID": Hex.encode(task.order.transferID)],
                        "paid \(MoneyText.format(task.order.amount)): debit committed as entry \(debit.position); sending the signed transfer")
        return payerOnly { $0.debitCommitted(transfer) }
    }

    /// A retried transfer was approved in its first session (the ready record is that approval), and a
    /// reversal only returns the payer's own money: both may unlock the token without a new prompt.
    private func unlockWithoutPrompt(_ why: String) throws {
        guard pinHeldUntil == nil else { return }
        // Hold first: then no other session of this process can lock the token between the check and the use.
        TokenHolds.shared.acquire(wallet.token)
        pinHeldUntil = Date(timeIntervalSinceNow: Self.pinHoldSecondsMax)
        guard !wallet.token.isUnlocked else { return }
        interface.event("pin", [:], "the token needs the PIN to \(why)")
        try holdUnlocked()
    }

    /// Logs in with this approval's PIN (a wrong one is refused here, even while another session of this
    /// process holds the token) and holds the token for this session until its end or the PIN's time is up.
    private func holdUnlocked() throws {
        if pinHeldUntil == nil { TokenHolds.shared.acquire(wallet.token) }
        do {
            try wallet.token.unlock(pin: try interface.readPIN(), confirmFinalTry: false)
        } catch {
            TokenHolds.shared.release(wallet.token)
            pinHeldUntil = nil
            throw error
        }
        pinHeldUntil = Date(timeIntervalSinceNow: Self.pinHoldSecondsMax)
    }

    private func credit(_ task: CreditTask) throws -> [PeerAction] {
        try unlockWithoutPrompt("credit the payment approved earlier")
        let outcome = try walletLock.withLock {
            try wallet.accept(task.transfer, policy: task.policy, peerFailure: task.peerFailure)
        }
        switch outcome {
        // A new credit, or a re-delivery of a credited transfer (not of a refused one), gets a receipt.
        case .recorded(let entry),
             .duplicate(let entry) where entry.kind == .paymentIn:
            let receipt = try walletLock.withLock {
                try wallet.receipt(for: task.transfer, creditPosition: entry.position)
            }
            interface.event("credit", ["position": "\(entry.position)"],
                            "received \(MoneyText.format(task.transfer.payload.order.amount)) as entry \(entry.position); receipt sent")
            return payeeOnly { $0.credited(receipt) }
        case .refused(let reason, _, let refusal?):
            interface.event("refused", ["reason": "\(reason)"], "the transfer failed a check (\(reason)); a signed refusal is sent")
            return payeeOnly { $0.refused(refusal) }
        case .recorded, .duplicate, .conflict, .refused, .policyRefusal, .dropped:
            interface.event("refused", ["outcome": "\(outcome)"], "the transfer was not credited: \(outcome)")
            return payeeOnly { $0.creditFailed(.transferInvalid) }
        }
    }

    /// One line about a receipt: who countersigned what.
    public static func describe(_ receipt: SignedReceipt) -> String {
        let payload = receipt.payload
        return "\(shortFingerprint(payload.payeeKey)) countersigned transfer \(Hex.encode(payload.transferID)) of "
            + "\(MoneyText.format(payload.amount)) (credit entry \(payload.creditPosition); payer checkpoint \(payload.checkpointSize) "
            + "cosigned, digest \(Hex.encode(payload.checkpointDigest.prefix(8)))…)"
    }

    private func provideEvidence(_ digests: [[UInt8]]) throws -> [PeerAction] {
        let wanted = Set(digests)
        for bytes in try walletLock.withLock({ try wallet.ledger.evidence() }) where wanted.contains(SHA256.hash(bytes)) {
            if let evidence = try? ForkEvidence.decode(bytes) { try send(.evidence(.item(evidence))) }
        }
        return []
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
        case .unconfirmed(let id): return "debited but not confirmed: `secure pending` lists \(Hex.encode(id)); `secure retry` re-sends it"
        case .received(let receipt): return "received; receipt sent: \(Self.describe(receipt))"
        case .refusedTransfer(let reason): return "refused the transfer (\(reason)) with a signed refusal"
        case .failed(let reason, let byPeer): return "nothing moved: \(reason)" + (byPeer ? " (said the other side)" : "")
        }
    }
}

/// A peer's key-event log while its pages arrive: each page must start where the last ended and agree on
/// the log's length, which `KeyEventsMessage` bounds by `KeyEventLog.eventCountMax`.
struct KeyEventFetch {
    let walletID: [UInt8]
    private(set) var events: [SignedKeyEvent] = []
    private var total: UInt32?

    init(walletID: [UInt8]) { self.walletID = walletID }

    var isComplete: Bool { total.map { events.count == Int($0) } ?? false }

    /// Adds a page; false when it does not continue the log.
    mutating func accept(from: UInt32, total pageTotal: UInt32, events page: [SignedKeyEvent]) -> Bool {
        guard Int(from) == events.count, total == nil || total == pageTotal,
              events.count + page.count <= Int(pageTotal) else { return false }
        total = pageTotal
        events += page
        return true
    }
}
