import SecureCrypto

/// (payer wallet id, transfer id): the key of every record about one transfer (docs/CLEARING.md §2.4).
/// Transfer ids are chosen by the payer, so only the payer's wallet id makes them unique across wallets.
public struct TransferKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The paying wallet.
    public let payer: WalletID
    /// The id the payer chose.
    public let transferID: TransferID

    /// Collects the key.
    public init(payer: WalletID, transferID: TransferID) {
        self.payer = payer
        self.transferID = transferID
    }

    /// Ordered by payer bytes, then transfer id bytes: the order PostgreSQL gives `bytea` keys.
    public static func < (lhs: TransferKey, rhs: TransferKey) -> Bool {
        if lhs.payer != rhs.payer { return lhs.payer.bytes.lexicographicallyPrecedes(rhs.payer.bytes) }
        return lhs.transferID.bytes.lexicographicallyPrecedes(rhs.transferID.bytes)
    }

    public var description: String { "(payer \(payer.hex), transfer \(transferID.hex))" }
}

/// (issuer wallet id, voucher id): the key of a mint and of its deposit.
public struct VoucherKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The issuing wallet.
    public let issuer: WalletID
    /// The id the issuer chose.
    public let voucherID: VoucherID

    /// Collects the key.
    public init(issuer: WalletID, voucherID: VoucherID) {
        self.issuer = issuer
        self.voucherID = voucherID
    }

    /// Ordered bytewise, issuer first.
    public static func < (lhs: VoucherKey, rhs: VoucherKey) -> Bool {
        if lhs.issuer != rhs.issuer { return lhs.issuer.bytes.lexicographicallyPrecedes(rhs.issuer.bytes) }
        return lhs.voucherID.bytes.lexicographicallyPrecedes(rhs.voucherID.bytes)
    }

    public var description: String { "(issuer \(issuer.hex), voucher \(voucherID.hex))" }
}

/// A payer's `paymentOut`, with the signed transfer that carries it (the `debits` and `payments_out` rows).
/// Two debits are the same record when their fields agree; the signature bytes are not compared, since ECDSA
/// signatures are randomized and a retried transfer carries a new one over the same payload.
public struct DebitRecord: Hashable, Sendable {
    /// (payer, transfer id).
    public let key: TransferKey
    /// The payee the order names.
    public let payee: WalletID
    /// The amount and asset.
    public let amount: AssetAmount
    /// SHA-256 of the signed transfer's payload: what the payee's credit names.
    public let transferDigest: Digest32
    /// The debit entry's position in the payer's ledger.
    public let position: UInt64
    /// The transfer the payer signed.
    public let transfer: SignedTransfer

    /// Collects the record.
    public init(key: TransferKey, payee: WalletID, amount: AssetAmount, position: UInt64, transfer: SignedTransfer) {
        self.key = key
        self.payee = payee
        self.amount = amount
        transferDigest = transfer.payloadDigest
        self.position = position
        self.transfer = transfer
    }

    /// Whether `other` records the same debit (every field but the signature bytes).
    public func sameContent(_ other: DebitRecord) -> Bool {
        key == other.key && payee == other.payee && amount == other.amount && transferDigest == other.transferDigest
            && position == other.position
    }
}

/// A payee's `paymentIn`, or the issuer's `redemption` (the `credits` rows). The payer's checkpoint inside the
/// transfer is kept, so an unmatched credit leaves a held checkpoint of the payer.
public struct CreditRecord: Hashable, Sendable {
    /// (payer, transfer id).
    public let key: TransferKey
    /// The crediting wallet: the payee the order names.
    public let payee: WalletID
    /// The amount and asset.
    public let amount: AssetAmount
    /// SHA-256 of the signed transfer's payload.
    public let transferDigest: Digest32
    /// The credit entry's position in the payee's ledger.
    public let position: UInt64
    /// The payer's signed checkpoint the transfer carries (its last entry is the debit).
    public let payerCheckpoint: SignedCheckpoint
    /// Whether the credit is the issuer's `redemption`: money paid back, never spendable.
    public let isRedemption: Bool

    /// Collects the record.
    public init(
        key: TransferKey, payee: WalletID, amount: AssetAmount, transferDigest: Digest32, position: UInt64,
        payerCheckpoint: SignedCheckpoint, isRedemption: Bool
    ) {
        self.key = key
        self.payee = payee
        self.amount = amount
        self.transferDigest = transferDigest
        self.position = position
        self.payerCheckpoint = payerCheckpoint
        self.isRedemption = isRedemption
    }

    /// Whether `other` records the same credit (every field but the checkpoint's signature bytes).
    public func sameContent(_ other: CreditRecord) -> Bool {
        key == other.key && payee == other.payee && amount == other.amount && transferDigest == other.transferDigest
            && position == other.position && isRedemption == other.isRedemption
            && payerCheckpoint.checkpoint == other.payerCheckpoint.checkpoint
    }
}

