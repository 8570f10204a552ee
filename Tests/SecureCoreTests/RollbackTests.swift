import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The payee's rollback check on transfers by file (attack 4 of issue 12): a payer restored from an old copy
/// that pays the same payee again is refused, and leaves proven evidence whenever its proof covers a size
/// the payee holds.
@Suite("Rollback checks on file transfers")
struct RollbackTests {
    /// A payer with money, a payee, and the payer's claim from `from` to its current size.
    static func claim(_ payer: TestWallet, from: UInt64) -> ConsistencyClaim {
        ConsistencyClaim(
            fromSize: from, fromRoot: payer.tree.root(size: from),
            proof: payer.tree.consistencyProof(oldSize: from, newSize: payer.state.size))
    }

    @Test func anHonestChainIsConsistentInAnyOrder() throws {
        var payer = try TestWallet(seed: 61)
        try payer.deposit(1000, issuer: try SoftwareSigner())
        let payee = try TestWallet(seed: 62)
        let first = try payer.pay(payee.walletID, units: 100)
        let a = first.payload.checkpoint
        let second = try payer.pay(payee.walletID, units: 100)
        let b = second.payload.checkpoint
        let claim = Self.claim(payer, from: a.checkpoint.size)
        #expect(claim.proves(b.checkpoint))
        // In order: nothing held, then the first held.
        #expect(RollbackCheck.evaluate(a, claims: [], held: [], kept: [], payerLog: payer.log) == .consistent)
        #expect(RollbackCheck.evaluate(b, claims: [claim], held: [a], kept: [], payerLog: payer.log) == .consistent)
        // The second first, then the first late, linked by the proof kept from the second.
        #expect(RollbackCheck.evaluate(b, claims: [claim], held: [], kept: [], payerLog: payer.log) == .consistent)
        let kept: KeptProof = (claim: claim, target: b)
        #expect(RollbackCheck.evaluate(a, claims: [], held: [b], kept: [kept], payerLog: payer.log) == .consistent)
        // Without the kept proof the late one is stale; a re-delivery of a held one is consistent.
        #expect(RollbackCheck.evaluate(a, claims: [], held: [b], kept: [], payerLog: payer.log) == .staleUnlinked)
        #expect(RollbackCheck.evaluate(b, claims: [claim], held: [a, b], kept: [], payerLog: payer.log) == .consistent)
        // A proof that does not lead to the checkpoint is refused.
        let bent = ConsistencyClaim(fromSize: claim.fromSize, fromRoot: .random(), proof: claim.proof)
        #expect(RollbackCheck.evaluate(b, claims: [bent], held: [a], kept: [], payerLog: payer.log) == .invalidProof)
    }

    @Test func aRestoredPayerIsRefusedAndLeavesEvidenceWhereTheProofReaches() throws {
        let issuer = try SoftwareSigner()
        var payer = try TestWallet(seed: 63)
        try payer.deposit(1000, issuer: issuer)
        let payee = try TestWallet(seed: 64)
        let copy = payer // the owner's backup
        let paid = try payer.pay(payee.walletID, units: 400)
        let held = paid.payload.checkpoint

        // Restored and paying again at the same size: two signed ledgers of one size (type 1).
        var restored = copy
        let again = try restored.pay(payee.walletID, units: 300)
        guard
            case .fork(let sameSize) = RollbackCheck.evaluate(
                again.payload.checkpoint, claims: [], held: [held], kept: [], payerLog: payer.log)
        else { Issue.record("same size"); return }
        #expect(sameSize.verify().isProven)

        // Restored, padded and paying again: no proof reaches what the payee holds, so it is refused as unproven.
        var padded = copy
        try padded.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
        let later = try padded.pay(payee.walletID, units: 400)
        let paddedVerdict = RollbackCheck.evaluate(
            later.payload.checkpoint, claims: [], held: [held], kept: [], payerLog: payer.log)
        guard case .unproven(let kept, _) = paddedVerdict else { Issue.record("padded: \(paddedVerdict)"); return }
        #expect(kept == held)

        // The restored wallet's next payment proves from its own earlier payment, at a size the payee holds
        // with another root: type 6, proven offline after a round trip.
        let next = try restored.pay(payee.walletID, units: 100)
        let claim = Self.claim(restored, from: held.checkpoint.size)
        guard
            case .fork(let evidence) = RollbackCheck.evaluate(
                next.payload.checkpoint, claims: [claim], held: [held], kept: [], payerLog: payer.log)
        else { Issue.record("type 6"); return }
        guard case .rolledBack = evidence.kind else { Issue.record("not type 6: \(evidence)"); return }
        #expect(evidence.verify().isProven)
        let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
        #expect(decoded == evidence && decoded.verify().isProven)
        #expect(evidence.encoded[1] == 6, "type byte 6")
        sweepEncoding(evidence.encoded, "type 6 evidence", decode: ForkEvidence.decode)
        // The same shape with the held root claimed proves nothing; neither does another wallet's checkpoint.
        let honest = RolledBack(
            earlier: held, later: next.payload.checkpoint, claimedRoot: held.checkpoint.root, proof: claim.proof)
        #expect(!ForkEvidence(.rolledBack(honest), log: payer.log).verify().isProven)
        let stranger = try TestWallet(seed: 65)
        let mixed = RolledBack(
            earlier: try stranger.checkpoint(), later: next.payload.checkpoint, claimedRoot: .random(), proof: [])
        #expect(!ForkEvidence(.rolledBack(mixed), log: payer.log).verify().isProven)
        #expect(!ForkEvidence(.rolledBack(mixed), log: stranger.log).verify().isProven)
    }
}
