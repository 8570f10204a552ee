import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

extension PayBench {
    struct ScenarioResult {
        var milliseconds = 0.0
        var signatures = 0
        var asExpected = true
        var detail = ""
    }

    /// The seed suite's three cases, run by two PeerActions (the code PeerDriver runs) against each other in
    /// this thread with the real wallets doing every wallet step on SoftHSM: a tampered transfer then its
    /// retry, a lost receipt then its retry, and a withdrawn request. No channel, no threads, no waits: a
    /// message nobody answers ends the wait at once, as the machines' tests do.
    static func machineScenarios(payer: BenchWallet, payee: BenchWallet) throws -> ScenarioResult {
        var result = ScenarioResult()
        _ = (payer.token.take(), payee.token.take())
        let start = ChannelBench.now()
        var problems: [String] = []

        let tampered = try MachinePair(payer: payer, payee: payee, request: nil)
        tampered.link.tamper = { toPayee, message in
            guard toPayee, case .transfer(let sent) = message else { return message }
            let forged = SignedTransfer(payload: sent.transfer.payload, signature: sent.spatialProof.payer.signature)
            return .transfer(
                TransferMessage(offerID: sent.offerID, transfer: forged, spatialProof: sent.spatialProof))
        }
        try tampered.run()
        if !tampered.payerActions.outcome.isUnconfirmed { problems.append("tampered: \(tampered.outcomes)") }
        let retried = try MachinePair(payer: payer, payee: payee, retrying: tampered.link.pending)
        try retried.run()
        if !retried.payerActions.outcome.isPaid { problems.append("tampered retry: \(retried.outcomes)") }

        let lost = try MachinePair(payer: payer, payee: payee, request: nil)
        lost.link.tamper = { toPayee, message in
            if !toPayee, case .receipt = message { return nil }
            return message
        }
        try lost.run()
        if !lost.payerActions.outcome.isUnconfirmed || !lost.payeeActions.outcome.isReceived {
            problems.append("lost receipt: \(lost.outcomes)")
        }
        let again = try MachinePair(payer: payer, payee: payee, retrying: lost.link.pending)
        try again.run()
        if !again.payerActions.outcome.isPaid { problems.append("lost receipt retry: \(again.outcomes)") }

        let request = try PaymentRequest(
            requestID: .random(), amount: try payee.wallet.requestAsset(for: try MoneyText.parse(amount), issuer: nil),
            note: "Coffee")
        let withdrawn = try MachinePair(payer: payer, payee: payee, request: request)
        // Both hellos are in and the request is on its way (the two wallets follow each other's key-event
        // logs since the sessions above, so no log is fetched first).
        withdrawn.link.pauseAfter = 2
        try withdrawn.run()
        try withdrawn.carryOut(withdrawn.payeeActions.withdraw(), by: withdrawn.payeeActions)
        withdrawn.link.pauseAfter = nil
        try withdrawn.pump()
        if withdrawn.payerActions.outcome != .failed(.withdrawn, byPeer: true) {
            problems.append("withdrawn: \(withdrawn.outcomes)")
        }

        result.milliseconds = Double(ChannelBench.now() - start) / 1e6
        result.signatures = payer.token.take().signatures + payee.token.take().signatures
        result.asExpected = problems.isEmpty
        result.detail = problems.joined(separator: "; ")
        return result
    }
}

/// A payer's and a payee's PeerActions over an in-order queue of encoded messages: every action is
/// carried out by the same code as in PeerDriver, on the real wallets.
struct MachinePair {
    let payer: BenchWallet, payee: BenchWallet
    let payerActions: PeerActions
    let payeeActions: PeerActions
    let link = MachineLink()

    var outcomes: String {
        "payer \(String(describing: payerActions.outcome)), payee \(String(describing: payeeActions.outcome))"
            + (link.errors.isEmpty ? "" : "; errors: " + link.errors.joined(separator: "; "))
    }

    init(payer: BenchWallet, payee: BenchWallet, request: PaymentRequest?, retrying: TransferMessage? = nil) throws {
        self.payer = payer
        self.payee = payee
        let transcript = Digest32.random()
        let binding = SystemRandom.bytes(32)
        func context(_ wallet: BenchWallet) throws -> PeerSessionContext {
            PeerSessionContext(
                transcriptHash: transcript, channelBinding: binding,
                hello: try PeerActions.hello(
                    wallet: wallet.wallet, displayName: wallet.name,
                    randomBytes: { SystemRandom.bytes($0) }),
                rangingPolicy: PayBench.policy, trustedIssuers: try wallet.wallet.trustedIssuers(),
                isIssuer: wallet.wallet.isIssuer)
        }
        let payerMachine: PayerMachine
        if let retrying {
            payerMachine = PayerMachine(retrying: retrying, context: try context(payer))
        } else if request != nil {
            payerMachine = PayerMachine(answeringRequestWith: try context(payer), transferID: .random())
        } else {
            payerMachine = PayerMachine(
                paying: try PayBench.intent(payer), context: try context(payer), transferID: .random())
        }
        payerActions = PeerActions(
            wallet: payer.wallet, machine: .payer(payerMachine), helloSize: payer.wallet.latest!.checkpoint.size,
            environment: MachineSide(link: link, toPayee: true, person: payer.person, distance: 400))
        payeeActions = PeerActions(
            wallet: payee.wallet, machine: .payee(PayeeMachine(context: try context(payee), request: request)),
            helloSize: payee.wallet.latest!.checkpoint.size,
            environment: MachineSide(link: link, toPayee: false, person: payee.person, distance: 450))
    }

