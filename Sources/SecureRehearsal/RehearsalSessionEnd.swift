import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecurePeer
import SecureStore
import SecureToken
import SecureWallet

/// This side's person: the one at the terminal (or `--yes`). The played side's person is the file.
public protocol RehearsalPerson: AnyObject {
    /// Asks a yes/no question ("Pay 4.50 EUR to …?"); false declines.
    func confirm(_ question: String) -> Bool
    /// The PIN this person types (the rehearsal PIN, "0000", opens a rehearsal token).
    func readPIN(_ prompt: String) throws -> PIN
}

/// One line of a rehearsal's story: an event of one side's `PeerActions` (the same events and fields as a
/// real session's), or of the rehearsal itself (`side` nil).
public struct RehearsalEvent: Sendable {
    /// The side it happened on; nil for the rehearsal's own events.
    public let side: RehearsalSide?
    /// Whether that side is the one the file plays.
    public let played: Bool
    public let name: String
    public let fields: [String: String]
    public let amounts: [String: AssetAmount]
    public let text: String
    /// Milliseconds since the rehearsal started, on its clock.
    public let elapsedMilliseconds: Int64
}

/// A fault the rehearsal file plants (storage failing at the credit).
struct PlantedFault: Error, CustomStringConvertible {
    let description: String
}

/// One side of the rehearsed payment: the real `PeerActions` with its machine, the channel end it reads and
/// writes, and the environment (`PeerEnvironment`) and person (`PeerInterface`) the engine gives it. Each
/// call of `step` does at most one thing: send a delayed message, carry out one action, hand over one message,
/// or fire one timer, so the engine's single loop interleaves the two sides deterministically.
final class RehearsalSessionEnd: PeerEnvironment, PeerInterface {
    let role: RehearsalSide
    let played: Bool
    unowned let engine: Rehearsal
    let owner: RehearsalWallet
    let displayName: String
    var channel: SecureChannel?
    var actions: PeerActions?
    var queue: [PeerAction] = []
    /// The connector's first message, handed over once the machine's start actions are carried out.
    var firstMessage: PeerMessage?
    /// Messages waiting to be sent (a `delay` directive holds one, and keeps the later ones behind it).
    var outbox: [(sendAt: Int64, message: PeerMessage)] = []
    /// The played person is deciding: the action at the head of the queue runs at this time.
    var decidingUntil: Int64?
    var decisionStarted = false
    var currentWait: PeerWait?
    var deadline: Int64 = 0
    /// The side hangs (`fault time out at WAIT`): it neither acts nor reads until the other side ended.
    var silent = false
    /// The link was cut (`fault drop after N`) and this side was told.
    var linkCut = false
    var linkDropTold = false
    var fragments: [UInt8] = []
    /// What the ending is told from.
    var readyStored = false
    var receiptKept = false
    var refusedPeer = false
    var finished = false
    /// This side's readings, repeated to 16.
    let distances: [UInt32]

    init(
        role: RehearsalSide, played: Bool, engine: Rehearsal, owner: RehearsalWallet, displayName: String,
        distances: [UInt32]
    ) {
        self.role = role
        self.played = played
        self.engine = engine
        self.owner = owner
        self.displayName = displayName
        self.distances = distances.isEmpty ? [400] : distances
    }

    var outcome: PeerOutcome? { actions?.outcome }

    /// The session context from this side's wallet and the finished channel.
    func context(_ channel: SecureChannel) throws -> PeerSessionContext {
        let wallet = owner.wallet
        let hello = try PeerActions.hello(
            wallet: wallet, displayName: displayName, randomBytes: { SystemRandom.bytes($0) })
        var context = PeerSessionContext(
            transcriptHash: Digest32(exactly: channel.summary.transcriptHash), channelBinding: channel.channelBinding,
            hello: hello, rangingPolicy: RangingPolicy(allowsSimulated: true),
            trustedIssuers: try wallet.trustedIssuers(), isIssuer: wallet.isIssuer)
        // A till's payer tells the till "refused by the payer's wallet" (21), never why (docs/TILL.md §1.5).
        context.masksWalletRefusals = role == .payer
        return context
    }

