import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureWallet
import SecureStore
import SecureToken

extension PayBench {
    struct ScenarioResult {
        var milliseconds = 0.0
        var signatures = 0
        var asExpected = true
        var detail = ""
    }

    /// The seed suite's three cases, run by the pure machines against each other in this thread with the
    /// real wallets doing every wallet step (the same Wallet calls PeerDriver makes, on SoftHSM): a tampered
    /// transfer then its retry, a lost receipt then its retry, and a withdrawn request. No channel, no
    /// threads, no waits: a message nobody answers ends the wait at once, as the machines' tests do.
    static func machineScenarios(payer: BenchWallet, payee: BenchWallet) throws -> ScenarioResult {
        var result = ScenarioResult()
        _ = (payer.token.take(), payee.token.take())
        let start = ChannelBench.now()
        var problems: [String] = []

        var tampered = try MachinePair(payer: payer, payee: payee, request: nil)
        tampered.tamper = { toPayee, message in
            guard toPayee, case .transfer(let sent) = message else { return message }
            let forged = SignedTransfer(payload: sent.transfer.payload, signature: sent.spatialProof.payer.signature)
            return .transfer(
                try! TransferMessage(offerID: sent.offerID, transfer: forged, spatialProof: sent.spatialProof))
        }
        try tampered.run()
        if !tampered.payerMachine.outcome.isUnconfirmed { problems.append("tampered: \(tampered.outcomes)") }
        var retried = try MachinePair(payer: payer, payee: payee, retrying: tampered.pending)
        try retried.run()
        if !retried.payerMachine.outcome.isPaid { problems.append("tampered retry: \(retried.outcomes)") }

        var lost = try MachinePair(payer: payer, payee: payee, request: nil)
        lost.tamper = { toPayee, message in
            if !toPayee, case .receipt = message { return nil }
            return message
        }
        try lost.run()
        if !lost.payerMachine.outcome.isUnconfirmed || !lost.payeeMachine.outcome.isReceived {
            problems.append("lost receipt: \(lost.outcomes)")
        }
        var again = try MachinePair(payer: payer, payee: payee, retrying: lost.pending)
        try again.run()
        if !again.payerMachine.outcome.isPaid { problems.append("lost receipt retry: \(again.outcomes)") }

        let request = try PaymentRequest(requestID: SystemRandom.bytes(16), amount: try MoneyText.parse(amount),
                                         note: "Coffee")
        var withdrawn = try MachinePair(payer: payer, payee: payee, request: request)
        withdrawn.pauseAfter = 2  // both hellos are in; the request is on its way
        try withdrawn.run()
        try withdrawn.payeeDo(withdrawn.payeeMachine.withdraw())
        withdrawn.pauseAfter = nil
        try withdrawn.pump()
        if withdrawn.payerMachine.outcome != .failed(.withdrawn, byPeer: true) {
            problems.append("withdrawn: \(withdrawn.outcomes)")
        }

        result.milliseconds = Double(ChannelBench.now() - start) / 1e6
        result.signatures = payer.token.take().signatures + payee.token.take().signatures
        result.asExpected = problems.isEmpty
        result.detail = problems.joined(separator: "; ")
        return result
    }
}

/// A payer machine and a payee machine over an in-order queue of encoded messages, with each action
/// carried out on a real wallet the way PeerDriver carries it out.
struct MachinePair {
    let payer: BenchWallet, payee: BenchWallet
    var payerMachine: PayerMachine
    var payeeMachine: PayeeMachine
    private let payerHelloSize: UInt64
    var queue: [(toPayee: Bool, bytes: [UInt8])] = []
    var delivered = 0
    var pauseAfter: Int?
    /// Changes or (returning nil) loses a message in transit.
    var tamper: (_ toPayee: Bool, _ message: PeerMessage) -> PeerMessage? = { $1 }
    /// The payer's pending transfer, after its debit.
    var pending: TransferMessage?

    var outcomes: String {
        "payer \(String(describing: payerMachine.outcome)), payee \(String(describing: payeeMachine.outcome))"
    }

