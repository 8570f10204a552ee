import SecureCrypto

/// What a peer session knows about this wallet and its channel when it starts. SecurePeer makes it from
/// the finished SecureChannel handshake and the wallet's current state.
public struct PeerSessionContext: Hashable, Sendable {
    /// The channel's 32-byte handshake transcript hash, which the session nonce binds.
    public let transcriptHash: Digest32
    /// The channel binding that measurements and transfers carry.
    public let channelBinding: [UInt8]
    /// This wallet's `hello`: its key, name, ranging token, nonce contribution and latest checkpoint.
    public let hello: PeerHello
    /// Whether simulated ranging is allowed (`--allow-simulated-ranging`).
    public let rangingPolicy: RangingPolicy
    /// The issuers whose assets this wallet takes as a payee (its signed trust entries).
    public let trustedIssuers: Set<WalletID>
    /// Whether this wallet is an issuer, which takes back only its own asset.
    public let isIssuer: Bool
    /// For an issuer: what it has outstanding per asset when the session starts. A payment back of more is
    /// refused before `ready`, so the payer debits nothing.
    public var outstanding: [Asset: Money] = [:]
    /// A payer paying a till (docs/TILL.md §1.5): refusals by its own wallet (`overBudget`,
    /// `insufficientFunds`, `refusedByPayerWallet`) go out as `refusedByPayerWallet` (21), so the till learns
    /// that the payer's wallet refused, not its balance or budget. The local outcome keeps the real reason.
    public var masksWalletRefusals = false

    public init(
        transcriptHash: Digest32, channelBinding: [UInt8], hello: PeerHello, rangingPolicy: RangingPolicy,
        trustedIssuers: Set<WalletID>, isIssuer: Bool
    ) {
        precondition(channelBinding.count <= TransferOrder.channelBindingByteCountMax)
        self.transcriptHash = transcriptHash
        self.channelBinding = channelBinding
        self.hello = hello
        self.rangingPolicy = rangingPolicy
        self.trustedIssuers = trustedIssuers
        self.isIssuer = isIssuer
    }

    /// The code this side sends for `reason`: the reason itself, or 21 for a wallet refusal when masked.
    func peerReason(_ reason: PeerFailureReason) -> PeerFailureReason {
        switch reason {
        case .overBudget, .insufficientFunds: masksWalletRefusals ? .refusedByPayerWallet : reason
        case .declined, .withdrawn, .timeout, .tooFar, .distancesDisagree, .rangingFailed, .measurementInvalid,
            .amountMismatch, .checkpointInconsistent, .protocolViolation, .transferInvalid, .localFailure,
            .simulatedRangingRefused, .peerUnproven, .peerBanned, .untrustedAsset, .offlineLimitExceeded,
            .redemptionExceedsOutstanding, .refusedByPayerWallet, .tillBusy:
            reason
        }
    }

    /// Why this wallet will not take `amount` as a payee, or nil.
    func assetRefusal(_ amount: AssetAmount) -> PolicyRefusalReason? {
        TransferCheck.assetRefusal(
            amount, walletID: hello.walletID, policy: TransferPolicy(trustedIssuers: trustedIssuers),
            state: LedgerState(checkingFor: hello.walletID, isIssuer: isIssuer))
    }
}

/// Who the other side says it is. The display name is its owner's choice and proves nothing; prompts
/// show the key fingerprint, and the name this wallet gave that key if it knows one.
public struct PeerIdentity: Hashable, Sendable {
    public let walletID: WalletID
    public let key: P256.PublicKey
    public let displayName: String

    /// SHA-256 of the key's SubjectPublicKeyInfo.
    public var fingerprint: [UInt8] { key.fingerprint }

    init(_ hello: PeerHello) {
        walletID = hello.walletID
        key = hello.walletKey
        displayName = hello.displayName
    }
}

