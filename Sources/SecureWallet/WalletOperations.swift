import Foundation
import SecureCore
import SecureCrypto
import SecureStore

/// What happened to a statement handed to the wallet.
public enum StatementOutcome: Sendable {
    /// Recorded as this new entry.
    case recorded(LedgerEntry)
    /// Seen before with the same payload: the original entry, nothing new recorded.
    case duplicate(LedgerEntry)
    /// Same id, another payload: kept as evidence in this entry (appended now, or when the same payload
    /// was first delivered); no money moved.
    case conflict(LedgerEntry)
    /// Validly signed but failing a check: recorded as refused (now, or when it was first delivered); for a
    /// transfer, with the signed refusal for the payer.
    case refused(RefusalReason, LedgerEntry, refusal: SignedRefusal?)
    /// Refused by this wallet's policy: nothing recorded, so it can be accepted later.
    case policyRefusal(PolicyRefusalReason)
    /// Not provably from its signer: dropped, nothing recorded.
    case dropped(DropReason)
}

extension Wallet {
    // MARK: Issuers

    // MARK: Deposits, transfers and refusals

    /// Deposits an issuer's voucher, once: checks the signature, that the issuer is trusted and that the
    /// voucher names this wallet. A voucher refused before is refused again, for the same reason: a script
    /// that retries must not read the second answer as a success.
    ///
    /// The issuer's log (`offered`, merged with the one this wallet follows) decides which key may sign for
    /// it; a longer one is followed, as peers' logs are. Once that log shows the issuer rotated, a voucher by
    /// a retired key that this wallet had not recorded before is refused and kept in its `statementRefused`
    /// entry (a stolen retired key could date it before the rotation); one dated after the rotation is
    /// dropped and kept as fork evidence.
    public func deposit(_ voucher: SignedVoucher, issuerLog offered: KeyEventLog) throws -> StatementOutcome {
        guard !isIssuer else { throw WalletError(.invalidInput, "an issuer's wallet deposits no vouchers") }
        let issuer = voucher.payload.issuerWalletID
        guard let log = try provenLog(of: issuer, offered: offered) else { return .dropped(.unknownSigner) }
        let verdict = VoucherCheck.evaluate(
            voucher, issuerLog: log, walletID: walletID, trustedIssuers: try trustedIssuers(), state: state,
            refusingRetiredKeys: true)
        switch verdict {
        case .drop(.retiredSigner(let evidence)): try keep(evidence)
        case .drop, .policyRefusal: break
        // The voucher is proven the issuer's and the issuer trusted: its log is followed from now on.
        case .accept, .duplicate, .conflict, .refuse: try keepProvenLog(log)
        }
        let outcome = try settle(verdict, refusal: nil)
        if case .duplicate(let entry) = outcome, entry.kind == .statementRefused,
            let reason = VoucherCheck.failure(of: voucher.payload, walletID: walletID, issuerLog: log)
        {
            return .refused(reason, entry, refusal: nil)
        }
        return outcome
    }

    /// Credits the transfer in a file's envelope: `accept(_:payerLog:policy:)` with the payer's log from the
    /// envelope.
    public func accept(_ envelope: Envelope, policy: TransferPolicy) throws -> (SignedTransfer, StatementOutcome) {
        let (transfer, payerLog) = try envelope.transfer()
        return (
            transfer,
            try accept(transfer, payerLog: payerLog, policy: policy, byFile: FileDelivery(claims: envelope.consistency))
        )
    }

    /// A transfer that came by file, with its envelope's consistency claim: the payee checks it against the
    /// payer's checkpoints it holds (`RollbackCheck`), as a peer session does before `ready`.
    public struct FileDelivery {
        let claims: [ConsistencyClaim]
    }

