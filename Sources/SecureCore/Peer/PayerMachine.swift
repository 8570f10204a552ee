import SecureCrypto

/// What the payer wants: an amount for the pay flow, or to answer requests (the request flow).
public struct PaymentIntent: Hashable, Sendable {
    /// Fresh random bytes for the offer id (pay flow; the request flow uses the request id).
    public let offerID: OfferID
    public let amount: AssetAmount
    public let category: String
    public let note: String

    public init(offerID: OfferID, amount: AssetAmount, category: String, note: String = "") {
        precondition(!amount.isZero)
        self.offerID = offerID
        self.amount = amount
        self.category = category
        self.note = note
    }
}

/// The payer's side of a payment, as a pure state machine. It returns actions for the driver (SecurePeer)
/// and enforces the money-safety rules: every refusal (budget, balance, distance, disagreement, amount)
/// happens before the debit; the debit is committed only after `ready` for exactly the offered amount and a
/// spatial proof this wallet verified; after the debit, any end without a receipt or refusal is
/// `unconfirmed`, never lost. See docs/PROTOCOL.md, "Peer state machines".
///
/// Messages arrive through `receive` in arrival order; a message the state does not allow throws a
/// `PeerProtocolError` after ending the session. Driver answers (`peerLookedUp`, `debitCommitted`, …)
/// in a state that did not ask for them are our own bug and trap, except after the session ended and for
/// a person's decisions, which may race the other side and are settled once: a late one is ignored.
public struct PayerMachine: PeerMachine {
    private enum Flow: Hashable {
        case pay(PaymentIntent)
        case answerRequest
        case retry(TransferMessage)
    }

    private typealias Session = GreetedSession

    /// An offer the payer approved.
    private struct Deal: Hashable {
        let offer: PaymentOffer
        let category: String
        let overridesBudget: Bool
    }

    private enum State: Hashable {
        case idle(Flow)
        case greeting(Flow)
        case lookingUp(Session, Flow)
        case awaitingRequest(Session, PeerRecord)
        case choosingCategory(Session, PeerRecord, PaymentRequest)
        case checking(Session, PeerRecord, PaymentOffer, category: String)
        case approving(Session, PaymentOffer, category: String, PaymentCheck)
        case awaitingReply(Session, Deal)
        case measuring(Session, Deal, peerMeasurement: SignedMeasurement?)
        case awaitingReady(Session, Deal, own: SignedMeasurement, peerMeasurement: SignedMeasurement?)
        case committing(Session, DebitTask, peerGone: Bool)
        case awaitingReceipt(Session, TransferMessage)
        case finished(PeerOutcome)
    }

    private var state: State
    private let context: PeerSessionContext
    private let transferID: TransferID
    /// A retry: the payee may have opened with its own request (a till, docs/TILL.md §1.4), which the retry
    /// does not answer; one such request is ignored while the receipt is awaited.
    private let isRetry: Bool
    private var ignoredRequest = false
    var sideMessageCount = 0

    /// The pay flow: pay `intent` to whoever answers on this channel. `transferID` is fresh: `TransferID.random()`.
    public init(paying intent: PaymentIntent, context: PeerSessionContext, transferID: TransferID) {
        self.context = context
        self.transferID = transferID
        isRetry = false
        state = .idle(.pay(intent))
    }

    /// The request flow: wait for the peer's request, then let the person pick a category and approve.
    public init(answeringRequestWith context: PeerSessionContext, transferID: TransferID) {
        self.context = context
        self.transferID = transferID
        isRetry = false
        state = .idle(.answerRequest)
    }

    /// `secure retry`: re-send the exact stored transfer of an unconfirmed payment over a new channel.
    public init(retrying pending: TransferMessage, context: PeerSessionContext) {
        self.context = context
        transferID = pending.transfer.payload.order.transferID
        isRetry = true
        state = .idle(.retry(pending))
    }