/// What this wallet already knows about the peer, looked up by the driver after `hello`.
public struct PeerRecord: Hashable, Sendable {
    /// The name the user gave this key (a trusted issuer, an earlier payee), if any.
    public let knownName: String?
    /// The latest checkpoint of this wallet that this wallet holds (from earlier transfers), if any.
    public let heldCheckpoint: SignedCheckpoint?
    /// The peer's key-event log as this wallet knows it, if any: it lets a checkpoint signed by a newer key
    /// extend one signed by an older key, and refuses one signed by a key after its retirement.
    public let keyLog: KeyEventLog?
    /// The digest of fork evidence that bars the peer, if any: evidence of types 1, 2 or 6 this wallet found
    /// itself, or of type 4 or 5 against the key the peer's `hello` uses. A payee takes no payment then.
    public let banningEvidence: EvidenceDigest?
    /// What this wallet, as payee, credited from the peer within its offline-limit windows, with the limits;
    /// nil for a payer (and where no limit applies). An offer past the limit is refused before `ready`.
    public let offlineCredits: PayerOfflineCredits?

    public init(
        knownName: String? = nil, heldCheckpoint: SignedCheckpoint? = nil, keyLog: KeyEventLog? = nil,
        banningEvidence: EvidenceDigest? = nil, offlineCredits: PayerOfflineCredits? = nil
    ) {
        self.knownName = knownName
        self.heldCheckpoint = heldCheckpoint
        self.keyLog = keyLog
        self.banningEvidence = banningEvidence
        self.offlineCredits = offlineCredits
    }
}

/// The payer's preflight: budget verdict and balance, computed before the payer approves.
public enum PaymentCheck: Hashable, Sendable {
    case ok
    case alert(BudgetUsage)
    /// Needs an explicit override, which the debit records.
    case overBudget(BudgetUsage)
    /// Refused: the category is a hard cap.
    case refusedByHardCap(BudgetUsage)
    /// Refused: the balance is smaller than the amount.
    case insufficientFunds(balance: Money)

    /// The check for paying `amount` in `category` at `time` from a ledger at `state`: the same rules the
    /// ledger enforces when the debit is applied (the balance of the asset, the budget of the currency).
    public static func evaluate(state: LedgerState, amount: AssetAmount, category: String, time: Int64) throws
        -> PaymentCheck
    {
        let balance = state.balance(amount.asset)
        guard amount.money <= balance else { return .insufficientFunds(balance: balance) }
        switch try state.budgetVerdict(category: category, payment: amount.money, time: time) {
        case nil, .ok?: return .ok
        case .alert(let usage)?: return .alert(usage)
        case .overBudget(let usage)?: return .overBudget(usage)
        case .refusedByHardCap(let usage)?: return .refusedByHardCap(usage)
        }
    }
}

/// What the person is asked to approve. The driver shows it (or, with `--yes`, logs it), then unlocks the
/// token for this payment's machine-speed steps.
public struct Approval: Hashable, Sendable {
    /// Which side is asked.
    public let role: PeerRole
    /// The other side.
    public let peer: PeerIdentity
    /// The name this wallet gave the peer's key, if any.
    public let knownName: String?
    /// The amount and its asset: prompts show the issuer.
    public let amount: AssetAmount
    /// The request's or offer's note.
    public let note: String
    /// The payer's budget verdict; nil for the payee.
    public let check: PaymentCheck?
    /// False only when a requester's own request is answered exactly (offer id = request id and offer
    /// amount = request amount): the driver skips "Accept?" and asks for the PIN alone.
    public let needsConfirmation: Bool
}

/// A measurement the driver must take: range, summarize, sign on the token, and call `measured`.
public struct MeasurementTask: Hashable, Sendable {
    /// The session facts the measurement must carry.
    public let context: MeasurementContext
    /// This wallet's role.
    public let role: PeerRole
    /// For the payer: the size of the checkpoint the payee holds, from which the driver must prove
    /// consistency to the `hello` checkpoint (pass `[]` when it cannot). Nil when no proof is needed.
    public let consistencyFromSize: UInt64?
}

