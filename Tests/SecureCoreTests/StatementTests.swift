import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Vouchers")
struct VoucherTests {
    /// A voucher of the issuer whose only key is `issuer` (log `log`), dated at the issuer's ledger `size`.
    static func voucher(
        _ log: KeyEventLog, key: P256.PublicKey, to recipient: WalletID, _ units: Int64, id: UInt8,
        size: UInt64 = 2
    ) throws -> Voucher {
        try Voucher(
            issuerWalletID: log.walletID, issuerKey: key,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: size), recipientWalletID: recipient,
            amount: Fixture.eur(units), voucherID: Fixture.id(id))
    }

    @Test("a deposit is credited once; re-delivery is a duplicate; another payload under its id a conflict")
    func depositOnce() throws {
        let issuer = try SoftwareSigner()
        let log = try SoftwareWallet.issuerLog(of: issuer)
        var wallet = try TestWallet(seed: 1)
        let voucher = try VoucherTests.voucher(log, key: issuer.publicKey, to: wallet.walletID, 5000, id: 7, size: 4)
            .sign(with: issuer)
        #expect(voucher.isSignatureValid && VoucherCheck.signerFailure(voucher, issuerLog: log) == nil)
        let check = { (wallet: TestWallet, voucher: SignedVoucher) in
            VoucherCheck.evaluate(
                voucher, issuerLog: log, walletID: wallet.walletID, trustedIssuers: [log.walletID],
                state: wallet.state)
        }
        guard case .accept(let draft) = check(wallet, voucher) else { Issue.record("not accepted"); return }
        #expect(draft.kind == .deposit && draft.counterparty == log.walletID.bytes)
        #expect(draft.amount == AssetAmount(issuer: log.walletID, money: Fixture.eur(5000)))
        #expect(draft.statement == voucher.statementReference)
        let entry = try wallet.carryOut(.accept(draft))!
        #expect(wallet.balance() == Fixture.eur(5000))
        #expect(wallet.state.balance(Asset(issuer: log.walletID, currency: .eur)) == Fixture.eur(5000))
        // A second signature over the same payload differs in bytes but is the same statement.
        let resigned = try voucher.payload.sign(with: issuer)
        #expect(resigned.signature != voucher.signature)
        #expect(check(wallet, resigned) == .duplicate(position: entry.position))
        // The same id with another amount is a conflict, recorded as evidence without moving money.
        let other = try VoucherTests.voucher(log, key: issuer.publicKey, to: wallet.walletID, 9000, id: 7, size: 5)
            .sign(with: issuer)
        guard case .conflict(let evidence) = check(wallet, other) else { Issue.record("no conflict"); return }
        #expect(evidence.kind == .conflictingStatement && evidence.payload == other.encoded)
        try wallet.carryOut(.conflict(evidence))
        #expect(wallet.balance() == Fixture.eur(5000))
    }

    @Test("forged, unproven, untrusted and misaddressed vouchers")
    func refusals() throws {
        let issuer = try SoftwareSigner()
        let log = try SoftwareWallet.issuerLog(of: issuer)
        let stranger = try SoftwareSigner()
        var wallet = try TestWallet(seed: 2)
        let voucher = try VoucherTests.voucher(log, key: issuer.publicKey, to: wallet.walletID, 100, id: 1)
        let trusted: Set = [log.walletID]
        func evaluate(_ voucher: SignedVoucher, _ log: KeyEventLog = log, trusted: Set<WalletID> = trusted)
            -> StatementVerdict
        {
            VoucherCheck.evaluate(
                voucher, issuerLog: log, walletID: wallet.walletID, trustedIssuers: trusted, state: wallet.state)
        }
        // Signed by someone else under the issuer's name: dropped.
        let forged = SignedVoucher(
            payload: voucher, signature: try stranger.sign(voucher.encoded, label: Voucher.signatureLabel))
        #expect(evaluate(forged) == .drop(.badSignature))
        // Validly signed by a key the issuer's log does not hold: the signer is unproven, nothing recorded.
        let strangerKey = try VoucherTests.voucher(log, key: stranger.publicKey, to: wallet.walletID, 100, id: 1)
            .sign(with: stranger)
        #expect(evaluate(strangerKey) == .drop(.unknownSigner))
        // Checked against another wallet's log, or the log of a wallet not incepted as an issuer: unproven.
        let signed = try voucher.sign(with: issuer)
        #expect(evaluate(signed, try SoftwareWallet.issuerLog(of: stranger)) == .drop(.unknownSigner))
        let ordinary = try KeyEventLog(
            inception: try SignedKeyEvent(
                KeyEvent.inception(
                    signingKey: issuer.publicKey, nextKey: issuer.publicKey, agreementKey: issuer.publicKey),
                signer: issuer))
        #expect(!ordinary.isIssuer && log.isIssuer)
        let unincepted = try VoucherTests.voucher(ordinary, key: issuer.publicKey, to: wallet.walletID, 100, id: 1)
            .sign(with: issuer)
        #expect(evaluate(unincepted, ordinary, trusted: [ordinary.walletID]) == .drop(.unknownSigner))
        // A checkpoint signature over the same bytes does not count: labels separate purposes.
        let relabelled = SignedVoucher(
            payload: voucher, signature: try issuer.sign(voucher.encoded, label: Checkpoint.signatureLabel))
        #expect(!relabelled.isSignatureValid)
        // Validly signed by an issuer this wallet does not trust: refused, nothing recorded.
        #expect(evaluate(signed, trusted: []) == .policyRefusal(.untrustedIssuer))
        // Addressed to another wallet: refused finally and recorded, so a re-delivery is a duplicate.
        let elsewhere = try VoucherTests.voucher(log, key: issuer.publicKey, to: Fixture.id(9), 100, id: 2)
            .sign(with: issuer)
        let verdict = evaluate(elsewhere)
        guard case .refuse(.wrongRecipient, let record) = verdict else { Issue.record("\(verdict)"); return }
        #expect(record.kind == .statementRefused)
        let entry = try wallet.carryOut(verdict)!
        #expect(evaluate(elsewhere) == .duplicate(position: entry.position))
        #expect(wallet.balance() == Fixture.eur(0))
    }

    @Test("voucher encodings: truncations are short, extensions refused, top-bit flips refused or another value")
    func encoding() throws {
        let issuer = try SoftwareSigner()
        let signed = try Voucher(
            issuerWalletID: Fixture.id(5), issuerKey: issuer.publicKey,
            keyDate: try KeyDate(keySequence: .max, keyEventPosition: .max - 1, ledgerSize: .max),
            recipientWalletID: Fixture.id(3), amount: Fixture.eur(1), voucherID: Fixture.id(4)
        ).sign(with: issuer)
        #expect(signed.payload.encoded.count == 182)
        #expect(try SignedVoucher.decode(signed.encoded) == signed)
        sweepEncoding(signed.payload.encoded, "voucher", decode: Voucher.decode)
        sweepEncoding(signed.encoded, "signed voucher", decode: SignedVoucher.decode)
        #expect(throws: FormatError.self) {
            _ = try Voucher(
                issuerWalletID: Fixture.id(5), issuerKey: issuer.publicKey,
                keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 1),
                recipientWalletID: Fixture.id(3), amount: Fixture.eur(0), voucherID: Fixture.id(4))
        }
        // Version 1 (an issuer named by a bare key) is refused.
        var old = signed.payload.encoded
        old[0] = 1
        #expect(throws: FormatError(.unsupportedVersion, "")) { try Voucher.decode(old) }
    }
}