    /// How the session ended, once it has.
    public var outcome: PeerOutcome? {
        if case .finished(let outcome) = state { return outcome }
        return nil
    }

    /// What the machine waits for now, with its timeout; nil before `start` and after the end.
    public var wait: PeerWait? {
        switch state {
        case .idle, .finished: nil
        case .greeting: .peerHello
        case .lookingUp: .peerLookup
        case .awaitingRequest: .request
        case .choosingCategory: .category
        case .checking: .paymentCheck
        case .approving: .approval
        case .awaitingReply: .reply
        case .measuring: .ranging
        case .awaitingReady: .ready
        case .committing: .debit
        case .awaitingReceipt: .receipt
        }
    }

    /// Starts the session: sends this wallet's hello.
    public mutating func start() -> [PeerAction] {
        guard case .idle(let flow) = state else { preconditionFailure("the payer machine was started twice") }
        state = .greeting(flow)
        return [.send(.hello(context.hello))]
    }

    // MARK: Messages

    /// Handles one message from the payee.
    public mutating func receive(_ message: PeerMessage) throws -> [PeerAction] {
        if let actions = try receiveOutsideSteps(message) { return actions }
        switch (state, message) {
        case (.greeting(let flow), .hello(let hello)):
            return try greeted(hello, flow)
        case (.awaitingRequest(let session, let record), .request(let request)):
            state = .choosingCategory(session, record, request)
            return [.chooseCategory(request, session.identity)]
        case (.awaitingReply(let session, let deal), .reply(let reply)):
            return try replied(reply, session, deal)
        case (.measuring(let session, let deal, nil), .measurement(let payload)):
            let measurement = try check(payload, session, deal)
            state = .measuring(session, deal, peerMeasurement: measurement)
            return []
        case (.awaitingReady(let session, let deal, let own, nil), .measurement(let payload)):
            let measurement = try check(payload, session, deal)
            state = .awaitingReady(session, deal, own: own, peerMeasurement: measurement)
            return []
        case (.awaitingReady(let session, let deal, let own, let peer), .ready(let ready)):
            return try readied(ready, session, deal, own, peer)
        case (.awaitingReceipt(let session, let sent), .receipt(let message)):
            // Signed by the payee's key of this session, dated no earlier than its `hello` checkpoint. The
            // wallet checks the signer against the payee's key-event log again when it keeps the receipt.
            let payload = message.receipt.payload
            let expected = Receipt(
                for: sent.transfer, payeeKey: session.peer.walletKey, keyDate: payload.keyDate,
                creditPosition: payload.creditPosition)
            guard message.offerID == sent.offerID, payload.keyDate.ledgerSize > payload.creditPosition,
                payload == expected, message.receipt.isSignatureValid,
                message.receipt.payload.keyDate.follows(session.peer.checkpoint.checkpoint)
            else { throw violation("a receipt that does not confirm the transfer sent") }
            return finish(.paid(message.receipt), before: [.keepReceipt(message.receipt, of: sent.transfer)])
        case (.awaitingReceipt(let session, let sent), .refusal(let message)):
            let payload = message.refusal.payload
            let expected = Refusal(
                refusing: sent.transfer, payeeKey: session.peer.walletKey, keyDate: payload.keyDate,
                reason: payload.reason)
            guard message.offerID == sent.offerID, payload == expected, message.refusal.isSignatureValid,
                payload.keyDate.follows(session.peer.checkpoint.checkpoint)
            else { throw violation("a refusal that is not the payee's signed refusal of the transfer sent") }
            return finish(.reversed(expected.reason), before: [.appendReversal(message.refusal, of: sent.transfer)])
        case (.awaitingReceipt, .request) where isRetry && !ignoredRequest:
            // A payee that opens with a request (a till) sends it after its lookup, while the retried transfer
            // is on its way; the retry answers no request, and the payee's retry path goes on.
            ignoredRequest = true
            return []
        // The one `default:`: it pairs states with messages, and every pair not listed above is by
        // definition a message this state does not allow, which is exactly what it throws for.
        default:
            throw violation("a \(message.name) message is not expected \(stage)")
        }
    }