/// The debit the payer's driver must commit: append `order.debitDraft(...)` at exactly position
/// `position` (so the new checkpoint is the `hello` checkpoint plus exactly this entry), sign the new
/// checkpoint, build and sign the transfer, and store the entry, the checkpoint and the pending payment
/// (`pending(transfer)`) in one durable commit before calling `debitCommitted`.
public struct DebitTask: Hashable, Sendable {
    public let offerID: OfferID
    public let order: TransferOrder
    public let category: String
    public let note: String
    public let overridesBudget: Bool
    /// The debit's ledger position: the size of the `hello` checkpoint.
    public let position: UInt64
    /// The spatial proof the order names.
    public let spatialProof: SpatialProof

    /// The entry to append.
    public var draft: EntryDraft { order.debitDraft(category: category, note: note, overridesBudget: overridesBudget) }

    /// What `secure pending` lists and `secure retry` re-sends: the exact message, stored with the debit.
    public func pending(_ transfer: SignedTransfer) -> TransferMessage {
        TransferMessage(offerID: offerID, transfer: transfer, spatialProof: spatialProof)
    }
}

/// A transfer the payee's driver must credit: run `TransferCheck.evaluate` with this policy and
/// `peerFailure`, carry out the verdict, and answer with `credited` (a receipt for a new or duplicate
/// credit), `refused` (a signed refusal for a refusal, new or duplicate) or `creditFailed`.
public struct CreditTask: Hashable, Sendable {
    public let offerID: OfferID
    public let transfer: SignedTransfer
    public let policy: TransferPolicy
    /// A check of the peer protocol that failed (ready record, `hello` checkpoint), refused finally.
    public let peerFailure: RefusalReason?
    /// Whether the credit (or refusal) consumes the offer's ready record in its own transaction: false when
    /// an earlier transfer consumed it already (a re-delivery, or a second transfer refused as such).
    public let consumesReadyRecord: Bool

    init(
        offerID: OfferID, transfer: SignedTransfer, policy: TransferPolicy, peerFailure: RefusalReason?,
        consumesReadyRecord: Bool = true
    ) {
        self.offerID = offerID
        self.transfer = transfer
        self.policy = policy
        self.peerFailure = peerFailure
        self.consumesReadyRecord = consumesReadyRecord
    }

    /// The task for a retried transfer whose ready record `consumedBy` already used: the same transfer
    /// goes on (its credit or refusal is found again); any other is refused, so one approval pays once.
    func retried(consumedBy: TransferID) -> CreditTask {
        let isSame = transfer.payload.order.transferID == consumedBy
        return CreditTask(
            offerID: offerID, transfer: transfer, policy: policy,
            peerFailure: isSame ? peerFailure : .offerAlreadyCredited, consumesReadyRecord: false)
    }
}

/// What the payee persists before it sends `ready`, and matches a retried transfer against.
public struct ReadyRecord: Hashable, Sendable {
    public let offerID: OfferID
    /// The session nonce N.
    public let nonce: Digest32
    public let amount: AssetAmount
    public let payerWalletID: WalletID
    public let payerKey: P256.PublicKey
    /// The payer's `hello` checkpoint, which the transfer's checkpoint must extend by exactly the debit.
    public let payerCheckpoint: SignedCheckpoint
    /// The payer's signed measurement.
    public let payerMeasurement: SignedMeasurement
    /// This payee's signed measurement.
    public let payeeMeasurement: SignedMeasurement

    public static let encodingVersion: UInt8 = 2

    /// The spatial proof the two measurements make.
    public var spatialProof: SpatialProof { SpatialProof(payer: payerMeasurement, payee: payeeMeasurement) }

