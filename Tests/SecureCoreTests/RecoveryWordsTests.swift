import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// BIP-39 encoding of recovery secrets, the derived recovery keys, and the key-event rules of a recovery rotation.
@Suite struct RecoveryWordsTests {
    /// The list compiled into the binary is Debian's python3-mnemonic english.txt byte for byte (one word a line).
    static let listSHA256 = "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda"
    static let debianList = "/usr/lib/python3/dist-packages/mnemonic/wordlist/english.txt"

    @Test func listIsPinned() throws {
        #expect(RecoveryWords.list.count == RecoveryWords.listCount)
        let text = RecoveryWords.list.joined(separator: "\n") + "\n"
        #expect(Hex.encode(SHA256.hash(Array(text.utf8))) == Self.listSHA256)
        #expect(RecoveryWords.list.allSatisfy { $0.utf8.count <= RecoveryWords.wordLengthMax })
        // Where the package is installed, the file itself has the pinned digest too.
        if let data = FileManager.default.contents(atPath: Self.debianList) {
            #expect(Hex.encode(SHA256.hash(Array(data))) == Self.listSHA256)
        }
    }

    /// BIP-39's 256-bit English test vectors (as python-mnemonic's vectors.json gives them).
    static let vectors: [(entropy: String, words: String)] = [
        (String(repeating: "00", count: 32), String(repeating: "abandon ", count: 23) + "art"),
        (
            String(repeating: "7f", count: 32),
            "legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth useful "
                + "legal winner thank year wave sausage worth title"
        ),
        (
            String(repeating: "80", count: 32),
            "letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor "
                + "acoustic avoid letter advice cage absurd amount doctor acoustic bless"
        ),
        (String(repeating: "ff", count: 32), String(repeating: "zoo ", count: 23) + "vote"),
        (
            "68a79eaca2324873eacc50cb9c6eca8cc68ea5d936f98787c60c7ebc74e6ce7c",
            "hamster diagram private dutch cause delay private meat slide toddler razor book happy fancy gospel "
                + "tennis maple dilemma loan word shrug inflict delay length"
        ),
    ]

    @Test func encodesAndDecodesTheVectors() throws {
        for (index, vector) in Self.vectors.enumerated() {
            let secret = SecretBytes(try #require(Hex.decode(vector.entropy)))
            #expect(RecoveryWords.words(of: secret).joined(separator: " ") == vector.words, "vector \(index)")
            #expect(try RecoveryWords.secret(of: vector.words) == secret, "vector \(index)")
            #expect(try RecoveryWords.secret(of: vector.words.uppercased() + "\n") == secret, "vector \(index) case")
        }
        for round in 0..<64 {
            let secret = SecretBytes(randomCount: 32)
            #expect(
                try RecoveryWords.secret(of: RecoveryWords.words(of: secret).joined(separator: " ")) == secret,
                "random round \(round)")
        }
    }

