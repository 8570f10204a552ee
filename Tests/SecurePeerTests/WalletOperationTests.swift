import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureStore
@testable import SecureWallet

/// Money moving through the real wallet steps, on SoftHSM tokens and SQLCipher files.
@Suite("Wallet operations", .serialized)
struct WalletOperationTests {
    /// An issuer whose key is on its own token: a one-event issuer log (`TestIssuer`) and its vouchers.
    final class Issuer {
        let fresh: TestTokens.Fresh
        let session: TokenSession
        let signer: TokenSigner
        var issuer: TestIssuer

        init() throws {
            fresh = try TestTokens.fresh("issuer")
            session = try fresh.session()
            signer = try TokenSigner(
                session: session, keyURI: try session.generateKey(label: "issuer", usage: .sign).uri)
            issuer = try TestIssuer(signer: signer)
        }

        /// The card wallets trust.
        var card: WalletCard { issuer.card }
        /// The issuer's wallet id: the asset's issuer.
        var walletID: WalletID { issuer.walletID }

        /// A voucher for `wallet` in its envelope (with this issuer's log).
        func voucher(_ amount: String, to wallet: Wallet, id: VoucherID = .random()) throws -> Envelope {
            try issuer.voucher(try MoneyText.parse(amount), to: wallet.walletID, id: id)
        }

        /// The signed voucher alone.
        func signedVoucher(_ amount: String, to wallet: Wallet, id: VoucherID = .random()) throws -> SignedVoucher {
            try voucher(amount, to: wallet, id: id).voucher().0
        }
    }

    static func funded(_ name: String, _ amount: String, issuer: Issuer) throws -> TestWallet {
        let test = try payee(name, trusting: issuer)
        guard case .recorded = try test.wallet!.deposit(try issuer.voucher(amount, to: test.wallet!)) else {
            throw WalletError(.refused, "deposit failed")
        }
        return test
    }

    /// A wallet that trusts `issuer`, so it takes that issuer's asset.
    static func payee(_ name: String, trusting issuer: Issuer) throws -> TestWallet {
        let test = try TestWallet(name)
        try test.wallet!.trust(issuer: issuer.card)
        return test
    }

    static func balance(_ test: TestWallet) throws -> String {
        MoneyText.format(test.wallet!.euros)
    }

    @Test func depositIsIdempotentAndChecksIssuerAndRecipient() throws {
        let issuer = try Issuer()
        let alice = try Self.funded("dep-a", "50.00 EUR", issuer: issuer)
        let bob = try TestWallet("dep-b")
        let voucher = try issuer.voucher("10.00 EUR", to: alice.wallet!)
        guard case .recorded = try alice.wallet!.deposit(voucher) else { Issue.record("first deposit"); return }
        guard case .duplicate = try alice.wallet!.deposit(voucher) else { Issue.record("second deposit"); return }
        #expect(alice.wallet!.state.balance(Asset(issuer: issuer.walletID, currency: .eur)).description == "60.00 EUR")
        #expect(try Self.balance(alice) == "60.00 EUR")
        // Untrusted: nothing recorded, so it can be deposited after trusting.
        let sizeBefore = bob.wallet!.size
        guard case .policyRefusal(.untrustedIssuer) = try bob.wallet!.deposit(voucher) else {
            Issue.record("untrusted"); return
        }
        #expect(bob.wallet!.size == sizeBefore)
        try bob.wallet!.trust(issuer: issuer.card)
        #expect(try bob.wallet!.trustedIssuers() == [issuer.walletID])
        #expect(try bob.wallet!.trust(issuer: issuer.card) == nil, "trusting again appends nothing")
        guard case .refused(.wrongRecipient, _, _) = try bob.wallet!.deposit(voucher) else {
            Issue.record("wrong recipient"); return
        }
        // The same voucher id with another payload is a conflict: kept, no money.
        let reissued = try issuer.voucher("99.00 EUR", to: alice.wallet!, id: try voucher.voucher().0.payload.voucherID)
        guard case .conflict = try alice.wallet!.deposit(reissued) else { Issue.record("conflict"); return }
        #expect(try Self.balance(alice) == "60.00 EUR")
        // A forged signature records nothing.
        let forged = SignedVoucher(
            payload: try issuer.signedVoucher("5.00 EUR", to: alice.wallet!).payload,
            signature: try voucher.voucher().0.signature)
        let before = alice.wallet!.size
        guard case .dropped(.badSignature) = try alice.wallet!.deposit(forged, issuerLog: issuer.issuer.log) else {
            Issue.record("forged"); return
        }
        #expect(alice.wallet!.size == before)
        // A voucher signed by a key the issuer's log does not hold: unproven, nothing recorded.
        let stranger = try SoftwareSigner()
        let payload = try issuer.signedVoucher("5.00 EUR", to: alice.wallet!).payload
        let impostor = try Voucher(
            issuerWalletID: payload.issuerWalletID, issuerKey: stranger.publicKey, keyDate: payload.keyDate,
            recipientWalletID: payload.recipientWalletID, amount: payload.amount, voucherID: payload.voucherID
        ).sign(with: stranger)
        guard case .dropped(.unknownSigner) = try alice.wallet!.deposit(impostor, issuerLog: issuer.issuer.log) else {
            Issue.record("impostor"); return
        }
        #expect(alice.wallet!.size == before)
    }

