import SecureCrypto
import Testing

@testable import SecureChannel

@Suite("Man in the middle")
struct ManInTheMiddleTests {
    /// A man in the middle who runs one handshake with each side (his own keys and randomness, fixed here so
    /// the run is reproducible). Both legs complete, since he terminates each, and the two people see
    /// different short authentication strings.
    @Test func rekeyingBothSidesGivesDifferentSAS() throws {
        var alice = Initiator(privateKey: fixedKey(1), random: fixedRandom(1))
        var bob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
        var towardAlice = Responder(privateKey: fixedKey(50), random: fixedRandom(50))
        var towardBob = Initiator(privateKey: fixedKey(60), random: fixedRandom(60))
        let aliceLeg = try drive(&alice, &towardAlice)
        let bobLeg = try drive(&towardBob, &bob)
        let aliceSees = try #require(aliceLeg.initiator).summary, bobSees = try #require(bobLeg.responder).summary
        #expect(aliceSees.sas.value != bobSees.sas.value)
        #expect(aliceSees.sas.digits != bobSees.sas.digits, "\(aliceSees.sas) vs \(bobSees.sas)")
        #expect(aliceSees.sas.words != bobSees.sas.words, "\(aliceSees.sas) vs \(bobSees.sas)")
        #expect(aliceSees.channelBinding != bobSees.channelBinding)
    }

    /// The man in the middle must commit toward Bob before he sees Bob's contribution. Were he free to pick
    /// his contribution after Bob's hello, each choice would give Bob another SAS, and he could grind for the
    /// one Alice sees. Here he commits with one contribution and, after Bob's hello, reveals another (a reveal
    /// that is well formed and completes a handshake with its own commitment): Bob refuses every one as a
    /// commitment mismatch. Without the commitment check Bob would go on and the handshake would fail later
    /// (or not at all), so this test fails.
    @Test func commitmentFixesTheSASBeforeTheRevealIsKnown() throws {
        var committed = Initiator(privateKey: fixedKey(60), random: fixedRandom(60))
        var honestBob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
        let bobSAS = try #require(try drive(&committed, &honestBob).responder).summary.sas
        var steered: Set<[UInt8]> = [bobSAS.value]
        for attempt in UInt8(0)..<8 {
            // The reveal he would like to send: another contribution, run against a twin of Bob (same key,
            // same hello), where it completes and gives Bob another SAS.
            var chosen = Initiator(privateKey: fixedKey(60), random: fixedRandom(100 &+ attempt))
            var twinOfBob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
            let alternative = try drive(&chosen, &twinOfBob)
            steered.insert(try #require(alternative.responder, "attempt \(attempt)").summary.sas.value)
            // Sent in place of the reveal that matches his commitment, it is refused.
            var towardBob = Initiator(privateKey: fixedKey(60), random: fixedRandom(60))
            var bob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
            #expect(throws: ChannelError(.commitmentMismatch, ""), "attempt \(attempt)") {
                _ = try drive(&towardBob, &bob) { index, body in index == 2 ? alternative.messages[2] : body }
            }
        }
        #expect(steered.count == 9, "each reveal would have given Bob another SAS")
    }

    /// Everything after the reveal (the ciphertexts, hence the shared secrets, transcript and MACs) may be
    /// chosen by whoever encapsulates. Varying that randomness changes the session but never either SAS.
    @Test func encapsulationRandomnessAfterTheRevealCannotChangeTheSAS() throws {
        var sases: Set<[UInt8]> = [], transcripts: Set<[UInt8]> = [], sessions: Set<[UInt8]> = []
        for seed in UInt8(0)..<6 {
            var alice = Initiator(privateKey: fixedKey(1), random: fixedRandom(1))
            var bob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
            alice.encapsulate = {
                try! $0._encapsulate(seed: [UInt8](repeating: seed, count: XWing.encapsulationSeedByteCount))
            }
            bob.encapsulate = {
                try! $0._encapsulate(seed: [UInt8](repeating: seed &+ 1, count: XWing.encapsulationSeedByteCount))
            }
            let run = try drive(&alice, &bob)
            sases.insert(run.initiator!.summary.sas.value)
            sases.insert(run.responder!.summary.sas.value)
            transcripts.insert(run.initiator!.summary.transcriptHash)
            sessions.insert(run.initiator!.summary.sessionId)
        }
        #expect(sases.count == 1)
        #expect(transcripts.count == 6 && sessions.count == 6)
    }

    /// A man in the middle who passes the contributions through but substitutes his own encapsulation to
    /// Alice (any randomness) does not learn Bob's secret, and the handshake fails at key confirmation.
    @Test func substitutedCiphertextFailsKeyConfirmation() throws {
        for seed in UInt8(0)..<3 {
            var alice = Initiator(privateKey: fixedKey(1), random: fixedRandom(1))
            var bob = Responder(privateKey: fixedKey(2), random: fixedRandom(2))
            let alicePublic = fixedKey(1).publicKey
            #expect(throws: ChannelError(.keyConfirmationFailed, ""), "seed \(seed)") {
                _ = try drive(&alice, &bob) { index, body in
                    guard index == 3 else { return body }
                    let (_, ciphertext) = try! alicePublic._encapsulate(seed: [UInt8](repeating: seed, count: 64))
                    return HandshakeMessage.response(ciphertext: ciphertext).encoded
                }
            }
        }
    }
}
