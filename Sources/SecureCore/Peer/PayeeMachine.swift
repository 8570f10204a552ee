import SecureCrypto

/// The payee's side of a payment, as a pure state machine (see `PayerMachine` for the conventions). It
/// enforces: the payer's `hello` checkpoint must extend the latest checkpoint of that payer this wallet
/// holds, checked before `ready`; the spatial proof is verified before `ready`; the ready record (offer,
/// N, amount, both measurements, the payer's `hello` checkpoint) is persisted before `ready` is sent; a
/// transfer is credited only if it matches that record, and a retried one is matched against the stored
/// record; a requester skips its prompt only when the offer answers its request exactly.
public struct PayeeMachine: PeerMachine {
    private typealias Session = GreetedSession

    /// The payer's measurement and, when it came, its consistency proof.
    private struct PayerClaim: Hashable {
        let measurement: SignedMeasurement
        let consistencyProof: [Digest32]?
    }

    private enum State: Hashable {
        case idle
        case greeting
        case lookingUp(Session)
        case awaitingOffer(Session, PeerRecord)
        case approving(Session, PeerRecord, PaymentOffer)
        case measuring(Session, PeerRecord, PaymentOffer, payer: PayerClaim?)
        case awaitingPayerMeasurement(Session, PeerRecord, PaymentOffer, own: SignedMeasurement)
        case persisting(Session, ReadyRecord)
        case awaitingTransfer(Session, ReadyRecord)
        case loadingRecord(Session, TransferMessage)
        case crediting(Session, offerID: OfferID)
        case finished(PeerOutcome)
    }

    private var state: State = .idle
    private let context: PeerSessionContext
    /// The request this payee sends after the hellos (request flow), or nil (pay flow, retries).
    private let request: PaymentRequest?
    var sideMessageCount = 0

