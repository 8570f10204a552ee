import SecureCrypto

/// An issuer's promise of money to one wallet: `secure mint` signs it, `secure deposit` credits it once.
/// See docs/PROTOCOL.md, "Vouchers".
public struct Voucher: SignedPayload {
    /// The issuer's signing key.
    public let issuerKey: P256.PublicKey
    /// The wallet id of the only wallet that may deposit it.
    public let recipientWalletID: WalletID
    /// The amount credited; never zero.
    public let amount: Money
    /// 16 random bytes chosen by the issuer; unique per issuer key.
    public let voucherID: VoucherID
    /// The issuer's own counter, so an issuer can audit what it minted.
    public let issuerSequence: UInt64

    /// The encoding's version byte.
    public static let encodingVersion: UInt8 = 1
    public static let signatureLabel = SignatureLabel("secure-voucher-v1")
    /// A voucher is 1 + 65 + 32 + 12 + 16 + 8 = 134 bytes; the bound only has to admit that.
    public static let encodedByteCountMax = 256

    /// Makes a voucher; the amount must be positive.
    public init(
        issuerKey: P256.PublicKey, recipientWalletID: WalletID, amount: Money, voucherID: VoucherID,
        issuerSequence: UInt64
    ) throws {
        guard !amount.isZero else { throw FormatError(.invalidValue, "a voucher's amount must be positive") }
        self.issuerKey = issuerKey
        self.recipientWalletID = recipientWalletID
        self.amount = amount
        self.voucherID = voucherID
        self.issuerSequence = issuerSequence
    }

    public var signerKey: P256.PublicKey { issuerKey }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 134)
        writer.write(Voucher.encodingVersion)
        writer.write(fixed: issuerKey.x963, count: P256.uncompressedPointByteCount)
        writer.write(recipientWalletID)
        amount.encode(into: &writer)
        writer.write(voucherID)
        writer.write(issuerSequence)
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Voucher? {
        var reader = ByteReader(bytes)
        guard try reader.readVersion(encodingVersion, of: "voucher") else { return nil }
        guard let point = reader.readFixed(P256.uncompressedPointByteCount), let recipient = reader.read(WalletID.self),
            let amount = try Money.decode(from: &reader), let voucherID = reader.read(VoucherID.self),
            let sequence = reader.readUInt64()
        else { return nil }
        try reader.expectEnd("voucher")
        return try Voucher(
            issuerKey: try decodeKey(point, "issuer key"), recipientWalletID: recipient, amount: amount,
            voucherID: voucherID, issuerSequence: sequence)
    }

    /// Signs the voucher with the issuer's key.
    public func sign(with signer: MessageSigner) throws -> SignedVoucher {
        try SignedVoucher(signing: self, with: signer)
    }
}

/// A voucher with the issuer's signature.
public typealias SignedVoucher = SignedStatement<Voucher>

extension SignedStatement where Payload == Voucher {
    /// The reference a deposit records: (issuer fingerprint, voucher id, SHA-256 of the voucher encoding).
    public var statementReference: StatementReference {
        // The lengths were checked when the voucher was made.
        StatementReference(signer: payload.issuerKey, id: payload.voucherID, payloadDigest: payloadDigest)
    }

    /// Whether this voucher verifies under `key` (the issuer key it names must be `key`).
    public func verify(against key: P256.PublicKey) -> Bool { payload.issuerKey == key && isSignatureValid }
}

/// The checks `secure deposit` makes, in order: the signature (else dropped), a trusted issuer (else a
/// policy refusal that records nothing, so the voucher can be deposited after `secure issuer trust`),
/// a re-delivery (duplicate or conflict), the recipient (else refused finally), and room in the balance
/// (else refused without a record, so it can be deposited once the balance is lower).
public enum VoucherCheck {
    /// The verdict for depositing `voucher` into the wallet `walletID` whose ledger is at `state`.
    ///
    /// An accepted deposit is a `deposit` entry: the amount, counterparty = issuer key fingerprint,
    /// statement = (issuer fingerprint, voucher id, payload digest), payload = the signed voucher.
    public static func evaluate(
        _ voucher: SignedVoucher, walletID: WalletID, trustedIssuers: Set<P256.PublicKey>, state: LedgerState
    ) -> StatementVerdict {
        guard voucher.isSignatureValid else { return .drop(.badSignature) }
        let payload = voucher.payload
        guard trustedIssuers.contains(payload.issuerKey) else { return .policyRefusal(.untrustedIssuer) }
        let reference = voucher.statementReference
        let bytes = voucher.encoded
        let issuer = payload.issuerKey.fingerprint
        return StatementVerdict.resolve(
            reference: reference, payload: bytes, counterparty: issuer, state: state,
            failure: failure(of: payload, walletID: walletID)
        ) {
            guard state.canCredit(payload.amount) else { return .policyRefusal(.balanceOverflow) }
            return .accept(
                EntryDraft(
                    kind: .deposit, amount: payload.amount, counterparty: issuer, statement: reference, payload: bytes))
        }
    }

    /// Why a validly signed voucher is refused finally, or nil. It depends on the voucher and the wallet id
    /// alone, so a voucher refused once is refused for the same reason whenever it is delivered again.
    public static func failure(of voucher: Voucher, walletID: WalletID) -> RefusalReason? {
        voucher.recipientWalletID == walletID ? nil : .wrongRecipient
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
