import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// A wallet's keys in software, enough to build logs, forged rotations and late checkpoints.
struct KeyChain {
    var signers: [SoftwareSigner]
    let agreement: SoftwareSigner

    init(count: Int) throws {
        signers = try (0..<count).map { _ in try SoftwareSigner() }
        agreement = try SoftwareSigner()
    }

    func inception() throws -> SignedKeyEvent {
        try SignedKeyEvent(
            .inception(
                signingKey: signers[0].publicKey, nextKey: signers[1].publicKey,
                agreementKey: agreement.publicKey), signer: signers[0])
    }

    /// Rotation `index` (1, 2, …) after `previous`, recorded at `position`, countersigned when asked.
    func rotation(
        _ index: Int, after previous: KeyEvent, position: UInt64, countersign: Bool = true,
        contactKeyDigest: Digest32 = KeyEvent.noContactKey
    ) throws -> SignedKeyEvent {
        try SignedKeyEvent(
            .rotation(
                after: previous, signingKey: signers[index].publicKey, nextKey: signers[index + 1].publicKey,
                agreementKey: agreement.publicKey, ledgerPosition: position, contactKeyDigest: contactKeyDigest),
            signer: signers[index], previous: countersign ? signers[index - 1] : nil)
    }

    func checkpoint(_ log: KeyEventLog, sequence: Int, size: UInt64, root: Digest32 = Fixture.id(1)) throws
        -> SignedCheckpoint
    {
        let event = log.events[sequence].event
        let checkpoint = try Checkpoint(
            walletID: log.walletID, walletKey: event.signingKey, keySequence: event.sequence,
            keyEventPosition: event.ledgerPosition, size: size, root: root,
            head: Fixture.id(2), time: Fixture.time, snapshot: LedgerSnapshot(LedgerState()),
            index: LedgerIndex.emptyDigest)
        return try checkpoint.sign(with: signers[sequence])
    }
}

@Suite struct KeyEventLogTests {
    @Test func rotationsChainAndDateTheirKeys() throws {
        let keys = try KeyChain(count: 4)
        var log = try KeyEventLog(inception: try keys.inception())
        let first = try keys.rotation(1, after: log.current, position: 5)
        try log.append(first)
        try log.append(try keys.rotation(2, after: log.current, position: 9, countersign: false))
        #expect(log.current.sequence == 2)
        #expect(try KeyEventLog(verifying: log.events, walletID: log.walletID) == log)
        #expect(log.event(signingCheckpointOfSize: 5)?.sequence == 0)
        #expect(log.event(signingCheckpointOfSize: 6)?.sequence == 1)
        #expect(log.event(signingCheckpointOfSize: 10)?.sequence == 2)
        #expect(log.check(try keys.checkpoint(log, sequence: 0, size: 5)) == .inForce)
        #expect(log.check(try keys.checkpoint(log, sequence: 1, size: 9)) == .inForce)
        #expect(log.check(try keys.checkpoint(log, sequence: 2, size: 10)) == .inForce)
        // Round trip with and without the countersignature.
        #expect(try SignedKeyEvent.decode(first.encoded) == first)
        #expect(try SignedKeyEvent.decode(log.events[2].encoded) == log.events[2])
    }

    @Test func aStolenCurrentKeyCannotRotateToAnUncommittedKey() throws {
        let keys = try KeyChain(count: 3)
        var log = try KeyEventLog(inception: try keys.inception())
        let thief = try SoftwareSigner()
        let forged = try SignedKeyEvent(
            .rotation(
                after: log.current, signingKey: thief.publicKey, nextKey: thief.publicKey,
                agreementKey: keys.agreement.publicKey, ledgerPosition: 3),
            signer: thief, previous: keys.signers[0])
        #expect(throws: KeyEventError(.uncommittedKey, "")) { try log.append(forged) }
        #expect(log.events.count == 1)
    }

