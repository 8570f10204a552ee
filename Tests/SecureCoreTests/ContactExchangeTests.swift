import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// One wallet in a contact exchange: its software wallet (the signer and the key-event log), its long-term
/// ML-KEM-1024 contact key, and the card it sends.
struct ContactParty {
    let wallet: SoftwareWallet
    let contactKey: MLKEM1024.PrivateKey
    let card: ContactCard

    var walletID: WalletID { card.walletID }
    var signer: SoftwareSigner { wallet.signer }
}

/// THE one place where a test wallet's key-event log and contact card are made. The log's current event must
/// commit to the card's contact key (`KeyEvent.contactKeyDigest(of:)`, a key-event v3 field); until that field
/// exists the digest is a stand-in, and this is the function to adapt when it does.
func makeContactParty(seed: UInt64) throws -> ContactParty {
    // The software wallet's log commits to its contact key (key event version 3), as a real wallet's does.
    let wallet = try SoftwareWallet(seed: seed)
    let contactKey = wallet.contactKey
    precondition(wallet.log.current.contactKeyDigest == KeyEvent.contactKeyDigest(of: contactKey.publicKey))
    let card = ContactCard(log: wallet.log, contactKey: contactKey.publicKey, trustedIssuers: [])
    return ContactParty(wallet: wallet, contactKey: contactKey, card: card)
}

/// What a secure channel hands both ends once its handshake is done: the transcript hash, the binding and
/// the SAS inputs. Seeded, so two channels (a relay's) differ in every value.
struct ChannelFacts {
    let transcriptHash: Digest32
    let binding: [UInt8]
    let wordsInput: ContactWordsInput

    init(seed: UInt8) {
        let bytes = SHAKE256.hash(Array("channel".utf8) + [seed], outputByteCount: 32 + 32 + 32 + 2 * 1_238)
        transcriptHash = Digest32(exactly: Array(bytes[0..<32]))
        binding = Array(bytes[32..<64])
        wordsInput = ContactWordsInput(
            commitment: Array(bytes[64..<96]), initiatorContribution: Array(bytes[96..<1_334]),
            responderContribution: Array(bytes[1_334..<2_572]))
    }
}

/// How one side behaves: its ranging, its policy and its person's answer.
struct SideScript {
    var millimetres: UInt32 = 120
    var source = RangingSource.external
    var allowsSimulated = false
    var accepts = true

    var summary: RangingSummary {
        try! RangingSummary(medianMillimetres: millimetres, spreadMillimetres: 30, sampleCount: 12)
    }
}

/// Two contact machines run against each other in process. Each side's actions are carried out as the driver
/// does (software signers, real ML-KEM-1024); sent messages cross through their wire encoding, and `transit`
/// may drop or change them. When both sides wait with nothing to read, the timer of the first waiting side
/// fires (or its link drops).
struct ContactExchangeRun {
    struct Side {
        var machine: ContactExchangeMachine
        let party: ContactParty
        let script: SideScript
        var pending: [ContactAction] = []
        var inbox: [ContactMessage] = []
        /// Every message this side's machine asked to send, before transit.
        var sent: [ContactMessage] = []
        /// The names of the driver actions carried out (range, signMeasurement, encapsulate, …).
        var performed: [String] = []
        var reviews: [ContactReview] = []
        var outcome: ContactOutcome?
        /// A copy of the machine at each stage, named by what it waits for or what it asks next.
        var stages: [(name: String, machine: ContactExchangeMachine)] = []
    }

    enum Stuck { case timeout, linkDrop }

    var sides: [Side]
    var transit: (_ from: Int, _ message: ContactMessage) -> ContactMessage? = { $1 }
    var stuck = Stuck.timeout

    /// Side 0 is the channel's initiator, side 1 its responder; a relay gives each its own channel.
    init(
        _ initiator: ContactParty, _ responder: ContactParty, scripts: (SideScript, SideScript) = (.init(), .init()),
        channels: (ChannelFacts, ChannelFacts) = (ChannelFacts(seed: 1), ChannelFacts(seed: 1)), nonceSeed: UInt8 = 0
    ) {
        func side(_ party: ContactParty, _ role: ContactRole, _ script: SideScript, _ channel: ChannelFacts) -> Side {
            let context = ContactExchangeContext(
                role: role, transcriptHash: channel.transcriptHash, channelBinding: channel.binding,
                wordsInput: channel.wordsInput, card: party.card,
                nonceContribution: NonceContribution(
                    exactly: SHAKE256.hash([nonceSeed, role.rawValue], outputByteCount: NonceContribution.byteCount)),
                policy: RangingPolicy(allowsSimulated: script.allowsSimulated))
            return Side(machine: ContactExchangeMachine(context: context), party: party, script: script)
        }
        sides = [
            side(initiator, .initiator, scripts.0, channels.0), side(responder, .responder, scripts.1, channels.1),
        ]
    }

    mutating func run() throws {
        for index in sides.indices {
            record(index, stage: "before start")
            sides[index].pending = sides[index].machine.start()
        }
        for _ in 0..<1_000 {
            if try !step() {
                guard
                    let waiting = sides.indices.first(where: {
                        sides[$0].outcome == nil && sides[$0].machine.wait != nil
                    })
                else { return }
                sides[waiting].pending +=
                    stuck == .timeout ? sides[waiting].machine.timeoutExpired() : sides[waiting].machine.linkDropped()
            }
        }
        Issue.record("the exchange did not end in 1,000 steps")
    }

