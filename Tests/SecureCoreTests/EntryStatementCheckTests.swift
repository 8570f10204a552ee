import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

/// `EntryStatementCheck`: the statements inside honest entries hold; forged, untrusted, misdirected or
/// unprovable ones are each named as a problem. The wallets are `SoftwareWallet`s run through the real
/// statement checks; the forgeries are entries a hostile owner appends to its own ledger.
@Suite("Statement checks of recorded entries")
struct EntryStatementCheckTests {
    let euros = try! Money(minorUnits: 4_000, currency: .eur)

    /// Alice (funded by a trusted issuer) pays Bob, who credits it.
    struct Payment {
        var alice: SoftwareWallet
        var bob: SoftwareWallet
        let issuer: SoftwareSigner
        let transfer: SignedTransfer
        let credit: LedgerEntry

        /// The issuer's key-event log: one inception as an issuer, its only key `issuer`.
        var issuerLog: KeyEventLog { try! SoftwareWallet.issuerLog(of: issuer) }
        /// The issuer's wallet id: the asset's issuer.
        var issuerID: WalletID { issuerLog.walletID }
    }

    func payment() throws -> Payment {
        var alice = try SoftwareWallet(seed: 1), bob = try SoftwareWallet(seed: 2)
        let issuer = try SoftwareSigner()
        try alice.deposit(try Money(minorUnits: 10_000, currency: .eur), issuer: issuer)
        let transfer = try alice.pay(bob.walletID, amount: euros)
        let issuerID = try SoftwareWallet.issuerLog(of: issuer).walletID
        let verdict = TransferCheck.evaluate(
            transfer, walletID: bob.walletID, payerLog: alice.log, state: bob.state,
            policy: TransferPolicy(trustedIssuers: [issuerID], acceptsWithoutProximity: true))
        let credit = try #require(try bob.carryOut(verdict))
        return Payment(alice: alice, bob: bob, issuer: issuer, transfer: transfer, credit: credit)
    }

    func sources(
        _ wallet: SoftwareWallet, trusted: Set<WalletID> = [], logs: [KeyEventLog] = [],
        sent: [SignedTransfer] = []
    ) -> StatementSources {
        StatementSources(
            walletID: wallet.walletID, trustedIssuers: trusted,
            peerLog: { id in logs.first { $0.walletID == id } },
            sentTransfer: { id in sent.first { $0.payload.order.transferID == id } })
    }

    func problems(_ wallet: SoftwareWallet, _ sources: StatementSources) -> [String] {
        wallet.entries.compactMap {
            EntryStatementCheck.problem($0, encoded: $0.encoded, ownLog: wallet.log, sources: sources)
        }
    }

