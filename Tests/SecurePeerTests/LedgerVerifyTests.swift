import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore
@testable import SecureWallet

/// `Wallet.verifyLedger` (what `secure ledger verify` runs) on real wallets: a real SQLCipher file on
/// SoftHSM tokens, edited by someone holding the database key but not the PIN.
@Suite("ledger verify: statements, rows and the verification lock", .serialized)
struct LedgerVerifyTests {
    typealias Issuer = WalletOperationTests.Issuer

    /// Alice, funded by a trusted issuer, pays Bob by file, and Bob credits it.
    static func paid(_ name: String) throws -> (alice: TestWallet, bob: TestWallet) {
        let issuer = try Issuer()
        let alice = try WalletOperationTests.funded(name + "-a", "20.00 EUR", issuer: issuer)
        let bob = try WalletOperationTests.payee(name + "-b", trusting: issuer)
        let transfer = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        let policy = TransferPolicy(acceptsWithoutProximity: true)
        guard case .recorded = try bob.wallet!.accept(transfer, payerLog: alice.wallet!.keyLog, policy: policy) else {
            throw WalletError(.refused, "the credit was not recorded")
        }
        return (alice, bob)
    }

    /// A payee without the payer's key-event log cannot prove its credit: verification names it, and the
    /// wallet stays locked across opens until the log is back and a verification succeeds.
    @Test func aCreditWhosePayerLogIsGoneFailsAndLocksUntilItVerifies() throws {
        let (alice, bob) = try Self.paid("lv1")
        let report = try bob.wallet!.verifyLedger()
        #expect(report.isValid, "\(report.problems)")
        let payer = alice.wallet!.walletID
        let events = try #require(try bob.wallet!.ledger.peerKeyEventLog(wallet: payer)).events
        try bob.wallet!.ledger.database.execute("DELETE FROM peer_key_events")
        let failed = try bob.wallet!.verifyLedger()
        #expect(failed.problems.count == 1, "\(failed.problems)")
        #expect(failed.problems.first?.contains("(paymentIn): no key-event log of its payer") == true)
        guard case .verificationFailed = try bob.reopen().lockReason else {
            Issue.record("a failed verification must lock the wallet at the next open"); return
        }
        #expect(throws: WalletError.self) { try bob.setBudget("food", "3.00 EUR") }
        #expect(throws: WalletError.self, "receipts and measurements are signed outside appends") {
            _ = try bob.wallet!.signer
        }
        try bob.wallet!.ledger.storePeerKeyEvents(wallet: payer, events: events)
        #expect(try bob.reopen().lockReason != nil, "putting the rows back does not lift the lock by itself")
        #expect(try bob.wallet!.verifyLedger().isValid)
        #expect(bob.wallet!.lockReason == nil)
        #expect(try bob.reopen().lockReason == nil)
        try bob.setBudget("food", "3.00 EUR")
    }

    /// The payer's side: a deposit whose issuer's key-event log is gone (`peer_key_events`), and a payment
    /// out whose signed transfer (`outgoing`) is gone, are each named; the missing `outgoing` row also changes
    /// the index the latest checkpoint commits to (D).
    @Test func aDepositWithoutItsIssuersLogAndAPaymentOutWithoutItsTransferAreNamed() throws {
        let (alice, _) = try Self.paid("lv2")
        #expect(try alice.wallet!.verifyLedger().isValid)
        try alice.wallet!.ledger.database.execute("DELETE FROM meta WHERE name = 'trusted-issuers'")
        #expect(try alice.wallet!.verifyLedger().isValid, "the trusted set is not a meta row")
        try alice.wallet!.ledger.database.execute("DELETE FROM peer_key_events")
        try alice.wallet!.ledger.database.execute("DELETE FROM outgoing")
        let problems = try alice.wallet!.verifyLedger().problems
        #expect(problems.contains { $0.contains("index tables") }, "\(problems)")
        #expect(
            problems.contains { $0.contains("(deposit)") && $0.contains("no key-event log of its issuer") },
            "\(problems)")
        #expect(problems.contains { $0.contains("(paymentOut): no signed transfer") }, "\(problems)")
    }
}