    @Test func spendAcceptIsIdempotentAndReceiptConfirms() throws {
        let issuer = try Issuer()
        let alice = try Self.funded("pay-a", "20.00 EUR", issuer: issuer)
        let bob = try Self.payee("pay-b", trusting: issuer)
        let transfer = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("20.00 EUR"), category: "food")
        #expect(try Self.balance(alice) == "0.00 EUR", "a debit equal to the balance succeeds")
        #expect(try alice.wallet!.pendingTransfers().count == 1)
        guard
            case .policyRefusal(.proximityRequired) = try bob.wallet!.accept(
                transfer, payerLog: alice.wallet!.keyLog, policy: TransferPolicy())
        else {
            Issue.record("no-proximity policy"); return
        }
        let policy = TransferPolicy(acceptsWithoutProximity: true)
        guard
            case .recorded(let credit) = try bob.wallet!.accept(
                transfer, payerLog: alice.wallet!.keyLog, policy: policy)
        else {
            Issue.record("accept"); return
        }
        for _ in 0..<3 {
            guard
                case .duplicate(let again) = try bob.wallet!.accept(
                    transfer, payerLog: alice.wallet!.keyLog, policy: policy)
            else {
                Issue.record("re-accept"); return
            }
            #expect(again == credit)
        }
        #expect(try Self.balance(bob) == "20.00 EUR")
        let receipt = try Receipt(
            for: transfer, payeeKey: bob.wallet!.signingKey, keyDate: bob.wallet!.keyDate,
            creditPosition: credit.position
        ).sign(with: try bob.wallet!.signer)
        try alice.wallet!.confirm(receipt, payeeLog: bob.wallet!.keyLog)
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
        // Both ledgers verify, and the payee kept the payer's checkpoint.
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
        #expect(
            try bob.wallet!.ledger.latestPeerCheckpoint(wallet: alice.wallet!.walletID)?.size
                == transfer.payload.checkpoint.checkpoint.size)
    }

    @Test func refusalsBeforeTheDebitChangeNothing() throws {
        let issuer = try Issuer()
        let alice = try Self.funded("refuse-a", "10.00 EUR", issuer: issuer)
        let bob = try Self.payee("refuse-b", trusting: issuer)
        let budget = try Budget(
            category: "fun", limit: try MoneyText.parse("5.00 EUR"), window: .day, isHardCap: true,
            timeZoneIdentifier: "UTC")
        try alice.wallet!.appendDraft(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "fun", statement: nil,
                payload: BudgetChange.set(budget).payload))
        let size = alice.wallet!.size, state = alice.wallet!.state
        #expect(throws: Wallet.SpendRefusal.self) {
            try alice.wallet!.spend(
                to: bob.wallet!.walletID, amount: try alice.wallet!.asset("10.01 EUR"), category: "misc")
        }
        #expect(throws: Wallet.SpendRefusal.self) {
            try alice.wallet!.spend(
                to: bob.wallet!.walletID, amount: try alice.wallet!.asset("6.00 EUR"), category: "fun",
                overrideBudget: true
            )
        }
        #expect(alice.wallet!.size == size && alice.wallet!.state == state)
        // 4.00 of 5.00 is exactly 80%: OK; 0.01 more is an alert, still allowed.
        #expect(
            try alice.wallet!.checkSpend(
                amount: try alice.wallet!.asset("4.00 EUR"), category: "fun", overrideBudget: false) == .ok)
        if case .alert = try alice.wallet!.checkSpend(
            amount: try alice.wallet!.asset("4.01 EUR"), category: "fun", overrideBudget: false)
        {
        } else {
            Issue.record("alert above 80%")
        }
    }

    @Test func refusedTransferIsReversedByThePayer() throws {
        let issuer = try Issuer()
        let alice = try Self.funded("rev-a", "30.00 EUR", issuer: issuer)
        let bob = try Self.payee("rev-b", trusting: issuer)
        let good = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("7.00 EUR"), category: "food")
        // The payer's wallet signs a transfer whose inclusion proof is wrong: validly signed, failing a check.
        let bad = try Transfer(
            order: good.payload.order, checkpoint: good.payload.checkpoint, debitLeaf: good.payload.debitLeaf,
            inclusionProof: [.zero]
        ).sign(with: try alice.wallet!.signer)
        let outcome = try bob.wallet!.accept(
            bad, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        guard case .refused(.inclusionProofInvalid, _, let refusal?) = outcome else {
            Issue.record("refusal: \(outcome)"); return
        }
        #expect(try Self.balance(bob) == "0.00 EUR")
        // Delivered again, it is answered with the same signed refusal and nothing new is recorded.
        let size = bob.wallet!.size
        guard
            case .refused(_, _, let again?) = try bob.wallet!.accept(
                bad, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        else {
            Issue.record("re-delivered refused transfer"); return
        }
        #expect(again == refusal && bob.wallet!.size == size)
        // The payer stored the good transfer; the refusal names the bad one, so it is unrelated to what was sent.
        guard case .dropped(.unrelated) = try alice.wallet!.applyRefusal(refusal, payeeLog: bob.wallet!.keyLog)
        else {
            Issue.record("unrelated refusal"); return
        }
        // A refusal of the transfer actually sent credits the debit back, once.
        let real = try Refusal(
            refusing: good, payeeKey: bob.wallet!.signingKey, keyDate: bob.wallet!.keyDate,
            reason: .inclusionProofInvalid
        ).sign(with: try bob.wallet!.signer)
        guard case .recorded = try alice.wallet!.applyRefusal(real, payeeLog: bob.wallet!.keyLog) else {
            Issue.record("reversal"); return
        }
        guard case .duplicate = try alice.wallet!.applyRefusal(real, payeeLog: bob.wallet!.keyLog) else {
            Issue.record("once"); return
        }
        #expect(try Self.balance(alice) == "30.00 EUR")
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
        // A refusal signed by someone other than the payee is dropped.
        let stranger = try TestWallet("rev-c")
        let fake = try Refusal(
            refusing: good, payeeKey: stranger.wallet!.signingKey, keyDate: stranger.wallet!.keyDate,
            reason: .debitMismatch
        ).sign(with: try stranger.wallet!.signer)
        guard case .dropped(.unknownSigner) = try alice.wallet!.applyRefusal(fake, payeeLog: bob.wallet!.keyLog)
        else {
            Issue.record("stranger's refusal"); return
        }
    }

    @Test func stateAfterReopenMatchesAndIdempotenceSurvivesIt() throws {
        let issuer = try Issuer()
        let alice = try Self.funded("reopen-a", "12.00 EUR", issuer: issuer)
        let bob = try Self.payee("reopen-b", trusting: issuer)
        let transfer = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("2.00 EUR"), category: "x")
        let policy = TransferPolicy(acceptsWithoutProximity: true)
        guard case .recorded = try bob.wallet!.accept(transfer, payerLog: alice.wallet!.keyLog, policy: policy) else {
            Issue.record("accept"); return
        }
        let stateBefore = try LedgerVerifier.verify(bob.wallet!.ledger, walletID: bob.wallet!.walletID).state
        try bob.reopen()
        #expect(bob.wallet!.state.balances == stateBefore.balances)
        // After reopening (no replay), the statement index still knows the transfer.
        guard case .duplicate = try bob.wallet!.accept(transfer, payerLog: alice.wallet!.keyLog, policy: policy) else {
            Issue.record("duplicate after reopen"); return
        }
        try alice.reopen()
        #expect(
            try alice.wallet!.pendingTransfers().map(\.transfer.payload.order.transferID) == [
                transfer.payload.order.transferID
            ])
    }
}

