import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore
@testable import SecureWallet

/// An issuer's wallet on real tokens and files: it mints vouchers as liabilities, takes back only its own
/// asset, and holds no money; wallets take its asset only once they trust its card.
@Suite("Issuer wallets", .serialized)
struct IssuerWalletTests {
    static func euros(_ text: String) throws -> Money { try MoneyText.parse(text + " EUR") }

    @Test func mintDepositPayAndRedeem() throws {
        let issuer = try TestWallet("iss", isIssuer: true)
        let alice = try TestWallet("iss-a"), bob = try TestWallet("iss-b")
        let issuerCard = WalletCard(log: issuer.wallet!.keyLog)
        let asset = Asset(issuer: issuer.wallet!.walletID, currency: .eur)
        #expect(issuer.wallet!.isIssuer && issuerCard.log.isIssuer && !alice.wallet!.isIssuer)
        try alice.wallet!.trust(issuer: issuerCard)
        #expect(try alice.wallet!.trustedIssuers() == [asset.issuer])

        // A voucher is a mint entry in the issuer's ledger: the outstanding total, never spendable money.
        let voucher = try issuer.wallet!.mint(to: WalletCard(log: alice.wallet!.keyLog), amount: Self.euros("30.00"))
        #expect(issuer.wallet!.state.balance(asset) == (try Self.euros("30.00")))
        #expect(try issuer.wallet!.ledger.entries(kind: .mint).count == 1)
        guard case .recorded = try alice.wallet!.deposit(voucher) else { Issue.record("deposit"); return }
        guard case .duplicate = try alice.wallet!.deposit(voucher) else { Issue.record("again"); return }
        #expect(alice.wallet!.state.balance(asset) == (try Self.euros("30.00")))

        // Bob does not trust the issuer yet: a policy refusal that records nothing, accepted once he does.
        let toBob = try alice.wallet!.spend(
            to: WalletCard(log: bob.wallet!.keyLog), amount: try alice.wallet!.asset("5.00 EUR"), category: "x")
        let lenient = TransferPolicy(acceptsWithoutProximity: true)
        let size = bob.wallet!.size
        guard case .policyRefusal(.untrustedAsset) = try bob.wallet!.accept(toBob, policy: lenient).1 else {
            Issue.record("an untrusted asset was not refused"); return
        }
        #expect(bob.wallet!.size == size)
        try bob.wallet!.trust(issuer: issuerCard)
        guard case .recorded = try bob.wallet!.accept(toBob, policy: lenient).1 else { Issue.record("credit"); return }
        #expect(bob.wallet!.state.balance(asset) == (try Self.euros("5.00")))

        // By default an issuer takes no redemption offline (its offline limit is zero: nothing offline tells
        // money a holder received from money a software key signed for itself).
        let early = try bob.wallet!.spend(
            to: issuerCard,
            amount: try bob.wallet!.asset(for: Self.euros("1.00"), issuer: nil, payee: asset.issuer), category: "")
        guard case .policyRefusal(.offlineLimitExceeded) = try issuer.wallet!.accept(early, policy: lenient).1 else {
            Issue.record("an issuer took a redemption with its default limit"); return
        }
        try issuer.wallet!.setOfflineLimit(OfflineLimit(amount: try Self.euros("100.00"), window: .day))
        // Paying the issuer pays its own asset back: a redemption, and the outstanding total shrinks.
        let back = try bob.wallet!.spend(
            to: issuerCard,
            amount: try bob.wallet!.asset(for: Self.euros("2.00"), issuer: nil, payee: asset.issuer), category: "")
        guard case .recorded(let redemption) = try issuer.wallet!.accept(back, policy: lenient).1 else {
            Issue.record("redemption"); return
        }
        #expect(redemption.kind == .redemption)
        #expect(issuer.wallet!.state.balance(asset) == (try Self.euros("28.00")))
        // The refused 1.00 is paid later, within the limit, as the same file.
        guard case .recorded = try issuer.wallet!.accept(early, policy: lenient).1 else {
            Issue.record("the early redemption"); return
        }

        // An issuer holds no other money: it trusts nobody and deposits nothing.
        #expect(throws: WalletError.self) { try issuer.wallet!.trust(issuer: issuerCard) }
        #expect(throws: WalletError.self) { try issuer.wallet!.deposit(voucher) }
        for test in [issuer, alice, bob] {
            let report = try test.wallet!.verifyLedger()
            #expect(report.isValid, "\(report.problems)")
        }
    }