    init(payer: BenchWallet, payee: BenchWallet, request: PaymentRequest?, retrying: TransferMessage? = nil) throws {
        self.payer = payer
        self.payee = payee
        let transcript = SystemRandom.bytes(32)
        let binding = SystemRandom.bytes(32)
        func context(_ wallet: BenchWallet) throws -> PeerSessionContext {
            PeerSessionContext(
                transcriptHash: transcript, channelBinding: binding,
                hello: try PeerHello(
                    walletKey: wallet.wallet.signingKey, displayName: wallet.name,
                    rangingToken: SystemRandom.bytes(16), nonceContribution: SystemRandom.bytes(16),
                    checkpoint: wallet.wallet.latest!),
                rangingPolicy: PayBench.policy)
        }
        payerHelloSize = payer.wallet.size
        if let retrying {
            payerMachine = PayerMachine(retrying: retrying, context: try context(payer))
        } else if request != nil {
            payerMachine = PayerMachine(answeringRequestWith: try context(payer), transferID: SystemRandom.bytes(16))
        } else {
            payerMachine = PayerMachine(
                paying: try PayBench.intent(), context: try context(payer), transferID: SystemRandom.bytes(16))
        }
        payeeMachine = PayeeMachine(context: try context(payee), request: request)
    }

    init(payer: BenchWallet, payee: BenchWallet, retrying: TransferMessage?) throws {
        guard let retrying else {
            throw WalletError(.notFound, "nothing to retry: the first session left no pending transfer")
        }
        try self.init(payer: payer, payee: payee, request: nil, retrying: retrying)
    }

    mutating func run() throws {
        try payerDo(payerMachine.start())
        try payeeDo(payeeMachine.start())
        try pump()
    }

    /// Delivers messages in order; when none is left and a side still waits, its wait runs out.
    mutating func pump() throws {
        while true {
            while let (toPayee, bytes) = queue.first, delivered != pauseAfter {
                queue.removeFirst()
                delivered += 1
                guard let message = try PeerMessage.decode(bytes) else {
                    preconditionFailure("a truncated message in the queue")
                }
                do {
                    if toPayee {
                        try payeeDo(payeeMachine.receive(message))
                    } else {
                        try payerDo(payerMachine.receive(message))
                    }
                } catch let error as PeerProtocolError {
                    if toPayee { try payeeDo(error.actions) } else { try payerDo(error.actions) }
                }
            }
            if delivered == pauseAfter || (payerMachine.outcome != nil && payeeMachine.outcome != nil) { break }
            if payerMachine.outcome == nil { try payerDo(payerMachine.timeoutExpired()) }
            if payeeMachine.outcome == nil { try payeeDo(payeeMachine.timeoutExpired()) }
        }
        if payerMachine.outcome != nil { payer.token.lock() }
        if payeeMachine.outcome != nil { payee.token.lock() }
    }

    private mutating func send(_ message: PeerMessage, toPayee: Bool) {
        if let changed = tamper(toPayee, message) { queue.append((toPayee, changed.encoded)) }
    }

    private static func unlock(_ wallet: BenchWallet) throws {
        if !wallet.token.isUnlocked {
            try wallet.token.unlock(pin: try wallet.person.readPIN(), confirmFinalTry: false)
        }
    }

    private static func measure(
        _ wallet: BenchWallet, _ task: MeasurementTask, distance: UInt32
    ) throws -> SignedMeasurement {
        var ranging = SimulatedRanging(seed: UInt64(distance), distanceMillimetres: distance)
        let summary = try RangingSummary(samples: ranging.samples(count: 16))
        return try task.context.measurement(role: task.role, summary: summary, source: .simulated).sign(
            with: wallet.signer)
    }

    private static func record(_ wallet: Wallet, _ identity: PeerIdentity) throws -> PeerRecord {
        PeerRecord(
            heldCheckpoint: try wallet.ledger.latestPeerCheckpoint(wallet: identity.walletID)
                .flatMap { try? SignedCheckpoint.decode($0.encoded) })
    }