@Suite("Transfers, receipts and refusals")
struct TransferTests {
    /// A payer with 100.00 EUR and a payee, both empty otherwise.
    static func wallets() throws -> (payer: TestWallet, payee: TestWallet) {
        var payer = try TestWallet(seed: 10)
        try payer.deposit(10_000, issuer: SoftwareSigner())
        return (payer, try TestWallet(seed: 20))
    }

    /// `--no-proximity`, trusting the issuers of the assets `payer` holds.
    static func noProximity(trusting payer: TestWallet) -> TransferPolicy {
        TransferPolicy(trustedIssuers: payer.issuers, acceptsWithoutProximity: true)
    }

    @Test("a file transfer is credited once, marked without proximity, and confirmed by a receipt")
    func acceptOnce() throws {
        var (payer, payee) = try TransferTests.wallets()
        let transfer = try payer.pay(payee.walletID, units: 450)
        #expect(payer.balance() == Fixture.eur(9550))
        #expect(transfer.verify(against: payer.key))
        #expect(try SignedTransfer.decode(transfer.encoded) == transfer)
        // Without --no-proximity: refused by policy, nothing recorded.
        #expect(
            TransferCheck.evaluate(
                transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state, policy: .init())
                == .policyRefusal(.proximityRequired))
        // An asset whose issuer the payee does not trust: refused by policy, nothing recorded.
        #expect(
            TransferCheck.evaluate(
                transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
                policy: TransferPolicy(acceptsWithoutProximity: true)) == .policyRefusal(.untrustedAsset))
        let verdict = TransferCheck.evaluate(
            transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
            policy: TransferTests.noProximity(trusting: payer))
        guard case .accept(let draft) = verdict else { Issue.record("\(verdict)"); return }
        #expect(draft.kind == .paymentIn && draft.flags == .withoutProximity && draft.payload == transfer.encoded)
        #expect(draft.statement == transfer.statementReference && draft.counterparty == payer.walletID.bytes)
        let credit = try payee.carryOut(verdict)!
        #expect(payee.balance() == Fixture.eur(450))
        #expect(payee.issuers == payer.issuers && credit.amount == transfer.payload.order.amount)
        // accept(accept(L, T), T) = accept(L, T)
        #expect(
            TransferCheck.evaluate(
                transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
                policy: TransferTests.noProximity(trusting: payer)) == .duplicate(position: credit.position))
        let receipt = try Receipt(
            for: transfer, payeeKey: payee.key, keyDate: payee.keyDate, creditPosition: credit.position
        )
        .sign(with: payee.signer)
        #expect(receipt.confirms(transfer, payeeLog: payee.log))
        #expect(!receipt.confirms(transfer, payeeLog: payer.log))
        let other = try payer.pay(payee.walletID, units: 1)
        #expect(!receipt.confirms(other, payeeLog: payee.log))
        #expect(try SignedReceipt.decode(receipt.encoded) == receipt)
    }

    @Test("a validly signed transfer failing a check is refused finally, and the refusal reverses the debit")
    func refusalReverses() throws {
        var (payer, payee) = try TransferTests.wallets()
        // The payer signs an order for 4.50 but its debit leaf says 4.00: the leaf is from another order.
        let honest = try payer.order(to: payee.walletID, units: 400)
        let good = try payer.commit(honest)
        let lying = try TransferOrder(
            transferID: honest.transferID, payerWalletID: payer.walletID, payerKey: payer.key,
            payeeWalletID: payee.walletID, amount: payer.asset(Fixture.eur(450)), proximity: .none,
            channelBinding: [])
        let tampered = try Transfer(
            order: lying, checkpoint: good.payload.checkpoint, debitLeaf: good.payload.debitLeaf,
            inclusionProof: good.payload.inclusionProof
        ).sign(with: payer.signer)
        let verdict = TransferCheck.evaluate(
            tampered, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
            policy: TransferTests.noProximity(trusting: payer))
        guard case .refuse(.debitMismatch, let record) = verdict else { Issue.record("\(verdict)"); return }
        #expect(record.kind == .statementRefused && record.statement == tampered.statementReference)
        try payee.carryOut(verdict)
        #expect(payee.balance() == Fixture.eur(0))
        // The genuine transfer under the same id is now a conflict: kept as evidence, never credited.
        guard
            case .conflict = TransferCheck.evaluate(
                good, walletID: payee.walletID, payerLog: payer.log, state: payee.state,
                policy: TransferTests.noProximity(trusting: payer))
        else { Issue.record("no conflict"); return }

        // The payer holds the exact bytes it sent (here the genuine transfer was refused instead).
        var (payer2, payee2) = try TransferTests.wallets()
        let sent = try payer2.pay(payee2.walletID, units: 300)
        #expect(payer2.balance() == Fixture.eur(9700))
        // A bystander given the file neither credits nor refuses it: nothing is recorded or signed.
        let bystander = try TestWallet(seed: 30)
        let misdelivered = TransferCheck.evaluate(
            sent, walletID: bystander.walletID, payerLog: payer2.log, state: bystander.state,
            policy: TransferTests.noProximity(trusting: payer2))
        #expect(misdelivered == .policyRefusal(.notAddressedToThisWallet))
        // The real payee refuses for, say, a spatial proof mismatch; the payer reverses.
        let refusal = try Refusal(
            refusing: sent, payeeKey: payee2.key, keyDate: payee2.keyDate, reason: .spatialProofMismatch
        )
        .sign(with: payee2.signer)
        #expect(try SignedRefusal.decode(refusal.encoded) == refusal)
        // Checked against another wallet's log (the bystander's, or the payer's own), it proves nothing.
        #expect(
            RefusalCheck.evaluate(refusal, of: sent, payeeLog: bystander.log, state: payer2.state)
                == .drop(.unknownSigner))
        // The bystander's own signed refusal under the payee's wallet id is not the payee's.
        let byBystander = try Refusal(
            refusing: sent, payeeKey: bystander.key, keyDate: bystander.keyDate, reason: .debitMismatch
        ).sign(with: bystander.signer)
        #expect(
            RefusalCheck.evaluate(byBystander, of: sent, payeeLog: payee2.log, state: payer2.state)
                == .drop(.unknownSigner))
        let unrelated = try payer2.pay(payee2.walletID, units: 1)
        #expect(
            RefusalCheck.evaluate(refusal, of: unrelated, payeeLog: payee2.log, state: payer2.state)
                == .drop(.unrelated))
        let forged = SignedRefusal(
            payload: refusal.payload,
            signature: try payer2.signer.sign(refusal.payload.encoded, label: Refusal.signatureLabel))
        #expect(
            RefusalCheck.evaluate(forged, of: sent, payeeLog: payee2.log, state: payer2.state)
                == .drop(.badSignature))
        let reverse = RefusalCheck.evaluate(refusal, of: sent, payeeLog: payee2.log, state: payer2.state)
        guard case .accept(let reversal) = reverse else { Issue.record("\(reverse)"); return }
        #expect(reversal.kind == .reversal && reversal.amount == sent.payload.order.amount)
        #expect(reversal.amount?.money == Fixture.eur(300))
        let entry = try payer2.carryOut(reverse)!
        #expect(payer2.balance() == Fixture.eur(9999))
        // The refusal re-delivered reverses nothing more.
        #expect(
            RefusalCheck.evaluate(refusal, of: sent, payeeLog: payee2.log, state: payer2.state)
                == .duplicate(position: entry.position))
    }

    @Test("each check: signature, checkpoint, leaf, proof, spatial proof, channel binding")
    func checks() throws {
        var (payer, payee) = try TransferTests.wallets()
        let stranger = try SoftwareSigner()
        let lenient = TransferTests.noProximity(trusting: payer)
        func evaluate(_ transfer: SignedTransfer, _ policy: TransferPolicy = lenient) -> StatementVerdict {
            TransferCheck.evaluate(
                transfer, walletID: payee.walletID, payerLog: payer.log, state: payee.state, policy: policy)
        }
        func refusalReason(_ verdict: StatementVerdict) -> RefusalReason? {
            if case .refuse(let reason, _) = verdict { return reason }
            return nil
        }
        let good = try payer.pay(payee.walletID, units: 100)
        let parts = good.payload
        func resigned(checkpoint: SignedCheckpoint? = nil, leaf: [UInt8]? = nil, proof: [Digest32]? = nil) throws
            -> SignedTransfer
        {
            try Transfer(
                order: parts.order, checkpoint: checkpoint ?? parts.checkpoint, debitLeaf: leaf ?? parts.debitLeaf,
                inclusionProof: proof ?? parts.inclusionProof
            ).sign(with: payer.signer)
        }
        // Signed by anyone but the payer it names: dropped.
        let forged = SignedTransfer(
            payload: parts,
            signature: try stranger.sign(
                parts.encoded,
                label: Transfer.signatureLabel))
        #expect(evaluate(forged) == .drop(.badSignature))
        // A checkpoint signed by another key.
        let foreign = SignedCheckpoint(
            checkpoint: parts.checkpoint.checkpoint,
            signature: try stranger.sign(parts.checkpoint.checkpoint.encoded, label: Checkpoint.signatureLabel))
        // A checkpoint of another wallet is not the payer's: its signer is unproven, so nothing is recorded.
        #expect(evaluate(try resigned(checkpoint: foreign)) == .drop(.unknownSigner))
        // A leaf that is not an entry, or not this order's debit.
        #expect(refusalReason(evaluate(try resigned(leaf: [1, 2, 3]))) == .debitMismatch)
        #expect(refusalReason(evaluate(try resigned(leaf: payer.entries[1].encoded))) == .debitMismatch)
        // A proof that leads elsewhere, or a debit that is not the checkpoint's last entry.
        var badProof = parts.inclusionProof
        badProof[0] = badProof[0].flipping(byte: 0, mask: 1)
        #expect(refusalReason(evaluate(try resigned(proof: badProof))) == .inclusionProofInvalid)
        try payer.deposit(1, issuer: stranger)
        let later = try payer.checkpoint()
        let proof = payer.tree.inclusionProof(index: UInt64(payer.entries.count - 2))
        #expect(refusalReason(evaluate(try resigned(checkpoint: later, proof: proof))) == .inclusionProofInvalid)
        #expect(evaluate(good).isAccept)

        // A spatial proof: accepted when it is the one verified, refused finally when another.
        let spatial: Digest32 = Fixture.id(0x5A)
        let binding = Fixture.bytes(0xCB, 32)
        let near = try payer.pay(
            payee.walletID, units: 100, proximity: .spatialProof(digest: spatial),
            binding: binding)
        let strict = TransferPolicy(
            trustedIssuers: payer.issuers, verifiedSpatialProof: spatial, channelBinding: binding)
        guard case .accept(let draft) = evaluate(near, strict) else { Issue.record("not accepted"); return }
        #expect(draft.flags == [])
        #expect(
            refusalReason(evaluate(near, TransferPolicy(verifiedSpatialProof: Fixture.id(1))))
                == .spatialProofMismatch)
        // Unverifiable (read from a file) or on another channel: refused by policy only.
        #expect(evaluate(near, TransferPolicy()) == .policyRefusal(.proximityUnverified))
        #expect(
            evaluate(near, TransferPolicy(verifiedSpatialProof: spatial, channelBinding: Fixture.bytes(1, 32)))
                == .policyRefusal(.channelBindingMismatch))
        guard case .accept(let fileDraft) = evaluate(near, lenient) else { Issue.record("not accepted"); return }
        #expect(fileDraft.flags == .withoutProximity)
    }

    @Test(
        "transfer, receipt, refusal encodings: truncations short, extensions refused, top-bit flips refused or differ")
    func encodings() throws {
        var (payer, payee) = try TransferTests.wallets()
        let transfer = try payer.pay(
            payee.walletID, units: 100, proximity: .spatialProof(digest: Fixture.id(1)),
            binding: Fixture.bytes(2, 32))
        sweepEncoding(transfer.payload.order.encoded, "order", decode: TransferOrder.decode)
        sweepEncoding(transfer.payload.encoded, "transfer", decode: Transfer.decode)
        sweepEncoding(transfer.encoded, "signed transfer", decode: SignedTransfer.decode)
        let receipt = try Receipt(
            for: transfer, payeeKey: payee.key,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 10), creditPosition: 9
        ).sign(with: payee.signer)
        sweepEncoding(receipt.encoded, "signed receipt", decode: SignedReceipt.decode)
        let refusal = try Refusal(
            refusing: transfer, payeeKey: payee.key, keyDate: payee.keyDate, reason: .readyRecordMismatch
        )
        .sign(with: payee.signer)
        sweepEncoding(refusal.encoded, "signed refusal", decode: SignedRefusal.decode)
        #expect(transfer.encoded.count < LedgerEntry.payloadByteCountMax)
    }
}

extension StatementVerdict {
    var isAccept: Bool {
        if case .accept = self { return true }
        return false
    }
}