    /// Credits a transfer, idempotently: accept(accept(L, T), T) = accept(L, T). The payer's key-event log
    /// (`payerLog`, merged with the one this wallet follows) must show the transfer's key in force for the
    /// payer's wallet id, or the transfer is dropped and nothing is recorded. A validly signed transfer that
    /// fails a check is recorded as refused and answered with a signed refusal.
    ///
    /// A peer payment names the ready record it answers (`readyRecord`): the credit, or the refusal, consumes
    /// it in the same transaction, so one approval pays out at most once.
    public func accept(
        _ transfer: SignedTransfer, payerLog: KeyEventLog?, policy: TransferPolicy, peerFailure: RefusalReason? = nil,
        readyRecord: OfferID? = nil, byFile: FileDelivery? = nil
    ) throws -> StatementOutcome {
        let payer = transfer.payload.order.payerWalletID
        // The payer's own debit shares the transfer's (signer, id); accepting it here would look like a conflict.
        guard payer != walletID else {
            throw WalletError(
                .invalidInput, "this transfer was made by this wallet; the payee accepts it, not the payer")
        }
        guard let log = try provenLog(of: payer, offered: payerLog) else { return .dropped(.unknownSigner) }
        // The assets this wallet takes come from its own signed trust entries, whatever the caller passed.
        var policy = policy
        policy.trustedIssuers = try trustedIssuers()
        let verdict = TransferCheck.evaluate(
            transfer, walletID: walletID, payerLog: log, state: state, policy: policy, peerFailure: peerFailure)
        switch verdict {
        case .drop(.retiredSigner(let evidence)):
            try keep(evidence)
            return .dropped(.retiredSigner(evidence))
        case .drop(let reason): return .dropped(reason)
        case .policyRefusal(let reason): return .policyRefusal(reason)
        default: break
        }
        // A payer this wallet holds its own proven fork evidence against pays it nothing more, until the
        // issuer's clearing settles it; the evidence (found here, never one a peer handed over) is named.
        if let digest = try refusingEvidence(against: payer) { return .policyRefusal(.payerBanned(digest)) }
        if byFile != nil, transfer.payload.checkpoint.checkpoint.keySequence < log.current.sequence {
            return .policyRefusal(.signedBeforeRotation)
        }
        if let byFile, let refusal = try checkRollback(transfer, claims: byFile.claims, payerLog: log) {
            return .policyRefusal(refusal)
        }
        // The payee's offline limit per payer: a transfer without an approval (a file) over it gets a policy
        // refusal that signs nothing. A peer payment was checked before `ready`, its approval counted against
        // the limit until now, so its credit keeps within the limit and is not checked again.
        if readyRecord == nil, case .accept(let draft) = verdict, let amount = draft.amount {
            let allowance = try offlineCredits(from: payer).allowance(amount.currency)
            if !allowance.permits(amount.money) { return .policyRefusal(.offlineLimitExceeded(allowance)) }
        }
        try keepProvenLog(log)
        try keepForkEvidence(about: transfer, payerLog: log)
        let use = readyRecord.map {
            (offerID: $0, payer: payer, transferID: transfer.payload.order.transferID)
        }
        var outcome = try settle(verdict, refusal: nil, consuming: use)
        let reference = transfer.statementReference
        if case .refused(let reason, let entry, _) = outcome {
            outcome = .refused(reason, entry, refusal: try signRefusal(of: transfer, reason: reason))
        }
        // A transfer refused before is answered with the same signed refusal, so a payer whose first copy of
        // it was lost still gets its reversal, and a script that retries gets the same exit code.
        if case .duplicate(let entry) = outcome, entry.kind == .statementRefused {
            if let bytes = try ledger.refusal(signer: reference.signer, id: reference.id),
                let refusal = try SignedRefusal.decode(bytes)
            {
                outcome = .refused(refusal.payload.reason, entry, refusal: refusal)
            } else if let reason = TransferCheck.refusalReason(
                transfer, walletID: walletID, policy: policy, peerFailure: peerFailure, state: state)
            {
                // The refusal was lost between its entry's commit and its own (a crash): sign it now.
                outcome = .refused(reason, entry, refusal: try signRefusal(of: transfer, reason: reason))
            }
        }
        // A new credit's entry carried the payer's checkpoint into peer_checkpoints in its own commit; the
        // envelope's proof is kept beside it, so a late, older transfer can be linked to it.
        if case .recorded = outcome {
            for claim in byFile?.claims ?? [] {
                try ledger.storePeerProof(
                    wallet: payer, fromSize: claim.fromSize, fromRoot: claim.fromRoot,
                    toSize: transfer.payload.checkpoint.checkpoint.size, proof: claim.proof)
            }
        }
        return outcome
    }

