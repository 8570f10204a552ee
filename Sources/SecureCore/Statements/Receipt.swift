import SecureCrypto

/// The payee's countersignature of a credited transfer. It also cosigns the payer's new checkpoint, so a
/// payer that later signs a conflicting history faces the payee's signature on this one. A receipt
/// records no ledger entry: the payer keeps it beside its payment out, which it marks confirmed.
/// See docs/PROTOCOL.md, "Transfers, receipts and refusals".
public struct Receipt: TransferAnswerPayload {
    /// The transfer it confirms, the payee's key and date (past the credit), and the amount credited.
    public let answer: TransferAnswer
    /// SHA-256 of the payer's checkpoint encoding (the one inside the transfer), which the payee cosigns.
    public let checkpointDigest: Digest32
    /// That checkpoint's size.
    public let checkpointSize: UInt64
    /// The position of the payee's `paymentIn` entry.
    public let creditPosition: UInt64

    /// The encoding's version byte: 3 since the amount names its asset (2 added the key date).
    public static let encodingVersion: UInt8 = 3
    public static let signatureLabel = SignatureLabel("secure-receipt-v1")
    /// 1 + 16 + 32 + 32 + 32 + 65 + 24 + 44 + 32 + 8 + 8 = 294 bytes.
    public static let encodedByteCountMax = 320

    /// The receipt for `transfer`, credited by the entry at `creditPosition` of the wallet whose key is
    /// `payeeKey`, signed at `keyDate`, whose ledger size must be past the credit.
    public init(for transfer: SignedTransfer, payeeKey: P256.PublicKey, keyDate: KeyDate, creditPosition: UInt64) {
        precondition(keyDate.ledgerSize > creditPosition, "a receipt is signed after its credit is in the ledger")
        answer = TransferAnswer(answering: transfer, payeeKey: payeeKey, keyDate: keyDate)
        checkpointDigest = Digest32(of: transfer.payload.checkpoint.checkpoint.encoded)
        checkpointSize = transfer.payload.checkpoint.checkpoint.size
        self.creditPosition = creditPosition
    }

    init(answer: TransferAnswer, checkpointDigest: Digest32, checkpointSize: UInt64, creditPosition: UInt64) {
        self.answer = answer
        self.checkpointDigest = checkpointDigest
        self.checkpointSize = checkpointSize
        self.creditPosition = creditPosition
    }

    init(
        transferID: TransferID, transferDigest: Digest32, payerWalletID: WalletID, payeeWalletID: WalletID,
        payeeKey: P256.PublicKey, keyDate: KeyDate, amount: AssetAmount, checkpointDigest: Digest32,
        checkpointSize: UInt64,
        creditPosition: UInt64
    ) {
        self.init(
            answer: TransferAnswer(
                transferID: transferID, transferDigest: transferDigest, payerWalletID: payerWalletID,
                payeeWalletID: payeeWalletID, payeeKey: payeeKey, keyDate: keyDate, amount: amount),
            checkpointDigest: checkpointDigest, checkpointSize: checkpointSize, creditPosition: creditPosition)
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 294)
        writer.write(Receipt.encodingVersion)
        answer.encode(into: &writer)
        writer.write(checkpointDigest)
        writer.write(checkpointSize)
        writer.write(creditPosition)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Receipt? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "receipt") else { return nil }
        guard let answer = try TransferAnswer.decode(from: &reader), let checkpointDigest = reader.read(Digest32.self),
            let size = reader.readUInt64(), let position = reader.readUInt64()
        else { return nil }
        try reader.expectEnd("receipt")
        guard answer.keyDate.ledgerSize > position else {
            throw FormatError(.invalidValue, "a receipt is dated before its own credit entry")
        }
        return Receipt(
            answer: answer, checkpointDigest: checkpointDigest, checkpointSize: size, creditPosition: position)
    }

    /// Signs the receipt with the payee's key.
    public func sign(with signer: MessageSigner) throws -> SignedReceipt {
        try SignedReceipt(signing: self, with: signer)
    }
}

