import SecureCrypto

/// What the statement checks of a recorded ledger need beyond its entries: this wallet's id, the issuer keys
/// it trusted, and lookups of the peers' key-event logs and of the signed transfers it sent. `ledger verify`
/// fills them from the wallet's database; an audit bundle carries them.
public struct StatementSources {
    /// The wallet whose ledger this is.
    public let walletID: WalletID
    /// The issuer keys trusted when the deposits were made. Today the wallet's `trusted-issuers` set only
    /// grows, so the current set is a superset of every earlier one; signed trust entries will give the set
    /// in force at each position, and the check takes it as an input for that reason.
    public let trustedIssuers: Set<P256.PublicKey>
    /// The key-event log held for a peer wallet id, or nil when none is held.
    public let peerLog: (WalletID) -> KeyEventLog?
    /// The signed transfer this wallet sent under a transfer id (the `outgoing` row), or nil.
    public let sentTransfer: (TransferID) -> SignedTransfer?

    /// Collects the sources.
    public init(
        walletID: WalletID, trustedIssuers: Set<P256.PublicKey>, peerLog: @escaping (WalletID) -> KeyEventLog?,
        sentTransfer: @escaping (TransferID) -> SignedTransfer?
    ) {
        self.walletID = walletID
        self.trustedIssuers = trustedIssuers
        self.peerLog = peerLog
        self.sentTransfer = sentTransfer
    }
}

/// The check of the signed statement inside a recorded entry: the entry must be exactly what the wallet's
/// own statement check (`VoucherCheck`, `TransferCheck`, `RefusalCheck`, `ReceiptCheck`, or the payer's
/// `TransferOrder.debitDraft`) makes of its payload. The checks run against an empty ledger state, so a
/// duplicate or a conflict cannot stand in for an accepted statement; the replay checks the ledger rules
/// (a reversal or confirmation of an open payment out, never both) separately.
public enum EntryStatementCheck {
    /// Why the statement inside `entry` does not hold, or nil when it does (or when its kind carries no
    /// statement from outside). `encoded` is the entry's encoding; `ownLog` is this wallet's key-event log as
    /// the replay holds it at the entry.
    public static func problem(
        _ entry: LedgerEntry, encoded: [UInt8], ownLog: KeyEventLog, sources: StatementSources
    ) -> String? {
        let text: String?
        switch entry.kind {
        case .deposit: text = deposit(entry, sources)
        case .paymentIn: text = paymentIn(entry, sources)
        case .reversal: text = reversal(entry, sources)
        case .confirmation: text = confirmation(entry, sources)
        case .paymentOut: text = paymentOut(entry, encoded: encoded, ownLog: ownLog, sources)
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .settings:
            text = nil
        }
        return text.map { "entry \(entry.position) (\(entry.kind)): \($0)" }
    }

    private static let empty = LedgerState()

    /// Whether the verdict accepts the statement as exactly this entry.
    static func matches(_ verdict: StatementVerdict, _ entry: LedgerEntry) -> String? {
        guard case .accept(let draft) = verdict else { return "its statement is not accepted: \(verdict)" }
        guard draft.kind == entry.kind, draft.flags == entry.flags, draft.amount == entry.amount,
            draft.counterparty == entry.counterparty, draft.statement == entry.statement, draft.payload == entry.payload
        else { return "its amount, counterparty, flags or statement reference differ from its signed statement" }
        return nil
    }

    private static func decode<Payload>(_ type: SignedStatement<Payload>.Type, _ bytes: [UInt8]) -> SignedStatement<
        Payload
    >? {
        (try? type.decode(bytes)).flatMap { $0 }
    }

    static func deposit(_ entry: LedgerEntry, _ sources: StatementSources) -> String? {
        guard let voucher = decode(SignedVoucher.self, entry.payload) else {
            return "its payload is not a signed voucher"
        }
        return matches(
            VoucherCheck.evaluate(
                voucher, walletID: sources.walletID, trustedIssuers: sources.trustedIssuers, state: empty), entry)
    }