    /// One action or one delivery on each side that can move; false when neither could.
    private mutating func step() throws -> Bool {
        var moved = false
        for index in sides.indices where sides[index].outcome == nil {
            if !sides[index].pending.isEmpty {
                let action = sides[index].pending.removeFirst()
                record(index, stage: stageName(of: sides[index].machine, before: action))
                sides[index].pending += try perform(action, on: index)
                moved = true
            } else if sides[index].machine.wait != nil, !sides[index].inbox.isEmpty {
                let message = sides[index].inbox.removeFirst()
                do {
                    sides[index].pending += try sides[index].machine.receive(message)
                } catch let error as ContactProtocolError {
                    sides[index].pending += error.actions
                }
                moved = true
            }
        }
        return moved
    }

    /// What a machine waits for, or the driver action it asked for; "finished" once it has an outcome.
    private func stageName(of machine: ContactExchangeMachine, before action: ContactAction) -> String {
        if machine.outcome != nil { return "finished" }
        return machine.wait.map { "waiting for \($0.rawValue)" } ?? "before \(name(of: action))"
    }

    private mutating func record(_ index: Int, stage: String) {
        guard !sides[index].stages.contains(where: { $0.name == stage }) else { return }
        sides[index].stages.append((stage, sides[index].machine))
    }

    private mutating func perform(_ action: ContactAction, on index: Int) throws -> [ContactAction] {
        sides[index].performed.append(name(of: action))
        let party = sides[index].party
        let script = sides[index].script
        switch action {
        case .range:
            return sides[index].machine.ranged(script.summary, source: script.source)
        case .send(let message):
            sides[index].sent.append(message)
            // Through the wire encoding, as the channel carries it.
            let decoded = try #require(try ContactMessage.decode(message.encoded))
            #expect(decoded == message, "\(message.name) survives its encoding")
            if let delivered = transit(index, decoded) { sides[1 - index].inbox.append(delivered) }
            return []
        case .signMeasurement(let measurement):
            return sides[index].machine.measurementSigned(
                try SignedContactMeasurement(signing: measurement, with: party.signer))
        case .encapsulate(let key):
            let (shared, ciphertext) = key.encapsulate()
            return sides[index].machine.encapsulated(ciphertext: ciphertext, shared: shared)
        case .decapsulate(let ciphertext):
            return sides[index].machine.decapsulated(try party.contactKey.decapsulate(ciphertext))
        case .review(let review):
            sides[index].reviews.append(review)
            return sides[index].machine.reviewed(accepted: script.accepts)
        case .signConfirm(let confirm):
            return sides[index].machine.confirmSigned(try SignedContactConfirm(signing: confirm, with: party.signer))
        case .finish(let outcome):
            sides[index].outcome = outcome
            record(index, stage: "finished")
            return []
        }
    }

    func name(of action: ContactAction) -> String {
        switch action {
        case .range: "range"
        case .send(let message): "send \(message.name)"
        case .signMeasurement: "signMeasurement"
        case .encapsulate: "encapsulate"
        case .decapsulate: "decapsulate"
        case .review: "review"
        case .signConfirm: "signConfirm"
        case .finish: "finish"
        }
    }

    /// The kinds of every message either side asked to send.
    var sentKinds: Set<String> { Set(sides.flatMap { $0.sent.map(\.name) }) }
}

/// The contact added by an outcome, if any.
func addedContact(_ outcome: ContactOutcome?) -> ContactExchangeResult? {
    if case .added(let result) = outcome { return result }
    return nil
}

/// The failure of an outcome, if any.
func exchangeFailure(_ outcome: ContactOutcome?) -> (reason: ContactFailure.Reason, byPeer: Bool, text: String)? {
    if case .failed(let reason, let byPeer, let text) = outcome { return (reason, byPeer, text) }
    return nil
}

/// Whether `needle` occurs in `haystack` as consecutive bytes.
func bytes(_ haystack: [UInt8], contain needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
}

/// Issue 17's contact exchange (docs/PROTOCOL.md, "Contacts → The exchange"): two ContactExchangeMachines
/// against each other with software signers and real ML-KEM-1024; the gate, every message at every stage,
/// forged measurements, a relay, words grinding, and the contact secret's known answers.
@Suite("Contact exchange")
struct ContactExchangeTests {
    let alice: ContactParty
    let bob: ContactParty

    init() throws {
        alice = try makeContactParty(seed: 17)
        bob = try makeContactParty(seed: 71)
    }

    // MARK: The honest exchange