/// A receipt with the payee's signature.
public typealias SignedReceipt = SignedStatement<Receipt>

extension SignedStatement where Payload == Receipt {
    /// Whether this receipt confirms exactly `transfer`: signed by the key the payee's log shows in force at
    /// the receipt's date, for the same transfer id, payload digest, wallets, amount and checkpoint; a receipt
    /// by a retired key after its retirement confirms nothing (`ReceiptCheck` says why).
    public func confirms(_ transfer: SignedTransfer, payeeLog: KeyEventLog) -> Bool {
        ReceiptCheck.evaluate(self, of: transfer, payeeLog: payeeLog) == .confirms
    }
}

/// The payer's checks of a receipt for a transfer it sent.
public enum ReceiptCheck {
    /// What a receipt does for a sent transfer.
    public enum Verdict: Hashable, Sendable {
        case confirms
        /// A bad signature, a signer that is not the payee's, or a receipt of something else.
        case dropped(DropReason)
    }

    /// The verdict for `receipt` of `transfer`: the payee's log decides whether its signer was in force at
    /// the receipt's date (a retired key's late receipt is dropped with fork evidence).
    public static func evaluate(_ receipt: SignedReceipt, of transfer: SignedTransfer, payeeLog: KeyEventLog)
        -> Verdict
    {
        let payload = receipt.payload
        guard receipt.isSignatureValid else { return .dropped(.badSignature) }
        if let reason = DropReason.signer(.receipt(receipt), walletID: payload.payeeWalletID, log: payeeLog) {
            return .dropped(reason)
        }
        guard payload.keyDate.ledgerSize > payload.creditPosition else { return .dropped(.unrelated) }
        let expected = Receipt(
            for: transfer, payeeKey: payload.payeeKey, keyDate: payload.keyDate,
            creditPosition: payload.creditPosition)
        return payload == expected ? .confirms : .dropped(.unrelated)
    }
}

extension ReceiptCheck {
    /// The ledger verdict for a receipt that `evaluate` found to confirm its transfer: a `confirmation`
    /// entry (no amount; counterparty = payee wallet id; statement = (payee key fingerprint, transfer id,
    /// receipt digest); payload = the signed receipt), or the ledger's memory (duplicate, or a conflict with
    /// the payee's refusal of the same transfer under the same key, kept as evidence).
    public static func confirmation(_ receipt: SignedReceipt, state: LedgerState) -> StatementVerdict {
        let payload = receipt.payload
        let reference = StatementReference(
            signer: payload.payeeKey, id: payload.transferID, payloadDigest: receipt.payloadDigest)
        let bytes = receipt.encoded
        return StatementVerdict.resolve(
            reference: reference, payload: bytes, counterparty: payload.payeeWalletID.bytes, state: state, failure: nil
        ) {
            .accept(
                EntryDraft(
                    kind: .confirmation, amount: nil, counterparty: payload.payeeWalletID.bytes, statement: reference,
                    payload: bytes))
        }
    }
}

extension DropReason {
    /// Why the signer of a validly signed dated statement is not acceptable for `walletID`, or nil when it
    /// is: the log must be that wallet's and show the signer's key in force at the statement's date.
    static func signer(_ statement: DatedStatement, walletID: WalletID, log: KeyEventLog) -> DropReason? {
        guard log.walletID == walletID else { return .unknownSigner }
        if let evidence = log.retiredKeyEvidence(statement) { return .retiredSigner(evidence) }
        return log.check(statement) == .inForce ? nil : .unknownSigner
    }
}

/// The payee's signed refusal of a validly signed transfer that failed a check. The payer appends a
/// `reversal` entry from it, which credits the debit back. See docs/PROTOCOL.md.
public struct Refusal: TransferAnswerPayload {
    /// The refused transfer, the refusing payee's key and date, and the amount the reversal credits back.
    public let answer: TransferAnswer
    /// Which check failed.
    public let reason: RefusalReason