    /// The policy refusal a file transfer gets for rolling back what this wallet holds of its payer, or nil:
    /// proven forks are kept as evidence (carrying `payerLog`, the payer's proven log), unproven
    /// inconsistencies for the clearing.
    func checkRollback(_ transfer: SignedTransfer, claims: [ConsistencyClaim], payerLog: KeyEventLog) throws
        -> PolicyRefusalReason?
    {
        let payer = transfer.payload.order.payerWalletID
        let held = try ledger.peerCheckpoints(wallet: payer).compactMap { try? SignedCheckpoint.decode($0) }
        let kept = try ledger.peerProofs(wallet: payer).compactMap { row in
            held.first { $0.checkpoint.size == row.toSize }.map {
                (claim: ConsistencyClaim(fromSize: row.fromSize, fromRoot: row.fromRoot, proof: row.proof), target: $0)
            }
        }
        let offered = transfer.payload.checkpoint
        switch RollbackCheck.evaluate(offered, claims: claims, held: held, kept: kept, payerLog: payerLog) {
        case .consistent: return nil
        case .fork(let evidence):
            try keep(evidence)
            return .payerForked
        case .unproven(let latest, _):
            try ledger.storeInconsistency(wallet: payer, held: latest.encoded, offered: offered.encoded)
            return .consistencyUnproven
        case .invalidProof: return .consistencyProofInvalid
        case .staleUnlinked: return .staleTransfer
        }
    }

    /// Signs this wallet's refusal of a transfer and keeps it, so every re-delivery gets the same one.
    private func signRefusal(of transfer: SignedTransfer, reason: RefusalReason) throws -> SignedRefusal {
        let refusal = try Refusal(refusing: transfer, payeeKey: signingKey, keyDate: keyDate, reason: reason)
            .sign(with: try signer)
        let reference = transfer.statementReference
        try ledger.storeRefusal(signer: reference.signer, id: reference.id, signed: refusal.encoded)
        return refusal
    }

    /// Compares a validly signed transfer with what this wallet already holds of the same payer: another
    /// transfer whose checkpoint has the same size but another root or head is evidence (a); another whose
    /// debit sits at the same leaf index with different bytes is evidence (b). Both are kept, checkable
    /// offline by anyone (`secure evidence export`, `secure evidence verify`): each carries `payerLog`, the
    /// payer's log the transfer was proven against, which must show each checkpoint's key in force.
    func keepForkEvidence(about transfer: SignedTransfer, payerLog: KeyEventLog) throws {
        lastEvidence = []
        let payer = transfer.payload.order.payerWalletID
        let mine = transfer.payload
        guard let myLeaf = try? LedgerEntry.decode(mine.debitLeaf) else { return }
        for entry in try ledger.entries(kind: .paymentIn) + ledger.entries(kind: .redemption)
            + ledger.entries(kind: .statementRefused)
        where entry.counterparty == payer.bytes {
            guard let other = try? SignedTransfer.decode(entry.payload), other.isSignatureValid,
                other.payload.order.transferID != mine.order.transferID
            else { continue }
            let theirs = other.payload
            var evidence: ForkEvidence.Kind?
            if theirs.checkpoint.checkpoint.size == mine.checkpoint.checkpoint.size,
                theirs.checkpoint.checkpoint.root != mine.checkpoint.checkpoint.root
                    || theirs.checkpoint.checkpoint.head != mine.checkpoint.checkpoint.head
            {
                evidence = .conflictingCheckpoints(theirs.checkpoint, mine.checkpoint)
            } else if let theirLeaf = try? LedgerEntry.decode(theirs.debitLeaf), theirLeaf.position == myLeaf.position,
                theirs.debitLeaf != mine.debitLeaf
            {
                evidence = .conflictingLeaves(
                    ConflictingLeaves(
                        first: theirs.checkpoint, second: mine.checkpoint, index: myLeaf.position,
                        firstLeaf: theirs.debitLeaf,
                        firstProof: theirs.inclusionProof, secondLeaf: mine.debitLeaf, secondProof: mine.inclusionProof)
                )
            }
            if let evidence {
                try keep(ForkEvidence(evidence, log: payerLog))
            }
        }
    }

