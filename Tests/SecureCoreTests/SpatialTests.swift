import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

@Suite("Spatial proof")
struct SpatialTests {
    @Test("the session nonce depends on every input")
    func nonce() {
        let base = SessionNonce.derive(
            transcriptHash: Fixture.id(1), payerContribution: Fixture.id(2),
            payeeContribution: Fixture.id(3))
        #expect(
            base.bytes
                == SHA256.hash(
                    Array("secure-session-nonce-v1".utf8) + [0] + Fixture.bytes(1, 32)
                        + Fixture.bytes(2, 16) + Fixture.bytes(3, 16)))
        #expect(
            base
                != SessionNonce.derive(
                    transcriptHash: Fixture.id(9), payerContribution: Fixture.id(2),
                    payeeContribution: Fixture.id(3)))
        #expect(
            base
                != SessionNonce.derive(
                    transcriptHash: Fixture.id(1), payerContribution: Fixture.id(3),
                    payeeContribution: Fixture.id(2)))
    }

    @Test("summaries: nearest-rank median and p10–p90 spread; too few samples and too wide a spread refused")
    func summaries() throws {
        let samples: [UInt32] = [500, 510, 490, 505, 495, 520, 480, 515, 485, 500]
        let summary = try RangingSummary(samples: samples)
        // Sorted: 480 485 490 495 500 500 505 510 515 520; p50 = rank 5, p10 = rank 1, p90 = rank 9.
        #expect(summary.medianMillimetres == 500 && summary.spreadMillimetres == 515 - 480 && summary.sampleCount == 10)
        #expect(throws: RangingError(.tooFewSamples, "")) { try RangingSummary(samples: Array(samples.prefix(9))) }
        #expect(throws: RangingError(.spreadTooWide, "")) {
            try RangingSummary(samples: [100, 100, 900, 900, 100, 900, 100, 900, 100, 900])
        }
        #expect(throws: RangingError(.readingOutOfRange, "")) {
            try RangingSummary(samples: samples + [RangingSummary.readingMillimetresMax + 1])
        }
    }

    @Test("the acceptance rule, in integers, at its edges")
    func rule() {
        #expect(ProximityRule.evaluate(1000, 1000) == .near(millimetres: 1000))
        #expect(ProximityRule.evaluate(1001, 1000) == .tooFar(millimetres: 1001))
        // Below 1250 mm the floor of 25 cm applies: 250 apart is fine, 251 is not.
        #expect(ProximityRule.evaluate(300, 550) == .near(millimetres: 550))
        #expect(ProximityRule.evaluate(300, 551) == .disagree(300, 551))
        #expect(ProximityRule.evaluate(0, 250) == .near(millimetres: 250))
    }

    @Test("simulated samples are seeded; the external line format is strict")
    func sources() throws {
        var a = SimulatedRanging(seed: 7, distanceMillimetres: 600)
        var b = SimulatedRanging(seed: 7, distanceMillimetres: 600)
        let samples = a.samples(count: 50)
        #expect(samples == b.samples(count: 50))
        #expect(samples.allSatisfy { $0 >= 570 && $0 <= 630 })
        let summary = try RangingSummary(samples: samples)
        #expect((570...630).contains(summary.medianMillimetres))
        let text = "# UWB board\n512\n  498 \t# noisy\r\n\n0\r\n100000\n"
        #expect(try ExternalRangingParser.parse(text: text) == [512, 498, 0, 100_000])
        for bad in ["-5", "1.5", "1e3", "12 34", "0x10", "100001", "1234567", String(repeating: "1", count: 300)] {
            #expect(throws: RangingError.self, "\(bad)") { try ExternalRangingParser.parse(line: bad) }
        }
    }

    static func context(_ payer: TestWallet, _ payee: TestWallet, nonce: Digest32 = Fixture.id(0x4E))
        -> MeasurementContext
    {
        MeasurementContext(
            nonce: nonce, offerID: Fixture.id(0x0F), payerKey: payer.key, payeeKey: payee.key,
            payerDate: payer.keyDate, payeeDate: payee.keyDate, channelBinding: Fixture.bytes(0xCB, 32))
    }

    static func measure(
        _ wallet: TestWallet, _ role: PeerRole, _ context: MeasurementContext, _ distance: UInt32,
        source: RangingSource = .external
    ) throws -> SignedMeasurement {
        var ranging = SimulatedRanging(seed: UInt64(distance), distanceMillimetres: distance)
        return try context.measurement(
            role: role, summary: RangingSummary(samples: ranging.samples(count: 20)),
            source: source
        ).sign(with: wallet.signer)
    }

    @Test("spatial proofs: accepted near; refused far, disagreeing, replayed, swapped, simulated by default")
    func proofs() throws {
        let payer = try TestWallet(seed: 1)
        let payee = try TestWallet(seed: 2)
        let context = SpatialTests.context(payer, payee)
        let strict = RangingPolicy()
        func verdict(_ a: SignedMeasurement, _ b: SignedMeasurement, _ policy: RangingPolicy = strict)
            -> Result<UInt32, SpatialRefusalError>
        { SpatialProof(payer: a, payee: b).verify(context: context, policy: policy) }
        let near = try SpatialTests.measure(payer, .payer, context, 500)
        let nearToo = try SpatialTests.measure(payee, .payee, context, 560)
        guard case .success = verdict(near, nearToo) else { Issue.record("near refused"); return }
        let far = try SpatialTests.measure(payee, .payee, context, 1200)
        guard case .failure(let tooFar) = verdict(try SpatialTests.measure(payer, .payer, context, 1150), far),
            case .tooFar = tooFar.refusal
        else { Issue.record("too far accepted"); return }
        let disagreeing = try SpatialTests.measure(payee, .payee, context, 900)
        #expect(
            verdict(near, disagreeing)
                == .failure(
                    .init(
                        .disagree(
                            payer: near.payload.summary.medianMillimetres,
                            payee: disagreeing.payload.summary.medianMillimetres))))
        // A measurement from an older session nonce.
        let old = try SpatialTests.measure(
            payee, .payee, SpatialTests.context(payer, payee, nonce: Fixture.id(1)), 560)
        #expect(verdict(near, old) == .failure(.init(.wrongNonce(.payee))))
        // The payee's measurement with the keys swapped (it claims to be the payer's view).
        let swappedContext = MeasurementContext(
            nonce: context.nonce, offerID: context.offerID, payerKey: payee.key,
            payeeKey: payer.key, payerDate: context.payeeDate, payeeDate: context.payerDate,
            channelBinding: context.channelBinding)
        let swapped = try SpatialTests.measure(payee, .payer, swappedContext, 560)
        #expect(verdict(near, swapped) == .failure(.init(.keysMismatch(.payee))))
        // The payer's measurement presented as the payee's.
        #expect(verdict(near, near) == .failure(.init(.keysMismatch(.payee))))
        // Simulated: refused by default, accepted when allowed.
        let simulated = try SpatialTests.measure(payee, .payee, context, 560, source: .simulated)
        #expect(verdict(near, simulated) == .failure(.init(.simulatedNotAllowed(.payee))))
        guard case .success = verdict(near, simulated, RangingPolicy(allowsSimulated: true)) else {
            Issue.record("simulated refused when allowed"); return
        }
        // A signature by the wrong key.
        let forged = SignedMeasurement(
            payload: nearToo.payload,
            signature: try payer.signer.sign(nearToo.payload.encoded, label: Measurement.signatureLabel))
        #expect(verdict(near, forged) == .failure(.init(.badSignature(.payee))))
        let proof = SpatialProof(payer: near, payee: nearToo)
        sweepEncoding(proof.encoded, "spatial proof", decode: SpatialProof.decode)
        sweepEncoding(near.encoded, "signed measurement", decode: SignedMeasurement.decode)
    }
}
