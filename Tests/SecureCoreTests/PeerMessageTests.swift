import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Peer messages")
struct PeerMessageTests {
    /// One message of every type, with optional fields both present and absent somewhere.
    static func samples() throws -> [PeerMessage] {
        var payer = try TestWallet(seed: 1)
        try payer.deposit(10_000, issuer: SoftwareSigner())
        let payee = try TestWallet(seed: 2)
        let context = SpatialTests.context(payer, payee)
        let mine = try SpatialTests.measure(payer, .payer, context, 500)
        let theirs = try SpatialTests.measure(payee, .payee, context, 520)
        let proof = SpatialProof(payer: mine, payee: theirs)
        let offerID = context.offerID
        let transfer = try payer.pay(
            payee.walletID, units: 450, proximity: .spatialProof(digest: proof.digest),
            binding: context.channelBinding)
        let receipt = try Receipt(
            for: transfer, payeeKey: payee.key,
            keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 2), creditPosition: 1
        ).sign(with: payee.signer)
        let refusal = try Refusal(
            refusing: transfer, payeeKey: payee.key, keyDate: payee.keyDate, reason: .readyRecordMismatch
        )
        .sign(with: payee.signer)
        let checkpoint = try payer.checkpoint()
        let keyEvent = try SignedKeyEvent(
            KeyEvent.inception(signingKey: payer.key, nextKey: payer.key, agreementKey: payer.key), signer: payer.signer
        )
        var other = try TestWallet(seed: 3)
        let before = try other.checkpoint()
        try other.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
        var forked = try TestWallet(seed: 3)
        try forked.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2]))
        _ = before
        let evidence = ForkEvidence(
            .conflictingCheckpoints(
                try other.checkpoint(),
                SignedCheckpoint(
                    checkpoint: try forked.checkpoint().checkpoint, signature: try forked.checkpoint().signature)),
            log: other.log)
        return [
            .hello(
                try PeerHello(
                    walletKey: payer.key, displayName: "Alice ☕", rangingToken: [1, 2, 3],
                    nonceContribution: Fixture.id(7), checkpoint: checkpoint,
                    evidenceDigests: [Fixture.id(8)])),
            .hello(
                try PeerHello(
                    walletKey: payee.key, displayName: "", rangingToken: [],
                    nonceContribution: Fixture.id(7), checkpoint: checkpoint)),
            .request(try PaymentRequest(requestID: offerID, amount: Fixture.asset(450), note: "Coffee")),
            .offer(try PaymentOffer(offerID: offerID, amount: payer.asset(Fixture.eur(450)))),
            .reply(OfferReply(offerID: offerID, accepted: true, heldCheckpointSize: 3)),
            .reply(OfferReply(offerID: offerID, accepted: false, heldCheckpointSize: nil)),
            .measurement(
                try MeasurementMessage(offerID: offerID, measurement: mine, consistencyProof: [Fixture.id(1)])),
            .measurement(try MeasurementMessage(offerID: offerID, measurement: theirs, consistencyProof: nil)),
            .ready(ReadyMessage(offerID: offerID, amount: payer.asset(Fixture.eur(450)))),
            .transfer(TransferMessage(offerID: offerID, transfer: transfer, spatialProof: proof)),
            .receipt(ReceiptMessage(offerID: offerID, receipt: receipt)),
            .refusal(RefusalMessage(offerID: offerID, refusal: refusal)),
            .evidence(.request([Fixture.id(8)])),
            .evidence(.item(evidence)),
            .keyEvents(.request(walletID: payer.walletID, from: 0)),
            .keyEvents(.page(walletID: payer.walletID, from: 0, total: 1, events: [keyEvent])),
            .failure(PeerFailure(offerID: offerID, reason: .tooFar)),
            .failure(PeerFailure(offerID: nil, reason: .timeout)),
        ]
    }

    @Test("every message round-trips; truncations short; extensions refused; top-bit flips refused or another message")
    func sweep() throws {
        for message in try PeerMessageTests.samples() {
            #expect(try PeerMessage.decode(message.encoded) == message, "\(message.name)")
            sweepEncoding(message.encoded, message.name, decode: PeerMessage.decode)
        }
    }

    @Test("unknown versions, types and codes are refused")
    func unknowns() throws {
        // Version 1 (amounts without an issuer) is refused like any unknown version.
        #expect(throws: FormatError(.unsupportedVersion, "")) { try PeerMessage.decode([1, 1]) }
        #expect(throws: FormatError(.unsupportedVersion, "")) { try PeerMessage.decode([3, 1]) }
        #expect(throws: FormatError(.invalidValue, "")) { try PeerMessage.decode([2, 99]) }
        #expect(throws: FormatError(.invalidValue, "")) { try PeerMessage.decode([2, 12, 0, 200]) }
        #expect(try PeerMessage.decode([2]) == nil)
        #expect(throws: FormatError(.fieldTooLong, "")) {
            try PeerMessage.decode([UInt8](repeating: 1, count: PeerMessage.encodedByteCountMax + 1))
        }
    }

    @Test("failure codes 1 to 22 decode, 0 and 23 are refused; the till codes' vectors")
    func failureCodes() throws {
        for code in UInt8(1)...22 {
            let reason = try #require(PeerFailureReason(rawValue: code), "code \(code)")
            #expect(try PeerMessage.decode([2, 12, 0, code]) == .failure(PeerFailure(offerID: nil, reason: reason)))
        }
        #expect(PeerFailureReason.allCases.count == 22)
        for code: UInt8 in [0, 23] {
            #expect(throws: FormatError(.invalidValue, ""), "code \(code)") {
                try PeerMessage.decode([2, 12, 0, code])
            }
        }
        // The vectors in docs/PROTOCOL.md ("Peer messages"): a busy till's failure, sent in place of its hello,
        // and a payer wallet's refusal naming the till's request id 0x11 × 16.
        #expect(PeerMessage.failure(PeerFailure(offerID: nil, reason: .tillBusy)).encoded == [0x02, 0x0c, 0x00, 0x16])
        #expect(
            PeerMessage.failure(PeerFailure(offerID: Fixture.id(0x11), reason: .refusedByPayerWallet)).encoded
                == [0x02, 0x0c, 0x01] + [UInt8](repeating: 0x11, count: 16) + [0x15])
    }

    @Test("a key-event page holds consecutive sequences within a bounded log")
    func keyEventPages() throws {
        let payer = try TestWallet(seed: 1)
        let inception = try SignedKeyEvent(
            KeyEvent.inception(signingKey: payer.key, nextKey: payer.key, agreementKey: payer.key), signer: payer.signer
        )
        var events = [inception]
        while events.count < 150 {
            let event = KeyEvent.rotation(
                after: events.last!.event, signingKey: payer.key, nextKey: payer.key,
                agreementKey: payer.key, ledgerPosition: UInt64(events.count))
            events.append(try SignedKeyEvent(event, signer: payer.signer))
        }
        let walletID = WalletID(inception: inception.event)
        var collected: [SignedKeyEvent] = []
        while let page = KeyEventsMessage.page(of: events, walletID: walletID, from: UInt32(collected.count)) {
            let decoded = try #require(try PeerMessage.decode(PeerMessage.keyEvents(page).encoded))
            guard case .keyEvents(.page(_, let from, let total, let got)) = decoded else {
                Issue.record("\(decoded)"); return
            }
            #expect(Int(from) == collected.count && total == 150 && got.count <= KeyEventsMessage.pageEventCountMax)
            collected += got
        }
        #expect(collected == events, "three pages give back the whole log")
        // The vector in docs/PROTOCOL.md ("Peer messages").
        let request = PeerMessage.keyEvents(.request(walletID: Fixture.id(0x11), from: 64)).encoded
        #expect(request == [0x02, 0x0b, 0x01] + [UInt8](repeating: 0x11, count: 32) + [0, 0, 0, 0x40])
        // A page whose events are not the sequences it claims, an empty page, and a log past the limit are refused.
        var writer = ByteWriter()
        writer.write(UInt8(2)); writer.write(walletID); writer.write(UInt32(5)); writer.write(UInt32(10))
        writer.write(UInt8(1)); writer.write(prefixed16: events[0].encoded, max: 2000)
        var reader = ByteReader(writer.bytes)
        #expect(throws: FormatError(.invalidValue, "")) { try KeyEventsMessage.decode(from: &reader) }
        for (from, total, count) in [(UInt32(0), UInt32(10), UInt8(0)), (0, 1025, 1), (9, 9, 1), (0, 10, 65)] {
            var bad = ByteWriter()
            bad.write(UInt8(2)); bad.write(walletID); bad.write(from); bad.write(total); bad.write(count)
            var badReader = ByteReader(bad.bytes)
            #expect(throws: FormatError.self, "page \(from)+\(count) of \(total)") {
                try KeyEventsMessage.decode(from: &badReader)
            }
        }
    }
}