    /// Appends the reversal a payee's signed refusal entitles this wallet to, for a transfer it sent. Only
    /// the payee the transfer names may refuse it, and its key-event log (`payeeLog`, merged with the one
    /// this wallet follows) decides which key may sign for it at the refusal's date; a retired key's late
    /// refusal is kept as fork evidence. No key from anywhere else counts.
    public func applyRefusal(_ refusal: SignedRefusal, payeeLog offered: KeyEventLog?) throws -> StatementOutcome {
        guard let sent = try outgoingTransfer(id: refusal.payload.transferID) else {
            throw WalletError(.notFound, "this wallet sent no transfer with id \(refusal.payload.transferID.hex)")
        }
        let payee = sent.payload.order.payeeWalletID
        guard refusal.payload.payeeWalletID == payee else { return .dropped(.unrelated) }
        guard try !isDatedBeforeThePayment(refusal.payload.keyDate, of: refusal.payload.transferID) else {
            return .dropped(.unknownSigner)
        }
        guard let payeeLog = try provenLog(of: payee, offered: offered) else { return .dropped(.unknownSigner) }
        if state.isConfirmed(transferID: refusal.payload.transferID) {
            throw WalletError(
                .refused,
                "payment \(refusal.payload.transferID.hex) was confirmed by the payee's receipt; a refusal cannot "
                    + "reverse it")
        }
        let verdict = RefusalCheck.evaluate(refusal, of: sent, payeeLog: payeeLog, state: state)
        switch verdict {
        case .drop(.retiredSigner(let evidence)): try keep(evidence)
        case .drop: break
        default: try keepProvenLog(payeeLog)
        }
        return try settle(verdict, refusal: nil)
    }

    /// Whether a payee's answer is signed by a key older than the one this wallet knew to be the payee's when
    /// it paid: a genuine answer comes after the transfer, so such an answer is a retired key's, backdated.
    func isDatedBeforeThePayment(_ date: KeyDate, of transferID: TransferID) throws -> Bool {
        guard let sent = try ledger.outgoing(transferID: transferID) else { return false }
        return date.keySequence < sent.payeeKeySequence
    }

    /// Stores proven fork evidence.
    private func keep(_ evidence: ForkEvidence) throws {
        guard evidence.verify(knownLog: try peerKeyLog(of: evidence.accused)).isProven else { return }
        try ledger.storeEvidence(evidence.encoded, banning: evidence.bannedWallet)
        lastEvidence.append(evidence)
    }

    /// The date of a signature this wallet's key makes now: its key event and the ledger's size.
    public var keyDate: KeyDate {
        // The key event's own entry is in the ledger, so the size is past its position.
        try! KeyDate(
            keySequence: keyEvent.event.sequence, keyEventPosition: keyEvent.event.ledgerPosition, ledgerSize: size)
    }

    /// Carries out a verdict: appends what it says to append, returns what happened.
    private func settle(
        _ verdict: StatementVerdict, refusal: SignedRefusal?, consuming readyRecord: LedgerStore.ReadyRecordUse? = nil,
        confirming confirmation: LedgerStore.Confirmation? = nil
    ) throws -> StatementOutcome {
        switch verdict {
        case .accept(let draft):
            return .recorded(try appendDraft(draft, consuming: readyRecord, confirming: confirmation))
        case .duplicate(let position):
            guard let entry = try ledger.entry(at: position) else {
                throw StoreError(.corrupted, "entry \(position) is missing")
            }
            // The same statement gets the same answer every time: a conflict kept before is a conflict again.
            return entry.kind == .conflictingStatement ? .conflict(entry) : .duplicate(entry)
        case .conflict(let draft): return .conflict(try appendDraft(draft))
        case .refuse(let reason, let draft):
            return .refused(reason, try appendDraft(draft, consuming: readyRecord), refusal: refusal)
        case .policyRefusal(let reason): return .policyRefusal(reason)
        case .drop(let reason): return .dropped(reason)
        }
    }