    private mutating func greeted(_ hello: PeerHello, _ flow: Flow) throws -> [PeerAction] {
        guard PeerCommon.isValid(hello) else { throw violation("a hello whose checkpoint its key did not sign") }
        let nonce = SessionNonce.derive(
            transcriptHash: context.transcriptHash, payerContribution: context.hello.nonceContribution,
            payeeContribution: hello.nonceContribution)
        let session = Session(peer: hello, nonce: nonce)
        if case .retry(let pending) = flow {
            guard hello.walletID == pending.transfer.payload.order.payeeWalletID else {
                throw violation("the retried payment's payee is another wallet")
            }
            state = .awaitingReceipt(session, pending)
            return [.send(.transfer(pending))]
        }
        state = .lookingUp(session, flow)
        return [.lookUpPeer(session.identity)]
    }

    private mutating func replied(_ reply: OfferReply, _ session: Session, _ deal: Deal) throws -> [PeerAction] {
        guard reply.offerID == deal.offer.offerID else { throw violation("a reply to another offer") }
        guard reply.accepted else { return finish(.failed(.declined, byPeer: true)) }
        state = .measuring(session, deal, peerMeasurement: nil)
        let task = MeasurementTask(
            context: measurementContext(session, deal), role: .payer,
            consistencyFromSize: reply.heldCheckpointSize)
        return [.measure(task)]
    }

    /// The payee's measurement: it must check before anything else happens; a bad one ends the session.
    private mutating func check(_ message: MeasurementMessage, _ session: Session, _ deal: Deal) throws
        -> SignedMeasurement
    {
        guard message.offerID == deal.offer.offerID, message.consistencyProof == nil else {
            throw violation("a payee measurement for another offer, or with a consistency proof")
        }
        if let refusal = SpatialProof.check(
            message.measurement, role: .payee, context: measurementContext(session, deal),
            policy: context.rangingPolicy)
        {
            throw PeerProtocolError(
                message: "the payee's measurement is refused: \(refusal)",
                actions: fail(PeerCommon.failureReason(refusal), offerID: deal.offer.offerID))
        }
        return message.measurement
    }

    private mutating func readied(
        _ ready: ReadyMessage, _ session: Session, _ deal: Deal, _ own: SignedMeasurement,
        _ peer: SignedMeasurement?
    ) throws -> [PeerAction] {
        let offerID = deal.offer.offerID
        guard ready.offerID == offerID, let peer else { throw violation("ready before the payee's measurement") }
        guard ready.amount == deal.offer.amount else { return fail(.amountMismatch, offerID: offerID) }
        let proof = SpatialProof(payer: own, payee: peer)
        if case .failure(let error) = proof.verify(
            context: measurementContext(session, deal),
            policy: context.rangingPolicy)
        {
            return fail(PeerCommon.failureReason(error.refusal), offerID: offerID)
        }
        // The only checks left in TransferOrder are a positive amount (the offer's, checked when it was made)
        // and the binding's length (the context's, bounded when it was made), so it cannot fail.
        let order = try! TransferOrder(
            transferID: transferID, payerWalletID: context.hello.walletID, payerKey: context.hello.walletKey,
            payeeWalletID: session.peer.walletID, amount: deal.offer.amount,
            proximity: .spatialProof(digest: proof.digest), channelBinding: context.channelBinding)
        let task = DebitTask(
            offerID: offerID, order: order, category: deal.category, note: deal.offer.note,
            overridesBudget: deal.overridesBudget, position: context.hello.checkpoint.checkpoint.size,
            spatialProof: proof)
        state = .committing(session, task, peerGone: false)
        return [.commitDebit(task)]
    }

