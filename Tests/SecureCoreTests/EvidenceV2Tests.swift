import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Fork evidence v2 (issue 12): evidence carries the accused wallet's key-event log and proves nothing unless
/// the log is that wallet's and each signing key was in force at the size it signed. A forger with a software
/// key can get a real wallet banned neither with a log of its own nor with the real log and its own key; a
/// retired key cannot get its wallet banned either; a genuine fork across a rotation is proven.
@Suite("Fork evidence v2")
struct EvidenceV2Tests {
    static func reason(_ verdict: ForkVerdict) -> ForkVerdict.NotProvenReason? {
        if case .notProven(let reason, _) = verdict { return reason }
        return nil
    }

    /// Two checkpoints signed by `base`'s key, of one size, that differ at their last entry: a type 1 pair.
    static func sameSizeFork(_ base: TestWallet, padding: Int = 1) throws -> (SignedCheckpoint, SignedCheckpoint) {
        var one = base
        var two = base
        for index in 0..<padding {
            try one.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1, UInt8(index)]))
            try two.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2, UInt8(index)]))
        }
        return (try one.checkpoint(), try two.checkpoint())
    }

    @Test func aForgerNamingARealWalletIdProvesNothingWithItsOwnLogOrTheRealOne() throws {
        let victim = try TestWallet(seed: 71)
        let forger = try TestWallet(seed: 72, claiming: victim.walletID)
        let (a, b) = try Self.sameSizeFork(forger)
        #expect(a.checkpoint.walletID == victim.walletID && a.isSelfConsistent && b.isSelfConsistent)
        // The forger's own log is valid, but its inception does not hash to the victim's wallet id.
        let ownLog = ForkEvidence(.conflictingCheckpoints(a, b), log: forger.log)
        #expect(Self.reason(ownLog.verify()) == .wrongLog)
        // The victim's real log (anyone can copy it from a card) does not hold the forger's key.
        let realLog = ForkEvidence(.conflictingCheckpoints(a, b), log: victim.log)
        #expect(Self.reason(realLog.verify()) == .keyNotInForce)
        #expect(Self.reason(realLog.verify(knownLog: victim.log)) == .keyNotInForce)
        for evidence in [ownLog, realLog] {
            let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
            #expect(decoded == evidence && !decoded.verify().isProven, "the bytes prove nothing either")
        }
        // The payee's rollback check keeps the forger's checkpoints as unproven, never as evidence.
        let verdict = RollbackCheck.evaluate(b, claims: [], held: [a], kept: [], payerLog: victim.log)
        guard case .unproven = verdict else { Issue.record("forged checkpoints gave \(verdict)"); return }
        // A log that starts with the victim's inception and continues with the forger's key is no log at all:
        // the decoder refuses it (the victim's inception committed to another next key).
        let forgedRotation = try SignedKeyEvent(
            .rotation(
                after: victim.log.current, signingKey: forger.key, nextKey: try SoftwareSigner().publicKey,
                agreementKey: forger.key, ledgerPosition: 1), signer: forger.signer)
        var writer = ByteWriter()
        writer.write(UInt8(2))
        writer.write(UInt8(1))
        writer.write(UInt16(2))
        for event in [victim.log.events[0], forgedRotation] { writer.write(prefixed16: event.encoded, max: 2000) }
        a.encode(into: &writer)
        b.encode(into: &writer)
        #expect(throws: FormatError(.invalidValue, "")) { try ForkEvidence.decode(writer.bytes) }
    }

    @Test func aRetiredKeyCannotGetItsWalletBannedAndAKeyMustBeTheOneOfItsSequence() throws {
        var wallet = try TestWallet(seed: 73)
        try wallet.deposit(1000, issuer: try SoftwareSigner())
        let beforeRotation = wallet // a thief's copy of the key that is about to be retired
        try wallet.rotate()
        let rotation = wallet.log.events[1]
        // The retired key signs two different ledgers past the rotation's position.
        let (a, b) = try Self.sameSizeFork(beforeRotation, padding: 2)
        #expect(a.checkpoint.size > rotation.event.ledgerPosition)
        #expect(Self.reason(ForkEvidence(.conflictingCheckpoints(a, b), log: wallet.log).verify()) == .keyNotInForce)
        // Cut before the rotation, the log hides it from a verifier that holds nothing else; a verifier that
        // follows the wallet's log is not fooled, and the carried log cannot shorten what it knows.
        let shortened = ForkEvidence(.conflictingCheckpoints(a, b), log: beforeRotation.log)
        #expect(Self.reason(shortened.verify(knownLog: wallet.log)) == .keyNotInForce)
        // What the late signature does prove is type 4, which bars no wallet.
        let late = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: wallet.log.events[0], rotation: rotation, checkpoint: a)),
            log: wallet.log)
        #expect(late.verify().isProven && late.bannedWallet == nil)
        // The old key signing under the new key's sequence and position is no key of the wallet at all.
        var thief = beforeRotation
        try thief.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [3]))
        try thief.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [4]))
        let misdated = try Checkpoint(
            walletID: wallet.walletID, walletKey: beforeRotation.key, keySequence: 1,
            keyEventPosition: rotation.event.ledgerPosition, state: thief.state, root: thief.tree.root(),
            time: thief.time, index: .random()
        ).sign(with: beforeRotation.signer)
        let misdatedEvidence = ForkEvidence(.conflictingCheckpoints(a, misdated), log: wallet.log)
        #expect(Self.reason(misdatedEvidence.verify()) == .keyNotInForce)
    }

    @Test func aForkAcrossARotationIsProven() throws {
        let issuer = try SoftwareSigner()
        var payer = try TestWallet(seed: 74)
        try payer.deposit(1000, issuer: issuer)
        let payee = try TestWallet(seed: 75)
        let copy = payer // the owner's backup
        let paid = try payer.pay(payee.walletID, units: 400)
        let held = paid.payload.checkpoint
        let m = held.checkpoint.size
        // Restored, it spends the same money elsewhere (another ledger of the same size), rotates its key, and
        // pays the same payee again, proving from its own history at the size the payee holds.
        var restored = copy
        _ = try restored.pay(try TestWallet(seed: 76).walletID, units: 400)
        try restored.rotate()
        let again = try restored.pay(payee.walletID, units: 300)
        let offered = again.payload.checkpoint
        #expect(held.checkpoint.keySequence == 0 && offered.checkpoint.keySequence == 1)
        #expect(held.checkpoint.walletKey != offered.checkpoint.walletKey, "two keys of one wallet")
        let claim = RollbackTests.claim(restored, from: m)
        let verdict = RollbackCheck.evaluate(offered, claims: [claim], held: [held], kept: [], payerLog: restored.log)
        guard case .fork(let evidence) = verdict else { Issue.record("across a rotation: \(verdict)"); return }
        #expect(evidence.kind.typeByte == 6 && evidence.bannedWallet == payer.walletID)
        #expect(evidence.verify().isProven)
        let decoded = try #require(try ForkEvidence.decode(evidence.encoded))
        #expect(decoded == evidence && decoded.verify().isProven)
        sweepEncoding(evidence.encoded, "type 6 evidence across a rotation", decode: ForkEvidence.decode)
        // Type 2 across the rotation: the two debits at one position.
        let index = m - 1
        let leaves = ForkEvidence(
            .conflictingLeaves(
                ConflictingLeaves(
                    first: held, second: offered, index: index, firstLeaf: paid.payload.debitLeaf,
                    firstProof: paid.payload.inclusionProof, secondLeaf: restored.entries[Int(index)].encoded,
                    secondProof: restored.tree.inclusionProof(index: index))),
            log: restored.log)
        #expect(leaves.verify().isProven)
        // Carrying only the inception, the evidence cannot show the second key; a verifier that follows the
        // wallet's rotated log can.
        let inceptionOnly = ForkEvidence(evidence.kind, log: payer.log)
        #expect(Self.reason(inceptionOnly.verify()) == .keyNotInForce)
        #expect(inceptionOnly.verify(knownLog: restored.log).isProven)
    }

    @Test func evidenceVersionOneIsRefused() throws {
        let wallet = try TestWallet(seed: 77)
        let (a, b) = try Self.sameSizeFork(wallet)
        var writer = ByteWriter()
        writer.write(UInt8(1))
        writer.write(UInt8(1))
        a.encode(into: &writer)
        b.encode(into: &writer)
        #expect(throws: FormatError(.unsupportedVersion, "")) { try ForkEvidence.decode(writer.bytes) }
        #expect(throws: FormatError(.unsupportedVersion, "")) { try ForkEvidence.decode([1]) }
        var message = ByteWriter()
        message.write(UInt8(2))
        message.write(prefixed32: writer.bytes, max: EvidenceMessage.evidenceByteCountMax)
        var reader = ByteReader(message.bytes)
        #expect(throws: FormatError.self, "a peer's evidence v1 is refused") {
            try EvidenceMessage.decode(from: &reader)
        }
    }

    /// The vector in docs/PROTOCOL.md ("Fork evidence encoding"): version 2, the type, the accused wallet's
    /// log as cards and envelopes encode it, then the type's fields as in version 1.
    @Test func encodingVector() throws {
        let wallet = try TestWallet(seed: 78)
        let (a, b) = try Self.sameSizeFork(wallet)
        let evidence = ForkEvidence(.conflictingCheckpoints(a, b), log: wallet.log)
        let bytes = evidence.encoded
        let log = Array(WalletCard(log: wallet.log).encoded.dropFirst(33))
        #expect(Array(bytes.prefix(4)) == [0x02, 0x01, 0x00, 0x01], "version 2, type 1, a log of one event")
        #expect(Array(bytes[6..<10]) == [0x01, 0x35, 0x03, 0x00], "a 309-byte inception event, version 3, kind 0")
        #expect(Array(bytes[10..<50]) == [UInt8](repeating: 0, count: 40), "sequence 0, no previous event")
        #expect(Array(bytes[2..<(2 + log.count)]) == log, "the log is encoded as in cards and envelopes")
        #expect(Array(bytes.dropFirst(2 + log.count)) == a.encoded + b.encoded)
        #expect(EvidenceDigest(of: bytes).bytes == SHA256.hash(bytes))
        let decoded = try #require(try ForkEvidence.decode(bytes))
        #expect(decoded == evidence && decoded.verify().isProven && decoded.accused == wallet.walletID)
        sweepEncoding(bytes, "type 1 evidence v2", decode: ForkEvidence.decode)
    }
}