    /// Appends a draft with a fresh id, the time and the chain head.
    @discardableResult
    public func appendDraft(
        _ draft: EntryDraft, consuming readyRecord: LedgerStore.ReadyRecordUse? = nil,
        confirming confirmation: LedgerStore.Confirmation? = nil
    ) throws -> LedgerEntry {
        try append(
            { position, previous, time in
                try draft.entry(position: position, id: .random(), time: time, previousLink: previous)
            }, consumes: readyRecord, confirms: confirmation)
    }

    // MARK: Spending

    /// Why a spend was refused before anything was signed.
    public enum SpendRefusal: Error, Equatable, CustomStringConvertible {
        case overBudget(BudgetUsage)
        case hardCap(BudgetUsage)
        case insufficientFunds(balance: Money, amount: Money)

        public var description: String {
            switch self {
            case .overBudget(let usage):
                return
                    "paying \(usage.payment) would take \(usage.category) to \((try? usage.spent.adding(usage.payment))?.description ?? "?") "
                    + "of its \(usage.limit) limit; pass --override-budget to pay anyway (the entry records the override)"
            case .hardCap(let usage):
                return
                    "paying \(usage.payment) would exceed the hard cap of \(usage.limit) on \(usage.category); refused"
            case .insufficientFunds(let balance, let amount):
                return "paying \(amount) needs more than the balance of \(balance)"
            }
        }
    }

    /// The checks a payment makes before any PIN or signature: the balance and the budget verdict.
    /// Returns the verdict (which may be an alert to show); throws a `SpendRefusal`.
    public func checkSpend(amount: AssetAmount, category: String, overrideBudget: Bool) throws -> BudgetVerdict? {
        guard !isIssuer else {
            throw WalletError(.invalidInput, "an issuer's wallet mints and takes back its money; it pays no one")
        }
        let balance = state.balance(amount.asset)
        guard amount.money <= balance else {
            throw SpendRefusal.insufficientFunds(balance: balance, amount: amount.money)
        }
        let verdict = try budgetVerdict(category: category, amount: amount.money)
        switch verdict {
        case .overBudget(let usage) where !overrideBudget: throw SpendRefusal.overBudget(usage)
        case .refusedByHardCap(let usage): throw SpendRefusal.hardCap(usage)
        default: return verdict
        }
    }

    /// A payment by file to the wallet a card names: the card's key-event log is followed first (it is
    /// self-certifying), then `spend(to:…)`. Returns the envelope to hand to the payee: the transfer and
    /// this wallet's key-event log.
    public func spend(
        to card: WalletCard, amount: AssetAmount, category: String, note: String = "", overrideBudget: Bool = false
    ) throws -> Envelope {
        guard card.walletID != walletID else { throw WalletError(.invalidInput, "a wallet cannot pay itself") }
        _ = try checkSpend(amount: amount, category: category, overrideBudget: overrideBudget)
        if case .conflict = try followKeyEvents(of: card.walletID, events: card.log.events) {
            throw WalletError(
                .refused, "the card's key-event log conflicts with the one this wallet follows; kept as fork evidence")
        }
        let transfer = try spend(
            to: card.walletID, amount: amount, category: category, note: note, overrideBudget: overrideBudget)
        let size = transfer.payload.checkpoint.checkpoint.size
        return Envelope(transfer, payerLog: keyLog, consistency: try consistencyClaims(to: card.walletID, size: size))
    }

    /// The envelope of a transfer this wallet sent, as `spend(to:)` wrote it: for `secure pending --export`,
    /// when the first file was lost or could not be written.
    public func envelope(ofSent transfer: SignedTransfer) throws -> Envelope {
        let order = transfer.payload.order
        let size = transfer.payload.checkpoint.checkpoint.size
        return Envelope(
            transfer, payerLog: keyLog, consistency: try consistencyClaims(to: order.payeeWalletID, size: size))
    }