    mutating func peerFailed(_ failure: PeerFailure) throws -> [PeerAction] {
        switch state {
        case .idle, .finished: throw violation("a failure message after the session ended")
        case .committing(let session, let task, _):
            // The debit is being committed; how the session ends depends on whether it was.
            state = .committing(session, task, peerGone: true)
            return []
        case .awaitingReceipt:
            return finish(.unconfirmed(transferID: transferID))
        case .approving, .choosingCategory:
            return finish(.failed(failure.reason, byPeer: true), before: [.cancelApproval])
        case .greeting, .lookingUp, .awaitingRequest, .checking, .awaitingReply, .measuring, .awaitingReady:
            return finish(.failed(failure.reason, byPeer: true))
        }
    }

    // MARK: Driver answers

    /// The driver's answer to `lookUpPeer`.
    public mutating func peerLookedUp(_ record: PeerRecord) -> [PeerAction] {
        guard case .lookingUp(let session, let flow) = state else { return unasked("peerLookedUp") }
        guard PeerCommon.proves(record, session.peer) else { return fail(.peerUnproven, offerID: nil) }
        switch flow {
        case .pay(let intent):
            // The intent's fields were checked when it was made.
            let offer = try! PaymentOffer(offerID: intent.offerID, amount: intent.amount, note: intent.note)
            state = .checking(session, record, offer, category: intent.category)
            return [.checkPayment(amount: intent.amount, category: intent.category)]
        case .answerRequest:
            state = .awaitingRequest(session, record)
            return []
        case .retry: preconditionFailure("a retry looks up no peer")
        }
    }

    /// The person picked a category for the request (request flow).
    public mutating func categoryChosen(_ category: String) -> [PeerAction] {
        guard case .choosingCategory(let session, let record, let request) = state else { return [] }
        // Offer id = request id: the offer answers the request, so the requester may skip its prompt. The
        // request's amount and note passed the same checks when it was made, so the offer cannot fail.
        let offer = try! PaymentOffer(offerID: request.requestID, amount: request.amount, note: request.note)
        state = .checking(session, record, offer, category: category)
        return [.checkPayment(amount: request.amount, category: category)]
    }

    /// The driver's answer to `checkPayment`.
    public mutating func paymentChecked(_ check: PaymentCheck) -> [PeerAction] {
        guard case .checking(let session, let record, let offer, let category) = state else {
            return unasked("paymentChecked")
        }
        switch check {
        case .insufficientFunds: return fail(.insufficientFunds, offerID: offer.offerID)
        case .refusedByHardCap: return fail(.overBudget, offerID: offer.offerID)
        case .ok, .alert, .overBudget:
            state = .approving(session, offer, category: category, check)
            return [
                .askApproval(
                    Approval(
                        role: .payer, peer: session.identity, knownName: record.knownName, amount: offer.amount,
                        note: offer.note, check: check, needsConfirmation: true))
            ]
        }
    }

    /// The person approved and the token is unlocked. An over-budget payment needs `overridingBudget`.
    public mutating func userApproved(overridingBudget: Bool = false) -> [PeerAction] {
        guard case .approving(let session, let offer, let category, let check) = state else { return [] }
        if case .overBudget = check, !overridingBudget { return fail(.overBudget, offerID: offer.offerID) }
        let overrides: Bool
        if case .overBudget = check { overrides = true } else { overrides = false }
        state = .awaitingReply(session, Deal(offer: offer, category: category, overridesBudget: overrides))
        return [.send(.offer(offer))]
    }

    /// The person declined (or withdrew) before the debit. After the debit this is too late and ignored.
    public mutating func userDeclined() -> [PeerAction] {
        switch state {
        case .choosingCategory(_, _, let request): return fail(.declined, offerID: request.requestID)
        case .approving(_, let offer, _, _): return fail(.declined, offerID: offer.offerID)
        case .awaitingReply(_, let deal), .measuring(_, let deal, _), .awaitingReady(_, let deal, _, _):
            return fail(.withdrawn, offerID: deal.offer.offerID)
        case .awaitingRequest: return fail(.declined, offerID: nil)
        case .idle, .greeting, .lookingUp, .checking, .committing, .awaitingReceipt, .finished: return []
        }
    }

