import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Receipts, refusals and measurements say when they were signed, so a retired key's late statement is
/// refused and kept as fork evidence of type 5.
@Suite struct KeyDateTests {
    /// A payee whose key 0 was retired by rotation 1 at ledger position 7.
    struct RotatedPayee {
        let keys: KeyChain
        let log: KeyEventLog

        init() throws {
            keys = try KeyChain(count: 3)
            var log = try KeyEventLog(inception: try keys.inception())
            try log.append(try keys.rotation(1, after: log.current, position: 7))
            self.log = log
        }

        /// Key `sequence`'s date at `size`.
        func date(_ sequence: Int, size: UInt64) throws -> KeyDate {
            let event = log.events[sequence].event
            return try KeyDate(keySequence: event.sequence, keyEventPosition: event.ledgerPosition, ledgerSize: size)
        }

        func key(_ sequence: Int) -> P256.PublicKey { keys.signers[sequence].publicKey }
    }

    static func provenAfterRoundTrip(_ evidence: ForkEvidence?) throws -> Bool {
        let evidence = try #require(evidence)
        let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
        #expect(decoded == evidence)
        sweepEncoding(evidence.encoded, "retired-key statement evidence", decode: ForkEvidence.decode)
        return decoded.verify().isProven
    }

    @Test func aReceiptByARetiredKeyAfterItsRetirementIsRefusedAsEvidence() throws {
        let payee = try RotatedPayee()
        var payer = try TestWallet(seed: 51)
        try payer.deposit(1000, issuer: try SoftwareSigner())
        let transfer = try payer.pay(payee.log.walletID, units: 100)
        func receipt(_ sequence: Int, size: UInt64, credit: UInt64) throws -> SignedReceipt {
            try Receipt(
                for: transfer, payeeKey: payee.key(sequence), keyDate: try payee.date(sequence, size: size),
                creditPosition: credit
            ).sign(with: payee.keys.signers[sequence])
        }
        let inForce = try receipt(0, size: 7, credit: 6)
        #expect(ReceiptCheck.evaluate(inForce, of: transfer, payeeLog: payee.log) == .confirms)
        #expect(
            ReceiptCheck.evaluate(try receipt(1, size: 9, credit: 8), of: transfer, payeeLog: payee.log)
                == .confirms)
        let late = try receipt(0, size: 9, credit: 8)
        guard
            case .dropped(.retiredSigner(let evidence)) = ReceiptCheck.evaluate(
                late, of: transfer, payeeLog: payee.log)
        else {
            Issue.record("a receipt by a retired key after its retirement was not refused"); return
        }
        #expect(try Self.provenAfterRoundTrip(evidence))
        // No date puts a key before its own event.
        #expect(throws: FormatError.self) { try payee.date(1, size: 7) }
        // A key the log does not name at the date's sequence confirms nothing.
        let misdated = try Receipt(
            for: transfer, payeeKey: payee.key(1), keyDate: try payee.date(0, size: 7),
            creditPosition: 6
        ).sign(with: payee.keys.signers[1])
        #expect(
            ReceiptCheck.evaluate(misdated, of: transfer, payeeLog: payee.log)
                == .dropped(.unknownSigner))
        // A receipt dated before its own credit does not decode.
        let bad = Receipt(
            transferID: late.payload.transferID, transferDigest: late.payload.transferDigest,
            payerWalletID: late.payload.payerWalletID, payeeWalletID: late.payload.payeeWalletID,
            payeeKey: payee.key(0), keyDate: try payee.date(0, size: 3), amount: late.payload.amount,
            checkpointDigest: late.payload.checkpointDigest, checkpointSize: late.payload.checkpointSize,
            creditPosition: 5)
        #expect(throws: FormatError.self) { try Receipt.decode(bad.encoded) }
        // The retired key's statements up to the rotation are no evidence.
        #expect(payee.log.retiredKeyEvidence(.receipt(inForce)) == nil)
    }

    @Test func aRefusalByARetiredKeyAfterItsRetirementIsDroppedAsEvidence() throws {
        let payee = try RotatedPayee()
        var payer = try TestWallet(seed: 52)
        try payer.deposit(1000, issuer: try SoftwareSigner())
        let transfer = try payer.pay(payee.log.walletID, units: 100)
        let late = try Refusal(
            refusing: transfer, payeeKey: payee.key(0), keyDate: try payee.date(0, size: 8),
            reason: .debitMismatch
        ).sign(with: payee.keys.signers[0])
        let verdict = RefusalCheck.evaluate(
            late, of: transfer, payeeLog: payee.log, state: payer.state)
        guard case .drop(.retiredSigner(let evidence)) = verdict else { Issue.record("\(verdict)"); return }
        #expect(try Self.provenAfterRoundTrip(evidence))
        let current = try Refusal(
            refusing: transfer, payeeKey: payee.key(1), keyDate: try payee.date(1, size: 8),
            reason: .debitMismatch
        ).sign(with: payee.keys.signers[1])
        guard
            case .accept = RefusalCheck.evaluate(
                current, of: transfer, payeeLog: payee.log, state: payer.state)
        else {
            Issue.record("the key in force could not refuse"); return
        }
    }

    /// An issuer's voucher carries its key date (the issuer's size with its mint entry). By its issuer's log,
    /// a retired key's voucher dated after the rotation is dropped as fork evidence of type 5 (statement kind
    /// 4); one dated before it shows the key in force, and only a deposit that refuses retired keys (what
    /// `secure deposit` does once its holder knows the rotation) refuses it: `ledger verify` replays without.
    @Test func aVoucherByARetiredIssuerKey() throws {
        let keys = try KeyChain(count: 3)
        var log = try KeyEventLog(
            inception: try SignedKeyEvent(
                .inception(
                    signingKey: keys.signers[0].publicKey, nextKey: keys.signers[1].publicKey,
                    agreementKey: keys.agreement.publicKey, issuer: true), signer: keys.signers[0]))
        try log.append(try keys.rotation(1, after: log.current, position: 7))
        let holder: WalletID = Fixture.id(0x40)
        func voucher(_ sequence: Int, size: UInt64) throws -> SignedVoucher {
            let event = log.events[sequence].event
            return try Voucher(
                issuerWalletID: log.walletID, issuerKey: event.signingKey,
                keyDate: try KeyDate(
                    keySequence: event.sequence, keyEventPosition: event.ledgerPosition, ledgerSize: size),
                recipientWalletID: holder, amount: try Money(minorUnits: 100, currency: .eur), voucherID: .random()
            ).sign(with: keys.signers[sequence])
        }
        func verdict(_ voucher: SignedVoucher, refusing: Bool) -> StatementVerdict {
            VoucherCheck.evaluate(
                voucher, issuerLog: log, walletID: holder, trustedIssuers: [log.walletID], state: LedgerState(),
                refusingRetiredKeys: refusing)
        }
        let before = try voucher(0, size: 7)
        guard case .accept = verdict(before, refusing: false) else {
            Issue.record("a recorded voucher of the key then in force does not replay"); return
        }
        guard case .refuse(.retiredIssuerKey, let record) = verdict(before, refusing: true) else {
            Issue.record("a retired key's voucher was not refused at deposit"); return
        }
        #expect(record.kind == .statementRefused && record.payload == before.encoded)
        let current = try voucher(1, size: 8)
        for refusing in [false, true] {
            guard case .accept = verdict(current, refusing: refusing) else {
                Issue.record("the key in force did not mint (refusing retired keys: \(refusing))"); return
            }
        }
        let late = try voucher(0, size: 8)
        guard case .drop(.retiredSigner(let evidence)) = verdict(late, refusing: true) else {
            Issue.record("a voucher by a retired key after its retirement was not dropped as evidence"); return
        }
        #expect(try Self.provenAfterRoundTrip(evidence))
        #expect(log.retiredKeyEvidence(.voucher(before)) == nil, "no evidence up to the rotation")
        // A wallet's (not an issuer's) log proves no voucher, whatever its keys.
        let walletLog = try KeyEventLog(inception: try keys.inception())
        #expect(VoucherCheck.signerFailure(try voucher(0, size: 2), issuerLog: walletLog) == .unknownSigner)
    }

    @Test func aMeasurementCarriesItsSignersHelloDate() throws {
        let payee = try RotatedPayee()
        let payer = try TestWallet(seed: 53)
        let context = MeasurementContext(
            nonce: Fixture.id(0x4E), offerID: Fixture.id(0x0F), payerKey: payer.key,
            payeeKey: payee.key(0), payerDate: payer.keyDate, payeeDate: try payee.date(0, size: 9),
            channelBinding: Fixture.bytes(0xCB, 32))
        var ranging = SimulatedRanging(seed: 1, distanceMillimetres: 500)
        let summary = try RangingSummary(samples: ranging.samples(count: 20))
        let late = try context.measurement(role: .payee, summary: summary, source: .external).sign(
            with: payee.keys.signers[0])
        #expect(try SignedMeasurement.decode(late.encoded) == late)
        #expect(SpatialProof.check(late, role: .payee, context: context, policy: RangingPolicy()) == nil)
        #expect(try Self.provenAfterRoundTrip(payee.log.retiredKeyEvidence(.measurement(late))))
        // A measurement dated otherwise than its signer's hello checkpoint is refused.
        let other = MeasurementContext(
            nonce: context.nonce, offerID: context.offerID, payerKey: payer.key, payeeKey: payee.key(0),
            payerDate: payer.keyDate, payeeDate: try payee.date(0, size: 7),
            channelBinding: context.channelBinding)
        #expect(SpatialProof.check(late, role: .payee, context: other, policy: RangingPolicy()) == .wrongDate(.payee))
    }
}
