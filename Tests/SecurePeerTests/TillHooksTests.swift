import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureWallet

/// A person whose every answer is a closure, counting what it was asked.
final class TillPerson: PeerInterface, @unchecked Sendable {
    let pinPath: String
    var decision: () -> PeerDecision = { .approve(overridingBudget: false) }
    var category: () -> CategoryChoice = { .category("till") }
    var pin: (() throws -> PIN)?
    private let lock = NSLock()
    private var log: [String] = []
    private(set) var decideCount = 0
    private(set) var pinCount = 0

    init(pinPath: String) { self.pinPath = pinPath }

    func decide(_ approval: Approval) -> PeerDecision {
        lock.withLock { decideCount += 1 }
        return decision()
    }
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice { category() }
    func readPIN() throws -> PIN {
        lock.withLock { pinCount += 1 }
        return try pin?() ?? PINSource.file(pinPath).read()
    }
    func event(_ name: String, _ fields: [String: String], _ text: String) { lock.withLock { log.append(name) } }
    var events: [String] { lock.withLock { log } }
}

/// A session side on a virtual clock, as a single-loop engine (a rehearsal) drives `PeerActions`: messages
/// go to an outbox, ranging is simulated, and the token locks when the session lets go of it.
final class VirtualSide: PeerEnvironment {
    final class Clock { var now: Int64 = 1_767_225_600_000 }
    let person: PeerInterface
    let clock: Clock
    var outbox: [PeerMessage] = []

    init(person: PeerInterface, clock: Clock) {
        self.person = person
        self.clock = clock
    }

    func send(_ message: PeerMessage) throws { outbox.append(message) }
    func now() -> Int64 { clock.now }
    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        var ranging = SimulatedRanging(seed: 7, distanceMillimetres: 420)
        return (.simulated, ranging.samples(count: 16))
    }
    func holdToken(_ token: WalletToken) {}
    func releaseToken(_ token: WalletToken) { token.lock() }
    func lockTokenIfUnheld(_ token: WalletToken) { token.lock() }
}

/// Both sides of a request-flow session in one loop on one virtual clock.
struct VirtualSession {
    let clock = VirtualSide.Clock()
    let payer: PeerActions
    let payee: PeerActions
    let payerSide: VirtualSide
    let payeeSide: VirtualSide
    let request: PaymentRequest

    init(payer alice: TestWallet, _ payerPerson: PeerInterface, payee bob: TestWallet, _ payeePerson: PeerInterface)
        throws
    {
        let transcript = Digest32.random()
        let binding = SystemRandom.bytes(32)
        func context(_ wallet: Wallet, _ name: String) throws -> PeerSessionContext {
            PeerSessionContext(
                transcriptHash: transcript, channelBinding: binding,
                hello: try PeerActions.hello(
                    wallet: wallet, displayName: name, randomBytes: { SystemRandom.bytes($0) }),
                rangingPolicy: RangingPolicy(allowsSimulated: true), trustedIssuers: try wallet.trustedIssuers(),
                isIssuer: false)
        }
        let payerWallet = alice.wallet!, payeeWallet = bob.wallet!
        request = try PaymentRequest(
            requestID: .random(),
            amount: try payeeWallet.requestAsset(for: try MoneyText.parse("3.20 EUR"), issuer: nil),
            note: "Till")
        payerSide = VirtualSide(person: payerPerson, clock: clock)
        payeeSide = VirtualSide(person: payeePerson, clock: clock)
        var payerContext = try context(payerWallet, "Alice")
        payerContext.masksWalletRefusals = true
        payer = PeerActions(
            wallet: payerWallet,
            machine: .payer(PayerMachine(answeringRequestWith: payerContext, transferID: .random())),
            helloSize: payerWallet.latest!.checkpoint.size, environment: payerSide)
        payee = PeerActions(
            wallet: payeeWallet,
            machine: .payee(PayeeMachine(context: try context(payeeWallet, "TILL-1A2B"), request: request)),
            helloSize: payeeWallet.latest!.checkpoint.size, environment: payeeSide)
        for side in [payer, payee] { side.decisionMilliseconds = TillLimits.decisionMilliseconds }
    }

