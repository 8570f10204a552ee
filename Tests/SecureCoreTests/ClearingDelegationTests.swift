import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Key-event kind 3 (docs/PROTOCOL.md, "Key events"; docs/CLEARING.md §1.1): an issuer's log with a clearing
/// delegation between two rotations, and every refusal.
@Suite struct ClearingDelegationTests {
    /// An issuer's keys in software: signers 0, 1, 2, … put in force in turn, and a clearing key.
    struct Issuer {
        let signers: [SoftwareSigner]
        let agreement: SoftwareSigner
        let clearing: SoftwareSigner

        init() throws {
            signers = try (0..<4).map { _ in try SoftwareSigner() }
            agreement = try SoftwareSigner()
            clearing = try SoftwareSigner()
        }

        func inception(issuer: Bool = true) throws -> SignedKeyEvent {
            try SignedKeyEvent(
                .inception(
                    signingKey: signers[0].publicKey, nextKey: signers[1].publicKey,
                    agreementKey: agreement.publicKey, issuer: issuer), signer: signers[0])
        }

        /// Rotation putting signer `index` in force, after the log's last event.
        func rotation(_ index: Int, in log: KeyEventLog, position: UInt64) throws -> SignedKeyEvent {
            try SignedKeyEvent(
                .rotation(
                    after: log.current, signingKey: signers[index].publicKey, nextKey: signers[index + 1].publicKey,
                    agreementKey: agreement.publicKey, ledgerPosition: position, following: log.last),
                signer: signers[index], previous: signers[index - 1])
        }

        func delegation(
            in log: KeyEventLog, position: UInt64, url: String = "https://clearing.example.org/v1",
            issuerSigner: SoftwareSigner? = nil, clearingSigner: SoftwareSigner? = nil
        ) throws -> SignedKeyEvent {
            let issuerSigner = issuerSigner ?? signers.first { $0.publicKey == log.current.signingKey }!
            let clearingSigner = clearingSigner ?? clearing
            let clearing = try ClearingDelegation(
                clearingKey: clearingSigner.publicKey, clearingKeyOrigin: .modulesWord,
                tlsKeyDigest: Digest32(of: Array(url.utf8)), url: url)
            return try SignedKeyEvent(
                delegation: .clearingDelegation(
                    after: log.last, issuerKey: issuerSigner.publicKey, clearing: clearing, ledgerPosition: position),
                issuerSigner: issuerSigner, clearingSigner: clearingSigner)
        }

        /// A checkpoint of `size` entries signed by signer `index`, dated by key-bearing event `sequence`.
        func checkpoint(_ log: KeyEventLog, signer index: Int, sequence: Int, size: UInt64) throws -> SignedCheckpoint {
            let event = log.events[sequence].event
            let checkpoint = try Checkpoint(
                walletID: log.walletID, walletKey: signers[index].publicKey, keySequence: event.sequence,
                keyEventPosition: event.ledgerPosition, size: size, root: Fixture.id(1), head: Fixture.id(2),
                time: Fixture.time, snapshot: LedgerSnapshot(LedgerState()), index: LedgerIndex.emptyDigest)
            return try checkpoint.sign(with: signers[index])
        }
    }

    /// inception (key 0, position 0) · rotation 1 (key 1, position 5) · delegation 2 (position 8) · rotation 3
    /// (key 2, position 12).
    static func issuerLog(_ issuer: Issuer) throws -> KeyEventLog {
        var log = try KeyEventLog(inception: try issuer.inception())
        try log.append(try issuer.rotation(1, in: log, position: 5))
        try log.append(try issuer.delegation(in: log, position: 8))
        #expect(log.current.sequence == 1 && log.last.sequence == 2 && log.head.sequence == 2)
        try log.append(try issuer.rotation(2, in: log, position: 12))
        return log
    }