    mutating func payerDo(_ actions: [PeerAction]) throws {
        let wallet = payer.wallet
        for action in actions {
            switch action {
            case .send(let message): send(message, toPayee: true)
            case .lookUpPeer(let identity): try payerDo(payerMachine.peerLookedUp(try Self.record(wallet, identity)))
            case .chooseCategory: try payerDo(payerMachine.categoryChosen("bench"))
            case .checkPayment(let amount, let category):
                try payerDo(
                    payerMachine.paymentChecked(
                        try PaymentCheck.evaluate(
                            state: wallet.state, amount: amount, category: category,
                            time: Wallet.systemClock())))
            case .askApproval:
                try Self.unlock(payer)
                try payerDo(payerMachine.userApproved())
            case .measure(let task):
                let signed = try Self.measure(payer, task, distance: 400)
                let proof = try task.consistencyFromSize.map { from in
                    from >= 1 && from <= payerHelloSize
                        ? try wallet.ledger.consistencyProof(oldSize: from, newSize: payerHelloSize) : []
                }
                try payerDo(payerMachine.measured(signed, consistencyProof: proof))
            case .commitDebit(let task):
                let (_, transfer) = try wallet.commitDebit(
                    order: task.order, draft: task.draft, expectedPosition: task.position,
                    message: { PeerMessage.transfer(task.pending($0)).encoded })
                pending = task.pending(transfer)
                try payerDo(payerMachine.debitCommitted(transfer))
            case .keepReceipt(let receipt, _): try wallet.confirm(receipt, payeeKeys: [payee.wallet.signingKey])
            case .appendReversal(let refusal, _):
                try Self.unlock(payer)
                _ = try wallet.applyRefusal(refusal, payeeKeys: [payee.wallet.signingKey])
            case .cancelApproval, .provideEvidence, .keepEvidence, .provideKeyEvents, .keepKeyEvents, .finish: break
            case .persistReadyRecord, .loadReadyRecord, .credit: preconditionFailure("a payee action reached the payer")
            }
        }
    }

    mutating func payeeDo(_ actions: [PeerAction]) throws {
        let wallet = payee.wallet
        for action in actions {
            switch action {
            case .send(let message): send(message, toPayee: false)
            case .lookUpPeer(let identity): try payeeDo(payeeMachine.peerLookedUp(try Self.record(wallet, identity)))
            case .askApproval:
                try Self.unlock(payee)
                try payeeDo(payeeMachine.userApproved())
            case .measure(let task): try payeeDo(payeeMachine.measured(try Self.measure(payee, task, distance: 450)))
            case .persistReadyRecord(let record):
                try wallet.ledger.storeReadyRecord(offerID: record.offerID, record: record.encoded)
                try payeeDo(payeeMachine.readyPersisted())
            case .loadReadyRecord(let offerID):
                try payeeDo(
                    payeeMachine.readyRecordLoaded(
                        try wallet.ledger.readyRecord(offerID: offerID).flatMap { try ReadyRecord.decode($0) }))
            case .credit(let task): try payeeDo(try credit(task))
            case .cancelApproval, .provideEvidence, .keepEvidence, .provideKeyEvents, .keepKeyEvents, .finish: break
            case .chooseCategory, .checkPayment, .commitDebit, .keepReceipt, .appendReversal:
                preconditionFailure("a payer action reached the payee")
            }
        }
    }

    private mutating func credit(_ task: CreditTask) throws -> [PeerAction] {
        try Self.unlock(payee)
        let outcome = try payee.wallet.accept(task.transfer, policy: task.policy, peerFailure: task.peerFailure)
        switch outcome {
        // A recorded credit, or a re-delivery answered with the original credit (as PeerDriver does).
        case .recorded(let entry),
            .duplicate(let entry) where entry.kind == .paymentIn:
            return payeeMachine.credited(try payee.wallet.receipt(for: task.transfer, creditPosition: entry.position))
        case .refused(_, _, let refusal?):
            return payeeMachine.refused(refusal)
        case .duplicate, .conflict, .refused, .policyRefusal, .dropped:
            return payeeMachine.creditFailed(.transferInvalid)
        }
    }
}

extension Optional where Wrapped == PeerOutcome {
    /// Which way a session ended, for the scenarios' checks.
    var isPaid: Bool { if case .paid? = self { true } else { false } }
    var isUnconfirmed: Bool { if case .unconfirmed? = self { true } else { false } }
    var isReceived: Bool { if case .received? = self { true } else { false } }
}