    @Test func aRotationNotSignedByItsNewKeyIsRefused() throws {
        let keys = try KeyChain(count: 3)
        var log = try KeyEventLog(inception: try keys.inception())
        let event = KeyEvent.rotation(
            after: log.current, signingKey: keys.signers[1].publicKey,
            nextKey: keys.signers[2].publicKey, agreementKey: keys.agreement.publicKey, ledgerPosition: 3)
        // Signed by the old key only (e.g. a thief holding the current key and only the committed public key).
        let byOldKey = SignedKeyEvent(
            event: event, signature: try keys.signers[0].sign(event.encoded, label: KeyEvent.label))
        #expect(throws: KeyEventError(.badSignature, "")) { try log.append(byOldKey) }
        // A countersignature by someone other than the previous key.
        let stranger = try SoftwareSigner()
        let badCounter = SignedKeyEvent(
            event: event, signature: try keys.signers[1].sign(event.encoded, label: KeyEvent.label),
            countersignature: try stranger.sign(event.encoded, label: KeyEvent.countersignatureLabel))
        #expect(throws: KeyEventError(.badSignature, "")) { try log.append(badCounter) }
        // A decoder refuses the forged signature outright.
        #expect(throws: FormatError.self) { try SignedKeyEvent.decode(byOldKey.encoded) }
    }