    @Test func aDelegationBetweenTwoRotationsChangesNoKey() throws {
        let issuer = try Issuer()
        let log = try Self.issuerLog(issuer)
        #expect(try KeyEventLog(verifying: log.events, walletID: log.walletID) == log)
        #expect(log.current.sequence == 3 && log.current.signingKey == issuer.signers[2].publicKey)
        #expect(log.clearingInForce?.clearingKey == issuer.clearing.publicKey)
        #expect(log.clearingInForce?.url == "https://clearing.example.org/v1")
        #expect(log.events[2].event.kind == .clearingDelegation && !log.events[2].event.kind.isKeyBearing)
        // Which key signs a checkpoint: the delegation at 8 is never the answer, key 1 signs until 12.
        #expect(log.event(signingCheckpointOfSize: 6)?.sequence == 1)
        #expect(log.event(signingCheckpointOfSize: 9)?.sequence == 1)
        #expect(log.event(signingCheckpointOfSize: 12)?.sequence == 1)
        #expect(log.event(signingCheckpointOfSize: 13)?.sequence == 3)
        #expect(log.event(for: issuer.signers[1].publicKey)?.sequence == 1)
        #expect(log.nextKeyBearing(after: 1) == log.events[3] && log.nextKeyBearing(after: 3) == nil)
        // Checkpoints signed before and after the delegation, and after the rotation that retires key 1.
        #expect(log.check(try issuer.checkpoint(log, signer: 1, sequence: 1, size: 8)) == .inForce)
        #expect(log.check(try issuer.checkpoint(log, signer: 1, sequence: 1, size: 9)) == .inForce)
        #expect(log.check(try issuer.checkpoint(log, signer: 1, sequence: 1, size: 12)) == .inForce)
        let late = try issuer.checkpoint(log, signer: 1, sequence: 1, size: 13)
        #expect(log.check(late) == .retired(log.events[3]))
        #expect(log.check(try issuer.checkpoint(log, signer: 2, sequence: 3, size: 13)) == .inForce)
        // The delegation's sequence dates no key, though it names the issuer key.
        #expect(log.check(try issuer.checkpoint(log, signer: 1, sequence: 2, size: 9)) == .unknown)
        // Evidence of type 4: the rotation after the delegation retired key 1; the delegation did not.
        let proven = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: log.events[1], rotation: log.events[3], checkpoint: late)),
            log: log)
        #expect(proven.verify().isProven)
        #expect(try ForkEvidence.decode(proven.encoded)?.verify().isProven == true)
        let byDelegation = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: log.events[1], rotation: log.events[2], checkpoint: late)),
            log: log)
        #expect(!byDelegation.verify().isProven)
    }

    @Test func aVoucherOfTheKeyInForceBeforeAndAfterADelegation() throws {
        let issuer = try Issuer()
        let log = try Self.issuerLog(issuer)
        // Type 5 through key dates: key 1 dated at sizes around the delegation and the rotation.
        let key = issuer.signers[1].publicKey
        #expect(log.check(key: key, date: try KeyDate(keySequence: 1, keyEventPosition: 5, ledgerSize: 9)) == .inForce)
        #expect(
            log.check(key: key, date: try KeyDate(keySequence: 1, keyEventPosition: 5, ledgerSize: 13))
                == .retired(log.events[3]))
        #expect(log.check(key: key, date: try KeyDate(keySequence: 2, keyEventPosition: 8, ledgerSize: 9)) == .unknown)
    }

    @Test func aLaterDelegationReplacesTheEarlierAndARotationFollowsIt() throws {
        let issuer = try Issuer()
        var log = try KeyEventLog(inception: try issuer.inception())
        try log.append(try issuer.delegation(in: log, position: 3))
        let other = try SoftwareSigner()
        try log.append(
            try issuer.delegation(in: log, position: 4, url: "https://other.example/", clearingSigner: other))
        #expect(
            log.clearingInForce?.clearingKey == other.publicKey && log.clearingInForce?.url == "https://other.example/")
        #expect(log.current.sequence == 0 && log.head.sequence == 2)
        try log.append(try issuer.rotation(1, in: log, position: 6))
        #expect(log.current.sequence == 3 && log.clearingInForce?.clearingKey == other.publicKey)
        #expect(log.check(try issuer.checkpoint(log, signer: 0, sequence: 0, size: 5)) == .inForce)
        #expect(log.check(try issuer.checkpoint(log, signer: 0, sequence: 0, size: 7)) == .retired(log.events[3]))
        // A follower of the shorter log takes the longer one.
        var follower = try KeyEventLog(verifying: Array(log.events.prefix(2)))
        #expect(follower.follow(log.events) == .followed && follower == log)
    }

    /// A recovery rotation after a delegation: its recovery key is the one the last key-bearing event committed
    /// to, it follows the delegation in sequence and chain, and it retires the lost key, not the delegation.
    @Test func aRecoveryRotationFollowsADelegation() throws {
        let issuer = try Issuer()
        let secret = SecretBytes(randomCount: 32)
        var log = try KeyEventLog(
            inception: try SignedKeyEvent(
                .inception(
                    signingKey: issuer.signers[0].publicKey, nextKey: issuer.signers[1].publicKey,
                    agreementKey: issuer.agreement.publicKey, issuer: true,
                    recoveryCommitment: try RecoveryKey(secret: secret, sequence: 0).publicKey.fingerprintDigest),
                signer: issuer.signers[0]))
        try log.append(try issuer.delegation(in: log, position: 3))
        let newKey = try SoftwareSigner()
        let event = KeyEvent.recoveryRotation(
            after: log.current, signingKey: newKey.publicKey, nextKey: try SoftwareSigner().publicKey,
            agreementKey: issuer.agreement.publicKey, ledgerPosition: 6,
            recoveryCommitment: try RecoveryKey(secret: secret, sequence: 2).publicKey.fingerprintDigest,
            following: log.last)
        let recovery = try SignedKeyEvent(
            recovery: event, signer: newKey, recoveryKey: try RecoveryKey(secret: secret, sequence: 0))
        #expect(event.sequence == 2 && event.previousEvent == log.last.digest)
        try log.append(recovery)
        #expect(log.current.sequence == 2 && log.clearingInForce != nil)
        let late = try issuer.checkpoint(log, signer: 0, sequence: 0, size: 7)
        #expect(log.check(late) == .retired(recovery))
        let evidence = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: log.events[0], rotation: recovery, checkpoint: late)),
            log: log)
        #expect(evidence.verify().isProven)
    }

    @Test func refusals() throws {
        let issuer = try Issuer()
        var log = try KeyEventLog(inception: try issuer.inception())
        try log.append(try issuer.rotation(1, in: log, position: 5))
        // wrong-kind: a wallet's (not an issuer's) log.
        let wallet = try KeyEventLog(inception: try issuer.inception(issuer: false))
        #expect(wallet.refusal(of: try issuer.delegation(in: wallet, position: 3))?.code == .wrongKind)
        // uncommitted-key: signed by the retired key 0, not the key in force.
        let retired = try issuer.delegation(in: log, position: 6, issuerSigner: issuer.signers[0])
        #expect(log.refusal(of: retired)?.code == .uncommittedKey)
        // bad-signature: the countersignature is another key's.
        let good = try issuer.delegation(in: log, position: 6)
        let stranger = try SoftwareSigner()
        let forged = SignedKeyEvent(
            event: good.event, signature: good.signature,
            countersignature: try stranger.sign(good.event.encoded, label: ClearingDelegation.label))
        #expect(log.refusal(of: forged)?.code == .badSignature)
        let uncountersigned = SignedKeyEvent(event: good.event, signature: good.signature)
        #expect(log.refusal(of: uncountersigned)?.code == .badSignature)
        #expect(throws: FormatError.self) { _ = try SignedKeyEvent.decode(forged.encoded) }
        #expect(throws: FormatError.self) { _ = try SignedKeyEvent.decode(uncountersigned.encoded) }
        // position-not-after.
        #expect(log.refusal(of: try issuer.delegation(in: log, position: 5))?.code == .positionNotAfter)
        // reused-key: the clearing key is the key in force, a retired key, or the committed next key.
        for index in 0...2 {
            let reused = try issuer.delegation(in: log, position: 6, clearingSigner: issuer.signers[index])
            #expect(log.refusal(of: reused)?.code == .reusedKey, "signer \(index)")
        }
        // wrong-sequence and broken-chain, as for rotations.
        let older = try KeyEventLog(inception: log.events[0])
        let stale = try issuer.delegation(in: older, position: 6, issuerSigner: issuer.signers[1])
        #expect(log.refusal(of: stale)?.code == .wrongSequence)
        #expect(log.refusal(of: good) == nil)
        try log.append(good)
        // A rotation after the delegation that skips it breaks the chain.
        let skipping = try SignedKeyEvent(
            .rotation(
                after: log.current, signingKey: issuer.signers[2].publicKey, nextKey: issuer.signers[3].publicKey,
                agreementKey: issuer.agreement.publicKey, ledgerPosition: 9),
            signer: issuer.signers[2], previous: issuer.signers[1])
        #expect(log.refusal(of: skipping)?.code == .wrongSequence)
    }

    @Test func urlsAndOrigins() throws {
        let key = try SoftwareSigner().publicKey
        func make(_ url: String, origin: KeyOrigin = .modulesWord) throws -> ClearingDelegation {
            try ClearingDelegation(clearingKey: key, clearingKeyOrigin: origin, tlsKeyDigest: Fixture.id(3), url: url)
        }
        _ = try make("https://")
        _ = try make("https://" + String(repeating: "a", count: 192))
        for bad in [
            "http://clearing.example", "https:/", "https://clearing.example/#top", "https://clearing example",
            "https://clearing.example/é", "https://" + String(repeating: "a", count: 193), "HTTPS://clearing.example",
        ] {
            #expect(throws: FormatError.self, "\(bad)") { _ = try make(bad) }
        }
        #expect(throws: FormatError.self) { _ = try make("https://ok", origin: .recoveryWords(Fixture.id(4))) }
    }

    /// The vector of docs/PROTOCOL.md ("Key events", kind 3), computed independently with Python's
    /// `cryptography` (the points 1·G and 2·G) and `struct`/`hashlib`.
    @Test func encodingVector() throws {
        let clearing = try ClearingDelegation(
            clearingKey: try P256.PublicKey(x963: Hex.decode(Self.twoG)!), clearingKeyOrigin: .modulesWord,
            tlsKeyDigest: Digest32(exactly: [UInt8](repeating: 0xCD, count: 32)),
            url: "https://clearing.example.org/v1")
        let previous = KeyEventDigest(exactly: [UInt8](repeating: 0x11, count: 32))
        let event = KeyEvent(
            kind: .clearingDelegation, sequence: 2, previousEvent: previous, signingKey: KeyEventV2Tests.generator,
            nextKeyDigest: .zero, agreementKey: KeyEventV2Tests.generator, ledgerPosition: 8, clearing: clearing)
        let bytes = event.encoded
        #expect(bytes.count == 246 + 31)
        #expect(Hex.encode(bytes) == Self.vector)
        #expect(event.digest.hex == Self.vectorDigest)
        // The digests the two signatures are made over (ECDSA is randomized, so the signed bytes are the vector).
        #expect(Hex.encode(ClearingDelegation.label.digest(of: bytes)) == Self.countersignedDigest)
        #expect(Hex.encode(KeyEvent.label.digest(of: bytes)) == Self.signedDigest)
        #expect(try KeyEvent.decode(bytes) == event)
        sweepEncoding(bytes, "clearing delegation", decode: KeyEvent.decode)
        // Only version 3 carries kind 3, and never at sequence 0.
        for version: UInt8 in [1, 2] {
            #expect(throws: FormatError.self, "version \(version)") { _ = try KeyEvent.decode([version] + bytes[1...]) }
        }
        var atZero = bytes
        atZero.replaceSubrange(2..<10, with: [UInt8](repeating: 0, count: 8))
        #expect(throws: FormatError.self) { _ = try KeyEvent.decode(atZero) }
    }

    @Test func aSignedDelegationSweepsEveryTruncationAndExtension() throws {
        let issuer = try Issuer()
        let log = try KeyEventLog(inception: try issuer.inception())
        let signed = try issuer.delegation(in: log, position: 4)
        #expect(try SignedKeyEvent.decode(signed.encoded) == signed)
        sweepEncoding(signed.encoded, "signed clearing delegation", decode: SignedKeyEvent.decode)
    }

    static let twoG =
        "047cf27b188d034f7e8a52380304b51ac3c08969e277f21b35a60b48fc4766997807775510db8ed040293d9ac69f7430dbba7dade"
        + "63ce982299e04b79d227873d1"
    static let vector =
        "030300000000000000021111111111111111111111111111111111111111111111111111111111111111"
        + "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce3357"
        + "6b315ececbb6406837bf51f5" + twoG + "01" + String(repeating: "00", count: 32)
        + String(repeating: "cd", count: 32) + "1f68747470733a2f2f636c656172696e672e6578616d706c652e6f72672f7631"
        + "0000000000000008"
    static let vectorDigest = "0bc8285b712690daecb2319653bbe1ce4bc5a205b209d3438ace08fb577ea3d0"
    static let countersignedDigest = "570329d6585b92191d3c3469a2de60424afa04a13523b6b938017d7e2d75558d"
    static let signedDigest = "d371ef28f8f7944e8523100f7839857c13786aafa241bf9c7bc21f5d1611d691"
}