/// A payer's `reversal`, with the payee's signed refusal that allowed it (the `reversals` rows).
public struct ReversalRecord: Hashable, Sendable {
    /// (payer, transfer id).
    public let key: TransferKey
    /// The refusing payee.
    public let payee: WalletID
    /// The amount credited back.
    public let amount: AssetAmount
    /// The reversal entry's position in the payer's ledger.
    public let position: UInt64
    /// The payee's refusal.
    public let refusal: SignedRefusal

    /// Collects the record.
    public init(key: TransferKey, payee: WalletID, amount: AssetAmount, position: UInt64, refusal: SignedRefusal) {
        self.key = key
        self.payee = payee
        self.amount = amount
        self.position = position
        self.refusal = refusal
    }

    /// Whether `other` records the same reversal (the refusal compared by payload digest).
    public func sameContent(_ other: ReversalRecord) -> Bool {
        key == other.key && payee == other.payee && amount == other.amount && position == other.position
            && refusal.payloadDigest == other.refusal.payloadDigest
    }
}

/// A payer's `confirmation`: the payee's receipt of a transfer, by digest.
public struct ConfirmationRecord: Hashable, Sendable {
    /// (payer, transfer id).
    public let key: TransferKey
    /// The confirming payee.
    public let payee: WalletID
    /// SHA-256 of the receipt payload.
    public let receiptDigest: Digest32
    /// The confirmation entry's position in the payer's ledger.
    public let position: UInt64

    /// Collects the record.
    public init(key: TransferKey, payee: WalletID, receiptDigest: Digest32, position: UInt64) {
        self.key = key
        self.payee = payee
        self.receiptDigest = receiptDigest
        self.position = position
    }
}

/// A voucher as the issuer's `mint` or the recipient's `deposit` records it (the `mints` and `deposits` rows).
public struct VoucherRecord: Hashable, Sendable {
    /// (issuer, voucher id).
    public let key: VoucherKey
    /// The wallet the voucher names.
    public let recipient: WalletID
    /// The amount and asset.
    public let amount: AssetAmount
    /// SHA-256 of the voucher payload.
    public let voucherDigest: Digest32
    /// The entry's position: in the issuer's ledger for a mint, in the recipient's for a deposit.
    public let position: UInt64

    /// Collects the record.
    public init(key: VoucherKey, recipient: WalletID, amount: AssetAmount, voucherDigest: Digest32, position: UInt64) {
        self.key = key
        self.recipient = recipient
        self.amount = amount
        self.voucherDigest = voucherDigest
        self.position = position
    }
}

/// The money record one verified entry gives, if any.
public enum ClearingRecord: Hashable, Sendable {
    /// A payer's payment out.
    case debit(DebitRecord)
    /// A payee's payment in, or the issuer's redemption.
    case credit(CreditRecord)
    /// A payer's reversal.
    case reversal(ReversalRecord)
    /// A payer's confirmation.
    case confirmation(ConfirmationRecord)
    /// The issuer's mint.
    case mint(VoucherRecord)
    /// A recipient's deposit.
    case deposit(VoucherRecord)
}

/// Why the clearing does not record an entry of an accepted sync. A value the book returns, never thrown:
/// each is a client's fault or a contradiction the lists then show. The raw values are stable codes.
public enum RecordRefusal: UInt8, Error, Hashable, Sendable, CaseIterable {
    /// The entry's payload is not the statement its kind records.
    case malformedPayload = 1
    /// The entry moves another issuer's asset: such entries travel opaque (docs/CLEARING.md §7, question 3).
    case otherIssuersAsset = 2
    /// A payment out came without its signed transfer, or with one of another order.
    case transferMismatch = 3
    /// A payment out or reversal of a transfer whose payer is not the syncing wallet.
    case wrongPayer = 4
    /// A credit by a wallet that is not the payee the transfer names.
    case wrongPayee = 5
    /// The payer used a transfer id already recorded with other content: refused, and the payer listed
    /// inconsistent (docs/CLEARING.md §7, question 5).
    case reusedTransferID = 6
    /// A reversal of a transfer whose debit the clearing does not hold.
    case reversalWithoutDebit = 7
    /// A reversal whose refusal does not verify against the debit's transfer and the payee's log.
    case refusalInvalid = 8
    /// A reversal whose payee's key-event log the clearing does not hold.
    case payeeLogMissing = 9
    /// A voucher id already recorded with other content, or a deposit or mint by the wrong wallet.
    case voucherMismatch = 10
    /// An entry amount that differs from its statement's.
    case amountMismatch = 11
    /// A reversal, confirmation, mint or deposit whose key is recorded with other content.
    case recordConflict = 12
}

