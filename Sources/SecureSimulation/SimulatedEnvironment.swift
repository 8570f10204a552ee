import Foundation
import SecureCore
import SecureCrypto
@_spi(Simulation) import SecurePeer
import SecureStore
import SecureTestSupport
import SecureToken
@_spi(Simulation) import SecureWallet

/// The planted `refusalAfterDebit` bug: a check that should have refused before the debit fails after it.
struct PlantedRefusal: Error, CustomStringConvertible {
    var description: String { "planted refusal after the debit" }
}

/// PeerActions' environment in the simulator: the link is the simulator's faulty queue, the clock is the
/// simulated one, ranging is seeded, crash points are answered from the seed, and the person approves,
/// declines and picks categories at random. One process holds a wallet at a time, so the token's holds
/// are this session's alone: letting go locks it.
final class SimulatedEnvironment: PeerEnvironment, PeerInterface {
    unowned let simulator: Simulator
    unowned let end: SessionEnd
    unowned let session: SimulatedSession
    /// The payee's ledger size before `accept`, for the planted non-idempotent accept.
    private var sizeBeforeCredit: UInt64 = 0
    /// The peer's key-event log came garbled (pages reordered or duplicated by the simulated link, which a
    /// real channel would close on) or was refused: the lookup then goes on with the log as known before.
    private var keyLogGarbled = false

    init(simulator: Simulator, end: SessionEnd, session: SimulatedSession) {
        self.simulator = simulator
        self.end = end
        self.session = session
    }

    private var simulated: SimulatedWallet { simulator.wallets[end.walletIndex] }
    private func note(_ text: String) { simulator.note("s\(session.number) \(simulator.role(end)) \(text)") }

    // MARK: PeerEnvironment

    var person: PeerInterface { self }

    func send(_ message: PeerMessage) throws { simulator.send(message, from: end, in: session) }

    func now() -> Int64 { simulator.clock.now }

    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        var ranging = SimulatedRanging(
            seed: simulator.random.next(),
            distanceMillimetres: 300 + UInt32(simulator.random.next() % 300))
        return (.simulated, ranging.samples(count: 16))
    }

    func holdToken(_ token: WalletToken) {}
    func releaseToken(_ token: WalletToken) { token.lock() }
    func lockTokenIfUnheld(_ token: WalletToken) { token.lock() }

    func crashPoint(_ point: PeerCrashPoint, of action: PeerAction) throws {
        if point == .afterCredit, case .credit(let task) = action { try plantRepeatedCredit(task) }
        // The windows where a payment is in flight (debited, credited, not yet confirmed) are hit more often.
        let inFlight = point == .afterDebit || point == .afterCredit || point == .beforeReceipt
        if simulator.config.faults && !simulator.healing && simulator.chance(inFlight ? 80 : 20) {
            throw SimulatedCrash(point: point.rawValue)
        }
        if point == .afterDebit, simulator.config.broken == .refusalAfterDebit { throw PlantedRefusal() }
        if point == .beforeCredit { sizeBeforeCredit = simulated.wallet?.size ?? 0 }
    }

    func failed(_ error: Error, during action: PeerAction) throws {
        if error is SimulatedCrash { throw error }
        if let token = error as? TokenError {
            simulator.stats.tokenFaults += 1
            note("token \(token.code) \(token.returnValueName ?? "")")
        } else {
            note("error: \("\(error)".prefix(70))")
        }
    }

    /// The planted `nonIdempotentAccept` bug on a peer credit: accept appended nothing for a transfer whose
    /// credit the auditor has seen (a re-delivery), and the driver credits it again.
    private func plantRepeatedCredit(_ task: CreditTask) throws {
        guard simulator.config.broken == .nonIdempotentAccept, let wallet = simulated.wallet,
            wallet.size == sizeBeforeCredit,
            simulator.auditor.creditCount(of: task.transfer.payload.order.transferID) > 0
        else { return }
        try simulator.plantSecondCredit(task.transfer, in: wallet)
    }

    // MARK: PeerInterface (the person)

    func decide(_ approval: Approval) -> PeerDecision {
        if simulator.chance(100) {
            note("declines")
            return .decline
        }
        return .approve(overridingBudget: false)
    }

    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        simulator.chance(100) ? .decline : .category("food")
    }

    func readPIN() throws -> PIN { try PIN("1234") }

    /// The events that tell a session's story go into the trace; distances and greetings do not.
    func event(_ name: String, _ fields: [String: String], _ text: String) {
        switch name {
        case "finished":
            let outcome = fields["outcome"] ?? "?"
            simulator.stats.outcomes[String(outcome.split(separator: ":").first ?? "?"), default: 0] += 1
            note("finished \(outcome)")
        case "pin":
            if fields["error"] != nil { simulator.stats.tokenFaults += 1 }
            note("pin \(fields["error"].map { String($0.prefix(50)) } ?? "")")
        case "keyEvents":
            if fields["outcome"] == "followed" { simulator.stats.keyLogsFollowed += 1 } else { keyLogGarbled = true }
            let outcome = fields["outcome"] ?? "?"
            note(outcome == "followed" ? "key events followed" : "key events \(outcome): \(text.prefix(90))")
        case "debit", "credit", "refused", "reversal", "protocol", "receipt":
            note(
                "\(name) "
                    + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.prefix(40))" }.joined(
                        separator: " "))
        case "peer":
            if !keyLogGarbled { checkPeerLogFollowed() }
        default:
            break
        }
    }

    /// Rotate then pay: an honest wallet looks an honest peer up only once it follows the peer's current
    /// key-event log (the head its hello named), or it checks the peer's checkpoint against retired keys.
    private func checkPeerLogFollowed() {
        let peer = simulator.wallets[session.other(end).walletIndex]
        guard simulated.isHonest, peer.isHonest, let peerWallet = peer.wallet, let actions = end.actions else { return }
        let known = actions.lookedUpKeyLog
        guard known?.head != peerWallet.keyLog.head else { return }
        simulator.auditor.violation = simulator.failure(
            "peer-key-log-followed",
            "s\(session.number): w\(end.walletIndex) looked up w\(peer.index) knowing "
                + "\(known?.events.count ?? 0) of its \(peerWallet.keyLog.events.count) key events")
    }
}