    /// The proofs that this wallet's checkpoint of `size` extends the checkpoints of its last confirmed
    /// payment to `payee` and of every unconfirmed one after it (by file or in a session), so that a payee
    /// holding any of them can check the link; empty when it never paid that payee.
    func consistencyClaims(to payee: WalletID, size: UInt64) throws -> [ConsistencyClaim] {
        var sizes: [UInt64] = []
        for debit in try ledger.entries(kind: .paymentOut).reversed()
        where debit.counterparty == payee.bytes && debit.position + 1 < size {
            sizes.append(debit.position + 1)
            let id = debit.statement!.id
            if try ledger.statementExists(kind: .confirmation, id: id) || sizes.count == ConsistencyClaim.countMax {
                break
            }
        }
        return try sizes.map {
            ConsistencyClaim(
                fromSize: $0, fromRoot: try ledger.rangeHash(0, $0),
                proof: try ledger.consistencyProof(oldSize: $0, newSize: size))
        }
    }

    /// The wallet steps of a payment: budget and balance checks, then the debit with its checkpoint (one
    /// signature) and the signed transfer (a second), committed together, so the exact transfer can be
    /// sent again, unchanged, until it is confirmed.
    public func spend(
        to payee: WalletID, amount: AssetAmount, category: String, note: String = "", overrideBudget: Bool = false,
        proximity: Proximity = .none, channelBinding: [UInt8] = []
    ) throws -> SignedTransfer {
        guard payee != walletID else { throw WalletError(.invalidInput, "a wallet cannot pay itself") }
        _ = try checkSpend(amount: amount, category: category, overrideBudget: overrideBudget)
        let order = try TransferOrder(
            transferID: .random(), payerWalletID: walletID, payerKey: signingKey,
            payeeWalletID: payee, amount: amount, proximity: proximity, channelBinding: channelBinding)
        return try commitDebit(
            order: order, draft: order.debitDraft(category: category, note: note, overridesBudget: overrideBudget),
            message: nil
        ).transfer
    }

    /// Appends a debit and, in the same commit, the signed transfer for it (and, for a peer payment, the
    /// whole transfer message a retry re-sends).
    public func commitDebit(
        order: TransferOrder, draft: EntryDraft, expectedPosition: UInt64? = nil,
        message: ((SignedTransfer) -> [UInt8])?
    ) throws -> (debit: LedgerEntry, transfer: SignedTransfer) {
        if let expectedPosition, expectedPosition != size {
            throw WalletError(
                .refused, "the ledger moved since this payment's hello (\(size) entries, expected \(expectedPosition))")
        }
        if let listing = try provenListing(of: order.payeeWalletID) {
            throw WalletError(
                .refused,
                "wallet \(order.payeeWalletID.hex) is listed by its issuer's clearing as proven to have signed two "
                    + "histories (evidence \(listing.digest.hex); `secure evidence fetch` and `secure evidence "
                    + "verify` check it): this wallet pays it nothing. Nothing was signed")
        }
        var transfer: SignedTransfer?
        // The payee's key in force as this wallet knows it now (from its card or the session's lookup): its
        // answer to this transfer is signed later, so never by an older key.
        let payeeKeySequence = try peerKeyLog(of: order.payeeWalletID)?.current.sequence ?? 0
        let debit = try append(
            { position, previous, time in
                try draft.entry(
                    position: position, id: .random(), time: time,
                    previousLink: previous)
            },
            outgoing: { entry, checkpoint in
                let proof = try self.ledger.inclusionProof(index: entry.position, size: entry.position + 1)
                let signed = try Transfer(
                    order: order, checkpoint: checkpoint, debitLeaf: entry.encoded, inclusionProof: proof
                )
                .sign(with: try self.signer)
                transfer = signed
                return LedgerStore.Outgoing(
                    transferID: order.transferID, position: entry.position, signed: signed.encoded,
                    message: message?(signed), payeeKeySequence: payeeKeySequence)
            })
        return (debit, transfer!)
    }