extension ClearingRecord {
    /// The record `entry` of `wallet`'s verified ledger gives: nil for kinds that move no money and record no
    /// counterparty's statement. `transfer` is the signed transfer of a `paymentOut`. Only the statements'
    /// parts are read here; their signatures and the ledger rules were checked by the sync (§2.3).
    public static func extract(
        wallet: WalletID, issuer: WalletID, entry: LedgerEntry, transfer: SignedTransfer?
    ) -> Result<ClearingRecord?, RecordRefusal> {
        if let amount = entry.amount, amount.issuer != issuer { return .failure(.otherIssuersAsset) }
        switch entry.kind {
        case .paymentOut: return extractDebit(wallet: wallet, entry: entry, transfer: transfer)
        case .paymentIn, .redemption: return extractCredit(wallet: wallet, entry: entry)
        case .reversal: return extractReversal(wallet: wallet, entry: entry)
        case .confirmation: return extractConfirmation(wallet: wallet, entry: entry)
        case .mint, .deposit: return extractVoucher(wallet: wallet, entry: entry)
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .settings:
            return .success(nil)
        }
    }

    private static func decoded<Value>(_ decode: ([UInt8]) throws -> Value?, _ bytes: [UInt8]) -> Value? {
        (try? decode(bytes)).flatMap { $0 }
    }

    private static func extractDebit(wallet: WalletID, entry: LedgerEntry, transfer: SignedTransfer?)
        -> Result<ClearingRecord?, RecordRefusal>
    {
        guard let order = decoded(TransferOrder.decode, entry.payload) else { return .failure(.malformedPayload) }
        guard order.payerWalletID == wallet else { return .failure(.wrongPayer) }
        guard let transfer, transfer.payload.order == order else { return .failure(.transferMismatch) }
        guard entry.amount == order.amount else { return .failure(.amountMismatch) }
        return .success(
            .debit(
                DebitRecord(
                    key: TransferKey(payer: wallet, transferID: order.transferID), payee: order.payeeWalletID,
                    amount: order.amount, position: entry.position, transfer: transfer)))
    }

    private static func extractCredit(wallet: WalletID, entry: LedgerEntry) -> Result<ClearingRecord?, RecordRefusal> {
        guard let transfer = decoded(SignedTransfer.decode, entry.payload) else { return .failure(.malformedPayload) }
        let order = transfer.payload.order
        guard order.payeeWalletID == wallet else { return .failure(.wrongPayee) }
        guard entry.amount == order.amount else { return .failure(.amountMismatch) }
        return .success(
            .credit(
                CreditRecord(
                    key: TransferKey(payer: order.payerWalletID, transferID: order.transferID), payee: wallet,
                    amount: order.amount, transferDigest: transfer.payloadDigest, position: entry.position,
                    payerCheckpoint: transfer.payload.checkpoint, isRedemption: entry.kind == .redemption)))
    }

    private static func extractReversal(wallet: WalletID, entry: LedgerEntry) -> Result<ClearingRecord?, RecordRefusal>
    {
        guard let refusal = decoded(SignedRefusal.decode, entry.payload) else { return .failure(.malformedPayload) }
        let payload = refusal.payload
        guard payload.payerWalletID == wallet else { return .failure(.wrongPayer) }
        guard entry.amount == payload.amount else { return .failure(.amountMismatch) }
        return .success(
            .reversal(
                ReversalRecord(
                    key: TransferKey(payer: wallet, transferID: payload.transferID), payee: payload.payeeWalletID,
                    amount: payload.amount, position: entry.position, refusal: refusal)))
    }

    private static func extractConfirmation(wallet: WalletID, entry: LedgerEntry) -> Result<
        ClearingRecord?, RecordRefusal
    > {
        guard let receipt = decoded(SignedReceipt.decode, entry.payload) else { return .failure(.malformedPayload) }
        guard receipt.payload.payerWalletID == wallet else { return .failure(.wrongPayer) }
        return .success(
            .confirmation(
                ConfirmationRecord(
                    key: TransferKey(payer: wallet, transferID: receipt.payload.transferID),
                    payee: receipt.payload.payeeWalletID, receiptDigest: receipt.payloadDigest,
                    position: entry.position)))
    }

    private static func extractVoucher(wallet: WalletID, entry: LedgerEntry) -> Result<ClearingRecord?, RecordRefusal> {
        guard let voucher = decoded(SignedVoucher.decode, entry.payload) else { return .failure(.malformedPayload) }
        let payload = voucher.payload
        let isMint = entry.kind == .mint
        // A mint is in the issuer's own ledger; a deposit in the recipient's.
        guard (isMint ? payload.issuerWalletID : payload.recipientWalletID) == wallet else {
            return .failure(.voucherMismatch)
        }
        guard entry.amount == payload.assetAmount else { return .failure(.amountMismatch) }
        let record = VoucherRecord(
            key: VoucherKey(issuer: payload.issuerWalletID, voucherID: payload.voucherID),
            recipient: payload.recipientWalletID, amount: payload.assetAmount, voucherDigest: voucher.payloadDigest,
            position: entry.position)
        return .success(isMint ? .mint(record) : .deposit(record))
    }
}