@Suite("Fork evidence from a restored payer", .serialized)
struct ForkEvidenceTests {
    @Test func aPayerRestoredFromAnOldCopyThatPaysAgainYieldsEvidence() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded("fork-a", "10.00 EUR", issuer: issuer)
        let bob = try WalletOperationTests.payee("fork-b", trusting: issuer)
        let anchor = TokenAnchor(session: alice.wallet!.token, walletID: alice.wallet!.walletID)
        let savedAnchor = try #require(try anchor.load())
        alice.close()
        let copy = TestTokens.layout.directory + "/fork-copy-\(UUID().uuidString)"
        try alice.copyFiles(to: copy)
        try alice.reopen()
        let first = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("10.00 EUR"), category: "x")
        guard
            case .recorded = try bob.wallet!.accept(
                first, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        else {
            Issue.record("first accept"); return
        }
        // The owner restores the old database and the old anchor (SoftHSM keeps it in files too) and pays again.
        alice.close()
        try alice.restoreFiles(from: copy, only: ["ledger.db", "ledger.db-wal", "ledger.db-shm"])
        try alice.reopen()
        try TokenAnchor(session: alice.wallet!.token, walletID: alice.wallet!.walletID).store(savedAnchor)
        try alice.reopen()
        #expect(alice.wallet!.lockReason == nil, "the owner's own restore is not detectable by the wallet itself")
        let second = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("6.00 EUR"), category: "x")
        _ = try bob.wallet!.accept(
            second, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        let evidence = bob.wallet!.lastEvidence
        #expect(!evidence.isEmpty, "the second transfer conflicts with the first")
        for item in evidence {
            #expect(item.verify().isProven && item.accused == alice.wallet!.walletID)
            #expect(item.log.walletID == alice.wallet!.walletID, "evidence v2 carries the payer's log")
            let decoded = try ForkEvidence.decode(item.encoded)
            #expect(decoded?.verify().isProven == true, "the kept encoding verifies offline")
        }
        #expect(try bob.wallet!.ledger.evidence().count == evidence.count)
        // Bob takes no more payments from Alice, and says which evidence bars her (types 1, 2 and 6 bar the
        // wallet by id); his ledger still verifies, bans included.
        let third = try alice.wallet!.spend(
            to: bob.wallet!.walletID, amount: try alice.wallet!.asset("1.00 EUR"), category: "x")
        let barred = try bob.wallet!.accept(
            third, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        guard case .policyRefusal(.payerBanned(let digest)) = barred else {
            Issue.record("a payer with proven evidence against it was not barred: \(barred)"); return
        }
        #expect(evidence.map { EvidenceDigest(of: $0.encoded) }.contains(digest), "the ban names its evidence")
        #expect(bob.wallet!.ledger.physicalProblems().isEmpty, "\(bob.wallet!.ledger.physicalProblems())")
    }
}