    /// Runs both sides to their ends; `before` sees each message before it is delivered (to the payee when
    /// its flag is true), and may move the clock.
    func play(before: (PeerMessage, Bool) -> Void = { _, _ in }) throws {
        let sides = [payer, payee]
        var queues = [payer.start(), payee.start()]
        for _ in 0..<1_000 {
            for index in sides.indices {
                while true {
                    while !queues[index].isEmpty {
                        queues[index] += try sides[index].perform(queues[index].removeFirst())
                    }
                    guard sides[index].hasReleasableMessage else { break }
                    queues[index] = sides[index].releaseHeldMessage()
                }
            }
            if payer.outcome != nil && payee.outcome != nil { break }
            if !payeeSide.outbox.isEmpty {
                let message = payeeSide.outbox.removeFirst()
                before(message, false)
                queues[0] = payer.deliver(message)
            } else if !payerSide.outbox.isEmpty {
                let message = payerSide.outbox.removeFirst()
                before(message, true)
                queues[1] = payee.deliver(message)
            } else {
                // Both sides wait and nothing is on the way: their waits run out.
                for index in sides.indices where sides[index].outcome == nil {
                    queues[index] = sides[index].timeoutExpired()
                }
            }
        }
        payer.finishSession()
        payee.finishSession()
    }
}

/// The hooks a till drives the payment code with (docs/TILL.md §1.4, §7): decision deadlines, an approval
/// given before the session, a check before the lookup, a busy refusal, a receipt that could not be kept.
@Suite("Till hooks on PeerActions and PeerDriver", .serialized)
struct TillHooksTests {
    static func pair(_ name: String) throws -> (TestWallet, TestWallet, TillPerson, TillPerson) {
        let (alice, bob, _, _) = try PeerSessionTests.pair(name)
        return (alice, bob, TillPerson(pinPath: alice.main.pinPath), TillPerson(pinPath: bob.main.pinPath))
    }

    /// The till's lock-in: its token is unlocked before any payer comes.
    static func lockIn(_ bob: TestWallet) throws {
        try bob.wallet!.token.unlock(pin: try bob.main.pin(), confirmFinalTry: false)
    }