    /// The person's wallet refused by its own policy (`PeerDecision.refuse`: a limit, an unexpected payee)
    /// before the offer: ends like `userDeclined`, with `refusedByPayerWallet` (21). After the offer it is
    /// too late and ignored.
    public mutating func walletRefused() -> [PeerAction] {
        switch state {
        case .awaitingRequest: return fail(.refusedByPayerWallet, offerID: nil)
        case .choosingCategory(_, _, let request): return fail(.refusedByPayerWallet, offerID: request.requestID)
        case .approving(_, let offer, _, _): return fail(.refusedByPayerWallet, offerID: offer.offerID)
        case .idle, .greeting, .lookingUp, .checking, .awaitingReply, .measuring, .awaitingReady, .committing,
            .awaitingReceipt, .finished:
            return []
        }
    }

    /// The driver's answer to `measure`: this wallet's signed measurement, and the consistency proof the
    /// task asked for (nil when it asked for none).
    public mutating func measured(_ measurement: SignedMeasurement, consistencyProof: [Digest32]?) -> [PeerAction] {
        guard case .measuring(let session, let deal, let peer) = state else { return unasked("measured") }
        precondition(
            measurement.payload
                == measurementContext(session, deal).measurement(
                    role: .payer, summary: measurement.payload.summary, source: measurement.payload.source),
            "the driver signed a measurement for another context")
        state = .awaitingReady(session, deal, own: measurement, peerMeasurement: peer)
        // The proof is within the limits the driver's tree enforces.
        let message = MeasurementMessage(
            offerID: deal.offer.offerID, measurement: measurement, consistencyProof: consistencyProof)
        return [.send(.measurement(message))]
    }

    /// Ranging failed on this side (too few samples, too wide a spread, a broken source).
    public mutating func rangingFailed(_ error: RangingError) -> [PeerAction] {
        guard case .measuring(_, let deal, _) = state else { return unasked("rangingFailed") }
        return fail(.rangingFailed, offerID: deal.offer.offerID)
    }

    /// The driver committed the debit and stored `transfer` with it.
    public mutating func debitCommitted(_ transfer: SignedTransfer) -> [PeerAction] {
        guard case .committing(let session, let task, let peerGone) = state else { return unasked("debitCommitted") }
        precondition(
            transfer.payload.order == task.order && transfer.isSignatureValid, "the driver signed another order")
        if peerGone { return finish(.unconfirmed(transferID: transferID)) }
        let message = task.pending(transfer)
        state = .awaitingReceipt(session, message)
        return [.send(.transfer(message))]
    }

    /// A token, PIN, storage or budget failure in the step the machine asked for. Before the debit it
    /// records nothing and the payment can be tried again; `debitCommitted` must not follow.
    public mutating func localFailure() -> [PeerAction] {
        switch state {
        case .lookingUp, .checking, .approving, .measuring, .committing(_, _, _):
            return fail(.localFailure, offerID: offerID)
        case .idle, .greeting, .awaitingRequest, .choosingCategory, .awaitingReply, .awaitingReady,
            .awaitingReceipt, .finished:
            return unasked("localFailure")
        }
    }

    /// Bytes from the peer that are no message (truncated, malformed), or a flood the driver refused: a
    /// protocol violation in any state, like a message the state does not allow (after the debit, the
    /// payment is unconfirmed). Ignored after the end.
    public mutating func malformedMessage(_ detail: String) -> [PeerAction] { violation(detail).actions }

    /// The link dropped. Before the debit nothing moved; after it the payment is unconfirmed.
    public mutating func linkDropped() -> [PeerAction] { ended(.localFailure) }

    /// The current wait ran out.
    public mutating func timeoutExpired() -> [PeerAction] { ended(.timeout) }

