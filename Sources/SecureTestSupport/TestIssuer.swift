import SecureCore
import SecureCrypto

/// TEST SUPPORT ONLY. An issuer whose single key is any `MessageSigner` (a software key, or a token key in
/// the benchmarks): an issuer's key-event log of one inception event, and vouchers in envelopes, without a
/// ledger of its own. The simulator and benchmarks fund their wallets with it; `secure issuer init` and
/// `secure mint` are the real issuer, with a ledger that records each voucher as a liability.
public struct TestIssuer {
    public let signer: MessageSigner
    public let log: KeyEventLog
    private var mints: UInt64 = 0

    public init(signer: MessageSigner) throws {
        self.signer = signer
        log = try KeyEventLog(
            inception: try SignedKeyEvent(
                KeyEvent.inception(
                    signingKey: signer.publicKey, nextKey: signer.publicKey, agreementKey: signer.publicKey,
                    issuer: true), signer: signer))
    }

    /// The issuer's wallet id: the asset's issuer.
    public var walletID: WalletID { log.walletID }
    /// The card wallets trust.
    public var card: WalletCard { WalletCard(log: log) }

    /// A voucher for `recipient`, dated one ledger entry further than the last.
    public mutating func voucher(_ amount: Money, to recipient: WalletID, id: VoucherID = .random()) throws
        -> Envelope
    {
        mints += 1
        let voucher = try Voucher(
            issuerWalletID: walletID, issuerKey: signer.publicKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: mints + 1),
            recipientWalletID: recipient, amount: amount, voucherID: id
        ).sign(with: signer)
        return Envelope(voucher, issuerLog: log)
    }
}
