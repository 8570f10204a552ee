import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureTestSupport
import SecureWallet
import Testing

/// Found by the attack on issue 12's first fixes (finding F-C): a payee's retired key, still on its token,
/// signed a refusal dated before its rotation, and the payer reversed a payment the payee had credited. A
/// payee answers a transfer after receiving it, so never with a key older than the one the payer knew to be
/// the payee's when it paid.
@Suite("Answers signed by a payee's retired key", .serialized)
struct RetiredKeyAnswerTests {
    @Test func aBackdatedRefusalOrReceiptByARetiredKeyIsRefused() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded("retired-a", "50.00 EUR", issuer: issuer)
        let bob = try WalletOperationTests.payee("retired-b", trusting: issuer)
        let oldSigner = try bob.wallet!.signer
        let oldKey = bob.wallet!.signingKey, oldDate = bob.wallet!.keyDate
        _ = try RotationTests.rotate(bob)
        #expect(bob.wallet!.signingKey != oldKey)
        let envelope = try alice.wallet!.spend(
            to: WalletCard(log: bob.wallet!.keyLog), amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        let (transfer, credited) = try bob.wallet!.accept(
            envelope, policy: TransferPolicy(acceptsWithoutProximity: true))
        guard case .recorded(let credit) = credited else { Issue.record("credit: \(credited)"); return }

        let refusal = try Refusal(refusing: transfer, payeeKey: oldKey, keyDate: oldDate, reason: .debitMismatch)
            .sign(with: oldSigner)
        guard case .dropped = try alice.wallet!.applyRefusal(refusal, payeeLog: bob.wallet!.keyLog) else {
            Issue.record("a backdated refusal by the payee's retired key reversed a credited payment"); return
        }
        #expect(try WalletOperationTests.balance(alice) == "45.00 EUR")
        let receipt = try Receipt(
            for: transfer, payeeKey: oldKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: credit.position + 1),
            creditPosition: credit.position
        ).sign(with: oldSigner)
        #expect(throws: WalletError.self) { try alice.wallet!.confirm(receipt, payeeLog: bob.wallet!.keyLog) }
        // The payee's genuine receipt, by its current key, confirms it.
        let genuine = try bob.wallet!.receipt(for: transfer, creditPosition: credit.position)
        guard case .recorded = try alice.wallet!.confirm(genuine, payeeLog: bob.wallet!.keyLog) else {
            Issue.record("the genuine receipt did not confirm"); return
        }
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
    }
}