    private mutating func ended(_ reason: PeerFailureReason) -> [PeerAction] {
        switch state {
        case .finished: return []
        case .committing(let session, let task, _):
            if reason == .timeout { return finish(.unconfirmed(transferID: transferID)) }
            state = .committing(session, task, peerGone: true)
            return []
        case .awaitingReceipt: return finish(.unconfirmed(transferID: transferID))
        case .approving, .choosingCategory:
            return finish(.failed(reason, byPeer: false), before: [.cancelApproval] + failureMessage(reason))
        case .idle, .greeting, .lookingUp, .awaitingRequest, .checking, .awaitingReply, .measuring, .awaitingReady:
            return finish(.failed(reason, byPeer: false), before: failureMessage(reason))
        }
    }

    // MARK: Helpers

    private var offerID: OfferID? {
        switch state {
        case .checking(_, _, let offer, _), .approving(_, let offer, _, _): offer.offerID
        case .awaitingReply(_, let deal), .measuring(_, let deal, _), .awaitingReady(_, let deal, _, _):
            deal.offer.offerID
        case .committing(_, let task, _): task.offerID
        case .awaitingReceipt(_, let sent): sent.offerID
        case .choosingCategory(_, _, let request): request.requestID
        case .idle, .greeting, .lookingUp, .awaitingRequest, .finished: nil
        }
    }

    var stage: String {
        switch state {
        case .idle: "before the start"
        case .greeting: "before the payee's hello"
        case .lookingUp: "while the payee is looked up"
        case .awaitingRequest: "while waiting for a request"
        case .choosingCategory, .checking, .approving: "before the offer"
        case .awaitingReply: "while waiting for the reply"
        case .measuring, .awaitingReady: "while measuring"
        case .committing: "while the debit is committed"
        case .awaitingReceipt: "while waiting for the receipt"
        case .finished: "after the session ended"
        }
    }

    private func measurementContext(_ session: Session, _ deal: Deal) -> MeasurementContext {
        MeasurementContext(
            nonce: session.nonce, offerID: deal.offer.offerID, payerKey: context.hello.walletKey,
            payeeKey: session.peer.walletKey, payerDate: KeyDate(checkpoint: context.hello.checkpoint.checkpoint),
            payeeDate: KeyDate(checkpoint: session.peer.checkpoint.checkpoint), channelBinding: context.channelBinding)
    }

    private func failureMessage(_ reason: PeerFailureReason) -> [PeerAction] {
        [.send(.failure(PeerFailure(offerID: offerID, reason: context.peerReason(reason))))]
    }

    /// Ends the session before the debit, telling the payee why (a wallet refusal masked as 21 for a till);
    /// the outcome keeps the real reason.
    private mutating func fail(_ reason: PeerFailureReason, offerID: OfferID?) -> [PeerAction] {
        let sent = PeerFailure(offerID: offerID, reason: context.peerReason(reason))
        return finish(.failed(reason, byPeer: false), before: [.send(.failure(sent))])
    }

    private mutating func finish(_ outcome: PeerOutcome, before actions: [PeerAction] = []) -> [PeerAction] {
        state = .finished(outcome)
        return actions + [.finish(outcome)]
    }

    /// Ends the session on a message the protocol does not allow; after the debit, as unconfirmed.
    mutating func violation(_ detail: String) -> PeerProtocolError {
        if isFinished { return PeerProtocolError(message: detail, actions: []) }
        let outcome: PeerOutcome
        switch state {
        case .committing, .awaitingReceipt: outcome = .unconfirmed(transferID: transferID)
        case .idle, .greeting, .lookingUp, .awaitingRequest, .choosingCategory, .checking, .approving,
            .awaitingReply, .measuring, .awaitingReady, .finished:
            outcome = .failed(.protocolViolation, byPeer: false)
        }
        let message = PeerAction.send(.failure(PeerFailure(offerID: offerID, reason: .protocolViolation)))
        return PeerProtocolError(message: detail, actions: finish(outcome, before: [message]))
    }
}
