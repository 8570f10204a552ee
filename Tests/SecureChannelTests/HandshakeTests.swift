import SecureCrypto
import Testing

@testable import SecureChannel

@Suite("Handshake state machines")
struct HandshakeTests {
    static let names = ["commit", "hello", "reveal", "response", "responder confirm", "initiator confirm"]

    @Test func bothSidesAgree() throws {
        var (initiator, responder) = fixedPair()
        let run = try drive(&initiator, &responder)
        #expect(run.messages.count == 6)
        let mine = try #require(run.initiator).summary, theirs = try #require(run.responder).summary
        #expect(mine.role == .initiator && theirs.role == .responder)
        #expect(mine.sessionId == theirs.sessionId && mine.sessionId.count == 16)
        #expect(mine.channelBinding == theirs.channelBinding && mine.channelBinding.count == 32)
        #expect(mine.transcriptHash == theirs.transcriptHash)
        #expect(mine.initiatorContribution == theirs.initiatorContribution)
        #expect(mine.responderContribution == theirs.responderContribution)
        #expect(mine.sas == theirs.sas && mine.sas.digits.count == 6 && mine.sas.words.count == 3)
        #expect(mine.channelBinding != mine.transcriptHash)
        // Records sealed by one side open on the other, both ways.
        var sealer = run.initiator!.makeSealer(), opener = run.responder!.makeOpener()
        #expect(
            try opener.open(sealer.seal(ChannelRecord(type: 7, payload: [1, 2, 3])))
                == ChannelRecord(type: 7, payload: [1, 2, 3]))
        var backSealer = run.responder!.makeSealer(), backOpener = run.initiator!.makeOpener()
        #expect(
            try backOpener.open(backSealer.seal(ChannelRecord(type: 9, payload: [])))
                == ChannelRecord(type: 9, payload: []))
    }

    @Test func messageSizesMatchTheDocument() throws {
        var (initiator, responder) = fixedPair()
        let run = try drive(&initiator, &responder)
        #expect(run.messages.map(\.count) == [34, 1239, 2361, 1123, 33, 33])
    }

    /// SAS = SHA-256("secure-sas-v2" ‖ commitment ‖ contribution_I ‖ contribution_R), recomputed here
    /// from the issue's formula and the bytes on the wire.
    @Test func sasIsTheIssuesFormula() throws {
        var (initiator, responder) = fixedPair()
        let run = try drive(&initiator, &responder)
        let commitment = Array(run.messages[0][2...])
        let responderContribution = Array(run.messages[1][1...])
        let initiatorContribution = Array(run.messages[2][1..<(1 + responderContribution.count)])
        let expected = SHA256.hash(
            Array("secure-sas-v2".utf8) + commitment + initiatorContribution + responderContribution)
        let sas = run.initiator!.summary.sas
        #expect(sas.value == expected)
        let number =
            UInt32(expected[0]) << 24 | UInt32(expected[1]) << 16 | UInt32(expected[2]) << 8 | UInt32(expected[3])
        #expect(Int(sas.digits) == Int(number % 1_000_000))
        var indices: [Int] = []
        for byte in expected where indices.count < 3 && !indices.contains(Int(byte)) { indices.append(Int(byte)) }
        #expect(sas.words == indices.map { SASWords.list[$0] })
        #expect(commitment == SHA256.hash(Array("secure-channel-commit-v1".utf8) + [0] + initiatorContribution))
    }

    @Test func wordListHas256DistinctShortWords() {
        #expect(SASWords.list.count == 256)
        #expect(Set(SASWords.list).count == 256)
        #expect(SASWords.list.allSatisfy { $0.count >= 3 && $0.count <= 8 && $0.allSatisfy(\.isLowercase) })
    }

    @Test func freshHandshakesDiffer() throws {
        var first = (Initiator(), Responder()), second = (Initiator(), Responder())
        let a = try drive(&first.0, &first.1), b = try drive(&second.0, &second.1)
        #expect(a.initiator!.summary.sessionId != b.initiator!.summary.sessionId)
        #expect(a.initiator!.summary.sas != b.initiator!.summary.sas)
    }

    /// The machines at every stage of one honest run, with the frames that run sent.
    struct Stages {
        var frames: [[UInt8]] = []
        /// (name, machine, index of the one frame this stage accepts)
        var initiator: [(String, Initiator, Int?)] = []
        var responder: [(String, Responder, Int?)] = []
    }

    static func stages() throws -> Stages {
        var stages = Stages()
        var (i, r) = fixedPair()
        func pump(_ actions: [HandshakeAction]) { for case .send(let body) in actions { stages.frames.append(body) } }
        stages.initiator.append(("ready", i, nil))
        pump(i.start())
        stages.responder.append(("awaiting commit", r, 0))
        pump(try r.receive(stages.frames[0]))
        stages.initiator.append(("awaiting hello", i, 1))
        pump(try i.receive(stages.frames[1]))
        stages.responder.append(("awaiting reveal", r, 2))
        pump(try r.receive(stages.frames[2]))
        stages.initiator.append(("awaiting response", i, 3))
        pump(try i.receive(stages.frames[3]))
        stages.initiator.append(("awaiting responder confirm", i, 4))
        pump(try i.receive(stages.frames[4]))
        stages.initiator.append(("complete", i, nil))
        stages.responder.append(("awaiting initiator confirm", r, 5))
        pump(try r.receive(stages.frames[5]))
        stages.responder.append(("complete", r, nil))
        return stages
    }

    /// Every one of the six messages (and a record) is injected into every stage of both machines. A
    /// machine accepts only the message its stage expects; anything else throws and leaves it failed, so
    /// that even the expected message is refused afterwards.
    @Test func everyMessageAtEveryStage() throws {
        let stages = try Self.stages()
        var (i, r) = fixedPair()
        let honest = try drive(&i, &r)
        var sealer = honest.initiator!.makeSealer()
        let candidates = stages.frames + [try sealer.seal(ChannelRecord(type: 1, payload: [1]))]
        let names = Self.names + ["record"]
        var refused = 0

        func check<M>(
            _ side: String, _ list: [(String, M, Int?)], _ receive: (inout M, [UInt8]) throws -> [HandshakeAction]
        ) {
            for (stage, machine, expected) in list {
                if let expected {
                    var copy = machine
                    #expect(throws: Never.self, "\(side) \(stage) accepts \(names[expected])") {
                        _ = try receive(&copy, candidates[expected])
                    }
                }
                for (index, candidate) in candidates.enumerated() where index != expected {
                    var copy = machine
                    #expect(throws: ChannelError.self, "\(side) \(stage): \(names[index])") {
                        _ = try receive(&copy, candidate)
                    }
                    if let expected {
                        #expect(throws: ChannelError.self, "\(side) \(stage): \(names[expected]) after \(names[index])")
                        {
                            _ = try receive(&copy, candidates[expected])
                        }
                    }
                    refused += 1
                }
            }
        }
        check("initiator", stages.initiator) { try $0.receive($1) }
        check("responder", stages.responder) { try $0.receive($1) }
        #expect(refused == (7 + 6 + 6 + 6 + 7) + (6 + 6 + 6 + 7))
    }

    /// Every proper prefix of every message is "short" to the decoder and refused by the machine in the
    /// stage that expects the message; every one-byte extension is refused too.
    @Test func everyTruncationAndExtension() throws {
        let stages = try Self.stages()
        let frames = stages.frames
        #expect(frames.count == 6)
        var prefixes = 0
        for (index, message) in frames.enumerated() {
            #expect(try HandshakeMessage.decode(message) != nil, "\(Self.names[index]) decodes")
            let initiatorStage = stages.initiator.first { $0.2 == index }?.1
            let responderStage = stages.responder.first { $0.2 == index }?.1
            for length in 0..<message.count {
                let prefix = Array(message[0..<length])
                let decoded = try HandshakeMessage.decode(prefix)
                #expect(decoded == nil, "\(Self.names[index]) cut to \(length) bytes decodes as short")
                if var machine = initiatorStage {
                    #expect(
                        errorCode { _ = try machine.receive(prefix) } == .truncated,
                        "\(Self.names[index]) cut to \(length)")
                } else if var machine = responderStage {
                    #expect(
                        errorCode { _ = try machine.receive(prefix) } == .truncated,
                        "\(Self.names[index]) cut to \(length)")
                }
                prefixes += 1
            }
            #expect(
                errorCode { _ = try HandshakeMessage.decode(message + [0]) } == .malformed,
                "\(Self.names[index]) + 1 byte")
        }
        #expect(prefixes == frames.map(\.count).reduce(0, +))
    }

    @Test func wrongCommitmentOpening() throws {
        var (initiator, responder) = fixedPair()
        // Change one random byte of the revealed contribution: it no longer opens the commitment.
        #expect(throws: ChannelError(.commitmentMismatch, "")) {
            _ = try drive(&initiator, &responder) { index, body in
                guard index == 2 else { return body }
                var altered = body
                let responderContributionCount = 1 + 1 + 2 + 2 + XWing.publicKeyByteCount + 16 - 1
                altered[responderContributionCount] ^= 0x01
                return altered
            }
        }
        // A reveal from another session (a different contribution) fails the same way.
        var (other, otherResponder) = fixedPair(9)
        let foreign = try drive(&other, &otherResponder).messages[2]
        var (i, r) = fixedPair()
        #expect(throws: ChannelError(.commitmentMismatch, "")) {
            _ = try drive(&i, &r) { index, body in index == 2 ? foreign : body }
        }
    }

    /// The responder's suite list is changed in transit (a downgrade attempt): the initiator accepts the
    /// hello, but the two transcripts differ, so the responder's confirmation fails at the initiator.
    @Test func alteredNegotiationFailsKeyConfirmation() throws {
        var initiator = Initiator(
            privateKey: fixedKey(1), random: fixedRandom(1), suites: [.xwingAES256GCM, ChannelSuite(rawValue: 0x0002)])
        var responder = Responder(
            privateKey: fixedKey(2), random: fixedRandom(2), suites: [.xwingAES256GCM, ChannelSuite(rawValue: 0x0002)])
        #expect(throws: ChannelError(.keyConfirmationFailed, "")) {
            _ = try drive(&initiator, &responder) { index, body in
                guard index == 1 else { return body }
                // hello = 0x02 ‖ version ‖ count=2 ‖ 0x0001 ‖ 0x0002 ‖ …: drop the second suite.
                var altered = body
                altered[2] = 1
                altered.removeSubrange(5..<7)
                return altered
            }
        }
    }

    @Test func tamperedConfirmationsAndCiphertexts() throws {
        for (index, name) in [(3, "response ciphertext"), (4, "responder confirm"), (5, "initiator confirm")] {
            var (initiator, responder) = fixedPair()
            #expect(throws: ChannelError(.keyConfirmationFailed, ""), "\(name)") {
                _ = try drive(&initiator, &responder) { at, body in
                    guard at == index else { return body }
                    var altered = body
                    // Inside the ML-KEM part of the ciphertext, or the MAC's last byte.
                    altered[altered.count - (index == 3 ? 50 : 1)] ^= 0x01
                    return altered
                }
            }
        }
        // The reveal's ciphertext (after the contribution) altered: the responder decapsulates a different
        // secret (ML-KEM implicit rejection), so the initiator's check of the responder's MAC fails.
        var (initiator, responder) = fixedPair()
        #expect(throws: ChannelError(.keyConfirmationFailed, "")) {
            _ = try drive(&initiator, &responder) { at, body in
                guard at == 2 else { return body }
                var altered = body
                altered[altered.count - 100] ^= 0x01
                return altered
            }
        }
    }

    @Test func versionAndSuiteMismatch() throws {
        var (initiator, responder) = fixedPair()
        #expect(throws: ChannelError(.unsupportedVersion, "")) {
            _ = try drive(&initiator, &responder) { index, body in
                guard index == 0 else { return body }
                var altered = body
                altered[1] = 2
                return altered
            }
        }
        var other = Responder(privateKey: fixedKey(3), random: fixedRandom(3))
        var lying = Initiator(privateKey: fixedKey(4), random: fixedRandom(4))
        #expect(throws: ChannelError(.noCommonSuite, "")) {
            _ = try drive(&lying, &other) { index, body in
                guard index == 1 else { return body }
                var altered = body
                altered[4] = 0x09 // hello's only suite becomes 0x0009
                return altered
            }
        }
    }

    @Test func invalidPeerKeyIsRefused() throws {
        var (initiator, responder) = fixedPair()
        #expect(throws: ChannelError(.invalidPeerKey, "")) {
            _ = try drive(&initiator, &responder) { index, body in
                guard index == 1 else { return body }
                var altered = body
                // The X25519 part of the key (the last 32 bytes before the random) becomes 0: low order.
                let keyEnd = body.count - Contribution.randomByteCount
                for position in (keyEnd - 32)..<keyEnd { altered[position] = 0 }
                return altered
            }
        }
    }
}
