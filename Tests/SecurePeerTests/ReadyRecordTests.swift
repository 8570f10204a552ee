import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureTestSupport
import SecureWallet
import Testing

/// Attack 8 of issue 12: one approval must pay out once, and one offer is answered by one payer. A ready
/// record is keyed by (offer id, payer wallet id), inserted once and never replaced, and consumed by the
/// credit in its own transaction.
@Suite("Ready records: one approval pays once", .serialized)
struct ReadyRecordTests {
    /// A payer that signs a second debit for an offer already paid and sends it as a retry gets a signed
    /// refusal (`offerAlreadyCredited`) and reverses it; the payee credits once and keeps the second
    /// transfer as a refused statement. The genuine retry of the first transfer still gets its receipt.
    @Test func aSecondTransferForOneOfferIsRefusedAndTheFirstRetryStillGetsItsReceipt() throws {
        let (alice, bob, alicePerson, bobPerson) = try PeerSessionTests.pair("once", funds: "20.00 EUR")
        let first = try PeerHarness.run(
            payer: alice, payerRole: .pay(try PeerSessionTests.intent(alice, "4.00 EUR")), payerPerson: alicePerson,
            payerRanging: PeerSessionTests.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: PeerSessionTests.nearToo)
        guard case .paid = first.payer else { Issue.record("first payment: \(String(describing: first))"); return }
        let debit = try #require(try alice.wallet!.ledger.entries(kind: .paymentOut).last)
        let order = try #require(try TransferOrder.decode(debit.payload))
        let stored = try #require(try alice.wallet!.ledger.outgoingMessage(transferID: order.transferID))
        guard case .transfer(let paid)? = try PeerMessage.decode(stored) else { Issue.record("stored message"); return }

        // The hostile payer's second debit: a new transfer id, everything else as approved.
        try alice.wallet!.token.unlock(pin: try alicePerson.readPIN(), confirmFinalTry: false)
        let second = try TransferOrder(
            transferID: .random(), payerWalletID: order.payerWalletID, payerKey: order.payerKey,
            payeeWalletID: order.payeeWalletID, amount: order.amount, proximity: order.proximity,
            channelBinding: order.channelBinding)
        let (_, transfer) = try alice.wallet!.commitDebit(
            order: second, draft: second.debitDraft(category: "food"),
            message: {
                PeerMessage.transfer(
                    TransferMessage(offerID: paid.offerID, transfer: $0, spatialProof: paid.spatialProof)
                ).encoded
            })
        alice.wallet!.token.lock()
        let message = TransferMessage(offerID: paid.offerID, transfer: transfer, spatialProof: paid.spatialProof)
        let again = try PeerHarness.run(
            payer: alice, payerRole: .retry(message), payerPerson: alicePerson, payerRanging: PeerSessionTests.near,
            payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: PeerSessionTests.nearToo)
        #expect(again.payer == .reversed(.offerAlreadyCredited), "\(String(describing: again))")
        #expect(try bob.wallet!.ledger.entries(kind: .paymentIn).count == 1, "credited once")
        #expect(try bob.wallet!.ledger.entries(kind: .statementRefused).count == 1, "the second transfer is kept")
        #expect(PeerSessionTests.euros(alice) == "16.00 EUR" && PeerSessionTests.euros(bob) == "4.00 EUR")

        // The genuine transfer, retried, is answered with its receipt again; nothing more moves.
        let retried = try PeerHarness.run(
            payer: alice, payerRole: .retry(paid), payerPerson: alicePerson, payerRanging: PeerSessionTests.near,
            payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: PeerSessionTests.nearToo)
        guard case .paid = retried.payer else { Issue.record("genuine retry: \(String(describing: retried))"); return }
        #expect(PeerSessionTests.euros(alice) == "16.00 EUR" && PeerSessionTests.euros(bob) == "4.00 EUR")
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }

    /// One offer (one request id) is answered by one payer: a second payer's record is refused and never
    /// replaces the first, which that payer's retry still finds; the second payer finds nothing.
    @Test func aSecondPayerCannotReplaceTheFirstPayersRecord() throws {
        let bob = try TestWallet("rr-store")
        let offerID = OfferID.random()
        let first = WalletID.random(), second = WalletID.random()
        try bob.wallet!.ledger.storeReadyRecord(offerID: offerID, payer: first, record: [1, 2, 3])
        #expect(throws: StoreError(.readyRecordExists, "")) {
            try bob.wallet!.ledger.storeReadyRecord(offerID: offerID, payer: second, record: [4, 5, 6])
        }
        #expect(throws: StoreError(.readyRecordExists, "")) {
            try bob.wallet!.ledger.storeReadyRecord(offerID: offerID, payer: first, record: [7])
        }
        #expect(try bob.wallet!.ledger.readyRecord(offerID: offerID, payer: first)?.record == [1, 2, 3])
        #expect(try bob.wallet!.ledger.readyRecord(offerID: offerID, payer: first)?.consumedBy == nil)
        #expect(try bob.wallet!.ledger.readyRecord(offerID: offerID, payer: second) == nil)
    }
}
