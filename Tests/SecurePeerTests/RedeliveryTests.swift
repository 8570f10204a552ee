import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecureStore
@_spi(Simulation) @testable import SecureWallet

/// The same statement gets the same answer every time, even across a crash.
@Suite("Re-deliveries", .serialized)
struct RedeliveryTests {
    struct Crash: Error {}

    /// The payee refuses a transfer (its balance is full), and its process dies after the refused entry is
    /// committed but before the signed refusal is kept. The re-delivered transfer was then answered "already
    /// recorded", with no refusal, and the payer stayed pending. It is refused again, with a refusal signed
    /// then and kept, and every later re-delivery gets that same refusal.
    @Test func aRefusalLostToACrashIsSignedWhenTheTransferComesAgain() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded("lost-a", "20.00 EUR", issuer: issuer)
        let bob = try WalletOperationTests.payee("lost-b", trusting: issuer)
        let largest = try issuer.issuer.voucher(
            try Money(minorUnits: Int64.max, currency: .eur), to: bob.wallet!.walletID)
        guard case .recorded = try bob.wallet!.deposit(largest) else { Issue.record("full deposit"); return }
        let transfer = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        let policy = TransferPolicy(acceptsWithoutProximity: true)
        bob.wallet!.faultHooks = WalletFaultHooks(afterCommit: { throw Crash() })
        #expect(throws: Crash.self) {
            _ = try bob.wallet!.accept(transfer, payerLog: alice.wallet!.keyLog, policy: policy)
        }
        try bob.reopen()
        let reference = transfer.statementReference
        #expect(try bob.wallet!.ledger.refusal(signer: reference.signer, id: reference.id) == nil, "lost")
        guard
            case .refused(.balanceOverflow, let entry, let refusal?) = try bob.wallet!.accept(
                transfer, payerLog: alice.wallet!.keyLog, policy: policy)
        else {
            Issue.record("the re-delivered transfer was not refused again"); return
        }
        #expect(entry.kind == .statementRefused)
        guard
            case .refused(.balanceOverflow, let again, let same?) = try bob.wallet!.accept(
                transfer, payerLog: alice.wallet!.keyLog, policy: policy)
        else {
            Issue.record("the third delivery was not refused"); return
        }
        #expect(again == entry && same == refusal, "every later delivery gets the refusal kept")
        guard case .recorded = try alice.wallet!.applyRefusal(refusal, payeeLog: bob.wallet!.keyLog) else {
            Issue.record("the payer could not reverse"); return
        }
        #expect(alice.wallet!.euros == (try MoneyText.parse("20.00 EUR")))
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }
}