    /// version ‖ offer id ‖ N ‖ amount ‖ payer wallet id ‖ payer key ‖ signed checkpoint ‖ spatial proof.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 1024)
        writer.write(ReadyRecord.encodingVersion)
        writer.write(offerID)
        writer.write(nonce)
        amount.encode(into: &writer)
        writer.write(payerWalletID)
        writer.write(fixed: payerKey.x963, count: P256.uncompressedPointByteCount)
        payerCheckpoint.encode(into: &writer)
        spatialProof.encode(into: &writer)
        return writer.bytes
    }

    /// Decodes a stored record: nil when short, throws when malformed.
    public static func decode(_ bytes: [UInt8]) throws -> ReadyRecord? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "ready record") else { return nil }
        guard let offerID = reader.read(OfferID.self), let nonce = reader.read(Digest32.self),
            let amount = try AssetAmount.decode(from: &reader), let walletID = reader.read(WalletID.self),
            let point = reader.readFixed(P256.uncompressedPointByteCount),
            let checkpoint = try SignedCheckpoint.decode(from: &reader),
            let proof = try SpatialProof.decode(from: &reader)
        else { return nil }
        try reader.expectEnd("ready record")
        return ReadyRecord(
            offerID: offerID, nonce: nonce, amount: amount, payerWalletID: walletID,
            payerKey: try decodeKey(point, "payer key"), payerCheckpoint: checkpoint,
            payerMeasurement: proof.payer, payeeMeasurement: proof.payee)
    }

    /// Matches a transfer against the record: nil when its signature fails or it is another payer's (drop
    /// it; a genuine one may still come), else the credit task, with the failed check if any.
    public func creditTask(for message: TransferMessage, trustedIssuers: Set<WalletID>) -> CreditTask? {
        let transfer = message.transfer
        guard message.offerID == offerID, transfer.payload.order.payerKey == payerKey, transfer.isSignatureValid else {
            return nil
        }
        let order = transfer.payload.order
        var failure: RefusalReason?
        if order.amount != amount || order.payerWalletID != payerWalletID
            || order.channelBinding != payeeMeasurement.payload.channelBinding
            || message.spatialProof != spatialProof
        {
            failure = .readyRecordMismatch
        } else if order.proximity != .spatialProof(digest: spatialProof.digest) {
            failure = .spatialProofMismatch
        } else if !ReadyRecord.extendsByOne(transfer.payload, from: payerCheckpoint.checkpoint) {
            failure = .checkpointNotExtending
        }
        let policy = TransferPolicy(trustedIssuers: trustedIssuers, verifiedSpatialProof: spatialProof.digest)
        return CreditTask(offerID: offerID, transfer: transfer, policy: policy, peerFailure: failure)
    }

    /// Whether the transfer's checkpoint is `hello` plus exactly its debit leaf: one entry more, the leaf at
    /// position hello.size linking to hello's head, and the leaf's inclusion proof (which `TransferCheck`
    /// verifies against the new root) folding back to hello's root. For the last leaf of a tree, the
    /// inclusion proof lists the complete subtrees of all earlier leaves, smallest first, so folding them
    /// gives the root of the tree without the leaf.
    static func extendsByOne(_ transfer: Transfer, from hello: Checkpoint) -> Bool {
        let next = transfer.checkpoint.checkpoint
        let proof = transfer.inclusionProof
        guard next.walletID == hello.walletID, hello.size < UInt64.max, next.size == hello.size + 1,
            let leaf = try? LedgerEntry.decode(transfer.debitLeaf), leaf.position == hello.size,
            leaf.previousLink == hello.head, proof.count == hello.size.nonzeroBitCount, var root = proof.first
        else { return false }
        for subtree in proof.dropFirst() { root = Merkle.nodeHash(subtree, root) }
        return root == hello.root
    }
}