    @Test func payingTheIssuerInASessionRedeemsAndItsRequestNamesItsOwnAsset() throws {
        let issuer = try TestWallet("iss-peer", isIssuer: true)
        let alice = try TestWallet("iss-peer-a")
        let issuerCard = WalletCard(log: issuer.wallet!.keyLog)
        let asset = Asset(issuer: issuer.wallet!.walletID, currency: .eur)
        try alice.wallet!.trust(issuer: issuerCard)
        let voucher = try issuer.wallet!.mint(to: WalletCard(log: alice.wallet!.keyLog), amount: Self.euros("10.00"))
        guard case .recorded = try alice.wallet!.deposit(voucher) else { Issue.record("deposit"); return }
        try issuer.wallet!.setOfflineLimit(OfflineLimit(amount: try Self.euros("5.00"), window: .day))
        for test in [issuer, alice] { test.wallet!.token.lock() }
        let alicePerson = ScriptedPerson(pinPath: alice.main.pinPath)
        let issuerPerson = ScriptedPerson(pinPath: issuer.main.pinPath)
        let paid = try PeerHarness.run(
            payer: alice, payerRole: .pay(try PeerSessionTests.intent(alice, "3.00 EUR")), payerPerson: alicePerson,
            payerRanging: PeerSessionTests.near, payee: issuer, payeeRole: .receive(request: nil),
            payeePerson: issuerPerson, payeeRanging: PeerSessionTests.nearToo)
        guard case .paid = paid.payer else { Issue.record("\(String(describing: paid))"); return }
        #expect(try issuer.wallet!.ledger.entries(kind: .redemption).count == 1)
        #expect(issuer.wallet!.state.balance(asset) == (try Self.euros("7.00")))
        #expect(alice.wallet!.state.balance(asset) == (try Self.euros("7.00")))
        // The issuer requests its own asset, and the payer answers with it.
        let request = try PaymentRequest(
            requestID: .random(), amount: try issuer.wallet!.requestAsset(for: Self.euros("1.50"), issuer: nil),
            note: "fee")
        #expect(request.amount.asset == asset)
        let answered = try PeerHarness.run(
            payer: alice, payerRole: .answerRequest, payerPerson: alicePerson, payerRanging: PeerSessionTests.near,
            payee: issuer, payeeRole: .receive(request: request), payeePerson: issuerPerson,
            payeeRanging: PeerSessionTests.nearToo)
        guard case .paid = answered.payer else { Issue.record("\(String(describing: answered))"); return }
        #expect(issuer.wallet!.state.balance(asset) == (try Self.euros("5.50")))
        for test in [issuer, alice] {
            // Recording the verification's outcome on the token takes the PIN.
            try test.wallet!.token.unlock(pin: try test.main.pin(), confirmFinalTry: false)
            let report = try test.wallet!.verifyLedger()
            #expect(report.isValid, "\(report.problems)")
        }
    }