    /// A payee session; with `request`, the request flow.
    public init(context: PeerSessionContext, request: PaymentRequest? = nil) {
        self.context = context
        self.request = request
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
        case .awaitingOffer: .offer
        case .approving: .approval
        case .measuring: .ranging
        case .awaitingPayerMeasurement: .peerMeasurement
        case .persisting: .readyPersist
        case .awaitingTransfer: .transfer
        case .loadingRecord: .readyRecord
        case .crediting: .credit
        }
    }

    /// Starts the session: sends this wallet's hello.
    public mutating func start() -> [PeerAction] {
        guard case .idle = state else { preconditionFailure("the payee machine was started twice") }
        state = .greeting
        return [.send(.hello(context.hello))]
    }

    // MARK: Messages

    /// Handles one message from the payer.
    public mutating func receive(_ message: PeerMessage) throws -> [PeerAction] {
        if let actions = try receiveOutsideSteps(message) { return actions }
        switch (state, message) {
        case (.greeting, .hello(let hello)):
            guard PeerCommon.isValid(hello) else { throw violation("a hello whose checkpoint its key did not sign") }
            let nonce = SessionNonce.derive(
                transcriptHash: context.transcriptHash, payerContribution: hello.nonceContribution,
                payeeContribution: context.hello.nonceContribution)
            let session = Session(peer: hello, nonce: nonce)
            state = .lookingUp(session)
            return [.lookUpPeer(session.identity)]
        case (.awaitingOffer(let session, let record), .offer(let offer)):
            // An asset this wallet does not take is refused before anyone approves, so nothing is debited.
            if context.assetRefusal(offer.amount) != nil { return fail(.untrustedAsset, offerID: offer.offerID) }
            if context.isIssuer,
                offer.amount.money > context.outstanding[offer.amount.asset] ?? .zero(offer.amount.currency)
            {
                return fail(.redemptionExceedsOutstanding, offerID: offer.offerID)
            }
            // Past the payee's offline limit for this payer: refused before any prompt or `ready`, so the
            // payer debits nothing.
            if let credits = record.offlineCredits,
                !credits.allowance(offer.amount.currency).permits(offer.amount.money)
            {
                return fail(.offlineLimitExceeded, offerID: offer.offerID)
            }
            state = .approving(session, record, offer)
            // The requester skips "Accept?" only when the offer answers its request exactly.
            let answersRequest = request.map { $0.requestID == offer.offerID && $0.amount == offer.amount } ?? false
            return [
                .askApproval(
                    Approval(
                        role: .payee, peer: session.identity, knownName: record.knownName, amount: offer.amount,
                        note: offer.note, check: nil, needsConfirmation: !answersRequest))
            ]
        case (.awaitingOffer(let session, _), .transfer(let transfer)):
            // A retry: the transfer of an offer from an earlier session.
            state = .loadingRecord(session, transfer)
            return [.loadReadyRecord(offerID: transfer.offerID, payer: session.peer.walletID)]
        case (.measuring(let session, let record, let offer, nil), .measurement(let payload)):
            let claim = try check(payload, session, offer)
            state = .measuring(session, record, offer, payer: claim)
            return []
        case (.awaitingPayerMeasurement(let session, let record, let offer, let own), .measurement(let payload)):
            let claim = try check(payload, session, offer)
            return evaluate(session, record, offer, own: own, payer: claim)
        case (.awaitingTransfer(let session, let record), .transfer(let transfer)):
            return credit(transfer, record, session)
        // The one `default:`: it pairs states with messages, and every pair not listed above is by
        // definition a message this state does not allow, which is exactly what it throws for.
        default:
            throw violation("a \(message.name) message is not expected \(stage)")
        }
    }

    /// The payer's measurement must name this session, this offer and the right keys, and carry a
    /// consistency proof when this wallet holds a checkpoint of the payer.
    private mutating func check(_ message: MeasurementMessage, _ session: Session, _ offer: PaymentOffer) throws
        -> PayerClaim
    {
        guard message.offerID == offer.offerID else { throw violation("a measurement for another offer") }
        if let refusal = SpatialProof.check(
            message.measurement, role: .payer, context: measurementContext(session, offer),
            policy: context.rangingPolicy)
        {
            throw PeerProtocolError(
                message: "the payer's measurement is refused: \(refusal)",
                actions: fail(PeerCommon.failureReason(refusal), offerID: offer.offerID))
        }
        return PayerClaim(measurement: message.measurement, consistencyProof: message.consistencyProof)
    }

    /// Both measurements are in: the spatial proof, then the payer's consistency, then the ready record.
    private mutating func evaluate(
        _ session: Session, _ record: PeerRecord, _ offer: PaymentOffer, own: SignedMeasurement, payer: PayerClaim
    ) -> [PeerAction] {
        let proof = SpatialProof(payer: payer.measurement, payee: own)
        if case .failure(let error) = proof.verify(
            context: measurementContext(session, offer),
            policy: context.rangingPolicy)
        {
            return fail(PeerCommon.failureReason(error.refusal), offerID: offer.offerID)
        }
        let current = session.peer.checkpoint
        if let held = record.heldCheckpoint {
            switch PayeeMachine.consistency(
                held: held, current: current, proof: payer.consistencyProof, log: record.keyLog)
            {
            case .consistent: break
            case .inconsistent:
                return fail(.checkpointInconsistent, offerID: offer.offerID)
            case .fork(let evidence):
                return finish(
                    .failed(.checkpointInconsistent, byPeer: false),
                    before: [
                        .keepEvidence(evidence, foundHere: true),
                        failureMessage(.checkpointInconsistent, offer.offerID),
                    ])
            }
        }
        // A payer whose log this wallet follows must have measured with a key in force: a retired key's
        // late measurement is fork evidence even when no earlier checkpoint of the payer is held.
        if let log = record.keyLog, log.walletID == session.peer.walletID,
            let evidence = log.retiredKeyEvidence(.measurement(payer.measurement))
        {
            return finish(
                .failed(.measurementInvalid, byPeer: false),
                before: [.keepEvidence(evidence, foundHere: true), failureMessage(.measurementInvalid, offer.offerID)])
        }
        let ready = ReadyRecord(
            offerID: offer.offerID, nonce: session.nonce, amount: offer.amount, payerWalletID: session.peer.walletID,
            payerKey: session.peer.walletKey, payerCheckpoint: current, payerMeasurement: payer.measurement,
            payeeMeasurement: own)
        state = .persisting(session, ready)
        return [.persistReadyRecord(ready)]
    }

    enum Consistency { case consistent, inconsistent, fork(ForkEvidence) }

    /// Whether the payer's `hello` checkpoint extends the one this wallet holds: the same wallet, the same
    /// key or keys the payer's known key-event log shows in force at each checkpoint's size, a size no
    /// smaller, and an RFC 9162 consistency proof. Two signed checkpoints of one size that differ are fork
    /// evidence; so is a checkpoint signed by a key after its retirement.
    static func consistency(
        held: SignedCheckpoint, current: SignedCheckpoint, proof: [Digest32]?, log: KeyEventLog? = nil
    )
        -> Consistency
    {
        let old = held.checkpoint
        let new = current.checkpoint
        guard old.walletID == new.walletID else { return .inconsistent }
        if let log, log.walletID == new.walletID {
            if case .retired(let rotation) = log.check(current),
                let retiredEvent = log.events.first(where: { $0.event.sequence == new.keySequence })
            {
                return .fork(
                    ForkEvidence(
                        .retiredKeySignature(
                            RetiredKeySignature(retiredEvent: retiredEvent, rotation: rotation, checkpoint: current)),
                        log: log))
            }
            guard log.check(held) == .inForce, log.check(current) == .inForce else { return .inconsistent }
            // Evidence carries the payer's log, so only a payer whose log this wallet holds can be proven forked.
            if old.size == new.size, old.root != new.root || old.head != new.head {
                let evidence = ForkEvidence(.conflictingCheckpoints(held, current), log: log)
                return evidence.verify().isProven ? .fork(evidence) : .inconsistent
            }
        } else {
            guard old.walletKey == new.walletKey else { return .inconsistent }
        }
        guard old.size <= new.size,
            Merkle.verifyConsistency(
                oldSize: old.size, newSize: new.size, oldRoot: old.root, newRoot: new.root, proof: proof ?? [])
        else { return .inconsistent }
        return .consistent
    }

    private mutating func credit(_ message: TransferMessage, _ record: ReadyRecord, _ session: Session)
        -> [PeerAction]
    {
        guard let task = record.creditTask(for: message, trustedIssuers: context.trustedIssuers) else {
            return fail(.transferInvalid, offerID: record.offerID)
        }
        state = .crediting(session, offerID: record.offerID)
        return [.credit(task)]
    }

    mutating func peerFailed(_ failure: PeerFailure) throws -> [PeerAction] {
        switch state {
        case .idle, .finished: throw violation("a failure message after the session ended")
        case .approving:
            return finish(.failed(failure.reason, byPeer: true), before: [.cancelApproval])
        case .persisting, .loadingRecord, .crediting:
            // A driver step is under way and will answer; the answer then ends the session.
            return []
        case .greeting, .lookingUp, .awaitingOffer, .measuring, .awaitingPayerMeasurement, .awaitingTransfer:
            return finish(.failed(failure.reason, byPeer: true))
        }
    }

    // MARK: Driver answers

    /// The driver's answer to `lookUpPeer`. In the request flow the request goes out now.
    public mutating func peerLookedUp(_ record: PeerRecord) -> [PeerAction] {
        guard case .lookingUp(let session) = state else { return unasked("peerLookedUp") }
        guard PeerCommon.proves(record, session.peer) else { return fail(.peerUnproven, offerID: nil) }
        guard record.banningEvidence == nil else { return fail(.peerBanned, offerID: nil) }
        state = .awaitingOffer(session, record)
        return request.map { [.send(.request($0))] } ?? []
    }

    /// The person accepted (or, for an exact answer to its request, only entered the PIN).
    public mutating func userApproved() -> [PeerAction] {
        guard case .approving(let session, let record, let offer) = state else { return [] }
        state = .measuring(session, record, offer, payer: nil)
        let reply = OfferReply(
            offerID: offer.offerID, accepted: true, heldCheckpointSize: record.heldCheckpoint?.checkpoint.size)
        let task = MeasurementTask(context: measurementContext(session, offer), role: .payee, consistencyFromSize: nil)
        return [.send(.reply(reply)), .measure(task)]
    }

    /// The person declined the offer.
    public mutating func userDeclined() -> [PeerAction] {
        guard case .approving(_, _, let offer) = state else { return [] }
        let reply = OfferReply(offerID: offer.offerID, accepted: false, heldCheckpointSize: nil)
        return finish(.failed(.declined, byPeer: false), before: [.send(.reply(reply))])
    }

    /// The person withdrew the request (request flow) or stopped waiting; ignored once too late (after
    /// `ready`, when only the payer's transfer or its absence can end the session).
    public mutating func withdraw() -> [PeerAction] {
        switch state {
        case .greeting, .lookingUp, .awaitingOffer, .measuring, .awaitingPayerMeasurement:
            return fail(.withdrawn, offerID: offerID ?? request?.requestID)
        case .approving(_, _, let offer):
            return fail(.withdrawn, offerID: offer.offerID)
        case .idle, .persisting, .awaitingTransfer, .loadingRecord, .crediting, .finished:
            return []
        }
    }

    /// The driver's answer to `measure`.
    public mutating func measured(_ measurement: SignedMeasurement) -> [PeerAction] {
        guard case .measuring(let session, let record, let offer, let payer) = state else { return unasked("measured") }
        precondition(
            measurement.payload
                == measurementContext(session, offer).measurement(
                    role: .payee, summary: measurement.payload.summary, source: measurement.payload.source),
            "the driver signed a measurement for another context")
        let message = MeasurementMessage(offerID: offer.offerID, measurement: measurement, consistencyProof: nil)
        guard let payer else {
            state = .awaitingPayerMeasurement(session, record, offer, own: measurement)
            return [.send(.measurement(message))]
        }
        return [.send(.measurement(message))] + evaluate(session, record, offer, own: measurement, payer: payer)
    }

    /// Ranging failed on this side.
    public mutating func rangingFailed(_ error: RangingError) -> [PeerAction] {
        guard case .measuring(_, _, let offer, _) = state else { return unasked("rangingFailed") }
        return fail(.rangingFailed, offerID: offer.offerID)
    }

    /// The ready record is durable: now `ready` may go out.
    public mutating func readyPersisted() -> [PeerAction] {
        guard case .persisting(let session, let record) = state else { return unasked("readyPersisted") }
        state = .awaitingTransfer(session, record)
        return [.send(.ready(ReadyMessage(offerID: record.offerID, amount: record.amount)))]
    }

    /// The driver's answer to `loadReadyRecord`: the stored record for the retried offer and this payer, or
    /// nil, and the transfer that consumed it, if one did.
    public mutating func readyRecordLoaded(_ record: ReadyRecord?, consumedBy: TransferID? = nil) -> [PeerAction] {
        guard case .loadingRecord(let session, let message) = state else { return unasked("readyRecordLoaded") }
        guard let record, record.payerWalletID == session.peer.walletID else {
            return fail(.transferInvalid, offerID: message.offerID)
        }
        guard let consumedBy else { return credit(message, record, session) }
        guard let task = record.creditTask(for: message, trustedIssuers: context.trustedIssuers) else {
            return fail(.transferInvalid, offerID: record.offerID)
        }
        state = .crediting(session, offerID: record.offerID)
        return [.credit(task.retried(consumedBy: consumedBy))]
    }

    /// The transfer was credited (now or, for a re-delivery, earlier): send the receipt.
    public mutating func credited(_ receipt: SignedReceipt) -> [PeerAction] {
        guard case .crediting(_, let offerID) = state else { return unasked("credited") }
        let message = ReceiptMessage(offerID: offerID, receipt: receipt)
        return finish(.received(receipt), before: [.send(.receipt(message))])
    }

    /// The transfer was refused finally (now or earlier): send the signed refusal.
    public mutating func refused(_ refusal: SignedRefusal) -> [PeerAction] {
        guard case .crediting(_, let offerID) = state else { return unasked("refused") }
        let message = RefusalMessage(offerID: offerID, refusal: refusal)
        return finish(.refusedTransfer(refusal.payload.reason), before: [.send(.refusal(message))])
    }

    /// The transfer was neither credited nor refused (dropped, refused by policy, a conflict, or a token,
    /// PIN or storage failure): nothing more is said but why.
    public mutating func creditFailed(_ reason: PeerFailureReason) -> [PeerAction] {
        guard case .crediting(_, let offerID) = state else { return unasked("creditFailed") }
        return fail(reason, offerID: offerID)
    }

    /// A token, PIN or storage failure in a step the machine asked for; nothing was recorded.
    public mutating func localFailure() -> [PeerAction] {
        switch state {
        case .lookingUp, .approving, .measuring, .persisting, .loadingRecord, .crediting:
            return fail(.localFailure, offerID: offerID)
        case .idle, .greeting, .awaitingOffer, .awaitingPayerMeasurement, .awaitingTransfer, .finished:
            return unasked("localFailure")
        }
    }

    /// Bytes from the peer that are no message (truncated, malformed), or a flood the driver refused: a
    /// protocol violation in any state, like a message the state does not allow (after the debit, the
    /// payment is unconfirmed). Ignored after the end.
    public mutating func malformedMessage(_ detail: String) -> [PeerAction] { violation(detail).actions }

    /// The link dropped. Nothing was credited; a persisted ready record stays for the payer's retry.
    public mutating func linkDropped() -> [PeerAction] { ended(.localFailure, tell: false) }

    /// The current wait ran out.
    public mutating func timeoutExpired() -> [PeerAction] { ended(.timeout, tell: true) }

    private mutating func ended(_ reason: PeerFailureReason, tell: Bool) -> [PeerAction] {
        switch state {
        case .finished: return []
        case .approving:
            return finish(
                .failed(reason, byPeer: false),
                before: [.cancelApproval] + (tell ? [failureMessage(reason, offerID)] : []))
        case .idle, .greeting, .lookingUp, .awaitingOffer, .measuring, .awaitingPayerMeasurement, .persisting,
            .awaitingTransfer, .loadingRecord, .crediting:
            return finish(.failed(reason, byPeer: false), before: tell ? [failureMessage(reason, offerID)] : [])
        }
    }

    // MARK: Helpers

    private var offerID: OfferID? {
        switch state {
        case .approving(_, _, let offer), .measuring(_, _, let offer, _), .awaitingPayerMeasurement(_, _, let offer, _):
            offer.offerID
        case .persisting(_, let record), .awaitingTransfer(_, let record): record.offerID
        case .loadingRecord(_, let message): message.offerID
        case .crediting(_, let offerID): offerID
        case .idle, .greeting, .lookingUp, .awaitingOffer, .finished: nil
        }
    }

    var stage: String {
        switch state {
        case .idle: "before the start"
        case .greeting: "before the payer's hello"
        case .lookingUp: "while the payer is looked up"
        case .awaitingOffer: "while waiting for an offer"
        case .approving: "while the person decides"
        case .measuring, .awaitingPayerMeasurement: "while measuring"
        case .persisting: "while the ready record is stored"
        case .awaitingTransfer: "while waiting for the transfer"
        case .loadingRecord, .crediting: "while the transfer is credited"
        case .finished: "after the session ended"
        }
    }

    private func measurementContext(_ session: Session, _ offer: PaymentOffer) -> MeasurementContext {
        MeasurementContext(
            nonce: session.nonce, offerID: offer.offerID, payerKey: session.peer.walletKey,
            payeeKey: context.hello.walletKey, payerDate: KeyDate(checkpoint: session.peer.checkpoint.checkpoint),
            payeeDate: KeyDate(checkpoint: context.hello.checkpoint.checkpoint), channelBinding: context.channelBinding)
    }

    private func failureMessage(_ reason: PeerFailureReason, _ offerID: OfferID?) -> PeerAction {
        .send(.failure(PeerFailure(offerID: offerID, reason: reason)))
    }

    private mutating func fail(_ reason: PeerFailureReason, offerID: OfferID?) -> [PeerAction] {
        finish(.failed(reason, byPeer: false), before: [failureMessage(reason, offerID)])
    }

    private mutating func finish(_ outcome: PeerOutcome, before actions: [PeerAction] = []) -> [PeerAction] {
        state = .finished(outcome)
        return actions + [.finish(outcome)]
    }

    mutating func violation(_ detail: String) -> PeerProtocolError {
        if isFinished { return PeerProtocolError(message: detail, actions: []) }
        let message = failureMessage(.protocolViolation, offerID)
        return PeerProtocolError(
            message: detail, actions: finish(.failed(.protocolViolation, byPeer: false), before: [message]))
    }
}