    @Test func aTillPaymentOnAVirtualClockUsesTheLockInApprovalAndFixesBothDeadlines() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-paid")
        try Self.lockIn(bob)
        let session = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        let start = session.clock.now
        session.payee.approvalHoldUntil = { start + 60_000 }
        try session.play()
        guard case .paid? = session.payer.outcome, case .received? = session.payee.outcome else {
            Issue.record("\(String(describing: (session.payer.outcome, session.payee.outcome)))"); return
        }
        #expect(bobPerson.decideCount == 0 && bobPerson.pinCount == 0, "the till was approved by its lock-in PIN")
        #expect(alicePerson.decideCount == 1 && alicePerson.pinCount == 1)
        #expect(session.payee.decisionDeadline == start + TillLimits.decisionMilliseconds)
        #expect(
            session.payer.decisionDeadline
                == start + TillLimits.decisionMilliseconds - TillLimits.payerDecisionMarginMilliseconds)
        #expect(session.payee.deadline(for: .offer) == session.payee.decisionDeadline)
        #expect(session.payee.deadline(for: .approval) == nil && session.payee.deadline(for: .ready) == nil)
        #expect(session.payer.deadline(for: .category) == session.payer.decisionDeadline)
        #expect(session.payer.deadline(for: .approval) == session.payer.decisionDeadline)
        #expect(session.payer.deadline(for: .offer) == nil && session.payer.deadline(for: .receipt) == nil)
        #expect(!session.payer.receiptUnrecorded)
        #expect(PeerSessionTests.euros(alice) == "16.80 EUR" && PeerSessionTests.euros(bob) == "3.20 EUR")
        #expect(!bob.wallet!.token.isUnlocked, "the session's hold ended with it")
    }

    @Test func anOfferAfterTheDeadlineOrAHoldEndingTooSoonNeverLeadsToReady() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-late")
        // The offer comes 21 s after the request: past the 20 s deadline.
        try Self.lockIn(bob)
        let late = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        late.payee.approvalHoldUntil = { [clock = late.clock] in clock.now + 60_000 }
        try late.play { message, toPayee in
            if toPayee, case .offer = message { late.clock.now += 21_000 }
        }
        #expect(late.payee.outcome == .failed(.timeout, byPeer: false))
        #expect(late.payer.outcome == .failed(.timeout, byPeer: true))
        #expect(!late.payeeSide.outbox.contains { $0.name == "ready" })
        #expect(
            try bob.wallet!.ledger.readyRecord(offerID: late.request.requestID, payer: alice.wallet!.walletID) == nil)

        // The till's hold ends 15 s after the approval, and the payer's measurement comes 6 s later: under
        // 10 s of hold would be left at `ready`.
        try Self.lockIn(bob)
        let short = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        short.payee.approvalHoldUntil = { [clock = short.clock] in clock.now + 15_000 }
        try short.play { message, toPayee in
            if toPayee, case .measurement = message { short.clock.now += 6_000 }
        }
        #expect(short.payee.outcome == .failed(.timeout, byPeer: false))
        #expect(short.payer.outcome == .failed(.timeout, byPeer: true))
        #expect(PeerSessionTests.euros(alice) == "20.00 EUR" && PeerSessionTests.euros(bob) == "0.00 EUR")
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
    }

    @Test func aPayerThatAnswersAfterItsDeadlineTimesOutAndReadsNoPIN() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-slow")
        try Self.lockIn(bob)
        let session = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        session.payee.approvalHoldUntil = { [clock = session.clock] in clock.now + 60_000 }
        alicePerson.decision = { [clock = session.clock] in
            clock.now += 19_000 // the payer's deadline is 18 s after the request
            return .approve(overridingBudget: false)
        }
        try session.play()
        #expect(session.payer.outcome == .failed(.timeout, byPeer: false))
        #expect(session.payee.outcome == .failed(.timeout, byPeer: true))
        #expect(alicePerson.pinCount == 0 && !session.payerSide.outbox.contains { $0.name == "offer" })
        // A category chosen too late is a timeout too.
        try Self.lockIn(bob)
        let category = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        alicePerson.category = { [clock = category.clock] in
            clock.now += 19_000
            return .category("till")
        }
        try category.play()
        #expect(category.payer.outcome == .failed(.timeout, byPeer: false))
        #expect(PeerSessionTests.euros(alice) == "20.00 EUR")
    }

    @Test func theLockInApprovalFailsWithoutAHoldAndTheLookUpHookCanRefuse() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-hold")
        // No hold left (the closure says so), a hold already over, and a locked token: failure 14.
        // (The virtual clock starts at the same instant in every session.)
        let start = VirtualSide.Clock().now
        for (name, until, unlocks) in [
            ("none", Int64?.none, true), ("past", start - 1, true), ("locked", start + 60_000, false),
        ] {
            if unlocks { try Self.lockIn(bob) } else { bob.wallet!.token.lock() }
            let session = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
            session.payee.approvalHoldUntil = { until }
            try session.play()
            #expect(session.payee.outcome == .failed(.localFailure, byPeer: false), "\(name)")
            #expect(session.payer.outcome == .failed(.localFailure, byPeer: true), "\(name)")
            #expect(bobPerson.decideCount == 0 && bobPerson.pinCount == 0, "\(name)")
        }
        // The till's re-ask of its PIN at connect fails: failure 14 before the request goes out.
        try Self.lockIn(bob)
        let refused = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        var asked = 0
        refused.payee.beforeLookUp = {
            asked += 1
            throw WalletError(.refused, "the operator's PIN was refused")
        }
        try refused.play()
        #expect(asked == 1)
        #expect(refused.payee.outcome == .failed(.localFailure, byPeer: false))
        #expect(refused.payer.outcome == .failed(.localFailure, byPeer: true))
        #expect(!refused.payeeSide.outbox.contains { $0.name == "request" })
        #expect(PeerSessionTests.euros(alice) == "20.00 EUR" && PeerSessionTests.euros(bob) == "0.00 EUR")
    }

    @Test func thePayersWalletRefusingSendsTwentyOne() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-refuse")
        for (name, atCategory) in [("category", true), ("decision", false)] {
            try Self.lockIn(bob)
            let person = TillPerson(pinPath: alice.main.pinPath)
            if atCategory { person.category = { .refuse } } else { person.decision = { .refuse } }
            let session = try VirtualSession(payer: alice, person, payee: bob, bobPerson)
            session.payee.approvalHoldUntil = { [clock = session.clock] in clock.now + 60_000 }
            try session.play()
            #expect(session.payer.outcome == .failed(.refusedByPayerWallet, byPeer: false), "\(name)")
            #expect(session.payee.outcome == .failed(.refusedByPayerWallet, byPeer: true), "\(name)")
            #expect(person.pinCount == 0, "\(name)")
        }
        _ = alicePerson
    }

    /// Bytes that are no message, in a state where no step of this side runs (each side waiting for the other's
    /// hello): a protocol violation (12), never a local failure the machine did not ask for, which trapped.
    @Test func bytesThatAreNoMessageEndTheSessionAsAViolation() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-malformed")
        let session = try VirtualSession(payer: alice, alicePerson, payee: bob, bobPerson)
        for (side, environment, bytes) in [
            (session.payer, session.payerSide, [UInt8]([2, 12, 0, 200])), (session.payee, session.payeeSide, [2, 99]),
        ] {
            for action in side.start() { _ = try side.perform(action) }
            for action in side.deliver(bytes: bytes) { _ = try side.perform(action) }
            #expect(side.outcome == .failed(.protocolViolation, byPeer: false))
            #expect(environment.outbox.last == .failure(PeerFailure(offerID: nil, reason: .protocolViolation)))
            #expect(side.deliver(bytes: [2]) == [], "after the end, nothing")
            side.finishSession()
        }
    }

    // MARK: Over a channel

    /// Both sides over the in-memory transport, each on its own thread, with the drivers shown to `configure`.
    static func run(
        payer: TestWallet, _ payerRole: PeerDriver.Role, _ payerPerson: PeerInterface, payee: TestWallet,
        _ payeeRole: PeerDriver.Role, _ payeePerson: PeerInterface, hook: MemoryLink.FaultHook? = nil,
        timeoutScale: Double = 1, configure: @escaping @Sendable (PeerDriver, PeerDriver) -> Void = { _, _ in }
    ) throws -> (payer: PeerOutcome?, payee: PeerOutcome?, payerDriver: PeerDriver, payeeDriver: PeerDriver) {
        let link = MemoryLink(hook: hook)
        let policy = RangingPolicy(allowsSimulated: true)
        let channels = try Self.channels(link)
        let payerDriver = try PeerDriver(
            wallet: payer.wallet!, channel: channels.initiator, role: payerRole, interface: payerPerson,
            ranging: PeerSessionTests.near, policy: policy, displayName: "Alice", timeoutScale: timeoutScale)
        let payeeDriver = try PeerDriver(
            wallet: payee.wallet!, channel: channels.responder, role: payeeRole, interface: payeePerson,
            ranging: PeerSessionTests.nearToo, policy: policy, displayName: "TILL-1A2B", timeoutScale: timeoutScale)
        configure(payerDriver, payeeDriver)
        final class Box: @unchecked Sendable { var outcome: PeerOutcome? }
        let payerBox = Box(), payeeBox = Box()
        nonisolated(unsafe) let drivers = (payerDriver, payeeDriver)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { payerBox.outcome = drivers.0.run() }
        DispatchQueue.global().async(group: group) { payeeBox.outcome = drivers.1.run() }
        group.wait()
        return (payerBox.outcome, payeeBox.outcome, payerDriver, payeeDriver)
    }

    /// A finished handshake over `link`: both ends' channels.
    static func channels(_ link: MemoryLink) throws -> (initiator: SecureChannel, responder: SecureChannel) {
        final class Box: @unchecked Sendable { var channel: SecureChannel? }
        let responder = Box()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            responder.channel = try? SecureChannel.respond(over: link.responderEnd)
            done.signal()
        }
        let initiator = try SecureChannel.initiate(over: link.initiatorEnd)
        done.wait()
        return (initiator, try #require(responder.channel))
    }

    @Test func aBusyTillRefusesWithCodeTwentyTwoInPlaceOfItsHello() throws {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded("busy-a", "5.00 EUR", issuer: issuer)
        alice.wallet!.token.lock()
        let size = try alice.wallet!.ledger.size()
        let link = MemoryLink()
        final class Box: @unchecked Sendable { var sent = false; var events: [String] = [] }
        let till = Box()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            if let channel = try? SecureChannel.respond(over: link.responderEnd) {
                till.sent = PeerDriver.refuse(channel: channel, reason: .tillBusy) { name, _, _ in
                    till.events.append(name)
                }
            }
            done.signal()
        }
        let channel = try SecureChannel.initiate(over: link.initiatorEnd)
        let person = TillPerson(pinPath: alice.main.pinPath)
        let outcome = try PeerDriver(
            wallet: alice.wallet!, channel: channel, role: .answerRequest, interface: person,
            ranging: PeerSessionTests.near, policy: RangingPolicy(allowsSimulated: true), displayName: "Alice"
        ).run()
        done.wait()
        #expect(outcome == .failed(.tillBusy, byPeer: true))
        #expect(till.sent && till.events == ["refused"], "\(till.events)")
        #expect(person.decideCount == 0 && person.pinCount == 0)
        #expect(try alice.wallet!.ledger.size() == size)
    }

    @Test func thePayeeDriverTimesTheOfferByTheDecisionDeadline() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-driver")
        try Self.lockIn(bob)
        // The payer takes 1.2 s to pick a category; the till's decision deadline is 0.4 s after its request
        // (the ordinary offer wait is 30 s: without the deadline the till would wait, then hear the payer's
        // failure).
        alicePerson.category = {
            Thread.sleep(forTimeInterval: 1.2)
            return .category("till")
        }
        let request = try PaymentRequest(
            requestID: .random(),
            amount: try bob.wallet!.requestAsset(for: try MoneyText.parse("1.00 EUR"), issuer: nil),
            note: "")
        let started = Date()
        let result = try Self.run(
            payer: alice, .answerRequest, alicePerson, payee: bob, .receive(request: request), bobPerson,
            configure: { payer, payee in
                // The payer's own deadline is 0.4 s after the request too (less its 2 s margin).
                payer.actions.decisionMilliseconds = 2_400
                payee.actions.decisionMilliseconds = 400
                payee.actions.approvalHoldUntil = { Wallet.systemClock() + 60_000 }
            })
        // Both sides' timers ran out on their own; neither waited for the other's failure.
        #expect(result.payee == .failed(.timeout, byPeer: false))
        #expect(result.payer == .failed(.timeout, byPeer: false))
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(PeerSessionTests.euros(alice) == "20.00 EUR" && PeerSessionTests.euros(bob) == "0.00 EUR")
    }

    @Test func aReceiptThatCannotBeKeptLeavesThePaymentPaidButPending() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("till-receipt")
        // The receipt never reaches the payer: everything the payee sends after the payer's debit is lost.
        nonisolated(unsafe) let watched = alicePerson
        let hook: MemoryLink.FaultHook = { direction, _, _ in
            direction == .responderToInitiator && watched.events.contains("debit") ? .drop : .deliver
        }
        let intent = try PeerSessionTests.intent(alice, "2.00 EUR")
        let first = try Self.run(
            payer: alice, .pay(intent), alicePerson, payee: bob, .receive(request: nil), bobPerson, hook: hook,
            timeoutScale: 0.1)
        guard case .unconfirmed? = first.payer else { Issue.record("\(String(describing: first))"); return }
        let pending = try #require(try alice.wallet!.pendingTransfers().first)
        let stored = try #require(
            try alice.wallet!.ledger.outgoingMessage(transferID: pending.transfer.payload.order.transferID))
        guard case .transfer(let message)? = try PeerMessage.decode(stored) else {
            Issue.record("stored message"); return
        }
        // The retry is credited, but the payer's token refuses to record the receipt.
        let noPIN = TillPerson(pinPath: alice.main.pinPath)
        noPIN.pin = { throw WalletError(.refused, "the token was removed") }
        let second = try Self.run(payer: alice, .retry(message), noPIN, payee: bob, .receive(request: nil), bobPerson)
        guard case .paid? = second.payer else { Issue.record("\(String(describing: second))"); return }
        #expect(second.payerDriver.actions.receiptUnrecorded)
        #expect(try alice.wallet!.pendingTransfers().count == 1, "secure pending still lists it")
        // The next retry records it.
        let third = try Self.run(
            payer: alice, .retry(message), alicePerson, payee: bob, .receive(request: nil), bobPerson)
        guard case .paid? = third.payer else { Issue.record("\(String(describing: third))"); return }
        #expect(!third.payerDriver.actions.receiptUnrecorded)
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
        #expect(PeerSessionTests.euros(alice) == "18.00 EUR" && PeerSessionTests.euros(bob) == "2.00 EUR")
    }
}
