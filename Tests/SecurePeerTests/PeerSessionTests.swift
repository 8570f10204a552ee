import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureStore
@testable import SecureWallet

/// A person at a prompt, scripted: approves or declines, picks a category, reads the PIN from a file.
final class ScriptedPerson: PeerInterface, @unchecked Sendable {
    let pinPath: String
    var approves = true
    var overridesBudget = false
    var category: CategoryChoice = .category("food")
    private let lock = NSLock()
    private var log: [String] = []

    init(pinPath: String) { self.pinPath = pinPath }

    func decide(_ approval: Approval) -> PeerDecision {
        approves ? .approve(overridingBudget: overridesBudget) : .decline
    }
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice { category }
    func readPIN() throws -> PIN { try PINSource.file(pinPath).read() }
    func event(_ name: String, _ fields: [String: String], _ text: String) { lock.withLock { log.append(name) } }
    var events: [String] { lock.withLock { log } }
}

/// Two wallets in one process over the in-memory transport, each driven on its own thread.
struct PeerHarness {
    static func run(
        payer: TestWallet, payerRole: PeerDriver.Role, payerPerson: ScriptedPerson, payerRanging: RangingConfiguration,
        payee: TestWallet, payeeRole: PeerDriver.Role, payeePerson: ScriptedPerson, payeeRanging: RangingConfiguration,
        allowSimulated: Bool = true, hook: MemoryLink.FaultHook? = nil, timeoutScale: Double = 1
    ) throws -> (payer: PeerOutcome?, payee: PeerOutcome?) {
        for test in [payer, payee] where !test.wallet!.token.isUnlocked {
            // The drivers unlock at approval; tests keep the token locked in between, as the CLI does.
            _ = test
        }
        let link = MemoryLink(hook: hook)
        let policy = RangingPolicy(allowsSimulated: allowSimulated)
        final class Box: @unchecked Sendable { var outcome: PeerOutcome?; var error: Error? }
        let payerBox = Box(), payeeBox = Box()
        let group = DispatchGroup()
        let payerWallet = payer.wallet!, payeeWallet = payee.wallet!
        nonisolated(unsafe) let unsafePayer = payerWallet, unsafePayee = payeeWallet
        DispatchQueue.global().async(group: group) {
            do {
                let channel = try SecureChannel.initiate(over: link.initiatorEnd)
                payerBox.outcome = try PeerDriver(
                    wallet: unsafePayer, channel: channel, role: payerRole, interface: payerPerson,
                    ranging: payerRanging, policy: policy, displayName: "Alice",
                    timeoutScale: timeoutScale
                ).run()
            } catch { payerBox.error = error }
        }
        DispatchQueue.global().async(group: group) {
            do {
                let channel = try SecureChannel.respond(over: link.responderEnd)
                payeeBox.outcome = try PeerDriver(
                    wallet: unsafePayee, channel: channel, role: payeeRole, interface: payeePerson,
                    ranging: payeeRanging, policy: policy, displayName: "Bob",
                    timeoutScale: timeoutScale
                ).run()
            } catch { payeeBox.error = error }
        }
        group.wait()
        return (payerBox.outcome, payeeBox.outcome)
    }
}

@Suite("Peer payments in process", .serialized)
struct PeerSessionTests {
    static let near = RangingConfiguration.simulated(seed: 1, distanceMillimetres: 420)
    static let nearToo = RangingConfiguration.simulated(seed: 2, distanceMillimetres: 450)

    /// Alice funded by an issuer, and Bob, who trusts that issuer unless `payeeTrusts` is false.
    static func pair(_ name: String, funds: String = "20.00 EUR", payeeTrusts: Bool = true) throws -> (
        TestWallet, TestWallet, ScriptedPerson, ScriptedPerson
    ) {
        let issuer = try WalletOperationTests.Issuer()
        let alice = try WalletOperationTests.funded(name + "-a", funds, issuer: issuer)
        let bob =
            payeeTrusts
            ? try WalletOperationTests.payee(name + "-b", trusting: issuer) : try TestWallet(name + "-b")
        for test in [alice, bob] { test.wallet!.token.lock() }
        return (alice, bob, ScriptedPerson(pinPath: alice.main.pinPath), ScriptedPerson(pinPath: bob.main.pinPath))
    }

    /// Paying `amount` in the one asset `payer` holds.
    static func intent(_ payer: TestWallet, _ amount: String, category: String = "food") throws -> PaymentIntent {
        PaymentIntent(offerID: .random(), amount: try payer.wallet!.asset(amount), category: category, note: "Kaffee")
    }