/// What a state machine asks its driver to do, in order.
public enum PeerAction: Hashable, Sendable {
    /// Send a message on the channel.
    case send(PeerMessage)
    /// Look up what this wallet knows of the peer; answer with `peerLookedUp`.
    case lookUpPeer(PeerIdentity)
    /// Payer, request flow: ask the person for a category for this request; answer with `categoryChosen`,
    /// `userDeclined` or `walletRefused`.
    case chooseCategory(PaymentRequest, PeerIdentity)
    /// Payer: compute `PaymentCheck.evaluate`; answer with `paymentChecked`.
    case checkPayment(amount: AssetAmount, category: String)
    /// Ask the person, then collect the PIN; answer with `userApproved` or `userDeclined` (a payer also
    /// `walletRefused`), or `localFailure` when the token refuses the PIN.
    case askApproval(Approval)
    /// The open prompt is moot (the other side withdrew or a wait ran out): close it. A late answer is ignored.
    case cancelApproval
    /// Range, summarize, sign; answer with `measured` or `rangingFailed`.
    case measure(MeasurementTask)
    /// Payee: persist the record durably; answer with `readyPersisted`.
    case persistReadyRecord(ReadyRecord)
    /// Payer: commit the debit with the exact transfer bytes; answer with `debitCommitted`.
    case commitDebit(DebitTask)
    /// Payee retry: load the ready record of this offer and this payer, with the transfer that consumed it
    /// if any; answer with `readyRecordLoaded`.
    case loadReadyRecord(offerID: OfferID, payer: WalletID)
    /// Payee: credit or refuse; answer with `credited`, `refused` or `creditFailed`.
    case credit(CreditTask)
    /// Payer: keep the receipt beside the payment out and mark it confirmed.
    case keepReceipt(SignedReceipt, of: SignedTransfer)
    /// Payer: run `RefusalCheck.evaluate` against the payee's key-event log and carry out its verdict (a reversal).
    case appendReversal(SignedRefusal, of: SignedTransfer)
    /// Send the fork evidence with these digests that this wallet holds, one `evidence(.item)` each.
    case provideEvidence([EvidenceDigest])
    /// Verify this evidence offline and keep it if it proves a fork.
    case keepEvidence(ForkEvidence, foundHere: Bool)
    /// Send the page of this wallet's key-event log from sequence `from`, if the id is its own (`keyEvents(.page)`).
    case provideKeyEvents(walletID: WalletID, from: UInt32)
    /// A page of a peer's key-event log: ask for the next page, or verify and keep the whole log once complete.
    case keepKeyEvents(walletID: WalletID, from: UInt32, total: UInt32, events: [SignedKeyEvent])
    /// The session is over; close the channel.
    case finish(PeerOutcome)
}

/// How a session ended.
public enum PeerOutcome: Hashable, Sendable {
    /// Payer: paid and confirmed by this receipt.
    case paid(SignedReceipt)
    /// Payer: the payee refused the transfer after the debit; the reversal credits it back.
    case reversed(RefusalReason)
    /// Payer: debited, but no receipt or refusal arrived. The payment is listed by `secure pending`, never
    /// lost: `secure retry` re-sends the same signed transfer.
    case unconfirmed(transferID: TransferID)
    /// Payee: credited (or re-delivered and answered with the original credit's receipt).
    case received(SignedReceipt)
    /// Payee: the transfer was refused finally and a signed refusal sent.
    case refusedTransfer(RefusalReason)
    /// Nothing moved. `byPeer` says whether the other side stopped it.
    case failed(PeerFailureReason, byPeer: Bool)
}

/// A wait with its name; the driver starts a timer of `seconds` whenever the machine's `wait` changes, and
/// calls `timeoutExpired()` when it runs out.
public enum PeerWait: String, Hashable, Sendable {
    case peerHello, peerLookup, request, category, paymentCheck, approval, offer, reply, ranging, peerMeasurement,
        readyPersist, ready, debit, transfer, readyRecord, credit, receipt

    public var seconds: Int {
        switch self {
        case .peerHello: PeerLimits.helloTimeoutSeconds
        case .request, .category, .approval, .offer, .reply: PeerLimits.decisionTimeoutSeconds
        case .ranging, .peerMeasurement, .ready: PeerLimits.rangingTimeoutSeconds
        case .peerLookup, .paymentCheck, .readyPersist, .debit, .transfer, .readyRecord, .credit, .receipt:
            PeerLimits.stepTimeoutSeconds
        }
    }
}

/// A message the protocol does not allow in the machine's state. The machine has already ended the
/// session; the driver carries out `actions` (a failure message and the finish) and closes the channel.
public struct PeerProtocolError: CodedError {
    /// Stable codes; there is one kind of violation, and the sentence says which message broke which rule.
    public enum Code: String, StableCode {
        /// The peer sent a message the protocol does not allow here, or one that fails its checks.
        case violation = "protocol-violation"
    }

    /// Always `.violation`.
    public var code: Code { .violation }
    /// A sentence for a person.
    public let message: String
    /// What the driver carries out: the failure message to the peer and the finish.
    public let actions: [PeerAction]
    /// A broken protocol exits 1.
    public var kind: FailureKind { .failure }
}