    init(payer: BenchWallet, payee: BenchWallet, retrying: TransferMessage?) throws {
        guard let retrying else {
            throw WalletError(.notFound, "nothing to retry: the first session left no pending transfer")
        }
        try self.init(payer: payer, payee: payee, request: nil, retrying: retrying)
    }

    func run() throws {
        try carryOut(payerActions.start(), by: payerActions)
        try carryOut(payeeActions.start(), by: payeeActions)
        try pump()
    }

    /// Carries out actions in order, and the actions they answer with, as PeerDriver's loop does.
    func carryOut(_ actions: [PeerAction], by side: PeerActions) throws {
        var queue = actions
        while true {
            while !queue.isEmpty { queue += try side.perform(queue.removeFirst()) }
            guard side.hasReleasableMessage else { return }
            queue = side.releaseHeldMessage()
        }
    }

    /// Delivers messages in order; when none is left and a side still waits, its wait runs out.
    func pump() throws {
        while true {
            while let (toPayee, bytes) = link.queue.first, link.delivered != link.pauseAfter {
                link.queue.removeFirst()
                link.delivered += 1
                let side = toPayee ? payeeActions : payerActions
                try carryOut(side.deliver(bytes: bytes), by: side)
            }
            if link.delivered == link.pauseAfter || (payerActions.outcome != nil && payeeActions.outcome != nil) {
                break
            }
            if payerActions.outcome == nil { try carryOut(payerActions.timeoutExpired(), by: payerActions) }
            if payeeActions.outcome == nil { try carryOut(payeeActions.timeoutExpired(), by: payeeActions) }
        }
        if payerActions.outcome != nil { payerActions.finishSession() }
        if payeeActions.outcome != nil { payeeActions.finishSession() }
    }
}

/// The in-order queue between the two sides, and what the scenarios change or learn on it.
final class MachineLink {
    var queue: [(toPayee: Bool, bytes: [UInt8])] = []
    var delivered = 0
    var pauseAfter: Int?
    /// Changes or (returning nil) loses a message in transit.
    var tamper: (_ toPayee: Bool, _ message: PeerMessage) -> PeerMessage? = { $1 }
    /// The payer's pending transfer as it sent it, after its debit (before any tampering).
    var pending: TransferMessage?
    /// Failures the sides reported (a token or storage error ends a side as a local failure).
    var errors: [String] = []
}

/// PeerActions' environment for one side of a MachinePair: the queue, the system clock, seeded ranging at
/// a fixed distance, and the token locked when the side lets go (one session per wallet at a time).
final class MachineSide: PeerEnvironment {
    let link: MachineLink
    let toPayee: Bool
    let person: PeerInterface
    let distance: UInt32

    init(link: MachineLink, toPayee: Bool, person: PeerInterface, distance: UInt32) {
        self.link = link
        self.toPayee = toPayee
        self.person = person
        self.distance = distance
    }

    func send(_ message: PeerMessage) throws {
        if toPayee, case .transfer(let transfer) = message { link.pending = transfer }
        if let changed = link.tamper(toPayee, message) { link.queue.append((toPayee, changed.encoded)) }
    }

    func now() -> Int64 { Wallet.systemClock() }

    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        var ranging = SimulatedRanging(seed: UInt64(distance), distanceMillimetres: distance)
        return (.simulated, ranging.samples(count: 16))
    }

    func holdToken(_ token: WalletToken) {}
    func releaseToken(_ token: WalletToken) { token.lock() }
    func lockTokenIfUnheld(_ token: WalletToken) { token.lock() }

    func failed(_ error: Error, during action: PeerAction) throws {
        link.errors.append("\(error)")
        person.event("error", ["error": "\(error)"], "\(error)")
    }
}

extension Optional where Wrapped == PeerOutcome {
    /// Which way a session ended, for the scenarios' checks.
    var isPaid: Bool { if case .paid? = self { true } else { false } }
    var isUnconfirmed: Bool { if case .unconfirmed? = self { true } else { false } }
    var isReceived: Bool { if case .received? = self { true } else { false } }
}