    static func euros(_ test: TestWallet) -> String {
        MoneyText.format(test.wallet!.euros)
    }

    @Test func anOfferOfAnAssetThePayeeDoesNotTrustIsRefusedBeforeAnyDebit() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("untrusted", payeeTrusts: false)
        let result = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .failed(.untrustedAsset, true) = result.payer else {
            Issue.record("\(String(describing: result))"); return
        }
        #expect(Self.euros(alice) == "20.00 EUR" && Self.euros(bob) == "0.00 EUR")
        #expect(try alice.wallet!.ledger.entries(kind: .paymentOut).isEmpty)
    }

    @Test func payFlowMovesMoneyOnceAndBothLedgersVerify() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("pay")
        let result = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "4.50 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid = result.payer, case .received = result.payee else {
            Issue.record("outcomes \(String(describing: result))"); return
        }
        #expect(Self.euros(alice) == "15.50 EUR" && Self.euros(bob) == "4.50 EUR")
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
        #expect(!alice.wallet!.token.isUnlocked && !bob.wallet!.token.isUnlocked, "the PIN is wiped after the session")
        #expect(bobPerson.events.contains("distance") && bobPerson.events.contains("channel"))
    }

    @Test func refusalsBeforeTheDebitMoveNothing() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("refuse")
        let far = RangingConfiguration.simulated(seed: 3, distanceMillimetres: 1500)
        let cases: [(String, RangingConfiguration, RangingConfiguration, Bool, PeerFailureReason)] = [
            ("too far", far, far, true, .tooFar),
            (
                "disagree", .simulated(seed: 4, distanceMillimetres: 200),
                .simulated(seed: 5, distanceMillimetres: 900), true, .distancesDisagree
            ),
            ("simulated refused by default", Self.near, Self.nearToo, false, .simulatedRangingRefused),
        ]
        for (name, payerRanging, payeeRanging, allow, reason) in cases {
            let result = try PeerHarness.run(
                payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR")), payerPerson: alicePerson,
                payerRanging: payerRanging, payee: bob, payeeRole: .receive(request: nil),
                payeePerson: bobPerson, payeeRanging: payeeRanging, allowSimulated: allow)
            guard case .failed(let got, _) = result.payer else {
                Issue.record("\(name): \(String(describing: result.payer))"); continue
            }
            #expect(got == reason, "\(name)")
            #expect(Self.euros(alice) == "20.00 EUR" && Self.euros(bob) == "0.00 EUR", "\(name)")
        }
        // Over budget, insufficient balance, a declined offer.
        let result = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "25.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .failed(.insufficientFunds, _) = result.payer else {
            Issue.record("insufficient: \(String(describing: result.payer))"); return
        }
        bobPerson.approves = false
        let declined = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .failed(.declined, true) = declined.payer else {
            Issue.record("declined: \(String(describing: declined.payer))"); return
        }
        #expect(Self.euros(alice) == "20.00 EUR")
        #expect(try alice.wallet!.ledger.size() == 3, "inception, trust, deposit")
    }

    @Test func overBudgetTooFewSamplesAndTamperedFramesMoveNothing() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("more")
        try alice.wallet!.token.unlock(pin: try alice.main.pin(), confirmFinalTry: false)
        let budget = try Budget(
            category: "food", limit: try MoneyText.parse("3.00 EUR"), window: .week, isHardCap: false,
            timeZoneIdentifier: "UTC")
        try alice.wallet!.appendDraft(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.set(budget).payload))
        alice.wallet!.token.lock()
        let over = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "4.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .failed(.overBudget, _) = over.payer else {
            Issue.record("over budget: \(String(describing: over.payer))"); return
        }
        // The override is the person's explicit choice, recorded in the debit.
        alicePerson.overridesBudget = true
        let overridden = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "4.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid = overridden.payer else {
            Issue.record("override: \(String(describing: overridden.payer))"); return
        }
        #expect(try alice.wallet!.ledger.entries(kind: .paymentOut).last?.flags.contains(.budgetOverride) == true)
        alicePerson.overridesBudget = false
        // Too few samples: an external source with 5 readings.
        let file = TestTokens.layout.directory + "/few-\(UUID().uuidString).txt"
        try "400\n410\n405\n399\n402\n".write(toFile: file, atomically: true, encoding: .utf8)
        let few = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR", category: "misc")),
            payerPerson: alicePerson,
            payerRanging: .external(path: file), payee: bob, payeeRole: .receive(request: nil),
            payeePerson: bobPerson, payeeRanging: Self.nearToo)
        guard case .failed(.rangingFailed, _) = few.payer else {
            Issue.record("too few: \(String(describing: few.payer))"); return
        }
        // A frame changed on the link: the channel refuses it and the session ends with nothing moved.
        let tamper: MemoryLink.FaultHook = { direction, index, body in
            direction == .initiatorToResponder && index == 4 ? .replace(body.map { $0 ^ 1 }) : .deliver
        }
        let tampered = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR", category: "misc")),
            payerPerson: alicePerson, payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil),
            payeePerson: bobPerson, payeeRanging: Self.nearToo, hook: tamper, timeoutScale: 0.05)
        if case .paid = tampered.payer { Issue.record("paid through a tampered link") }
        #expect(Self.euros(alice) == "16.00 EUR" && Self.euros(bob) == "4.00 EUR")
        #expect(try alice.wallet!.pendingTransfers().isEmpty)
    }

    @Test func wrongPINOnEitherSideMovesNothing() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("pin")
        try "00000000\n".write(toFile: bob.main.pinPath + ".wrong", atomically: true, encoding: .utf8)
        let wrongBob = ScriptedPerson(pinPath: bob.main.pinPath + ".wrong")
        let result = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "2.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: wrongBob,
            payeeRanging: Self.nearToo)
        // A PIN the token refuses is the token's failure (14), not the person's decline (1).
        #expect(result.payee == .failed(.localFailure, byPeer: false), "\(String(describing: result))")
        #expect(result.payer == .failed(.localFailure, byPeer: true), "\(String(describing: result))")
        let wrongAlice = ScriptedPerson(pinPath: bob.main.pinPath + ".wrong")
        let second = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "2.00 EUR")), payerPerson: wrongAlice,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        #expect(second.payer == .failed(.localFailure, byPeer: false), "\(String(describing: second))")
        #expect(second.payee == .failed(.localFailure, byPeer: true), "\(String(describing: second))")
        #expect(Self.euros(alice) == "20.00 EUR" && Self.euros(bob) == "0.00 EUR")
    }

    @Test func requestFlowWithNote() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("request")
        alicePerson.category = .category("coffee")
        let request = try PaymentRequest(
            requestID: .random(),
            amount: try bob.wallet!.requestAsset(for: try MoneyText.parse("3.20 EUR"), issuer: nil),
            note: "Coffee")
        let result = try PeerHarness.run(
            payer: alice, payerRole: .answerRequest, payerPerson: alicePerson, payerRanging: Self.near,
            payee: bob, payeeRole: .receive(request: request), payeePerson: bobPerson, payeeRanging: Self.nearToo)
        guard case .paid = result.payer else { Issue.record("\(String(describing: result))"); return }
        #expect(Self.euros(bob) == "3.20 EUR")
        let debit = try alice.wallet!.ledger.entries(kind: .paymentOut).last
        #expect(debit?.category == "coffee")
    }

    @Test func linkDroppedAfterEveryMessageNeverLosesMoneyAndRetryCreditsOnce() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("drop", funds: "100.00 EUR")
        var paid = 0
        // Each direction carries 3 handshake frames, then peer messages: lose everything one side sends
        // from its k-th peer message on, for every k and both sides.
        for cut in 0..<16 {
            let direction: MemoryLink.Direction = cut % 2 == 0 ? .initiatorToResponder : .responderToInitiator
            let hook: MemoryLink.FaultHook = { sent, index, _ in
                sent == direction && index >= 3 + cut / 2 ? .drop : .deliver
            }
            _ = try PeerHarness.run(
                payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR")), payerPerson: alicePerson,
                payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
                payeeRanging: Self.nearToo, hook: hook, timeoutScale: 0.02)
            // Whatever happened, retry every pending payment on a clean link until none is pending.
            for pending in try alice.wallet!.pendingTransfers() {
                let message = try #require(
                    try alice.wallet!.ledger.outgoingMessage(transferID: pending.transfer.payload.order.transferID))
                guard case .transfer(let transferMessage)? = try PeerMessage.decode(message) else {
                    Issue.record("stored message"); continue
                }
                _ = try PeerHarness.run(
                    payer: alice, payerRole: .retry(transferMessage), payerPerson: alicePerson, payerRanging: Self.near,
                    payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson, payeeRanging: Self.nearToo)
            }
            #expect(try alice.wallet!.pendingTransfers().isEmpty, "cut \(cut): a payment stayed pending after retry")
            paid = try alice.wallet!.ledger.entries(kind: .paymentOut).count
            let credited = try bob.wallet!.ledger.entries(kind: .paymentIn).count
            #expect(paid == credited, "cut \(cut): \(paid) debits, \(credited) credits")
        }
        // Money is conserved: what left alice arrived at bob, exactly once each.
        let aliceCents = alice.wallet!.euros.minorUnits
        let bobCents = bob.wallet!.euros.minorUnits
        #expect(aliceCents + bobCents == 10_000)
        #expect(bobCents == Int64(paid) * 100)
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }

    /// The payee holds the payer's checkpoint from an earlier session; the payer rotates; the next session
    /// must follow the rotated log before the payee's consistency check, not refuse it as inconsistent.
    @Test func rotateThenPayOverAChannel() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("rotate-pay")
        let first = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "2.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid = first.payer else {
            Issue.record("before the rotation: \(String(describing: first))"); return
        }
        #expect(
            try bob.wallet!.ledger.latestPeerCheckpoint(wallet: alice.wallet!.walletID) != nil,
            "the payee holds a checkpoint")
        #expect(try bob.wallet!.peerKeyLog(of: alice.wallet!.walletID)?.events.count == 1)
        try alice.wallet!.token.unlock(pin: try alice.main.pin(), confirmFinalTry: false)
        try RotationTests.rotate(alice)
        alice.wallet!.token.lock()
        // Both sides rotate: the payer's receipt check must follow the payee's new log too.
        try bob.wallet!.token.unlock(pin: try bob.main.pin(), confirmFinalTry: false)
        try RotationTests.rotate(bob)
        bob.wallet!.token.lock()
        let second = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "3.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid(let receipt) = second.payer, case .received = second.payee else {
            Issue.record("after the rotation: \(String(describing: second))"); return
        }
        #expect(receipt.payload.keyDate.keySequence == 2, "the payee's receipt is dated by its new key")
        #expect(
            try bob.wallet!.peerKeyLog(of: alice.wallet!.walletID)?.events.count == 3, "the payee followed the rotation"
        )
        #expect(
            try alice.wallet!.peerKeyLog(of: bob.wallet!.walletID)?.events.count == 3, "the payer followed the rotation"
        )
        #expect(try bob.wallet!.ledger.evidence().isEmpty, "a valid rotation is no evidence")
        #expect(Self.euros(alice) == "15.00 EUR" && Self.euros(bob) == "5.00 EUR")
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }

    /// A payer that rotated 100 times (a 201-event log, four pages) pays a payee that knows only its
    /// inception: the payee's lookup waits for every page while the payer's offer is held, in order.
    @Test func aLongKeyEventLogIsPagedAndTheOfferWaitsForIt() throws {
        let (alice, bob, alicePerson, bobPerson) = try Self.pair("rotate-long")
        let first = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "1.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid = first.payer else {
            Issue.record("before the rotations: \(String(describing: first))"); return
        }
        try alice.wallet!.token.unlock(pin: try alice.main.pin(), confirmFinalTry: false)
        // Retired keys are destroyed as it goes, so the token stays small and 100 rotations stay quick.
        for _ in 0..<100 { try RotationTests.rotate(alice, destroyOld: true) }
        alice.wallet!.token.lock()
        #expect(alice.wallet!.keyLog.events.count == 201)
        #expect(alice.wallet!.keyLog.events.count > 3 * KeyEventsMessage.pageEventCountMax, "the log needs four pages")
        let second = try PeerHarness.run(
            payer: alice, payerRole: .pay(try Self.intent(alice, "2.00 EUR")), payerPerson: alicePerson,
            payerRanging: Self.near, payee: bob, payeeRole: .receive(request: nil), payeePerson: bobPerson,
            payeeRanging: Self.nearToo)
        guard case .paid = second.payer, case .received = second.payee else {
            Issue.record("after 100 rotations: \(String(describing: second))"); return
        }
        #expect(
            try bob.wallet!.peerKeyLog(of: alice.wallet!.walletID)?.events.count == 201,
            "the payee followed all four pages")
        #expect(Self.euros(alice) == "17.00 EUR" && Self.euros(bob) == "3.00 EUR")
        for test in [alice, bob] {
            #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
        }
    }
}