    static func paymentIn(_ entry: LedgerEntry, _ sources: StatementSources) -> String? {
        guard let transfer = decode(SignedTransfer.self, entry.payload) else {
            return "its payload is not a signed transfer"
        }
        let order = transfer.payload.order
        guard let log = sources.peerLog(order.payerWalletID) else {
            return "no key-event log of its payer \(order.payerWalletID.hex) is held (peer_key_events)"
        }
        var verified: Digest32?
        if case .spatialProof(let digest) = order.proximity, !entry.flags.contains(.withoutProximity) {
            verified = digest
        }
        let policy = TransferPolicy(
            acceptsWithoutProximity: entry.flags.contains(.withoutProximity), verifiedSpatialProof: verified)
        return matches(
            TransferCheck.evaluate(
                transfer, walletID: sources.walletID, payerLog: log, state: empty, policy: policy), entry)
    }

    /// `check` of the transfer this wallet sent under `id` with its payee's log, or why either is missing.
    static func withSent(
        _ id: TransferID, _ sources: StatementSources, _ check: (SignedTransfer, KeyEventLog) -> String?
    ) -> String? {
        guard let transfer = sources.sentTransfer(id), transfer.payload.order.payerWalletID == sources.walletID,
            transfer.isSignatureValid
        else { return "no signed transfer of this wallet with id \(id.hex) is held" }
        let payee = transfer.payload.order.payeeWalletID
        guard let log = sources.peerLog(payee) else {
            return "no key-event log of its payee \(payee.hex) is held (peer_key_events)"
        }
        return check(transfer, log)
    }

    static func reversal(_ entry: LedgerEntry, _ sources: StatementSources) -> String? {
        guard let refusal = decode(SignedRefusal.self, entry.payload) else {
            return "its payload is not a signed refusal"
        }
        return withSent(refusal.payload.transferID, sources) { transfer, log in
            matches(RefusalCheck.evaluate(refusal, of: transfer, payeeLog: log, state: empty), entry)
        }
    }

    static func confirmation(_ entry: LedgerEntry, _ sources: StatementSources) -> String? {
        guard let receipt = decode(SignedReceipt.self, entry.payload) else {
            return "its payload is not a signed receipt"
        }
        return withSent(receipt.payload.transferID, sources) { transfer, log in
            switch ReceiptCheck.evaluate(receipt, of: transfer, payeeLog: log) {
            case .confirms: matches(ReceiptCheck.confirmation(receipt, state: empty), entry)
            case .dropped(let reason): "its receipt does not confirm the transfer sent: \(reason)"
            }
        }
    }

    static func paymentOut(
        _ entry: LedgerEntry, encoded: [UInt8], ownLog: KeyEventLog, _ sources: StatementSources
    ) -> String? {
        guard let order = (try? TransferOrder.decode(entry.payload)).flatMap({ $0 }) else {
            return "its payload is not a transfer order"
        }
        guard order.payerWalletID == sources.walletID,
            order.payerKey == ownLog.event(signingCheckpointOfSize: entry.position + 1)?.signingKey
        else { return "its order is not this wallet's, under the key in force at its position" }
        let draft = order.debitDraft(
            category: entry.category, note: entry.note, overridesBudget: entry.flags.contains(.budgetOverride))
        if let problem = matches(.accept(draft), entry) { return problem }
        guard let transfer = sources.sentTransfer(order.transferID) else {
            return "no signed transfer is held for it (outgoing)"
        }
        guard transfer.isSignatureValid, transfer.payload.order == order, transfer.payload.debitLeaf == encoded,
            transfer.payload.checkpoint.checkpoint.size == entry.position + 1
        else { return "the signed transfer held for it (outgoing) is not its order's, signed, with this entry" }
        return nil
    }
}
