import SecureCrypto

/// An issuer's promise of money to one wallet: `secure mint` signs it from the issuer's wallet (whose ledger
/// records it as a liability), `secure deposit` credits it once. The issuer is named by its wallet id, and
/// the issuer's key-event log (carried in the voucher's envelope) decides which key may sign for it at the
/// voucher's key date. See docs/PROTOCOL.md, "Vouchers".
public struct Voucher: DatedPayload {
    /// The issuer's wallet id: the asset's issuer.
    public let issuerWalletID: WalletID
    /// The issuer's signing key.
    public let issuerKey: P256.PublicKey
    /// When the issuer's key signed it: the issuer's ledger size counts the `mint` entry that records it.
    public let keyDate: KeyDate
    /// The wallet id of the only wallet that may deposit it.
    public let recipientWalletID: WalletID
    /// The amount credited; never zero. The asset is (issuer, the amount's currency).
    public let amount: Money
    /// 16 random bytes chosen by the issuer; unique per issuer wallet.
    public let voucherID: VoucherID

    /// The encoding's version byte. Version 1 (an issuer named by a bare key) is refused.
    public static let encodingVersion: UInt8 = 2
    public static let signatureLabel = SignatureLabel("secure-voucher-v2")
    /// A voucher is 1 + 32 + 65 + 24 + 32 + 12 + 16 = 182 bytes; the bound only has to admit that.
    public static let encodedByteCountMax = 256

    /// Makes a voucher; the amount must be positive.
    public init(
        issuerWalletID: WalletID, issuerKey: P256.PublicKey, keyDate: KeyDate, recipientWalletID: WalletID,
        amount: Money, voucherID: VoucherID
    ) throws {
        guard !amount.isZero else { throw FormatError(.invalidValue, "a voucher's amount must be positive") }
        self.issuerWalletID = issuerWalletID
        self.issuerKey = issuerKey
        self.keyDate = keyDate
        self.recipientWalletID = recipientWalletID
        self.amount = amount
        self.voucherID = voucherID
    }

    public var signerKey: P256.PublicKey { issuerKey }

    /// The amount as the asset it credits.
    public var assetAmount: AssetAmount { AssetAmount(issuer: issuerWalletID, money: amount) }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 182)
        writer.write(Voucher.encodingVersion)
        writer.write(issuerWalletID)
        writer.write(fixed: issuerKey.x963, count: P256.uncompressedPointByteCount)
        keyDate.encode(into: &writer)
        writer.write(recipientWalletID)
        amount.encode(into: &writer)
        writer.write(voucherID)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Voucher? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "voucher") else { return nil }
        guard let issuer = reader.read(WalletID.self), let point = reader.readFixed(P256.uncompressedPointByteCount),
            let keyDate = try KeyDate.decode(from: &reader), let recipient = reader.read(WalletID.self),
            let amount = try Money.decode(from: &reader), let voucherID = reader.read(VoucherID.self)
        else { return nil }
        try reader.expectEnd("voucher")
        return try Voucher(
            issuerWalletID: issuer, issuerKey: try decodeKey(point, "issuer key"), keyDate: keyDate,
            recipientWalletID: recipient, amount: amount, voucherID: voucherID)
    }

    /// Signs the voucher with the issuer's key.
    public func sign(with signer: MessageSigner) throws -> SignedVoucher {
        try SignedVoucher(signing: self, with: signer)
    }
}

/// A voucher with the issuer's signature.
public typealias SignedVoucher = SignedStatement<Voucher>

extension SignedStatement where Payload == Voucher {
    /// The reference a deposit (and the issuer's `mint`) records: (issuer wallet id, voucher id, SHA-256 of
    /// the voucher encoding). Ids are scoped by the issuer's wallet, not its key, so a voucher id stays
    /// spent across the issuer's rotations.
    public var statementReference: StatementReference {
        StatementReference(
            signer: Digest32(payload.issuerWalletID), id: StatementID(payload.voucherID), payloadDigest: payloadDigest)
    }
}

