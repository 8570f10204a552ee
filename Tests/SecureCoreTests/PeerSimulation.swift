import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Two wallets, their two machines and the drivers' side of every action, run against each other over an
/// in-order queue of encoded messages. Hooks tamper with messages in transit, cut the link after the n-th
/// delivery, or inject a message.
struct PeerSimulation {
    struct Config {
        var amount: Int64 = 450
        var category = ""
        var payerDistance: UInt32 = 400
        var payeeDistance: UInt32 = 450
        var payerSource = RangingSource.external
        var payeeSource = RangingSource.external
        var payeeSampleCount = 20
        var allowsSimulated = false
        var payeeApproves = true
        /// Leave the payee's prompt open (to race it).
        var payeeDefersApproval = false
        var overrideBudget = false
        var request: String? = nil // request flow with this note
        var requestAmount: Int64? = nil
        /// Whether the payee trusts the issuer of the payer's euros.
        var payeeTrustsIssuer = true
        /// The payee's offline limit per payer; nil: the payee's driver counts nothing (no limit).
        var payeeOfflineLimit: OfflineLimit? = nil
        /// The payer pays a till: its wallet's refusals go out as 21 (`masksWalletRefusals`).
        var payerMasksWalletRefusals = false
        /// The payer's wallet refuses by its own policy at this wait (`.category` or `.approval`).
        var payerRefusesAt: PeerWait? = nil
        /// The token of this side refuses the PIN at its approval: the driver answers `localFailure`.
        var tokenRefusesPINOf: PeerRole? = nil
        /// The payee opens a retry's session with its request too, as a till does.
        var payeeRequestsOnRetry = false
    }

    var config: Config
    var payer: TestWallet
    var payee: TestWallet
    var payerMachine: PayerMachine
    var payeeMachine: PayeeMachine
    /// Messages in flight, in send order: (to the payee?, bytes).
    var queue: [(toPayee: Bool, bytes: [UInt8])] = []
    var delivered = 0
    var cutAfter: Int?
    var pauseAfter: Int?
    var isCut = false
    var tamper: (_ toPayee: Bool, _ message: PeerMessage) -> PeerMessage = { $1 }
    /// The payee's stored ready records and the payee's held checkpoint of the payer.
    var readyRecords: [OfferID: ReadyRecord] = [:]
    var held: SignedCheckpoint?
    /// The payer's stored pending payment and receipt.
    var pending: TransferMessage?
    var receipt: SignedReceipt?
    var approvals: [Approval] = []
    var keptEvidence: [ForkEvidence] = []
    var protocolErrors: [String] = []
    var sent: [PeerMessage] = []
    var sessionSeed: UInt64
    /// The issuers of the payer's euros, which both wallets trust (unless the config says otherwise).
    var issuers: Set<WalletID> { payer.issuers }

    static let total = Fixture.eur(10_000)

    init(_ config: Config = Config(), seed: UInt64 = 1) throws {
        self.config = config
        var payer = try TestWallet(seed: seed &* 31)
        try payer.deposit(10_000, issuer: SoftwareSigner())
        self.payer = payer
        payee = try TestWallet(seed: seed &* 37)
        sessionSeed = seed
        (payerMachine, payeeMachine) = (
            PayerMachine(answeringRequestWith: PeerSimulation.dummy, transferID: Fixture.id(0)),
            PayeeMachine(context: PeerSimulation.dummy)
        )
        try newSession(retrying: nil)
    }

    static let dummy: PeerSessionContext = {
        let wallet = try! TestWallet(seed: 999)
        let hello = try! PeerHello(
            walletKey: wallet.key, displayName: "", rangingToken: [], nonceContribution: Fixture.id(0),
            checkpoint: try! wallet.checkpoint())
        return PeerSessionContext(
            transcriptHash: Fixture.id(0), channelBinding: [], hello: hello, rangingPolicy: RangingPolicy(),
            trustedIssuers: [], isIssuer: false)
    }()

    /// Fresh machines over a fresh channel; the wallets and their stores stay.
    mutating func newSession(retrying pending: TransferMessage?) throws {
        sessionSeed &+= 1
        var random = SeededRandom(seed: sessionSeed)
        let transcript = Digest32.random(using: &random)
        let binding = random.bytes(32)
        let policy = RangingPolicy(allowsSimulated: config.allowsSimulated)
        var payerContext = PeerSessionContext(
            transcriptHash: transcript, channelBinding: binding,
            hello: try PeerHello(
                walletKey: payer.key, displayName: "Alice", rangingToken: [1],
                nonceContribution: .random(using: &random), checkpoint: try payer.checkpoint()),
            rangingPolicy: policy, trustedIssuers: issuers, isIssuer: false)
        payerContext.masksWalletRefusals = config.payerMasksWalletRefusals
        let payeeContext = PeerSessionContext(
            transcriptHash: transcript, channelBinding: binding,
            hello: try PeerHello(
                walletKey: payee.key, displayName: "Bob", rangingToken: [2],
                nonceContribution: .random(using: &random), checkpoint: try payee.checkpoint()),
            rangingPolicy: policy, trustedIssuers: config.payeeTrustsIssuer ? issuers : [], isIssuer: false)
        if let pending {
            payerMachine = PayerMachine(retrying: pending, context: payerContext)
        } else if config.request != nil {
            payerMachine = PayerMachine(answeringRequestWith: payerContext, transferID: .random(using: &random))
        } else {
            let intent = PaymentIntent(
                offerID: .random(using: &random), amount: payer.asset(Fixture.eur(config.amount)),
                category: config.category, note: "lunch")
            payerMachine = PayerMachine(paying: intent, context: payerContext, transferID: .random(using: &random))
        }
        let request = try config.request.map {
            try PaymentRequest(
                requestID: .random(using: &random),
                amount: payer.asset(Fixture.eur(config.requestAmount ?? config.amount)), note: $0)
        }
        payeeMachine = PayeeMachine(
            context: payeeContext, request: pending == nil || config.payeeRequestsOnRetry ? request : nil)
        queue = []
        delivered = 0
        isCut = false
    }

