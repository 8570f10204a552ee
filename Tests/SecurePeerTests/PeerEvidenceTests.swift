import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureWallet

/// What a wallet does with fork evidence in a session (evidence v2): a forger's evidence naming a real
/// wallet id is never kept, whoever found it; genuine evidence a peer handed over is kept to pass on but
/// bars nobody; only evidence this wallet found itself bars the accused, and the ban names its digest.
@Suite("Fork evidence in sessions", .serialized)
struct PeerEvidenceTests {
    /// A session side that sends into a list and never ranges: enough to carry out evidence actions.
    final class Quiet: PeerEnvironment {
        let person: PeerInterface
        var sent: [PeerMessage] = []
        init(person: PeerInterface) { self.person = person }
        func send(_ message: PeerMessage) throws { sent.append(message) }
        func now() -> Int64 { Wallet.systemClock() }
        func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
            throw WalletError(.notFound, "no ranging in this test")
        }
        func holdToken(_ token: WalletToken) {}
        func releaseToken(_ token: WalletToken) {}
        func lockTokenIfUnheld(_ token: WalletToken) {}
    }

    /// Two checkpoints of `wallet`'s key, of one size, that differ.
    static func fork(_ wallet: SoftwareWallet) throws -> ForkEvidence.Kind {
        var one = wallet
        var two = wallet
        try one.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [1]))
        try two.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [2]))
        return .conflictingCheckpoints(try one.checkpoint(), try two.checkpoint())
    }

    @Test func forgedEvidenceIsNeverKeptAndAPeersEvidenceBarsNobody() throws {
        let bob = try TestWallet("evidence-b")
        let wallet = bob.wallet!
        let context = PeerSessionContext(
            transcriptHash: .random(), channelBinding: SystemRandom.bytes(32),
            hello: try PeerActions.hello(wallet: wallet, displayName: "Bob", randomBytes: { SystemRandom.bytes($0) }),
            rangingPolicy: RangingPolicy(allowsSimulated: true), trustedIssuers: [], isIssuer: false)
        let actions = PeerActions(
            wallet: wallet, machine: .payee(PayeeMachine(context: context, request: nil)),
            helloSize: wallet.latest!.checkpoint.size,
            environment: Quiet(person: ScriptedPerson(pinPath: bob.main.pinPath)))
        // A forger's checkpoints that name a real wallet id, with that wallet's real log and with its own.
        let victim = try SoftwareWallet(seed: 81)
        let forger = try SoftwareWallet(seed: 82, claiming: victim.walletID)
        let forged = try Self.fork(forger)
        for log in [victim.log, forger.log] {
            for foundHere in [false, true] {
                _ = try actions.perform(.keepEvidence(ForkEvidence(forged, log: log), foundHere: foundHere))
            }
        }
        #expect(try wallet.ledger.evidence().isEmpty, "forged evidence is never kept")
        #expect(try wallet.ledger.banningEvidence(against: victim.walletID) == nil)
        // Genuine evidence a peer handed over is kept to pass on, and bars nobody.
        let forked = try SoftwareWallet(seed: 83)
        let genuine = ForkEvidence(try Self.fork(forked), log: forked.log)
        _ = try actions.perform(.keepEvidence(genuine, foundHere: false))
        #expect(try wallet.ledger.evidence() == [genuine.encoded])
        #expect(try wallet.ledger.banningEvidence(against: forked.walletID) == nil)
        // Found by this wallet itself, it bars the accused, named by its digest.
        _ = try actions.perform(.keepEvidence(genuine, foundHere: true))
        #expect(try wallet.ledger.banningEvidence(against: forked.walletID) == EvidenceDigest(of: genuine.encoded))
        #expect(wallet.ledger.physicalProblems().isEmpty, "\(wallet.ledger.physicalProblems())")
    }

    /// A payee side of a session of `bob`'s wallet, with its hello sent.
    static func payeeSide(_ bob: TestWallet) throws -> (PeerActions, Quiet) {
        let wallet = bob.wallet!
        let context = PeerSessionContext(
            transcriptHash: .random(), channelBinding: SystemRandom.bytes(32),
            hello: try PeerActions.hello(wallet: wallet, displayName: "Bob", randomBytes: { SystemRandom.bytes($0) }),
            rangingPolicy: RangingPolicy(allowsSimulated: true), trustedIssuers: [], isIssuer: false)
        let side = Quiet(person: ScriptedPerson(pinPath: bob.main.pinPath))
        let actions = PeerActions(
            wallet: wallet, machine: .payee(PayeeMachine(context: context, request: nil)),
            helloSize: wallet.latest!.checkpoint.size, environment: side)
        try run(actions, actions.start())
        return (actions, side)
    }

    static func run(_ actions: PeerActions, _ first: [PeerAction]) throws {
        var queue = first
        var steps = 0
        while !queue.isEmpty, steps < 100 {
            steps += 1
            queue = try queue.flatMap { try actions.perform($0) }
        }
    }

    /// Types 4 and 5 refuse statements by that key sequence only: a thief with a retired key says hello with a
    /// checkpoint backdated below the rotation (in force by the log) and is refused before `ready`, naming the
    /// evidence; the wallet's current key is not refused.
    @Test func aRetiredKeyWithEvidenceAgainstItIsRefusedAndTheCurrentKeyIsNot() throws {
        let bob = try TestWallet("evidence-key-b")
        var payer = try SoftwareWallet(seed: 84)
        try payer.deposit(Money(minorUnits: 1000, currency: .eur), issuer: try SoftwareSigner())
        let retired = payer // a thief's copy of the key about to be retired
        try payer.rotate()
        var late = retired
        for byte in [UInt8(5), 6] {
            try late.append(EntryDraft(kind: .keyEvent, amount: nil, statement: nil, payload: [byte]))
        }
        let lateCheckpoint = try late.checkpoint()
        guard case .retired(let rotation) = payer.log.check(lateCheckpoint) else {
            Issue.record("the late checkpoint is not a retired key's"); return
        }
        let evidence = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: payer.log.events[0], rotation: rotation, checkpoint: lateCheckpoint)),
            log: payer.log)
        #expect(try bob.wallet!.followKeyEvents(of: payer.walletID, events: payer.log.events) == .followed)
        let (keeper, _) = try Self.payeeSide(bob)
        _ = try keeper.perform(.keepEvidence(evidence, foundHere: false))
        #expect(try bob.wallet!.ledger.banningEvidence(against: payer.walletID) == nil, "the wallet is not barred")
        let digest = EvidenceDigest(of: evidence.encoded)
        #expect(try bob.wallet!.retiredKeyEvidence(against: payer.walletID, keySequence: 0) == digest)
        #expect(try bob.wallet!.retiredKeyEvidence(against: payer.walletID, keySequence: 1) == nil)
        func hello(_ wallet: SoftwareWallet) throws -> PeerHello {
            try PeerHello(
                walletKey: wallet.key, displayName: "thief", rangingToken: [1],
                nonceContribution: NonceContribution(exactly: SystemRandom.bytes(NonceContribution.byteCount)),
                checkpoint: try wallet.checkpoint())
        }
        // The retired key's hello, backdated below the rotation: in force by the log, refused by the evidence.
        let (thiefSession, _) = try Self.payeeSide(bob)
        try Self.run(thiefSession, thiefSession.deliver(.hello(try hello(retired))))
        guard case .failed(.peerBanned, _)? = thiefSession.outcome else {
            Issue.record("the retired key's session: \(String(describing: thiefSession.outcome))"); return
        }
        // The wallet's current key is not refused by it.
        let (ownerSession, _) = try Self.payeeSide(bob)
        try Self.run(ownerSession, ownerSession.deliver(.hello(try hello(payer))))
        if case .failed(.peerBanned, _)? = ownerSession.outcome {
            Issue.record("the current key was refused by evidence against the retired one")
        }
    }

    /// Issue 14: messages that arrive while the lookup waits for the peer's key events are held, in order, up
    /// to `PeerLimits.heldMessageCountMax`; a peer that floods past it ends the session (a protocol
    /// violation) before anything is approved, signed or recorded.
    @Test func aFloodWhileKeyEventsAreAwaitedEndsTheSessionBeforeAnyDebit() throws {
        let bob = try TestWallet("held-flood")
        let (actions, side) = try Self.payeeSide(bob)
        var payer = try SoftwareWallet(seed: 91)
        try payer.rotate()
        let hello = try PeerHello(
            walletKey: payer.key, displayName: "flooder", rangingToken: SystemRandom.bytes(16),
            nonceContribution: NonceContribution(exactly: SystemRandom.bytes(NonceContribution.byteCount)),
            checkpoint: try payer.checkpoint(), keyEventHead: payer.log.head)
        let entriesBefore = bob.wallet!.size
        try Self.run(actions, actions.deliver(.hello(hello)))
        #expect(
            side.sent.contains { if case .keyEvents(.request) = $0 { true } else { false } },
            "bob asks for the peer's key events and waits for them")
        for _ in 0..<PeerLimits.heldMessageCountMax {
            try Self.run(actions, actions.deliver(PeerMessage.failure(PeerFailure(offerID: nil, reason: .declined))))
            #expect(actions.outcome == nil, "messages up to the limit are held")
        }
        try Self.run(actions, actions.deliver(PeerMessage.failure(PeerFailure(offerID: nil, reason: .declined))))
        guard case .failed? = actions.outcome else {
            Issue.record("the session did not end: \(String(describing: actions.outcome))"); return
        }
        #expect(bob.wallet!.size == entriesBefore, "nothing was recorded")
        #expect(try bob.wallet!.ledger.readyRecord(offerID: .random(), payer: payer.walletID) == nil)
    }
}