    @Test func honestDepositPaymentAndCreditHold() throws {
        let p = try payment()
        let aliceSources = sources(
            p.alice, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog], sent: [p.transfer])
        #expect(problems(p.alice, aliceSources) == [])
        #expect(problems(p.bob, sources(p.bob, trusted: [p.issuerID], logs: [p.alice.log])) == [])
    }

    @Test func aDepositFromAnIssuerNotTrustedIsNamed() throws {
        let p = try payment()
        let found = problems(
            p.alice, sources(p.alice, trusted: [], logs: [p.bob.log, p.issuerLog], sent: [p.transfer]))
        #expect(found.count == 1 && found[0].hasPrefix("entry 1 (deposit)"), "\(found)")
        #expect(found[0].contains("untrustedIssuer"), "\(found)")
    }

    @Test func aDepositWithoutItsIssuersLogIsNamed() throws {
        let p = try payment()
        let found = problems(p.alice, sources(p.alice, trusted: [p.issuerID], logs: [p.bob.log], sent: [p.transfer]))
        #expect(found.count == 1 && found[0].hasPrefix("entry 1 (deposit)"), "\(found)")
        #expect(found[0].contains("no key-event log of its issuer"), "\(found)")
    }

    @Test func aCreditOfAnAssetNotTrustedIsNamed() throws {
        let p = try payment()
        let found = problems(p.bob, sources(p.bob, trusted: [], logs: [p.alice.log]))
        #expect(found.count == 1 && found[0].contains("(paymentIn)"), "\(found)")
        #expect(found[0].contains("untrustedAsset"), "\(found)")
    }

    @Test func moneyFromNothingIsNamed() throws {
        var forger = try SoftwareWallet(seed: 3)
        try forger.fundFromNothing(euros)
        let found = problems(forger, sources(forger, trusted: [forger.walletID]))
        #expect(found == ["entry 1 (deposit): its payload is not a signed voucher"])
    }

    @Test func aCreditWithoutThePayersLogOrFromAForgedPayerIsNamed() throws {
        let p = try payment()
        let missing = problems(p.bob, sources(p.bob))
        #expect(missing.count == 1 && missing[0].contains("no key-event log of its payer"), "\(missing)")
        // A forger claiming Alice's id pays Bob; Bob's ledger is made to hold the credit anyway.
        var forger = try SoftwareWallet(seed: 4, claiming: p.alice.walletID)
        try forger.fundFromNothing(euros)
        let forged = try forger.pay(p.bob.walletID, amount: euros)
        var bob = p.bob
        try bob.append(
            EntryDraft(
                kind: .paymentIn, flags: .withoutProximity, amount: forged.payload.order.amount,
                counterparty: p.alice.walletID.bytes,
                statement: forged.statementReference, payload: forged.encoded))
        let found = problems(bob, sources(bob, trusted: [p.issuerID], logs: [p.alice.log]))
        #expect(found.count == 1 && found[0].contains("(paymentIn)") && found[0].contains("unknownSigner"), "\(found)")
    }

    @Test func aReversalNeedsThePayeesOwnRefusal() throws {
        let p = try payment()
        var honest = p.alice
        let refusal = try p.bob.refusal(of: p.transfer, reason: .debitMismatch)
        try honest.carryOut(RefusalCheck.evaluate(refusal, of: p.transfer, payeeLog: p.bob.log, state: honest.state))
        let aliceSources = sources(
            honest, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog], sent: [p.transfer])
        #expect(problems(honest, aliceSources) == [])
        // A refusal by a third wallet's key, naming Bob, appended by Alice herself (attack 3).
        let third = try SoftwareWallet(seed: 5)
        let forged = try third.refusal(of: p.transfer, reason: .wrongRecipient)
        var alice = p.alice
        try alice.append(
            EntryDraft(
                kind: .reversal, amount: p.transfer.payload.order.amount, counterparty: p.bob.walletID.bytes,
                statement: forged.statementReference,
                payload: forged.encoded))
        let found = problems(
            alice, sources(alice, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog], sent: [p.transfer]))
        #expect(found.count == 1 && found[0].contains("(reversal)"), "\(found)")
    }

    @Test func aConfirmationNeedsThePayeesReceipt() throws {
        let p = try payment()
        let receipt = try Receipt(
            for: p.transfer, payeeKey: p.bob.key, keyDate: p.bob.keyDate, creditPosition: p.credit.position
        ).sign(with: p.bob.signer)
        var alice = p.alice
        try alice.carryOut(ReceiptCheck.confirmation(receipt, state: alice.state))
        let good = sources(alice, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog], sent: [p.transfer])
        #expect(problems(alice, good) == [])
        // Without Bob's log, or with another wallet's log under Bob's id, the receipt proves nothing.
        let noLog = problems(alice, sources(alice, trusted: [p.issuerID], logs: [p.issuerLog], sent: [p.transfer]))
        #expect(noLog.count == 1 && noLog[0].contains("(confirmation)") && noLog[0].contains("payee"), "\(noLog)")
    }

    @Test func aPaymentOutNeedsItsSignedTransfer() throws {
        let p = try payment()
        let noTransfer = problems(
            p.alice, sources(p.alice, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog]))
        #expect(noTransfer.count == 1 && noTransfer[0].contains("(paymentOut)"), "\(noTransfer)")
        // Another signed transfer under the same id (another amount) is not this debit's.
        var other = try SoftwareWallet(seed: 1)
        try other.deposit(euros, issuer: p.issuer)
        let wrong = try other.commit(
            try TransferOrder(
                transferID: p.transfer.payload.order.transferID, payerWalletID: other.walletID, payerKey: other.key,
                payeeWalletID: p.bob.walletID, amount: other.asset(try Money(minorUnits: 1, currency: .eur)),
                proximity: .none,
                channelBinding: []))
        let mismatched = problems(
            p.alice, sources(p.alice, trusted: [p.issuerID], logs: [p.bob.log, p.issuerLog], sent: [wrong]))
        #expect(mismatched.count == 1 && mismatched[0].contains("(paymentOut)"), "\(mismatched)")
    }

    /// `audit verify` runs the same checks over a bundle's entries with the sources the bundle carries.
    @Test func anAuditBundleChecksTheSameStatements() throws {
        let p = try payment()
        let checkpoint = try p.alice.checkpoint()
        let proven = p.alice.entries.map {
            AuditBundle.ProvenEntry(leaf: $0.encoded, proof: p.alice.tree.inclusionProof(index: $0.position))
        }
        var bundle = AuditBundle(
            walletID: p.alice.walletID, keyEvents: p.alice.log.events, keyEventEntries: [proven[0]], from: 0,
            entries: proven, rangeCheckpoint: checkpoint, latest: checkpoint, consistencyProof: [])
        func statementProblems(trusted: Set<WalletID>) -> [String] {
            bundle.statementContext = AuditBundle.StatementContext(
                trustedIssuers: trusted,
                peerKeyEvents: [p.bob.walletID: p.bob.log.events, p.issuerID: p.issuerLog.events],
                sentTransfers: [p.transfer.payload.order.transferID: p.transfer])
            return bundle.verify().filter { $0.contains("): ") && $0.hasPrefix("entry ") }
        }
        #expect(statementProblems(trusted: [p.issuerID]) == [])
        let untrusted = statementProblems(trusted: [])
        #expect(untrusted.count == 1 && untrusted[0].hasPrefix("entry 1 (deposit)"), "\(untrusted)")
    }
}