    /// Starts both sides and delivers messages until none is left or the link is cut.
    mutating func run() throws {
        try payerDo(payerMachine.start())
        try payeeDo(payeeMachine.start())
        try pump()
    }

    mutating func pump() throws {
        while !queue.isEmpty && !isCut {
            if delivered == pauseAfter { return }
            let (toPayee, bytes) = queue.removeFirst()
            let message = try #require(try PeerMessage.decode(bytes))
            try deliver(message, toPayee: toPayee)
            delivered += 1
            if delivered == cutAfter { cut() }
        }
        if delivered == pauseAfter { return }
        if !isCut && (payerMachine.outcome == nil || payeeMachine.outcome == nil) {
            // Nothing more will come: each side's wait runs out.
            if payerMachine.outcome == nil { try payerDo(payerMachine.timeoutExpired()) }
            if payeeMachine.outcome == nil { try payeeDo(payeeMachine.timeoutExpired()) }
            try pump()
        }
    }

    mutating func cut() {
        isCut = true
        queue = []
        try! payerDo(payerMachine.linkDropped())
        try! payeeDo(payeeMachine.linkDropped())
    }

    mutating func deliver(_ message: PeerMessage, toPayee: Bool) throws {
        do {
            if toPayee {
                try payeeDo(payeeMachine.receive(message))
            } else {
                try payerDo(payerMachine.receive(message))
            }
        } catch let error as PeerProtocolError {
            protocolErrors.append(error.message)
            if toPayee { try payeeDo(error.actions) } else { try payerDo(error.actions) }
        }
    }

    mutating func send(_ message: PeerMessage, toPayee: Bool) {
        guard !isCut else { return }
        let changed = tamper(toPayee, message)
        sent.append(changed)
        queue.append((toPayee, changed.encoded))
    }

    // MARK: The payer's driver

    mutating func payerDo(_ actions: [PeerAction]) throws {
        for action in actions {
            switch action {
            case .send(let message): send(message, toPayee: true)
            case .lookUpPeer: try payerDo(payerMachine.peerLookedUp(PeerRecord(knownName: "Bob", keyLog: payee.log)))
            case .chooseCategory:
                if config.payerRefusesAt == .category { try payerDo(payerMachine.walletRefused()); break }
                try payerDo(payerMachine.categoryChosen(config.category))
            case .checkPayment(let amount, let category):
                let check = try PaymentCheck.evaluate(
                    state: payer.state, amount: amount, category: category,
                    time: payer.time + 1000)
                try payerDo(payerMachine.paymentChecked(check))
            case .askApproval(let approval):
                approvals.append(approval)
                if config.payerRefusesAt == .approval { try payerDo(payerMachine.walletRefused()); break }
                if config.tokenRefusesPINOf == .payer { try payerDo(payerMachine.localFailure()); break }
                try payerDo(payerMachine.userApproved(overridingBudget: config.overrideBudget))
            case .cancelApproval: break
            case .measure(let task):
                let proof = task.consistencyFromSize.map { held in
                    held <= payer.tree.size ? payer.tree.consistencyProof(oldSize: held) : []
                }
                let signed = try measure(payer, task, config.payerDistance, config.payerSource, 20)
                try payerDo(payerMachine.measured(signed, consistencyProof: proof))
            case .commitDebit(let task):
                guard payer.state.size == task.position else { try payerDo(payerMachine.localFailure()); break }
                let debit = try payer.append(task.draft)
                let transfer = try Transfer(
                    order: task.order, checkpoint: try payer.checkpoint(), debitLeaf: debit.encoded,
                    inclusionProof: payer.tree.inclusionProof(index: debit.position)
                ).sign(with: payer.signer)
                pending = task.pending(transfer)
                try payerDo(payerMachine.debitCommitted(transfer))
            case .keepReceipt(let receipt, _): self.receipt = receipt
            case .appendReversal(let refusal, let transfer):
                let verdict = RefusalCheck.evaluate(refusal, of: transfer, payeeLog: payee.log, state: payer.state)
                try payer.carryOut(verdict)
            case .provideEvidence, .keepEvidence, .provideKeyEvents, .keepKeyEvents, .finish: break
            case .persistReadyRecord, .loadReadyRecord, .credit:
                Issue.record("the payer was asked to do a payee's step: \(action)")
            }
        }
    }