    /// A transfer this wallet sent, by id: the exact bytes committed with the debit.
    public func outgoingTransfer(id: TransferID) throws -> SignedTransfer? {
        guard let bytes = try ledger.outgoing(transferID: id)?.signed else { return nil }
        guard let transfer = try SignedTransfer.decode(bytes) else {
            throw StoreError(.corrupted, "a stored transfer is truncated")
        }
        return transfer
    }

    /// Payments out that have no receipt and no reversal yet.
    public func pendingTransfers() throws -> [(transfer: SignedTransfer, entry: LedgerEntry)] {
        try ledger.entries(kind: .paymentOut).compactMap { debit in
            guard let order = try TransferOrder.decode(debit.payload) else { return nil }
            if let record = try ledger.outgoing(transferID: order.transferID), record.status != .pending { return nil }
            if try ledger.statementExists(kind: .reversal, id: StatementID(order.transferID)) { return nil }
            if try ledger.statementExists(kind: .confirmation, id: StatementID(order.transferID)) { return nil }
            guard let transfer = try outgoingTransfer(id: order.transferID) else { return nil }
            return (transfer, debit)
        }
    }

    /// The payee's countersigned receipt for a credited transfer (a signature on the token).
    public func receipt(for transfer: SignedTransfer, creditPosition: UInt64) throws -> SignedReceipt {
        try Receipt(for: transfer, payeeKey: signingKey, keyDate: keyDate, creditPosition: creditPosition).sign(
            with: try signer)
    }

    /// Records the payee's countersigned receipt as a `confirmation` entry: the payment is confirmed and can
    /// no longer be reversed. The payee's key-event log (`payeeLog`, merged with the one this wallet follows)
    /// decides which key may sign it at the receipt's date; a retired key's late receipt is refused and kept
    /// as fork evidence. A receipt for a payment already reversed is kept as a conflicting statement.
    @discardableResult
    public func confirm(_ receipt: SignedReceipt, payeeLog offered: KeyEventLog?) throws -> StatementOutcome {
        guard let sent = try outgoingTransfer(id: receipt.payload.transferID) else {
            throw WalletError(.refused, "the receipt does not confirm a transfer this wallet sent")
        }
        let payee = sent.payload.order.payeeWalletID
        guard try !isDatedBeforeThePayment(receipt.payload.keyDate, of: receipt.payload.transferID) else {
            throw WalletError(
                .refused, "the receipt is signed by a payee key older than the one in force when this wallet paid")
        }
        guard let payeeLog = try provenLog(of: payee, offered: offered) else {
            throw WalletError(
                .refused, "the payee's key-event log is unknown or conflicting; the receipt proves nothing")
        }
        switch ReceiptCheck.evaluate(receipt, of: sent, payeeLog: payeeLog) {
        case .confirms: break
        case .dropped(.retiredSigner(let evidence)):
            try keep(evidence)
            throw WalletError(
                .refused, "the receipt is signed by a payee key after its retirement; kept as fork evidence")
        case .dropped:
            throw WalletError(
                .refused, "the receipt does not confirm a transfer this wallet sent, or is not signed by the payee")
        }
        try keepProvenLog(payeeLog)
        let verdict = ReceiptCheck.confirmation(receipt, state: state)
        // Another receipt of a payment already confirmed (the payee re-issued it, perhaps under a rotated
        // key) changes nothing: the first confirmation stands.
        if case .accept = verdict, state.isConfirmed(transferID: receipt.payload.transferID),
            let first = try ledger.entries(kind: .confirmation).first(where: {
                $0.statement?.id == StatementID(receipt.payload.transferID)
            })
        {
            return .duplicate(first)
        }
        if case .accept = verdict, state.isReversed(transferID: receipt.payload.transferID) {
            throw WalletError(
                .refused,
                "payment \(receipt.payload.transferID.hex) was already reversed on the payee's signed refusal; "
                    + "the payee signed both a receipt and a refusal of it")
        }
        // The transfer's row turns confirmed in the confirmation's own transaction, so its checkpoint's index
        // commitment covers the new status (and a crash cannot leave one without the other).
        return try settle(verdict, refusal: nil, confirming: (receipt.payload.transferID, receipt.encoded))
    }
}
