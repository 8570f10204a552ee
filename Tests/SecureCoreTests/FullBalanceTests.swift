import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// A wallet whose balance is the largest amount it can hold (Int64.max minor units). A credit would overflow,
/// which the ledger refuses; the checks see it first, so the statement gets an answer instead of an error.
@Suite("Full balances")
struct FullBalanceTests {
    /// A payee holding the largest amount, and a payer with 100.00 EUR.
    static func wallets() throws -> (payer: TestWallet, payee: TestWallet, issuer: SoftwareSigner) {
        let issuer = try SoftwareSigner()
        var payer = try TestWallet(seed: 30)
        try payer.deposit(10_000, issuer: issuer)
        var payee = try TestWallet(seed: 40)
        try payee.deposit(Int64.max, issuer: issuer)
        return (payer, payee, issuer)
    }

    @Test("a transfer to a full payee is refused with reason 9, so the payer can reverse; once")
    func transferToAFullPayee() throws {
        var (payer, payee, _) = try Self.wallets()
        #expect(!payee.state.canCredit(payer.asset(Fixture.eur(1))))
        #expect(payee.state.canCredit(payer.asset(Fixture.eur(0))))
        let transfer = try payer.pay(payee.walletID, units: 450)
        let check = {
            TransferCheck.evaluate(
                transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
                policy: TransferTests.noProximity(trusting: payer))
        }
        guard case .refuse(.balanceOverflow, let record) = check() else { Issue.record("\(check())"); return }
        #expect(record.kind == .statementRefused && record.amount == nil)
        let entry = try payee.carryOut(check())!
        #expect(check() == .duplicate(position: entry.position))
        let refusal = try payee.refusal(of: transfer, reason: .balanceOverflow)
        #expect(try SignedRefusal.decode(refusal.encoded)?.payload.reason == .balanceOverflow)
        let reversal = RefusalCheck.evaluate(refusal, of: transfer, payeeLog: payee.log, state: payer.state)
        guard case .accept = reversal else { Issue.record("\(reversal)"); return }
        try payer.carryOut(reversal)
        #expect(payer.balance() == Fixture.eur(10_000))
    }

    @Test("a voucher that would overflow records nothing, so it can be deposited once the balance is lower")
    func voucherToAFullWallet() throws {
        let (_, payee, issuer) = try Self.wallets()
        let log = try SoftwareWallet.issuerLog(of: issuer)
        let voucher = try VoucherTests.voucher(log, key: issuer.publicKey, to: payee.walletID, 1, id: 5, size: 9)
            .sign(with: issuer)
        #expect(
            VoucherCheck.evaluate(
                voucher, issuerLog: log, walletID: payee.walletID, trustedIssuers: [log.walletID],
                state: payee.state) == .policyRefusal(.balanceOverflow))
        // Another issuer's euros are another asset, with a balance of their own: they can be credited.
        let other = try SoftwareSigner()
        let otherLog = try SoftwareWallet.issuerLog(of: other)
        let fresh = try VoucherTests.voucher(otherLog, key: other.publicKey, to: payee.walletID, 1, id: 5)
            .sign(with: other)
        #expect(
            VoucherCheck.evaluate(
                fresh, issuerLog: otherLog, walletID: payee.walletID, trustedIssuers: [otherLog.walletID],
                state: payee.state
            ).isAccept)
    }
}