    @Test func chainSequenceAndPositionRules() throws {
        let keys = try KeyChain(count: 4)
        var log = try KeyEventLog(inception: try keys.inception())
        try log.append(try keys.rotation(1, after: log.current, position: 4))
        // Skipping a sequence, replaying an old predecessor, or a position that does not move forward.
        let skipped = try keys.rotation(2, after: log.events[0].event, position: 6)
        #expect(throws: KeyEventError(.wrongSequence, "")) { try log.append(skipped) }
        let standstill = try keys.rotation(2, after: log.current, position: 4)
        #expect(throws: KeyEventError(.positionNotAfter, "")) { try log.append(standstill) }
        // A log that does not start at this wallet's inception.
        let other = try KeyChain(count: 2)
        #expect(throws: KeyEventError(.wrongWallet, "")) {
            try KeyEventLog(verifying: log.events, walletID: WalletID(inception: try other.inception().event))
        }
    }

    @Test func competingEventsAreEvidence() throws {
        let keys = try KeyChain(count: 4)
        let known = try KeyEventLog(inception: try keys.inception())
        var mine = known
        try mine.append(try keys.rotation(1, after: known.current, position: 3))
        // The same committed key signs a second rotation 1 that commits to a different next key.
        let competing = try SignedKeyEvent(
            .rotation(
                after: known.current, signingKey: keys.signers[1].publicKey,
                nextKey: keys.signers[3].publicKey, agreementKey: keys.agreement.publicKey,
                ledgerPosition: 3), signer: keys.signers[1])
        var follower = mine
        guard case .conflict(let conflict) = follower.follow([known.events[0], competing]) else {
            Issue.record("a competing event with the same sequence was not reported as evidence")
            return
        }
        let evidence = ForkEvidence(.conflictingKeyEvents(conflict), log: mine)
        let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
        #expect(decoded == evidence)
        #expect(decoded.verify().isProven)
        #expect(KeyEventConflict(mine.events[1], mine.events[1]) == nil, "one event is not a conflict with itself")
    }

    @Test func aPeerLogIsFollowedOnlyThroughAValidChain() throws {
        let keys = try KeyChain(count: 4)
        var known = try KeyEventLog(inception: try keys.inception())
        var newer = known
        try newer.append(try keys.rotation(1, after: newer.current, position: 3))
        try newer.append(try keys.rotation(2, after: newer.current, position: 4))
        // A log that jumps to an uncommitted key is refused and changes nothing.
        let thief = try SoftwareSigner()
        let forged = try SignedKeyEvent(
            .rotation(
                after: known.current, signingKey: thief.publicKey, nextKey: thief.publicKey,
                agreementKey: keys.agreement.publicKey, ledgerPosition: 3), signer: thief)
        #expect(known.follow([known.events[0], forged]) == .refused(KeyEventError(.uncommittedKey, "")))
        #expect(known.events.count == 1)
        #expect(known.follow(newer.events) == .followed)
        #expect(known == newer)
    }

    @Test func aRetiredKeysSignatureAfterRetirementIsRefusedAsEvidence() throws {
        let keys = try KeyChain(count: 3)
        var log = try KeyEventLog(inception: try keys.inception())
        try log.append(try keys.rotation(1, after: log.current, position: 7))
        // The retired key signs a checkpoint that covers the rotation's entry (size 8 > position 7).
        let late = try keys.checkpoint(log, sequence: 0, size: 8)
        guard case .retired(let rotation) = log.check(late) else {
            Issue.record("a checkpoint by a retired key after its retirement was not refused")
            return
        }
        let evidence = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: log.events[0], rotation: rotation, checkpoint: late)),
            log: log)
        let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
        #expect(decoded.verify().isProven)
        // The same key's checkpoints up to the rotation stay valid; the new key cannot date itself earlier
        // (a checkpoint must cover its key event, which `Checkpoint` enforces; `keyUse` checks it again).
        #expect(log.check(try keys.checkpoint(log, sequence: 0, size: 7)) == .inForce)
        #expect(log.keyUse(key: keys.signers[1].publicKey, sequence: 1, eventPosition: 7, size: 7) == .beforeInForce)
        #expect(log.keyUse(key: keys.signers[1].publicKey, sequence: 0, eventPosition: 0, size: 9) == .unknown)
        let notLate = RetiredKeySignature(
            retiredEvent: log.events[0], rotation: rotation,
            checkpoint: try keys.checkpoint(log, sequence: 0, size: 7))
        #expect(!ForkEvidence(.retiredKeySignature(notLate), log: log).verify().isProven)
        // Evidence v2 needs the log to hold the retired event and the rotation: the inception alone does not.
        let shortened = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: log.events[0], rotation: rotation, checkpoint: late)),
            log: try KeyEventLog(inception: log.events[0]))
        guard case .notProven(.wrongLog, _) = shortened.verify() else {
            Issue.record("a log without the rotation proved a retirement"); return
        }
        #expect(shortened.verify(knownLog: log).isProven, "the verifier's own longer log decides")
    }

    @Test func aPayeeFollowsThePayersRotationOnlyThroughItsKnownLog() throws {
        let keys = try KeyChain(count: 3)
        var log = try KeyEventLog(inception: try keys.inception())
        try log.append(try keys.rotation(1, after: log.current, position: 5))
        let tree = MerkleTree(leafHashes: (0..<9).map { Digest32(of: [UInt8($0)]) })
        let held = try keys.checkpoint(log, sequence: 0, size: 4, root: tree.root(size: 4))
        let current = try keys.checkpoint(log, sequence: 1, size: 9, root: tree.root(size: 9))
        let proof = tree.consistencyProof(oldSize: 4, newSize: 9)
        guard case .inconsistent = PayeeMachine.consistency(held: held, current: current, proof: proof) else {
            Issue.record("a new key was accepted without the log"); return
        }
        guard case .consistent = PayeeMachine.consistency(held: held, current: current, proof: proof, log: log) else {
            Issue.record("a rotation shown by the known log was not followed"); return
        }
        // The retired key signing the same history after its retirement is evidence.
        let late = try keys.checkpoint(log, sequence: 0, size: 9, root: tree.root(size: 9))
        guard case .fork(let evidence) = PayeeMachine.consistency(held: held, current: late, proof: proof, log: log)
        else {
            Issue.record("a retired key's checkpoint was not refused as evidence"); return
        }
        #expect(evidence.verify().isProven)
    }
}