    @Test func untrustStopsNewDepositsAndKeepsTheMoneyHeld() throws {
        let issuer = try TestWallet("unt", isIssuer: true)
        let alice = try TestWallet("unt-a"), bob = try TestWallet("unt-b")
        let issuerCard = WalletCard(log: issuer.wallet!.keyLog)
        try alice.wallet!.trust(issuer: issuerCard)
        try bob.wallet!.trust(issuer: issuerCard)
        let aliceCard = WalletCard(log: alice.wallet!.keyLog)
        guard
            case .recorded = try alice.wallet!.deposit(
                try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("9.00")))
        else { Issue.record("deposit"); return }
        #expect(try alice.wallet!.untrust(issuer: issuer.wallet!.walletID) != nil)
        #expect(try alice.wallet!.untrust(issuer: issuer.wallet!.walletID) == nil, "untrusted already")
        #expect(try alice.wallet!.trustedIssuers().isEmpty)
        let late = try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("1.00"))
        let size = alice.wallet!.size
        guard case .policyRefusal(.untrustedIssuer) = try alice.wallet!.deposit(late) else {
            Issue.record("a voucher of an untrusted issuer was deposited"); return
        }
        #expect(alice.wallet!.size == size)
        // Money already held stays spendable.
        let transfer = try alice.wallet!.spend(
            to: WalletCard(log: bob.wallet!.keyLog), amount: try alice.wallet!.asset("4.00 EUR"), category: "x")
        guard case .recorded = try bob.wallet!.accept(transfer, policy: TransferPolicy(acceptsWithoutProximity: true)).1
        else { Issue.record("credit"); return }
        // The deposit was made while the issuer was trusted: `ledger verify` checks it against the trust entries
        // in force at its position, not against today's set, so untrusting an issuer does not lock the wallet.
        let report = try alice.wallet!.verifyLedger()
        #expect(report.isValid, "\(report.problems)")
        #expect(alice.wallet!.lockReason == nil)
    }

    /// The owner appends a deposit of an issuer it did not trust yet (`appendDraft` takes any draft the ledger
    /// rules allow), then trusts the issuer: today's set holds the issuer, the set in force at the deposit
    /// did not, so `ledger verify` names the deposit.
    @Test func aDepositBeforeItsIssuerWasTrustedIsNamed() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try TestWallet("early-a")
        let (voucher, _) = try issuer.voucher("3.00 EUR", to: alice.wallet!).voucher()
        let payload = voucher.payload
        try alice.wallet!.appendDraft(
            EntryDraft(
                kind: .deposit, amount: payload.assetAmount, counterparty: payload.issuerWalletID.bytes,
                statement: voucher.statementReference, payload: voucher.encoded))
        try alice.wallet!.trust(issuer: issuer.card)
        let problems = try alice.wallet!.verifyLedger().problems
        #expect(problems.count == 1 && problems[0].hasPrefix("entry 1 (deposit)"), "\(problems)")
        #expect(problems.first?.contains("untrustedIssuer") == true, "\(problems)")
    }

    /// An issuer rotates with `keys rotate`'s machinery and mints on with its new key: a holder takes the new
    /// voucher without trusting again, and follows the issuer's log from it. Once the holder holds a log that
    /// shows the rotation, the retired key mints nothing: a voucher it signs dated before the rotation (a
    /// backdated one, or an honest one delivered late) is refused and kept in a `statementRefused` entry, one
    /// dated after it is dropped and kept as fork evidence (type 5). A voucher recorded before stays recorded.
    @Test func anIssuerRotatesAndItsRetiredKeyMintsNothingNew() throws {
        let issuer = try TestWallet("rot-iss", isIssuer: true)
        let alice = try TestWallet("rot-iss-a"), bob = try TestWallet("rot-iss-b")
        let issuerID = issuer.wallet!.walletID
        let asset = Asset(issuer: issuerID, currency: .eur)
        let oldCard = WalletCard(log: issuer.wallet!.keyLog)
        try alice.wallet!.trust(issuer: oldCard)
        try bob.wallet!.trust(issuer: oldCard)
        let aliceCard = WalletCard(log: alice.wallet!.keyLog)
        let old = try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("10.00"))
        let late = try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("1.00"))
        let oldSigner = try issuer.wallet!.signer
        let oldKey = issuer.wallet!.signingKey
        guard case .recorded = try alice.wallet!.deposit(old) else { Issue.record("old deposit"); return }

        let rotation = try RotationTests.rotate(issuer)
        #expect(rotation.events.map(\.event.sequence) == [1, 2] && issuer.wallet!.signingKey != oldKey)
        #expect(issuer.wallet!.isIssuer && issuer.wallet!.keyLog.isIssuer)
        let new = try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("5.00"))
        let (newVoucher, newLog) = try new.voucher()
        #expect(
            newVoucher.payload.issuerKey == issuer.wallet!.signingKey && newVoucher.payload.keyDate.keySequence == 2)
        #expect(newLog.head == issuer.wallet!.keyLog.head)
        // The new key's voucher is taken without a new trust entry, and its log is followed from it.
        let trustEntries = try alice.wallet!.ledger.entries(kind: .settings).count
        guard case .recorded = try alice.wallet!.deposit(new) else { Issue.record("new deposit"); return }
        #expect(try alice.wallet!.ledger.entries(kind: .settings).count == trustEntries)
        #expect(try alice.wallet!.peerKeyLog(of: issuerID)?.head == issuer.wallet!.keyLog.head)
        // Recorded before the holder learned of the rotation: still a duplicate.
        guard case .duplicate = try alice.wallet!.deposit(old) else { Issue.record("old again"); return }

        // An honest voucher of the retired key delivered after the holder learned of the rotation is refused,
        // and kept; delivered again it gets the same answer.
        guard case .refused(.retiredIssuerKey, let kept, _) = try alice.wallet!.deposit(late) else {
            Issue.record("a retired key's voucher was not refused"); return
        }
        let lateBytes = try late.voucher().0.encoded
        #expect(kept.kind == .statementRefused && kept.payload == lateBytes)
        guard case .refused(.retiredIssuerKey, let again, _) = try alice.wallet!.deposit(late), again == kept else {
            Issue.record("the refusal changed on re-delivery"); return
        }
        // A thief with the retired key backdates a voucher to before the rotation: refused, kept, no money.
        let backdated = try Voucher(
            issuerWalletID: issuerID, issuerKey: oldKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 2),
            recipientWalletID: alice.wallet!.walletID, amount: Self.euros("900.00"), voucherID: .random()
        ).sign(with: oldSigner)
        guard case .refused(.retiredIssuerKey, _, _) = try alice.wallet!.deposit(backdated, issuerLog: oldCard.log)
        else { Issue.record("a backdated voucher of the retired key was not refused"); return }
        // Dated after the rotation it proves the key signed after its retirement: dropped, fork evidence kept.
        let evidenceBefore = try alice.wallet!.ledger.evidence().count
        let afterRotation = try Voucher(
            issuerWalletID: issuerID, issuerKey: oldKey,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: issuer.wallet!.size + 1),
            recipientWalletID: alice.wallet!.walletID, amount: Self.euros("900.00"), voucherID: .random()
        ).sign(with: oldSigner)
        guard
            case .dropped(.retiredSigner(let evidence)) = try alice.wallet!.deposit(
                afterRotation, issuerLog: oldCard.log)
        else { Issue.record("a voucher signed after the key's retirement was not dropped as evidence"); return }
        #expect(evidence.kind.typeByte == 5 && evidence.verify().isProven)
        #expect(try alice.wallet!.ledger.evidence().count == evidenceBefore + 1)
        let decoded = try ForkEvidence.decode(evidence.encoded)
        #expect(decoded == evidence, "a voucher in type 5 evidence survives its encoding")
        #expect(alice.wallet!.state.balance(asset) == (try Self.euros("15.00")))

        // Bob has not seen the rotation: the issuer's newer card moves his trust along, with no new entry.
        let bobSettings = try bob.wallet!.ledger.entries(kind: .settings).count
        #expect(try bob.wallet!.trust(issuer: WalletCard(log: issuer.wallet!.keyLog)) == nil)
        #expect(try bob.wallet!.ledger.entries(kind: .settings).count == bobSettings)
        #expect(try bob.wallet!.peerKeyLog(of: issuerID)?.head == issuer.wallet!.keyLog.head)
        // The old card is older, not wrong: trusting it again changes nothing.
        #expect(try bob.wallet!.trust(issuer: oldCard) == nil)
        for test in [issuer, alice, bob] {
            let report = try test.wallet!.verifyLedger()
            #expect(report.isValid, "\(report.problems)")
        }
    }

    /// A holder can learn of the issuer's rotation in a session with the issuer (paying it back): the log
    /// it follows from then on is the same, so a voucher of the retired key it had not recorded is refused.
    @Test func aSessionWithTheRotatedIssuerTeachesItsRotation() throws {
        let issuer = try TestWallet("rot-ses", isIssuer: true)
        let alice = try TestWallet("rot-ses-a")
        try alice.wallet!.trust(issuer: WalletCard(log: issuer.wallet!.keyLog))
        let aliceCard = WalletCard(log: alice.wallet!.keyLog)
        guard
            case .recorded = try alice.wallet!.deposit(
                try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("10.00")))
        else { Issue.record("deposit"); return }
        let late = try issuer.wallet!.mint(to: aliceCard, amount: Self.euros("1.00"))
        _ = try RotationTests.rotate(issuer)
        try issuer.wallet!.setOfflineLimit(OfflineLimit(amount: try Self.euros("5.00"), window: .day))
        for test in [issuer, alice] { test.wallet!.token.lock() }
        let paid = try PeerHarness.run(
            payer: alice, payerRole: .pay(try PeerSessionTests.intent(alice, "3.00 EUR")),
            payerPerson: ScriptedPerson(pinPath: alice.main.pinPath), payerRanging: PeerSessionTests.near,
            payee: issuer, payeeRole: .receive(request: nil), payeePerson: ScriptedPerson(pinPath: issuer.main.pinPath),
            payeeRanging: PeerSessionTests.nearToo)
        guard case .paid = paid.payer else { Issue.record("\(String(describing: paid))"); return }
        #expect(try alice.wallet!.peerKeyLog(of: issuer.wallet!.walletID)?.head == issuer.wallet!.keyLog.head)
        try alice.wallet!.token.unlock(pin: try alice.main.pin(), confirmFinalTry: false)
        guard case .refused(.retiredIssuerKey, _, _) = try alice.wallet!.deposit(late) else {
            Issue.record("a retired key's voucher was taken after a session showed the rotation"); return
        }
    }
}
