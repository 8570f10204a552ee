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
        let transfer = try payer.pay(payee.walletID, units: 450, proximity: .spatialProof(digest: proof.digest),
                                     binding: context.channelBinding)
        let receipt = try Receipt(for: transfer, payeeKey: payee.key, keyDate: try KeyDate(keySequence: 0, keyEventPosition: 0, ledgerSize: 2), creditPosition: 1).sign(with: payee.signer)
        let refusal = try Refusal(refusing: transfer, payeeKey: payee.key, keyDate: payee.keyDate, reason: .readyRecordMismatch)
            .sign(with: payee.signer)
        let checkpoint = try payer.checkpoint()
        let keyEvent = try SignedKeyEvent(
            KeyEvent.inception(signingKey: payer.key, nextKey: payer.key, agreementKey: payer.key), signer: payer.signer)
        var other = try TestWallet(seed: 3)
        let before = try other.checkpoint()
        try other.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
        var forked = try TestWallet(seed: 3)
        try forked.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2]))
        _ = before
        let evidence = ForkEvidence.conflictingCheckpoints(
            try other.checkpoint(),
            SignedCheckpoint(checkpoint: try forked.checkpoint().checkpoint, signature: try forked.checkpoint().signature))
        return [
            .hello(try PeerHello(walletKey: payer.key, displayName: "Alice ☕", rangingToken: [1, 2, 3],
                                 nonceContribution: Fixture.bytes(7, 16), checkpoint: checkpoint,
                                 evidenceDigests: [Fixture.bytes(8, 32)])),
            .hello(try PeerHello(walletKey: payee.key, displayName: "", rangingToken: [],
                                 nonceContribution: Fixture.bytes(7, 16), checkpoint: checkpoint)),
            .request(try PaymentRequest(requestID: offerID, amount: Fixture.eur(450), note: "Coffee")),
            .offer(try PaymentOffer(offerID: offerID, amount: Fixture.eur(450))),
            .reply(try OfferReply(offerID: offerID, accepted: true, heldCheckpointSize: 3)),
            .reply(try OfferReply(offerID: offerID, accepted: false, heldCheckpointSize: nil)),
            .measurement(try MeasurementMessage(offerID: offerID, measurement: mine, consistencyProof: [Fixture.bytes(1, 32)])),
            .measurement(try MeasurementMessage(offerID: offerID, measurement: theirs, consistencyProof: nil)),
            .ready(try ReadyMessage(offerID: offerID, amount: Fixture.eur(450))),
            .transfer(try TransferMessage(offerID: offerID, transfer: transfer, spatialProof: proof)),
            .receipt(try ReceiptMessage(offerID: offerID, receipt: receipt)),
            .refusal(try RefusalMessage(offerID: offerID, refusal: refusal)),
            .evidence(.request([Fixture.bytes(8, 32)])),
            .evidence(.item(evidence)),
            .keyEvents(.request(walletID: payer.walletID)),
            .keyEvents(.log(walletID: payer.walletID, events: [keyEvent])),
            .failure(PeerFailure(offerID: offerID, reason: .tooFar)),
            .failure(PeerFailure(offerID: nil, reason: .timeout)),
        ]
    }

    @Test("every message round-trips; every truncation is short; every extension and flip is safe")
    func sweep() throws {
        for message in try PeerMessageTests.samples() {
            #expect(try PeerMessage.decode(message.encoded) == message, "\(message.name)")
            sweepEncoding(message.encoded, message.name, decode: PeerMessage.decode)
        }
    }

    @Test("unknown versions, types and codes are refused")
    func unknowns() throws {
        #expect(throws: FormatError(.unsupportedVersion, "")) { try PeerMessage.decode([2, 1]) }
        #expect(throws: FormatError(.invalidValue, "")) { try PeerMessage.decode([1, 99]) }
        #expect(throws: FormatError(.invalidValue, "")) { try PeerMessage.decode([1, 12, 0, 200]) }
        #expect(try PeerMessage.decode([1]) == nil)
        #expect(throws: FormatError(.fieldTooLong, "")) {
            try PeerMessage.decode([UInt8](repeating: 1, count: PeerMessage.encodedByteCountMax + 1))
        }
    }
}