    /// Starts a session on `channel` with `machine`.
    func begin(_ machine: PeerActions.Machine, on channel: SecureChannel, first: PeerMessage? = nil) {
        self.channel = channel
        let actions = PeerActions(
            wallet: owner.wallet, machine: machine, helloSize: owner.wallet.latest!.checkpoint.size, environment: self)
        engine.installTillHooks(actions, on: self)
        self.actions = actions
        queue = actions.start()
        firstMessage = first
        currentWait = nil
        finished = false
    }

    /// Forgets the session (before a retry on a new channel).
    func reset() {
        channel = nil
        actions = nil
        queue = []
        outbox = []
        firstMessage = nil
        decidingUntil = nil
        decisionStarted = false
        silent = false
        linkCut = false
        linkDropTold = false
        fragments = []
        finished = false
    }

    // MARK: PeerEnvironment

    var person: PeerInterface { self }

    func send(_ message: PeerMessage) throws {
        if linkCut { throw ChannelError(.closed, "the rehearsal link was cut (as the rehearsal file says)") }
        if played, outbox.isEmpty, let delay = engine.delay(of: message) {
            outbox.append((engine.clock.now + delay, message))
            return
        }
        if !outbox.isEmpty {
            outbox.append((outbox.last!.sendAt, message))
            return
        }
        try transmit(message)
    }

    func transmit(_ message: PeerMessage) throws {
        guard let channel, !linkCut else {
            throw ChannelError(.closed, "the rehearsal link was cut (as the rehearsal file says)")
        }
        try ChannelMessages.send(
            message.encoded, on: channel, whole: Rehearsal.messageRecordType,
            fragment: Rehearsal.fragmentRecordType)
    }

    func now() -> Int64 { engine.clock.now }

    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        let samples = (0..<Rehearsal.sampleCount).map { distances[$0 % distances.count] }
        samples.forEach(show)
        return (.simulated, samples)
    }

    func holdToken(_ token: WalletToken) {}
    func releaseToken(_ token: WalletToken) { token.lock() }
    func lockTokenIfUnheld(_ token: WalletToken) { token.lock() }

    func crashPoint(_ point: PeerCrashPoint, of action: PeerAction) throws {
        if point == .afterReadyRecord { readyStored = true }
        if point == .beforeCredit, played, engine.faultActive(.recordFails) {
            engine.firedFault = true
            throw PlantedFault(description: "the till's storage failed at the credit (as the rehearsal file says)")
        }
    }

    func failed(_ error: Error, during action: PeerAction) throws {
        event("error", ["error": "\(error)"], "\(error)")
    }

    // MARK: PeerInterface

    func decide(_ approval: Approval) -> PeerDecision {
        if played {
            return engine.file.decision.answer == .confirm && !engine.faultActive(.decline)
                ? .approve(overridingBudget: false) : .decline
        }
        if role == .payer, let refusal = engine.refusesPayee(approval.peer) {
            refusedPeer = true
            event("refused", ["reason": "unexpected-peer", "walletID": approval.peer.walletID.hex], refusal)
            return .refuse
        }
        let question = engine.question(for: approval)
        guard approval.needsConfirmation else {
            event(
                "approval", ["question": question],
                question + " (your own request, answered exactly: the PIN alone approves)")
            return .approve(overridingBudget: false)
        }
        let yes = engine.person.confirm(question)
        event("approval", ["question": question, "answer": yes ? "yes" : "no"], question + (yes ? " yes" : " no"))
        return yes ? .approve(overridingBudget: false) : .decline
    }

    /// `--expect-payee` is checked first, before the amount is shown (docs/TILL.md §3.3).
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        if !played, let refusal = engine.refusesPayee(peer) {
            refusedPeer = true
            event("refused", ["reason": "unexpected-peer", "walletID": peer.walletID.hex], refusal)
            return .refuse
        }
        return .category(engine.file.category)
    }

    func readPIN() throws -> PIN {
        if played { return try PIN(RehearsalToken.pin) }
        return try engine.person.readPIN(
            "PIN for the rehearsal token \"\(owner.token.label)\" (\(RehearsalToken.pin)): ")
    }

    func event(_ name: String, _ fields: [String: String], _ text: String) {
        event(name, fields, amounts: [:], text)
    }

    func event(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String) {
        if name == "receipt", role == .payer { receiptKept = true }
        engine.emit(side: self, name, fields, amounts: amounts, text)
    }
}