    @Test func mistypedWordsAreCaughtWithClearErrors() throws {
        var words = RecoveryWords.words(of: SecretBytes(randomCount: 32))
        let unknown = words.enumerated().map { $0.offset == 4 ? "abandom" : $0.element }.joined(separator: " ")
        #expect(throws: RecoveryWordsError(.unknownWord, "")) { try RecoveryWords.secret(of: unknown) }
        do {
            _ = try RecoveryWords.secret(of: unknown)
        } catch let error as RecoveryWordsError {
            #expect(error.message.contains("word 5"), "\(error.message)")
        }
        #expect(throws: RecoveryWordsError(.wrongCount, "")) {
            try RecoveryWords.secret(of: words.dropLast().joined(separator: " "))
        }
        // All zero entropy ends in "art"; "abandon" in its place keeps every word in the list but not the checksum.
        #expect(throws: RecoveryWordsError(.badChecksum, "")) {
            try RecoveryWords.secret(of: String(repeating: "abandon ", count: 24))
        }
        // Changing one word's 11 bits always changes the entropy; only 1 in 256 such changes passes the checksum.
        var failures = 0
        for replacement in RecoveryWords.list.prefix(64) where replacement != words[0] {
            words[0] = replacement
            if (try? RecoveryWords.secret(of: words.joined(separator: " "))) == nil { failures += 1 }
        }
        #expect(failures >= 56)
    }

    /// The vector in docs/PROTOCOL.md ("Recovery words"): secret 00 01 … 1f, computed independently with
    /// Python's hmac and cryptography.
    @Test func recoveryKeyDerivationVector() throws {
        let secret = SecretBytes(Array(0..<32))
        let first = try RecoveryKey(secret: secret, sequence: 0)
        #expect(
            Hex.encode(first.publicKey.x963)
                == "043d3be564dcf511f232bcb4957bdd36d7e0b20886ace85d1ef46e553db728f4924f0c905964bedef27830f77d1c686c"
                + "44954a8d8f282634e97bdeec8a4f29bca2")
        #expect(
            first.publicKey.fingerprintDigest.hex == "0f8b1ce54b1be7e8deeccef8b6f326fc70c147641bf624f9641288202c914976")
        let second = try RecoveryKey(secret: secret, sequence: 1)
        #expect(
            second.publicKey.fingerprintDigest.hex == "4e6e1c44337c2cf8997dcf4e40c8f3767c0c0a94d240255fe25c2d5c988078da"
        )
        let signature = try first.sign([1, 2, 3], label: KeyEvent.recoveryLabel)
        #expect(KeyEvent.recoveryLabel.verify(signature, of: [1, 2, 3], by: first.publicKey))
        #expect(!signature.isHighS)
    }

    /// A log whose events commit to recovery keys of `secret`, and a recovery rotation after its last event.
    struct RecoveringChain {
        let keys: KeyChain
        let secret = SecretBytes(randomCount: 32)
        var log: KeyEventLog

        init() throws {
            keys = try KeyChain(count: 4)
            let commitment = try RecoveryKey(secret: secret, sequence: 0).publicKey.fingerprintDigest
            log = try KeyEventLog(
                inception: try SignedKeyEvent(
                    .inception(
                        signingKey: keys.signers[0].publicKey, nextKey: keys.signers[1].publicKey,
                        agreementKey: keys.agreement.publicKey, recoveryCommitment: commitment),
                    signer: keys.signers[0]))
        }

        func recovery(newKey: SoftwareSigner, recoveryKey: MessageSigner? = nil, position: UInt64 = 4) throws
            -> SignedKeyEvent
        {
            let previous = log.current
            let event = KeyEvent.recoveryRotation(
                after: previous, signingKey: newKey.publicKey, nextKey: try SoftwareSigner().publicKey,
                agreementKey: keys.agreement.publicKey, ledgerPosition: position,
                recoveryCommitment: try RecoveryKey(secret: secret, sequence: previous.sequence + 1).publicKey
                    .fingerprintDigest)
            guard let recoveryKey else {
                let committed = try RecoveryKey(secret: secret, sequence: previous.sequence)
                return try SignedKeyEvent(recovery: event, signer: newKey, recoveryKey: committed)
            }
            return SignedKeyEvent(
                event: event, signature: try newKey.sign(event.encoded, label: KeyEvent.label),
                recovery: RecoverySignature(
                    key: recoveryKey.publicKey,
                    signature: try recoveryKey.sign(event.encoded, label: KeyEvent.recoveryLabel)))
        }
    }

    @Test func aRecoveryRotationSignedByTheCommittedKeyIsAccepted() throws {
        var chain = try RecoveringChain()
        let newKey = try SoftwareSigner()
        let recovery = try chain.recovery(newKey: newKey)
        #expect(recovery.event.origin == .recoveryWords(chain.log.current.recoveryCommitment))
        #expect(recovery.event.origin.description == "recovery words")
        // It survives its encoding, and the log, re-verified from scratch, accepts it.
        #expect(try SignedKeyEvent.decode(recovery.encoded) == recovery)
        try chain.log.append(recovery)
        #expect(try KeyEventLog(verifying: chain.log.events, walletID: chain.log.walletID) == chain.log)
        #expect(chain.log.current.signingKey == newKey.publicKey)
        // A second recovery signs with the key the recovery rotation committed to (sequence 1); the used key
        // (sequence 0) is refused.
        let stale = try chain.recovery(
            newKey: try SoftwareSigner(), recoveryKey: try RecoveryKey(secret: chain.secret, sequence: 0), position: 8)
        #expect(chain.log.refusal(of: stale)?.code == .uncommittedKey)
        try chain.log.append(try chain.recovery(newKey: try SoftwareSigner(), position: 8))
        #expect(chain.log.current.sequence == 2)
    }

    /// Every truncation of a signed recovery rotation is short input or an error, never a trap, and an extra
    /// byte is an error. A key retired by a recovery still signing after it is provable evidence.
    @Test func recoveryRotationsDecodeStrictlyAndRetireTheLostKey() throws {
        var chain = try RecoveringChain()
        let recovery = try chain.recovery(newKey: try SoftwareSigner())
        let bytes = recovery.encoded
        for length in 0..<bytes.count {
            let decoded = try? SignedKeyEvent.decode(Array(bytes.prefix(length)))
            #expect(decoded == nil, "truncated to \(length)")
        }
        #expect(throws: FormatError.self) { try SignedKeyEvent.decode(bytes + [0]) }
        try chain.log.append(recovery)
        let late = try chain.keys.checkpoint(chain.log, sequence: 0, size: 9)
        #expect(chain.log.check(late) == .retired(recovery))
        #expect(RetiredKeySignature(retiredEvent: chain.log.events[0], rotation: recovery, checkpoint: late).isProven)
    }

    @Test func onlyTheCommittedRecoveryKeyMayRecover() throws {
        let chain = try RecoveringChain()
        // Another secret's key: refused as uncommitted, by the log and already by the decoder's own check.
        let other = try RecoveryKey(secret: SecretBytes(randomCount: 32), sequence: 0)
        let signer = try SoftwareSigner()
        let forgedEvent = KeyEvent.recoveryRotation(
            after: chain.log.current, signingKey: signer.publicKey, nextKey: try SoftwareSigner().publicKey,
            agreementKey: chain.keys.agreement.publicKey, ledgerPosition: 4, recoveryCommitment: .zero)
        let forged = SignedKeyEvent(
            event: forgedEvent, signature: try signer.sign(forgedEvent.encoded, label: KeyEvent.label),
            recovery: RecoverySignature(
                key: other.publicKey, signature: try other.sign(forgedEvent.encoded, label: KeyEvent.recoveryLabel)))
        #expect(chain.log.refusal(of: forged)?.code == .uncommittedKey)
        #expect(throws: FormatError.self) { try SignedKeyEvent.decode(forged.encoded) }
        // The committed key's signature over another event does not carry over.
        let honest = try chain.recovery(newKey: try SoftwareSigner())
        let moved = SignedKeyEvent(
            event: forgedEvent, signature: try signer.sign(forgedEvent.encoded, label: KeyEvent.label),
            recovery: honest.recovery)
        #expect(chain.log.refusal(of: moved)?.code == .uncommittedKey)
        // A wallet that committed to no recovery key cannot be recovered by words at all.
        let plain = try KeyEventLog(inception: try chain.keys.inception())
        let unclaimed = KeyEvent.rotation(
            after: plain.current, signingKey: signer.publicKey, nextKey: try SoftwareSigner().publicKey,
            agreementKey: chain.keys.agreement.publicKey, ledgerPosition: 4)
        #expect(plain.refusal(of: try SignedKeyEvent(unclaimed, signer: signer))?.code == .uncommittedKey)
    }
}