    /// The encoding's version byte: 3 since the amount names its asset (2 added the key date).
    public static let encodingVersion: UInt8 = 3
    public static let signatureLabel = SignatureLabel("secure-refusal-v1")
    /// 1 + 16 + 32 + 32 + 32 + 65 + 24 + 44 + 1 = 247 bytes.
    public static let encodedByteCountMax = 288

    /// The refusal of `transfer` for `reason` by the payee whose key is `payeeKey`. The refusing wallet is
    /// the payee the transfer names: a wallet refuses a misaddressed transfer under the transfer's payee
    /// id only if that is its own, and otherwise has no standing to send a refusal at all.
    public init(refusing transfer: SignedTransfer, payeeKey: P256.PublicKey, keyDate: KeyDate, reason: RefusalReason) {
        answer = TransferAnswer(answering: transfer, payeeKey: payeeKey, keyDate: keyDate)
        self.reason = reason
    }

    init(answer: TransferAnswer, reason: RefusalReason) {
        self.answer = answer
        self.reason = reason
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 247)
        writer.write(Refusal.encodingVersion)
        answer.encode(into: &writer)
        writer.write(reason.rawValue)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Refusal? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "refusal") else { return nil }
        guard let answer = try TransferAnswer.decode(from: &reader), let reasonByte = reader.readUInt8() else {
            return nil
        }
        try reader.expectEnd("refusal")
        guard let reason = RefusalReason(rawValue: reasonByte) else {
            throw FormatError(.invalidValue, "refusal reason \(reasonByte) is not known")
        }
        guard !answer.amount.isZero else { throw FormatError(.invalidValue, "a refusal's amount must be positive") }
        return Refusal(answer: answer, reason: reason)
    }

    /// Signs the refusal with the payee's key.
    public func sign(with signer: MessageSigner) throws -> SignedRefusal {
        try SignedRefusal(signing: self, with: signer)
    }
}

/// A refusal with the payee's signature.
public typealias SignedRefusal = SignedStatement<Refusal>

extension SignedStatement where Payload == Refusal {
    /// The reference a reversal records: (payee key fingerprint, transfer id, SHA-256 of the refusal).
    public var statementReference: StatementReference {
        StatementReference(signer: payload.payeeKey, id: payload.transferID, payloadDigest: payloadDigest)
    }
}

/// The checks a payer makes before it reverses a debit on a refusal. Only the payee may refuse: a refusal
/// from anyone else would let a payer take back money the payee credited.
public enum RefusalCheck {
    /// The verdict for `refusal` of the transfer `sent` (the exact bytes the payer's pending record holds),
    /// where `payeeLog` is the key-event log of the payee the transfer names.
    ///
    /// A signature that fails, a signer the log does not show in force at the refusal's date (a retired key's
    /// late refusal is dropped with fork evidence), a refusal by any wallet but the transfer's payee, or a
    /// refusal of another transfer is dropped.
    /// Otherwise the ledger's memory decides (duplicate, conflict), and a new refusal becomes a `reversal`
    /// entry: the amount, counterparty = payee wallet id, statement = (payee key fingerprint, transfer id,
    /// refusal digest), payload = the signed refusal. The ledger applies it only to an unreversed payment
    /// out of that transfer id and amount.
    public static func evaluate(
        _ refusal: SignedRefusal, of sent: SignedTransfer, payeeLog: KeyEventLog, state: LedgerState
    ) -> StatementVerdict {
        guard refusal.isSignatureValid else { return .drop(.badSignature) }
        let payload = refusal.payload
        guard payload.payeeWalletID == sent.payload.order.payeeWalletID else { return .drop(.unrelated) }
        if let reason = DropReason.signer(.refusal(refusal), walletID: payload.payeeWalletID, log: payeeLog) {
            return .drop(reason)
        }
        let expected = Refusal(
            refusing: sent, payeeKey: payload.payeeKey, keyDate: payload.keyDate, reason: payload.reason)
        guard payload == expected else { return .drop(.unrelated) }
        let reference = refusal.statementReference
        let bytes = refusal.encoded
        return StatementVerdict.resolve(
            reference: reference, payload: bytes, counterparty: payload.payeeWalletID.bytes, state: state, failure: nil
        ) {
            .accept(
                EntryDraft(
                    kind: .reversal, amount: payload.amount, counterparty: payload.payeeWalletID.bytes,
                    statement: reference,
                    payload: bytes))
        }
    }
}