/// The checks both machines make on a peer's `hello`, and the side messages any live session answers.
enum PeerCommon {
    /// A hello's checkpoint must be signed by the key the hello names.
    static func isValid(_ hello: PeerHello) -> Bool {
        hello.checkpoint.checkpoint.walletKey == hello.walletKey && hello.checkpoint.isSelfConsistent
    }

    /// Whether the looked-up key-event log proves the peer's hello: the log is the wallet's (its inception
    /// hashes to the wallet id the checkpoint names) and shows the hello's key in force at the checkpoint's
    /// size. Every statement the peer signs in the session is then checked against that key, so a wallet id
    /// never comes with a key on the peer's say-so alone.
    static func proves(_ record: PeerRecord, _ hello: PeerHello) -> Bool {
        guard let log = record.keyLog, log.walletID == hello.walletID else { return false }
        return isValid(hello) && log.check(hello.checkpoint) == .inForce
    }

    /// Evidence and key-event messages, which change no state.
    static func sideActions(_ message: PeerMessage) -> [PeerAction]? {
        switch message {
        case .evidence(.request(let digests)): [.provideEvidence(digests)]
        case .evidence(.item(let evidence)): [.keepEvidence(evidence, foundHere: false)]
        case .keyEvents(.request(let walletID, let from)): [.provideKeyEvents(walletID: walletID, from: from)]
        case .keyEvents(.page(let walletID, let from, let total, let events)):
            [.keepKeyEvents(walletID: walletID, from: from, total: total, events: events)]
        case .hello, .request, .offer, .reply, .measurement, .ready, .transfer, .receipt, .refusal, .failure: nil
        }
    }

    /// The failure code for a spatial refusal.
    static func failureReason(_ refusal: SpatialRefusal) -> PeerFailureReason {
        switch refusal {
        case .tooFar: .tooFar
        case .disagree: .distancesDisagree
        case .simulatedNotAllowed: .simulatedRangingRefused
        case .badSignature, .wrongNonce, .keysMismatch, .wrongOffer, .wrongDate: .measurementInvalid
        }
    }
}

/// The peer and the session facts, known once both hellos are in.
struct GreetedSession: Hashable {
    let peer: PeerHello
    let nonce: Digest32
    var identity: PeerIdentity { PeerIdentity(peer) }
}

/// What the payer and payee machines share in taking messages and driver answers.
protocol PeerMachine {
    /// How the session ended, once it has.
    var outcome: PeerOutcome? { get }
    /// Where the session stands, for messages about a misplaced driver answer.
    var stage: String { get }
    /// How many evidence and key-event messages the peer has sent.
    var sideMessageCount: Int { get set }
    /// Ends the session on a message the protocol does not allow.
    mutating func violation(_ detail: String) -> PeerProtocolError
    /// Ends (or marks) the session on the peer's failure message.
    mutating func peerFailed(_ failure: PeerFailure) throws -> [PeerAction]
}

extension PeerMachine {
    /// Whether the session has ended.
    var isFinished: Bool { outcome != nil }

    /// The actions for a message that is no step of the payment, nil for a step: an evidence or key-event
    /// message while the session lives (more than `PeerLimits.sideMessageCountMax` of them are a violation),
    /// or the peer's failure.
    mutating func receiveOutsideSteps(_ message: PeerMessage) throws -> [PeerAction]? {
        if let side = PeerCommon.sideActions(message), !isFinished {
            sideMessageCount += 1
            guard sideMessageCount <= PeerLimits.sideMessageCountMax else {
                throw violation("more than \(PeerLimits.sideMessageCountMax) evidence and key-event messages")
            }
            return side
        }
        if case .failure(let failure) = message { return try peerFailed(failure) }
        return nil
    }

    /// A driver answer the machine did not ask for: ignored once the session ended, else our bug.
    func unasked(_ answer: String) -> [PeerAction] {
        precondition(isFinished, "\(answer) arrived \(stage)")
        return []
    }
}

extension PeerMessage {
    /// Evidence and key-event messages: answered in any live state, and never a step of the payment itself.
    public var isSideMessage: Bool { PeerCommon.sideActions(self) != nil }
}