/// The checks `secure deposit` makes, in order: the signature and the issuer's log (else dropped; a voucher
/// signed by a key after its retirement is dropped with the fork evidence that proves it), a trusted issuer
/// (else a policy refusal that records nothing, so the voucher can be deposited after `secure issuer
/// trust`), a re-delivery (duplicate or conflict), the recipient and, at deposit, the issuer's key in force
/// (else refused finally), and room in the balance (else refused without a record, so it can be deposited
/// once the balance is lower).
public enum VoucherCheck {
    /// The verdict for depositing `voucher`, whose issuer's log is `issuerLog`, into the wallet `walletID`
    /// whose ledger is at `state` and which trusts the issuers `trustedIssuers`.
    ///
    /// With `refusingRetiredKeys` (what `secure deposit` does) a voucher signed by a key the log shows
    /// retired is refused finally, even one dated before the rotation that retired it: a voucher recorded
    /// before this wallet learned of the rotation is a duplicate by then, so only one it never recorded is
    /// refused, and a stolen retired key cannot mint by backdating. `ledger verify` checks recorded deposits
    /// without it, since each was recorded while its key was the last one the wallet knew.
    ///
    /// An accepted deposit is a `deposit` entry: the asset amount, counterparty = issuer wallet id,
    /// statement = (issuer wallet id, voucher id, payload digest), payload = the signed voucher.
    public static func evaluate(
        _ voucher: SignedVoucher, issuerLog: KeyEventLog, walletID: WalletID, trustedIssuers: Set<WalletID>,
        state: LedgerState, refusingRetiredKeys: Bool = false
    ) -> StatementVerdict {
        guard voucher.isSignatureValid else { return .drop(.badSignature) }
        if let reason = signerFailure(voucher, issuerLog: issuerLog) { return .drop(reason) }
        let payload = voucher.payload
        guard trustedIssuers.contains(payload.issuerWalletID) else { return .policyRefusal(.untrustedIssuer) }
        let reference = voucher.statementReference
        let bytes = voucher.encoded
        let issuer = payload.issuerWalletID.bytes
        return StatementVerdict.resolve(
            reference: reference, payload: bytes, counterparty: issuer, state: state,
            failure: failure(of: payload, walletID: walletID, issuerLog: refusingRetiredKeys ? issuerLog : nil)
        ) {
            guard state.canCredit(payload.assetAmount) else { return .policyRefusal(.balanceOverflow) }
            return .accept(
                EntryDraft(
                    kind: .deposit, amount: payload.assetAmount, counterparty: issuer, statement: reference,
                    payload: bytes))
        }
    }

    /// Why the signer of a validly signed voucher is not proven, or nil: the log must be the named issuer's,
    /// incepted as an issuer, and show the voucher's key in force at its date. A key dated after the
    /// rotation that retired it gives the fork evidence (type 5) that proves it.
    public static func signerFailure(_ voucher: SignedVoucher, issuerLog: KeyEventLog) -> DropReason? {
        let payload = voucher.payload
        guard issuerLog.walletID == payload.issuerWalletID, issuerLog.isIssuer else { return .unknownSigner }
        switch issuerLog.check(key: payload.issuerKey, date: payload.keyDate) {
        case .inForce: return nil
        case .retired:
            return issuerLog.retiredKeyEvidence(.voucher(voucher)).map { .retiredSigner($0) } ?? .unknownSigner
        case .unknown, .beforeInForce: return .unknownSigner
        }
    }

    /// Why a validly signed voucher is refused finally, or nil: another recipient, or, when `issuerLog` is
    /// given, a key the log shows retired. It depends on the voucher, the wallet id and the log alone; a log
    /// only grows, so a voucher refused once is refused for the same reason whenever it is delivered again.
    public static func failure(of voucher: Voucher, walletID: WalletID, issuerLog: KeyEventLog? = nil)
        -> RefusalReason?
    {
        guard voucher.recipientWalletID == walletID else { return .wrongRecipient }
        if let issuerLog, voucher.keyDate.keySequence < issuerLog.current.sequence { return .retiredIssuerKey }
        return nil
    }
}

/// A P-256 point from a decoder's bytes, or a format error naming the field.
func decodeKey(_ point: [UInt8], _ field: String) throws -> P256.PublicKey {
    do {
        return try P256.PublicKey(x963: point)
    } catch {
        throw FormatError(.invalidValue, "the \(field) is not a valid P-256 point")
    }
}