/// What a payee's answer to a transfer, a receipt or a refusal, begins with: the transfer (id and payload
/// digest), its payer and payee wallets, the payee's signing key and its date, and the transfer's amount.
/// Both statements encode it first, in this order, after their version byte.
public struct TransferAnswer: Hashable, Sendable {
    /// The transfer's id.
    public let transferID: TransferID
    /// SHA-256 of the signed transfer's payload.
    public let transferDigest: Digest32
    /// The payer's wallet id.
    public let payerWalletID: WalletID
    /// The payee's wallet id.
    public let payeeWalletID: WalletID
    /// The payee's signing key.
    public let payeeKey: P256.PublicKey
    /// When the payee's key signed: its key event and the payee's ledger size.
    public let keyDate: KeyDate
    /// The transfer's amount and asset.
    public let amount: AssetAmount

    func encode(into writer: inout ByteWriter) {
        writer.write(transferID)
        writer.write(transferDigest)
        writer.write(payerWalletID)
        writer.write(payeeWalletID)
        writer.write(fixed: payeeKey.x963, count: P256.uncompressedPointByteCount)
        keyDate.encode(into: &writer)
        amount.encode(into: &writer)
    }

    /// The answer head at the reader, or nil when the bytes run out; throws on a malformed key date, amount
    /// or payee key.
    static func decode(from reader: inout ByteReader) throws -> TransferAnswer? {
        guard let transferID = reader.read(TransferID.self), let digest = reader.read(Digest32.self),
            let payer = reader.read(WalletID.self), let payee = reader.read(WalletID.self),
            let point = reader.readFixed(P256.uncompressedPointByteCount),
            let keyDate = try KeyDate.decode(from: &reader),
            let amount = try AssetAmount.decode(from: &reader)
        else { return nil }
        return TransferAnswer(
            transferID: transferID, transferDigest: digest, payerWalletID: payer, payeeWalletID: payee,
            payeeKey: try decodeKey(point, "payee key"), keyDate: keyDate, amount: amount)
    }
}

extension TransferAnswer {
    /// The answer to `transfer` by the payee whose key is `payeeKey`, signed at `keyDate`.
    init(answering transfer: SignedTransfer, payeeKey: P256.PublicKey, keyDate: KeyDate) {
        let order = transfer.payload.order
        self.init(
            transferID: order.transferID, transferDigest: transfer.payloadDigest, payerWalletID: order.payerWalletID,
            payeeWalletID: order.payeeWalletID, payeeKey: payeeKey, keyDate: keyDate, amount: order.amount)
    }
}

/// A receipt or a refusal: a payee's dated statement about one transfer, whose head fields it forwards.
public protocol TransferAnswerPayload: DatedPayload {
    /// The transfer answered, the payee's key and date, and the amount.
    var answer: TransferAnswer { get }
}

extension TransferAnswerPayload {
    /// The transfer's id.
    public var transferID: TransferID { answer.transferID }
    /// SHA-256 of the signed transfer's payload.
    public var transferDigest: Digest32 { answer.transferDigest }
    /// The payer's wallet id.
    public var payerWalletID: WalletID { answer.payerWalletID }
    /// The payee's wallet id.
    public var payeeWalletID: WalletID { answer.payeeWalletID }
    /// The payee's signing key, which signs the statement.
    public var payeeKey: P256.PublicKey { answer.payeeKey }
    public var signerKey: P256.PublicKey { answer.payeeKey }
    /// When the payee's key signed.
    public var keyDate: KeyDate { answer.keyDate }
    /// The transfer's amount: credited for a receipt, credited back by the reversal for a refusal.
    public var amount: AssetAmount { answer.amount }
}
