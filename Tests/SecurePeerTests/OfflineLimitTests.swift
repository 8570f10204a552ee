import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureTestSupport
import SecureWallet
import Testing

/// The payee's offline limit per payer on real wallets (SoftHSM, SQLCipher) through the shared PeerActions:
/// credits within the window and approvals not paid yet count against it, in sessions and by file.
@Suite("Offline limits per payer", .serialized)
struct OfflineLimitTests {
    @Test func creditsAndUnpaidApprovalsCountAgainstTheLimitInSessionsAndByFile() throws {
        let (alice, bob, alicePerson, bobPerson) = try PeerSessionTests.pair("limit", funds: "20.00 EUR")
        let payer = alice.wallet!.walletID
        try bob.wallet!.token.unlock(pin: try bobPerson.readPIN(), confirmFinalTry: false)
        try bob.wallet!.setOfflineLimit(OfflineLimit(amount: try MoneyText.parse("6.00 EUR"), window: .day))
        bob.wallet!.token.lock()
        #expect(try bob.wallet!.offlineCredits(from: payer).allowance(.eur).remaining == MoneyText.parse("6.00 EUR"))

        func pay(_ amount: String) throws -> (PaymentIntent, (payer: PeerOutcome?, payee: PeerOutcome?)) {
            let intent = try PeerSessionTests.intent(alice, amount)
            return (
                intent,
                try PeerHarness.run(
                    payer: alice, payerRole: .pay(intent), payerPerson: alicePerson,
                    payerRanging: PeerSessionTests.near, payee: bob, payeeRole: .receive(request: nil),
                    payeePerson: bobPerson, payeeRanging: PeerSessionTests.nearToo)
            )
        }
        let (firstIntent, first) = try pay("4.00 EUR")
        guard case .paid = first.payer else { Issue.record("first payment: \(String(describing: first))"); return }
        // 4.00 + 3.00 > 6.00: refused before `ready`, nothing debited.
        let (_, second) = try pay("3.00 EUR")
        #expect(second.payer == .failed(.offlineLimitExceeded, byPeer: true), "\(String(describing: second))")
        #expect(PeerSessionTests.euros(alice) == "16.00 EUR" && PeerSessionTests.euros(bob) == "4.00 EUR")

        // By file: 3.00 is refused by policy, with nothing recorded; 2.00 fits.
        try alice.wallet!.token.unlock(pin: try alicePerson.readPIN(), confirmFinalTry: false)
        let over = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("3.00 EUR"), category: "x")
        let fits = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("2.00 EUR"), category: "x")
        alice.wallet!.token.lock()
        try bob.wallet!.token.unlock(pin: try bobPerson.readPIN(), confirmFinalTry: false)
        let policy = TransferPolicy(acceptsWithoutProximity: true)
        let size = bob.wallet!.size
        guard
            case .policyRefusal(.offlineLimitExceeded(let allowance)) = try bob.wallet!.accept(
                over, payerLog: alice.wallet!.keyLog, policy: policy)
        else { Issue.record("3.00 EUR by file was not refused by policy"); return }
        #expect(allowance.credited == (try MoneyText.parse("4.00 EUR")) && allowance.payer == payer)
        #expect(bob.wallet!.size == size, "a policy refusal records nothing")

        // An approval the payer has not paid yet (a ready record no transfer consumed) counts too: with one of
        // 4.00 outstanding, even 2.00 is refused.
        let stored = try #require(try bob.wallet!.ledger.readyRecord(offerID: firstIntent.offerID, payer: payer))
        try bob.wallet!.ledger.storeReadyRecord(offerID: .random(), payer: payer, record: stored.record)
        #expect(try bob.wallet!.offlineCredits(from: payer).allowance(.eur).credited == MoneyText.parse("8.00 EUR"))
        guard
            case .policyRefusal(.offlineLimitExceeded) = try bob.wallet!.accept(
                fits, payerLog: alice.wallet!.keyLog, policy: policy)
        else { Issue.record("2.00 EUR with 4.00 approved was not refused"); return }

        // Raised by a signed settings entry, the same file is credited.
        try bob.wallet!.setOfflineLimit(OfflineLimit(amount: try MoneyText.parse("12.00 EUR"), window: .day))
        guard case .recorded = try bob.wallet!.accept(fits, payerLog: alice.wallet!.keyLog, policy: policy) else {
            Issue.record("2.00 EUR under a 12.00 EUR limit was not credited"); return
        }
        #expect(PeerSessionTests.euros(bob) == "6.00 EUR")
        bob.wallet!.token.lock()
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }
}