    @Test func bothSidesGetTheSameWordsAndSecretAndEndVerified() throws {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        let first = try #require(
            addedContact(run.sides[0].outcome), "initiator: \(String(describing: run.sides[0].outcome))")
        let second = try #require(
            addedContact(run.sides[1].outcome), "responder: \(String(describing: run.sides[1].outcome))")
        #expect(first.verified && second.verified)
        #expect(first.peer.walletID == bob.walletID && second.peer.walletID == alice.walletID)
        #expect(first.peer.contactKey == bob.card.contactKey && second.peer.contactKey == alice.card.contactKey)
        #expect(first.secret.count == ContactSecret.byteCount)
        #expect(first.secret == second.secret)
        #expect(first.words == second.words)
        #expect(first.words == ContactWords(ChannelFacts(seed: 1).wordsInput))
        #expect(run.sides.map { $0.reviews.map(\.words) } == [[first.words], [first.words]])
        #expect(run.sides[0].reviews.first?.ownMillimetres == 120 && run.sides[0].reviews.first?.peerMillimetres == 120)
        #expect(first.medianMillimetres == 120 && first.source == .external)
        #expect(
            try ContactSecret.discoveryKey(secret: first.secret) == ContactSecret.discoveryKey(secret: second.secret))
        // The order the protocol gives: the gate, then identities, measurements, encapsulations, confirms.
        for side in run.sides {
            #expect(side.sent.map(\.name) == ["gate", "card", "measurement", "encapsulation", "confirm"])
            #expect(
                side.performed == [
                    "range", "send gate", "send card", "signMeasurement", "send measurement", "encapsulate",
                    "send encapsulation", "decapsulate", "review", "signConfirm", "send confirm", "finish",
                ])
        }
        // Two exchanges of the same wallets on the same channel facts share words but never a secret: each
        // encapsulation is fresh.
        var again = ContactExchangeRun(alice, bob)
        try again.run()
        #expect(addedContact(again.sides[0].outcome)?.secret != first.secret)
    }

    @Test func aDeclineOnEitherSideStoresNothingOnBoth() throws {
        for decliner in 0..<2 {
            var scripts = (SideScript(), SideScript())
            if decliner == 0 { scripts.0.accepts = false } else { scripts.1.accepts = false }
            var run = ContactExchangeRun(alice, bob, scripts: scripts)
            try run.run()
            for index in 0..<2 {
                let ended = try #require(
                    exchangeFailure(run.sides[index].outcome), "decliner \(decliner), side \(index)")
                #expect(ended.reason == .declined, "decliner \(decliner), side \(index)")
                #expect(ended.byPeer == (index != decliner), "decliner \(decliner), side \(index)")
            }
            #expect(!run.sides[decliner].sent.contains { $0.name == "confirm" }, "decliner \(decliner)")
        }
    }

    /// The confirm of one side is lost: the other has confirmed and keeps the contact as unconfirmed when its
    /// timer fires or its link drops; the side whose confirm was lost got the other's and ends verified.
    @Test func aLostConfirmEndsUnconfirmedOnTheSideWaitingForIt() throws {
        for (lost, stuck) in [(0, ContactExchangeRun.Stuck.timeout), (1, .timeout), (0, .linkDrop), (1, .linkDrop)] {
            var run = ContactExchangeRun(alice, bob)
            run.stuck = stuck
            run.transit = { from, message in from == lost && message.name == "confirm" ? nil : message }
            try run.run()
            let waiting = try #require(addedContact(run.sides[1 - lost].outcome), "lost \(lost), \(stuck)")
            let other = try #require(addedContact(run.sides[lost].outcome), "lost \(lost), \(stuck)")
            #expect(!waiting.verified, "lost \(lost), \(stuck)")
            #expect(other.verified, "lost \(lost), \(stuck)")
            #expect(waiting.secret == other.secret, "lost \(lost), \(stuck)")
        }
        // Before the confirm stage a timeout stores nothing: here the responder goes silent after its card.
        var early = ContactExchangeRun(alice, bob)
        early.transit = { from, message in from == 1 && !["gate", "card"].contains(message.name) ? nil : message }
        try early.run()
        for side in early.sides {
            #expect(exchangeFailure(side.outcome).map { $0.reason == .localFailure && $0.byPeer } == true)
        }
    }

    // MARK: The proximity gate

    /// At 300 mm on either side, with a 150 mm disagreement, or with simulated ranging that either side's policy
    /// refuses, the gate stays closed on both sides and no identity was sent by either: only gates and failures
    /// were asked for, and no sent byte holds either wallet id.
    @Test func aClosedGateSendsNoIdentity() throws {
        let simulated = SideScript(millimetres: 120, source: .simulated, allowsSimulated: false)
        let simulatedAllowed = SideScript(millimetres: 120, source: .simulated, allowsSimulated: true)
        let cases: [(String, SideScript, SideScript)] = [
            ("initiator at 300 mm", SideScript(millimetres: 300), SideScript(millimetres: 240)),
            ("responder at 300 mm", SideScript(millimetres: 240), SideScript(millimetres: 300)),
            ("initiator at 251 mm", SideScript(millimetres: 251), SideScript(millimetres: 200)),
            ("150 mm apart", SideScript(millimetres: 80), SideScript(millimetres: 230)),
            ("101 mm apart", SideScript(millimetres: 249), SideScript(millimetres: 148)),
            ("both simulated, no policy", simulated, simulated),
            ("initiator simulated, no policy", simulated, SideScript()),
            ("both simulated, only the initiator allows", simulatedAllowed, simulated),
            ("both simulated, only the responder allows", simulated, simulatedAllowed),
            // The side that allows simulated ranging must not send its card to a side that refuses it.
            ("initiator simulated and allowing, responder refusing", simulatedAllowed, SideScript()),
            ("responder simulated and allowing, initiator refusing", SideScript(), simulatedAllowed),
        ]
        for (name, first, second) in cases {
            var run = ContactExchangeRun(alice, bob, scripts: (first, second))
            try run.run()
            #expect(run.sentKinds.isSubset(of: ["gate", "failure"]), "\(name): \(run.sentKinds)")
            for side in run.sides {
                #expect(
                    exchangeFailure(side.outcome)?.reason == .gateClosed, "\(name): \(String(describing: side.outcome))"
                )
                for message in side.sent {
                    for id in [alice.walletID, bob.walletID] {
                        #expect(!bytes(message.encoded, contain: id.bytes), "\(name): a wallet id in a \(message.name)")
                    }
                }
            }
        }
    }

    @Test func theGateOpensWithinItsBounds() throws {
        let cases: [(String, SideScript, SideScript)] = [
            ("both at 250 mm", SideScript(millimetres: 250), SideScript(millimetres: 250)),
            ("100 mm apart", SideScript(millimetres: 250), SideScript(millimetres: 150)),
            ("touching", SideScript(millimetres: 0), SideScript(millimetres: 0)),
            (
                "both simulated, both allow", SideScript(source: .simulated, allowsSimulated: true),
                SideScript(source: .simulated, allowsSimulated: true)
            ),
            (
                "initiator simulated, both allow", SideScript(source: .simulated, allowsSimulated: true),
                SideScript(allowsSimulated: true)
            ),
        ]
        for (name, first, second) in cases {
            var run = ContactExchangeRun(alice, bob, scripts: (first, second))
            try run.run()
            let result = try #require(
                addedContact(run.sides[0].outcome), "\(name): \(String(describing: run.sides[0].outcome))")
            #expect(result.verified, "\(name)")
            #expect(result.medianMillimetres == max(first.millimetres, second.millimetres), "\(name)")
            let simulated = first.source == .simulated || second.source == .simulated
            #expect(result.source == (simulated ? .simulated : .external), "\(name)")
        }
    }

    // MARK: Every message at every stage

    /// Every message of an honest run (both sides' gate, card, measurement, encapsulation and confirm) and a
    /// failure of each reason, injected into a copy of each side's machine at each stage it passed through.
    /// A message that is not the one awaited ends the exchange as a violation; a failure ends it as the peer's
    /// failure; nothing is ever added; after the end nothing changes.
    @Test func everyMessageAtEveryStage() throws {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        let catalog =
            run.sides.flatMap(\.sent)
            + [ContactFailure.Reason.gateClosed, .declined, .violation, .localFailure].map {
                ContactMessage.failure(ContactFailure(reason: $0))
            }
        var injected = 0
        for (index, side) in run.sides.enumerated() {
            #expect(side.stages.count >= 12, "side \(index) passed through \(side.stages.map(\.name))")
            for stage in side.stages {
                for message in catalog {
                    let label = "side \(index), \(stage.name), \(message.name)"
                    if stage.name == "waiting for \(message.name)" { continue } // the awaited kind: checked elsewhere
                    var machine = stage.machine
                    let before = machine.outcome
                    let actions: [ContactAction]
                    do {
                        actions = try machine.receive(message)
                    } catch let error as ContactProtocolError {
                        actions = error.actions
                    }
                    injected += 1
                    if stage.name == "finished" {
                        #expect(actions.isEmpty, "\(label): an ended exchange does nothing")
                        #expect(addedContact(machine.outcome)?.verified == addedContact(before)?.verified, "\(label)")
                        #expect(addedContact(machine.outcome) != nil, "\(label): the stored contact stays")
                        continue
                    }
                    let ended = try #require(
                        exchangeFailure(machine.outcome), "\(label): \(String(describing: machine.outcome))")
                    if case .failure(let peerFailure) = message {
                        #expect(ended.reason == peerFailure.reason && ended.byPeer, "\(label)")
                        #expect(actions.count == 1, "\(label): only finish")
                    } else {
                        #expect(ended.reason == .violation && !ended.byPeer, "\(label): \(ended)")
                        let sent = actions.compactMap { action -> ContactMessage? in
                            if case .send(let sent) = action { return sent }
                            return nil
                        }
                        #expect(sent == [.failure(ContactFailure(reason: .violation))], "\(label): the peer is told")
                    }
                    #expect(
                        !actions.contains { if case .finish(.added) = $0 { true } else { false } }, "\(label)")
                    #expect(machine.wait == nil, "\(label)")
                }
            }
        }
        #expect(injected > 200)
    }

    // MARK: Forged identities and measurements

    /// A run stopped with the initiator waiting for the responder's measurement, and that measurement.
    func initiatorAwaitingMeasurement() throws -> (ContactExchangeMachine, SignedContactMeasurement) {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        let machine = try #require(run.sides[0].stages.first { $0.name == "waiting for measurement" }?.machine)
        let honest = try #require(
            run.sides[1].sent.compactMap { if case .measurement(let signed) = $0 { signed } else { nil } }.first)
        return (machine, honest)
    }

    @Test func aForgedMeasurementIsRefused() throws {
        let (waiting, honest) = try initiatorAwaitingMeasurement()
        let genuine = honest.payload.binding
        let stranger = try makeContactParty(seed: 99)
        func binding(
            nonce: Digest32? = nil, channelBinding: [UInt8]? = nil, role: ContactRole? = nil, signer: WalletID? = nil,
            peer: WalletID? = nil, key: P256.PublicKey? = nil, sequence: UInt64? = nil
        ) -> ContactBinding {
            ContactBinding(
                nonce: nonce ?? genuine.nonce, channelBinding: channelBinding ?? genuine.channelBinding,
                signerRole: role ?? genuine.signerRole, signerWalletID: signer ?? genuine.signerWalletID,
                peerWalletID: peer ?? genuine.peerWalletID, signerKey: key ?? genuine.signerKey,
                keySequence: sequence ?? genuine.keySequence)
        }
        func signed(
            _ binding: ContactBinding, median: UInt32? = nil, source: RangingSource? = nil,
            by signer: SoftwareSigner? = nil
        )
            throws -> SignedContactMeasurement
        {
            let summary = try RangingSummary(
                medianMillimetres: median ?? honest.payload.summary.medianMillimetres,
                spreadMillimetres: honest.payload.summary.spreadMillimetres,
                sampleCount: honest.payload.summary.sampleCount)
            let measurement = ContactMeasurement(
                binding: binding, summary: summary, source: source ?? honest.payload.source)
            return try SignedContactMeasurement(signing: measurement, with: signer ?? bob.signer)
        }
        var otherChannel = genuine.channelBinding
        otherChannel[0] ^= 1
        let forgeries: [(String, SignedContactMeasurement)] = [
            (
                "a stranger's signature over the genuine payload",
                SignedContactMeasurement(
                    payload: honest.payload,
                    signature: try stranger.signer.sign(
                        honest.payload.encoded, label: ContactMeasurement.signatureLabel))
            ),
            (
                "the genuine key's signature over another payload",
                SignedContactMeasurement(
                    payload: honest.payload, signature: try signed(binding(), median: 121).signature)
            ),
            ("another channel binding", try signed(binding(channelBinding: otherChannel))),
            (
                // What a relay holding no wallet key can do: bind the measurement to this channel, and keep the
                // signature the wallet made for the other channel.
                "this channel's binding with the signature made for another",
                SignedContactMeasurement(
                    payload: honest.payload,
                    signature: try signed(binding(nonce: Digest32(of: [2]), channelBinding: otherChannel)).signature)
            ),
            ("a binding cut short", try signed(binding(channelBinding: Array(genuine.channelBinding.dropLast())))),
            ("another session nonce", try signed(binding(nonce: Digest32(of: [1])))),
            ("the initiator's role", try signed(binding(role: .initiator))),
            ("the wallet ids swapped", try signed(binding(signer: alice.walletID, peer: bob.walletID))),
            ("about a third wallet", try signed(binding(peer: stranger.walletID))),
            ("by a third wallet", try signed(binding(signer: stranger.walletID))),
            (
                "a key not in force, its own signature",
                try signed(binding(key: stranger.signer.publicKey), by: stranger.signer)
            ),
            ("another key sequence", try signed(binding(sequence: 1))),
            ("a median 1 mm more than the gate's", try signed(binding(), median: 121)),
            ("a median 1 mm less than the gate's", try signed(binding(), median: 119)),
            ("another source than the gate's", try signed(binding(), source: .simulated)),
        ]
        for (name, forged) in forgeries {
            var machine = waiting
            #expect(throws: ContactProtocolError.self, "\(name)") { _ = try machine.receive(.measurement(forged)) }
            #expect(exchangeFailure(machine.outcome)?.reason == .violation, "\(name)")
        }
        // The genuine one goes on to the encapsulation.
        var machine = waiting
        let actions = try machine.receive(.measurement(honest))
        #expect(actions.contains { if case .encapsulate = $0 { true } else { false } })
    }

    @Test func aCardOfOurOwnWalletIsRefused() throws {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        for (index, party) in [alice, bob].enumerated() {
            var machine = try #require(run.sides[index].stages.first { $0.name == "waiting for card" }?.machine)
            #expect(throws: ContactProtocolError.self) { _ = try machine.receive(.card(party.card)) }
            #expect(exchangeFailure(machine.outcome)?.reason == .violation)
        }
        // The same wallet on both ends: neither side sends a measurement.
        var mirror = ContactExchangeRun(alice, alice)
        try mirror.run()
        #expect(!mirror.sentKinds.contains("measurement"))
        #expect(mirror.sides.allSatisfy { exchangeFailure($0.outcome)?.reason == .violation })
    }

    /// A card whose ML-KEM-1024 key is not the one its key-event log commits to (a relay's own key beside the
    /// victim's log, or a log from before contact keys) is refused before anything is signed.
    @Test func aCardWhoseKeyItsLogDoesNotCommitToIsRefused() throws {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        let other = MLKEM1024.PrivateKey.generate().publicKey
        for (index, party) in [bob, alice].enumerated() {
            var machine = try #require(run.sides[index].stages.first { $0.name == "waiting for card" }?.machine)
            let swapped = ContactCard(log: party.card.log, contactKey: other, trustedIssuers: [])
            #expect(throws: ContactProtocolError.self) { _ = try machine.receive(.card(swapped)) }
            #expect(exchangeFailure(machine.outcome)?.reason == .violation)
        }
    }

    // MARK: Relays

    /// A relay runs two channels: to the initiator as its responder, to the responder as its initiator, each with
    /// its own binding and transcript hash. Forwarding every gate, card and measurement unchanged, it is
    /// refused at the measurement, which signs the other channel; nobody encapsulates.
    @Test func aRelayIsRefusedAtTheMeasurement() throws {
        var run = ContactExchangeRun(alice, bob, channels: (ChannelFacts(seed: 1), ChannelFacts(seed: 2)))
        try run.run()
        #expect(run.sentKinds == ["gate", "card", "measurement", "failure"])
        for side in run.sides {
            #expect(!side.performed.contains("encapsulate") && !side.performed.contains("review"))
            #expect(exchangeFailure(side.outcome)?.reason == .violation)
        }
        #expect(
            run.sides.contains {
                exchangeFailure($0.outcome).map { !$0.byPeer && $0.text.contains("not bound to this session") } ?? false
            })
    }

    /// A relay that changes an encapsulation in flight: ML-KEM-1024 decapsulates the changed ciphertext to an
    /// unrelated secret (implicit rejection) without an error, both people still see the same words (they come
    /// from the channel), and the confirms then fail on both sides: nothing is stored.
    @Test func aChangedCiphertextFailsTheConfirm() throws {
        for changer in 0..<2 {
            var run = ContactExchangeRun(alice, bob)
            run.transit = { from, message in
                guard from == changer, case .encapsulation(let body) = message else { return message }
                var ciphertext = body.ciphertext
                ciphertext[100] ^= 0x01
                return .encapsulation(ContactEncapsulation(ciphertext: ciphertext))
            }
            try run.run()
            #expect(run.sides.allSatisfy { $0.performed.contains("signConfirm") }, "changer \(changer)")
            #expect(run.sides[0].reviews.map(\.words) == run.sides[1].reviews.map(\.words), "changer \(changer)")
            for side in run.sides {
                #expect(addedContact(side.outcome) == nil, "changer \(changer)")
                #expect(exchangeFailure(side.outcome)?.reason == .violation, "changer \(changer)")
            }
        }
    }

    /// The relay's best case, which a real one never gets: 2^16 contributions of its own on each channel, the
    /// words of each computed, looking for one pair that shows both people the same words.
    ///
    /// A real relay cannot even try this offline, because the channel is commit-first. On the channel where it
    /// is the responder, the honest initiator has sent only its commitment when the relay must send its
    /// contribution; the initiator's contribution, without which the words cannot be computed, comes after.
    /// On the channel where it is the initiator, it must commit to its contribution before the honest responder
    /// sends its own. So each channel gives it one choice made blind, and a match is a 2^-64.6 guess. Here it is
    /// given everything anyway: 2^32 pairs of codes are compared, and none is equal (expected 2^-32.6 of a one).
    @Test func grindingTwoToTheSixteenContributionsPerSideNeverMatchesTheWords() {
        let honest = ChannelFacts(seed: 3)
        let initiatorCommitment = honest.wordsInput.commitment
        let initiatorContribution = honest.wordsInput.initiatorContribution
        let responderContribution = honest.wordsInput.responderContribution
        let choices = 1 << 16
        // The relay's contributions: the size of a real X-Wing one, each a different 16-bit counter in front.
        let body = Array(SHAKE256.hash(Array("relay".utf8), outputByteCount: 1_236))
        func relayContribution(_ choice: Int) -> [UInt8] { [UInt8(choice >> 8), UInt8(choice & 0xff)] + body }
        // Channel 1: honest initiator, relay responder.
        var firstChannel = Set<[Int]>()
        for choice in 0..<choices {
            let input = ContactWordsInput(
                commitment: initiatorCommitment, initiatorContribution: initiatorContribution,
                responderContribution: relayContribution(choice))
            firstChannel.insert(ContactWords(input).indices)
        }
        // Channel 2: relay initiator (its commitment is to its contribution), honest responder.
        var matches = 0
        var secondChannel = Set<[Int]>()
        for choice in 0..<choices {
            let contribution = relayContribution(choice) + [0x02]
            let input = ContactWordsInput(
                commitment: SHA256.hash(contribution), initiatorContribution: contribution,
                responderContribution: responderContribution)
            let indices = ContactWords(input).indices
            secondChannel.insert(indices)
            if firstChannel.contains(indices) { matches += 1 }
        }
        #expect(
            firstChannel.count > choices - 4 && secondChannel.count > choices - 4, "the choices give distinct words")
        #expect(matches == 0, "a relay choice made both channels' words equal")
    }

    // MARK: Known answers

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The vector of docs/PROTOCOL.md ("Contacts → Contact secret"): every input fixed, wallet ids raw.
    struct Vector {
        static let channelBinding = [UInt8](repeating: 0x11, count: 32)
        static let nonce = Digest32(exactly: [UInt8](repeating: 0x22, count: 32))
        static let initiatorWalletID = WalletID(exactly: [UInt8](repeating: 0xa1, count: 32))
        static let responderWalletID = WalletID(exactly: [UInt8](repeating: 0xb2, count: 32))
        static let initiatorSeed = [UInt8](repeating: 0x01, count: 64)
        static let responderSeed = [UInt8](repeating: 0x02, count: 64)
        /// FIPS 203's internal encapsulation randomness m of each side.
        static let initiatorMessage = [UInt8](repeating: 0x03, count: 32)
        static let responderMessage = [UInt8](repeating: 0x04, count: 32)
        static let probeBinding = [UInt8](repeating: 0x33, count: 32)
    }

    /// The expected values, as the oracle computed them and docs/PROTOCOL.md lists them.
    static let expected: [String: String] = [
        "initiatorKeySHA256": "05227acb49aefea81141d2bbc32ed84178283517d724ebc04d570ce84725f656",
        "responderKeySHA256": "596860aceaaac0f4c1af2bb7edff14b0d6178dea8cc22d4ff6c5e1fbb63a6a97",
        "initiatorCiphertextSHA256": "6e787ad0ce5abda7f07beca6c8b450e37740c0b5a95d66583491a707230e2d32",
        "responderCiphertextSHA256": "a8a277e97ad471749095de186069b35f3f91b69fc164713f07167c59ede4d1df",
        "initiatorShared": "3f1f46fbf24c20572287bf2ff6cd5b0167785b15cdfe1a4a0ef62b06b9172c0f",
        "responderShared": "38242141787b68385f5ebdf677b0c0345bc02c79822012a17deb534d37b7782e",
        "transcript": "c148c5c4347ffb5ce5b5216c2d32fe8c33128884f69dd97a29d5b73ee01839b2",
        "secret": "9c5e31a3570098c5034f383ec7bec2f5b5e566539b4809e2faf2a4cf794629b3",
        "initiatorConfirmation": "b15d13a740bc147cf4a1ca6845d843bf66bb86c3805772f7bebafc1da1367707",
        "responderConfirmation": "2c8ff6b5b36eb1e2aadc056d6f11509b0c23a949f7c6c66656b3b62845179566",
        "discoveryKey": "b4c56d0974be3ebcf5a1d4af589349cfc04c241664d701099352e91c1bf663ca",
        "fileKey": "445d3116e75a0adb540c4b2671b2469ca2354ee86b34515e71aa33d117b95c4b",
        "probe": "abc3d0913b17b4d40891b86e3443c5c8ce9483584b31957d604d930c9f64c9e8",
        "answer": "4809ade2bbeebbd19554863e45d64a302ee396a8920846c1a2a118880a9ddc5d",
    ]

    /// Computes the vector's values in Swift, with the same keys as the oracle.
    static func computeVector() throws -> (values: [String: String], request: [String: String]) {
        let initiatorKey = try MLKEM1024.PrivateKey(seed: Vector.initiatorSeed)
        let responderKey = try MLKEM1024.PrivateKey(seed: Vector.responderSeed)
        // ct_I is the initiator's, to the responder's key; ct_R the responder's, to the initiator's.
        let (initiatorShared, initiatorCiphertext) = try responderKey.publicKey._encapsulate(
            message: Vector.initiatorMessage)
        let (responderShared, responderCiphertext) = try initiatorKey.publicKey._encapsulate(
            message: Vector.responderMessage)
        #expect(try responderKey.decapsulate(initiatorCiphertext) == initiatorShared)
        #expect(try initiatorKey.decapsulate(responderCiphertext) == responderShared)
        let transcript = ContactSecret.transcriptDigest(
            channelBinding: Vector.channelBinding, nonce: Vector.nonce, initiatorWalletID: Vector.initiatorWalletID,
            responderWalletID: Vector.responderWalletID, initiatorKey: initiatorKey.publicKey,
            responderKey: responderKey.publicKey, initiatorCiphertext: initiatorCiphertext,
            responderCiphertext: responderCiphertext)
        let secret = try ContactSecret.derive(
            initiatorShared: initiatorShared, responderShared: responderShared, transcript: transcript)
        let discovery = try ContactSecret.discoveryKey(secret: secret)
        let values = [
            "initiatorKeySHA256": Hex.encode(SHA256.hash(initiatorKey.publicKey.rawRepresentation)),
            "responderKeySHA256": Hex.encode(SHA256.hash(responderKey.publicKey.rawRepresentation)),
            "initiatorCiphertextSHA256": Hex.encode(SHA256.hash(initiatorCiphertext)),
            "responderCiphertextSHA256": Hex.encode(SHA256.hash(responderCiphertext)),
            "initiatorShared": Hex.encode(initiatorShared.copyBytes()),
            "responderShared": Hex.encode(responderShared.copyBytes()),
            "transcript": Hex.encode(transcript.bytes),
            "secret": Hex.encode(secret.copyBytes()),
            "initiatorConfirmation": Hex.encode(ContactSecret.keyConfirmation(secret: secret, role: .initiator).bytes),
            "responderConfirmation": Hex.encode(ContactSecret.keyConfirmation(secret: secret, role: .responder).bytes),
            "discoveryKey": Hex.encode(discovery.copyBytes()),
            "fileKey": Hex.encode(try ContactSecret.fileKey(secret: secret).copyBytes()),
            "probe": Hex.encode(ContactSecret.probe(discoveryKey: discovery, channelBinding: Vector.probeBinding)),
            "answer": Hex.encode(ContactSecret.answer(discoveryKey: discovery, channelBinding: Vector.probeBinding)),
        ]
        let request = [
            "channelBinding": Hex.encode(Vector.channelBinding), "nonce": Hex.encode(Vector.nonce.bytes),
            "initiatorWalletID": Hex.encode(Vector.initiatorWalletID.bytes),
            "responderWalletID": Hex.encode(Vector.responderWalletID.bytes),
            "initiatorSeed": Hex.encode(Vector.initiatorSeed), "responderSeed": Hex.encode(Vector.responderSeed),
            "initiatorCiphertext": Hex.encode(initiatorCiphertext),
            "responderCiphertext": Hex.encode(responderCiphertext), "probeBinding": Hex.encode(Vector.probeBinding),
        ]
        return (values, request)
    }

    /// The Swift values equal the independent oracle's (scripts/oracles/contact_secret.py: hashlib, hmac,
    /// cryptography's HKDF and OpenSSL's ML-KEM-1024, which decapsulates both ciphertexts itself), and both
    /// equal the vector written in docs/PROTOCOL.md.
    @Test func theContactSecretKnownAnswers() throws {
        let (values, request) = try Self.computeVector()
        let process = Process()
        process.executableURL = Self.repositoryRoot.appendingPathComponent(".venv/bin/python")
        process.arguments = [Self.repositoryRoot.appendingPathComponent("scripts/oracles/contact_secret.py").path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(request))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "contact_secret.py: \(String(decoding: data, as: UTF8.self))")
        let oracle = try JSONDecoder().decode([String: String].self, from: data)
        #expect(Set(oracle.keys) == Set(values.keys))
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            #expect(oracle[name] == value, "\(name): the oracle says \(oracle[name] ?? "nothing")")
            #expect(Self.expected[name] == value, "\(name): docs/PROTOCOL.md says \(Self.expected[name] ?? "nothing")")
        }
    }

    /// Every input of the transcript counts: each changed alone changes the digest.
    @Test func everyTranscriptInputCounts() throws {
        let initiatorKey = try MLKEM1024.PrivateKey(seed: Vector.initiatorSeed).publicKey
        let responderKey = try MLKEM1024.PrivateKey(seed: Vector.responderSeed).publicKey
        let ciphertext = [UInt8](repeating: 5, count: ContactEncapsulation.byteCount)
        var changed = ciphertext
        changed[1_567] ^= 1
        func digest(
            binding: [UInt8] = Vector.channelBinding, nonce: Digest32 = Vector.nonce,
            ids: (WalletID, WalletID) = (Vector.initiatorWalletID, Vector.responderWalletID),
            keys: (MLKEM1024.PublicKey, MLKEM1024.PublicKey)? = nil, ciphertexts: ([UInt8], [UInt8])? = nil
        ) -> Digest32 {
            ContactSecret.transcriptDigest(
                channelBinding: binding, nonce: nonce, initiatorWalletID: ids.0, responderWalletID: ids.1,
                initiatorKey: (keys ?? (initiatorKey, responderKey)).0,
                responderKey: (keys ?? (initiatorKey, responderKey)).1,
                initiatorCiphertext: (ciphertexts ?? (ciphertext, ciphertext)).0,
                responderCiphertext: (ciphertexts ?? (ciphertext, ciphertext)).1)
        }
        let base = digest()
        let variants = [
            digest(binding: Array(Vector.channelBinding.dropLast())), digest(nonce: Digest32(of: [])),
            digest(ids: (Vector.responderWalletID, Vector.initiatorWalletID)),
            digest(keys: (responderKey, initiatorKey)), digest(ciphertexts: (changed, ciphertext)),
            digest(ciphertexts: (ciphertext, changed)),
        ]
        #expect(Set(variants + [base]).count == variants.count + 1)
    }

    /// ML-KEM-1024 round trip, and implicit rejection: a changed ciphertext decapsulates, without an error, to
    /// a secret unrelated to the sender's, so the key confirmation the other side signs does not match.
    @Test func mlkemRoundTripAndImplicitRejection() throws {
        let key = bob.contactKey
        let (shared, ciphertext) = key.publicKey.encapsulate()
        #expect(ciphertext.count == ContactEncapsulation.byteCount)
        #expect(try key.decapsulate(ciphertext) == shared)
        #expect(try alice.contactKey.decapsulate(ciphertext) != shared, "another key opens it to something else")
        let transcript = Digest32(of: [9])
        let other = SecretBytes([UInt8](repeating: 0, count: 32))
        let secret = try ContactSecret.derive(initiatorShared: shared, responderShared: other, transcript: transcript)
        for position in [0, 777, ciphertext.count - 1] {
            var changed = ciphertext
            changed[position] ^= 0x80
            let rejected = try key.decapsulate(changed)
            #expect(rejected != shared, "byte \(position)")
            #expect(rejected.count == shared.count, "byte \(position)")
            let theirs = try ContactSecret.derive(
                initiatorShared: rejected, responderShared: other, transcript: transcript)
            #expect(
                ContactSecret.keyConfirmation(secret: theirs, role: .responder)
                    != ContactSecret.keyConfirmation(secret: secret, role: .responder), "byte \(position)")
        }
        // The same changed ciphertext always gives the same rejection secret (it is derived, not random).
        var changed = ciphertext
        changed[0] ^= 1
        #expect(try key.decapsulate(changed) == key.decapsulate(changed))
        // A ciphertext of any other length is an error, never a secret.
        for length in [0, 1, ciphertext.count - 1, ciphertext.count + 1] {
            let bytes = Array((ciphertext + [0]).prefix(length))
            #expect(throws: (any Error).self, "length \(length)") { _ = try key.decapsulate(bytes) }
        }
    }

    /// Every message of an honest run, both sides': each truncation decodes to nil or is refused, each
    /// extension is refused, and each top bit flipped is refused or decodes to another message.
    @Test func everyMessageSurvivesTheSweep() throws {
        var run = ContactExchangeRun(alice, bob)
        try run.run()
        let messages =
            run.sides.flatMap(\.sent)
            + [ContactFailure.Reason.gateClosed, .declined, .violation, .localFailure].map {
                ContactMessage.failure(ContactFailure(reason: $0))
            }
        #expect(messages.count == 14)
        for (index, message) in messages.enumerated() {
            sweepEncoding(message.encoded, "message \(index), \(message.name)") { try ContactMessage.decode($0) }
        }
    }

    /// The gate's encoding: 16 + 1 + 4 + 1 bytes after the version and type, the flag 0 or 1 only.
    @Test func theGateEncoding() throws {
        let gate = ContactGate(
            nonceContribution: NonceContribution(exactly: [UInt8](repeating: 0xab, count: 16)), source: .external,
            medianMillimetres: 250, allowsSimulated: true)
        let bytes = ContactMessage.gate(gate).encoded
        #expect(Hex.encode(bytes) == "0101" + String(repeating: "ab", count: 16) + "02" + "000000fa" + "01")
        sweepEncoding(bytes, "gate") { try ContactMessage.decode($0) }
        var badFlag = bytes
        badFlag[bytes.count - 1] = 2
        #expect(throws: FormatError.self) { _ = try ContactMessage.decode(badFlag) }
        // docs/PROTOCOL.md's limit: 2 + a card of 1,024 events of at most 1,107 bytes, a key and 16 issuers.
        #expect(ContactMessage.encodedByteCountMax == 1_137_703)
    }
}