    // MARK: The payee's driver

    mutating func payeeDo(_ actions: [PeerAction]) throws {
        for action in actions {
            switch action {
            case .send(let message): send(message, toPayee: false)
            case .lookUpPeer:
                try payeeDo(
                    payeeMachine.peerLookedUp(
                        PeerRecord(
                            knownName: nil, heldCheckpoint: held, keyLog: payer.log,
                            offlineCredits: config.payeeOfflineLimit.map {
                                PayerOfflineCredits.tally(
                                    payer: payer.walletID, settings: try! WalletSettings().applying(.offlineLimit($0)),
                                    time: payee.time, entries: payee.entries)
                            })))
            case .askApproval(let approval):
                approvals.append(approval)
                if config.payeeDefersApproval { break }
                if config.tokenRefusesPINOf == .payee { try payeeDo(payeeMachine.localFailure()); break }
                try payeeDo(config.payeeApproves ? payeeMachine.userApproved() : payeeMachine.userDeclined())
            case .cancelApproval: break
            case .measure(let task):
                do {
                    let signed = try measure(
                        payee, task, config.payeeDistance, config.payeeSource, config.payeeSampleCount)
                    try payeeDo(payeeMachine.measured(signed))
                } catch let error as RangingError {
                    try payeeDo(payeeMachine.rangingFailed(error))
                }
            case .persistReadyRecord(let record):
                #expect(try ReadyRecord.decode(record.encoded) == record)
                readyRecords[record.offerID] = record
                try payeeDo(payeeMachine.readyPersisted())
            case .loadReadyRecord(let offerID, let payer):
                let record = readyRecords[offerID].flatMap { $0.payerWalletID == payer ? $0 : nil }
                try payeeDo(payeeMachine.readyRecordLoaded(record))
            case .credit(let task): try payeeDo(credit(task))
            case .keepEvidence(let evidence, _): keptEvidence.append(evidence)
            case .provideEvidence, .provideKeyEvents, .keepKeyEvents, .finish: break
            case .chooseCategory, .checkPayment, .commitDebit, .keepReceipt, .appendReversal:
                Issue.record("the payee was asked to do a payer's step: \(action)")
            }
        }
    }

    mutating func credit(_ task: CreditTask) throws -> [PeerAction] {
        let verdict = TransferCheck.evaluate(
            task.transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
            policy: task.policy, peerFailure: task.peerFailure)
        switch verdict {
        case .accept, .duplicate:
            let entry = try payee.carryOut(verdict)!
            if entry.kind == .statementRefused {
                let reason = RefusalReason.readyRecordMismatch
                return payeeMachine.refused(
                    try Refusal(refusing: task.transfer, payeeKey: payee.key, keyDate: payee.keyDate, reason: reason)
                        .sign(with: payee.signer))
            }
            held = task.transfer.payload.checkpoint
            return payeeMachine.credited(
                try Receipt(
                    for: task.transfer, payeeKey: payee.key, keyDate: payee.keyDate, creditPosition: entry.position
                )
                .sign(with: payee.signer))
        case .refuse(let reason, _):
            try payee.carryOut(verdict)
            return payeeMachine.refused(
                try Refusal(refusing: task.transfer, payeeKey: payee.key, keyDate: payee.keyDate, reason: reason)
                    .sign(with: payee.signer))
        case .conflict:
            try payee.carryOut(verdict)
            return payeeMachine.creditFailed(.transferInvalid)
        case .policyRefusal, .drop:
            return payeeMachine.creditFailed(.transferInvalid)
        }
    }

    func measure(
        _ wallet: TestWallet, _ task: MeasurementTask, _ distance: UInt32, _ source: RangingSource,
        _ count: Int
    ) throws -> SignedMeasurement {
        var ranging = SimulatedRanging(
            seed: sessionSeed &+ UInt64(distance), distanceMillimetres: distance, jitterMillimetres: 20)
        let summary = try RangingSummary(samples: ranging.samples(count: count))
        return try task.context.measurement(role: task.role, summary: summary, source: source).sign(with: wallet.signer)
    }

    // MARK: Checks

    var payerBalance: Money { payer.balance() }
    var payeeBalance: Money { payee.balance() }

    /// Money is conserved: what the payer lost, the payee gained, except for a debit still unconfirmed.
    func expectConserved(_ label: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let lost = try! PeerSimulation.total.subtracting(payerBalance)
        if lost == payeeBalance { return }
        // Debited, not credited: only allowed while the payer knows the payment is unconfirmed.
        let unconfirmed: Bool
        if case .unconfirmed? = payerMachine.outcome { unconfirmed = true } else { unconfirmed = false }
        #expect(
            unconfirmed && pending != nil && payeeBalance.isZero && lost == Fixture.eur(config.amount),
            "\(label): payer lost \(lost), payee has \(payeeBalance), payer \(String(describing: payerMachine.outcome))",
            sourceLocation: sourceLocation)
    }
}
