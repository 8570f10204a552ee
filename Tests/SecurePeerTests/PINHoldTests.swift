import Foundation
import SecureChannel
import SecureCore
import SecureToken
import Testing

@testable import SecurePeer

/// A scripted person that also records when each event came and what it said.
final class TimedPerson: PeerInterface, @unchecked Sendable {
    let pinPath: String
    let start = Date()
    private let lock = NSLock()
    private var log: [(name: String, text: String, at: Double)] = []

    init(pinPath: String) { self.pinPath = pinPath }

    func decide(_ approval: Approval) -> PeerDecision { .approve(overridingBudget: false) }
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice { .category("food") }
    func readPIN() throws -> PIN { try PINSource.file(pinPath).read() }
    func event(_ name: String, _ fields: [String: String], _ text: String) {
        lock.withLock { log.append((name, text, Date().timeIntervalSince(start))) }
    }
    var events: [(name: String, text: String, at: Double)] { lock.withLock { log } }
}

/// Issue 13, case 3: the PIN hold is enforced by a timer, not by the session's loop. While the payer's
/// ranging source stalls past the hold, the timer wipes the PIN and logs the token out; the session, which
/// still needs a signature, then ends before the debit ("PIN hold expired") and nothing is recorded. An
/// honest payment fits in the hold.
@Suite("The PIN hold's timer", .serialized)
struct PINHoldTests {
    /// A payment whose payer reads its ranging from a FIFO that sends three lines, pauses `pause` seconds,
    /// then sends the rest; the payer's PIN is held `holdMilliseconds`.
    static func pay(_ name: String, pause: Double, holdMilliseconds: Int64) throws -> (
        payer: PeerOutcome?, payee: PeerOutcome?, alice: TestWallet, bob: TestWallet, person: TimedPerson,
        rangingEnded: Double
    ) {
        let (alice, bob, _, bobPerson) = try PeerSessionTests.pair(name)
        let person = TimedPerson(pinPath: alice.main.pinPath)
        let path = try RangingDeadlineTests.fifo()
        defer { unlink(path) }
        let lines = (0..<RangingConfiguration.sampleCount).map { "\(400 + $0 % 7)\n" }
        let writer = Thread {
            let descriptor = open(path, O_WRONLY)
            guard descriptor >= 0 else { return }
            for (index, line) in lines.enumerated() {
                _ = line.withCString { write(descriptor, $0, strlen($0)) }
                if index == 2 { Thread.sleep(forTimeInterval: pause) }
            }
            close(descriptor)
        }
        writer.start()
        let link = MemoryLink()
        let policy = RangingPolicy(allowsSimulated: true)
        final class Box: @unchecked Sendable { var outcome: PeerOutcome? }
        let payerBox = Box(), payeeBox = Box()
        let group = DispatchGroup()
        nonisolated(unsafe) let payerWallet = alice.wallet!, payeeWallet = bob.wallet!
        let intent = try PeerSessionTests.intent(alice, "3.00 EUR")
        DispatchQueue.global().async(group: group) {
            guard let channel = try? SecureChannel.initiate(over: link.initiatorEnd) else { return }
            payerBox.outcome = try? PeerDriver(
                wallet: payerWallet, channel: channel, role: .pay(intent), interface: person,
                ranging: .external(path: path), policy: policy, displayName: "Alice",
                pinHoldMilliseconds: holdMilliseconds
            ).run()
        }
        DispatchQueue.global().async(group: group) {
            guard let channel = try? SecureChannel.respond(over: link.responderEnd) else { return }
            payeeBox.outcome = try? PeerDriver(
                wallet: payeeWallet, channel: channel, role: .receive(request: nil), interface: bobPerson,
                ranging: PeerSessionTests.nearToo, policy: policy, displayName: "Bob"
            ).run()
        }
        group.wait()
        let rangingEnded = person.events.first { $0.name == "measured" || $0.name == "error" }?.at ?? -1
        return (payerBox.outcome, payeeBox.outcome, alice, bob, person, rangingEnded)
    }

    @Test func aStalledSourcePastTheHoldEndsBeforeTheDebit() throws {
        let result = try Self.pay("hold-expired", pause: 2.5, holdMilliseconds: 1000)
        let expiry = result.person.events.first { $0.name == "pin" && $0.text.contains("PIN hold expired") }
        #expect(expiry != nil, "\(result.person.events)")
        // The timer fired while the source was still silent, not when the loop next looked (after 2.5 s).
        let firstReading = result.person.events.first { $0.name == "distance" }?.at ?? 99
        if let expiry {
            #expect(
                expiry.at < result.rangingEnded - 0.5 && expiry.at - firstReading < 1.5,
                "\(result.person.events.map { "\($0.at) \($0.name)" }) wiped at \(expiry.at) s, first reading at \(firstReading) s, ranging ended at \(result.rangingEnded) s"
            )
        }
        let refusal = result.person.events.first { $0.name == "error" && $0.text.contains("PIN hold expired") }
        #expect(refusal != nil, "the measurement step names the expired hold: \(result.person.events)")
        guard case .failed? = result.payer else {
            Issue.record("the payer's outcome: \(String(describing: result.payer))"); return
        }
        #expect(PeerSessionTests.euros(result.alice) == "20.00 EUR" && PeerSessionTests.euros(result.bob) == "0.00 EUR")
        #expect(try result.alice.wallet!.ledger.entries(kind: .paymentOut).isEmpty)
        #expect(try result.alice.wallet!.pendingTransfers().isEmpty, "nothing was debited, so nothing is pending")
        #expect(!result.alice.wallet!.token.isUnlocked)
    }

    @Test func anHonestPaymentFitsInTheHold() throws {
        let result = try Self.pay("hold-fits", pause: 0, holdMilliseconds: 3000)
        guard case .paid? = result.payer, case .received? = result.payee else {
            Issue.record("outcomes \(String(describing: (result.payer, result.payee))) \(result.person.events)")
            return
        }
        #expect(PeerSessionTests.euros(result.alice) == "17.00 EUR" && PeerSessionTests.euros(result.bob) == "3.00 EUR")
        #expect(!result.person.events.contains { $0.text.contains("PIN hold expired") })
        #expect(!result.alice.wallet!.token.isUnlocked)
    }
}
