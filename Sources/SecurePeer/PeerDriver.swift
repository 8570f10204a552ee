import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureStore
import SecureToken
import SecureWallet

/// Runs one peer payment session over an open SecureChannel: the loop (records in, timers, link failures)
/// and the channel. What the pure payer or payee machine asks for is carried out by `PeerActions`, the same
/// code the simulator and the benchmarks drive; this driver gives it a `ChannelEnvironment`: the channel,
/// the system clock, the person, real ranging and the process's token holds.
public final class PeerDriver {
    /// What this side does in the session.
    public enum Role: Sendable {
        /// Payer-initiated: pay this amount.
        case pay(PaymentIntent)
        /// Payer, answering the payee's request (the person picks a category).
        case answerRequest
        /// Payer, re-sending a pending transfer in a new session.
        case retry(TransferMessage)
        /// Payee, optionally opening with a request.
        case receive(request: PaymentRequest?)
    }

    /// The PIN is held for the machine-speed steps after an approval, and never longer than this.
    public static let pinHoldSecondsMax = Double(PeerActions.pinHoldMillisecondsMax) / 1000
    /// How often the loop wakes to check its timers while waiting for a record.
    static let pollSeconds = 0.25
    /// The channel's record type for a whole peer message, and for a fragment that more fragments follow.
    static let messageRecordType: UInt8 = 1
    static let fragmentRecordType: UInt8 = 2
    /// A payer's contact probe, and the receiver's answer (docs/PROTOCOL.md, "Contacts → Paying a contact");
    /// contact exchanges use 3 and 4.
    public static let probeRecordType: UInt8 = 5
    public static let answerRecordType: UInt8 = 6

    /// The receiver's side of `pay --to NAME`: given a connector's probe and the channel binding, the answer
    /// under the contact whose discovery key checks, or nil when none does.
    public typealias ProbeResponder = @Sendable (_ probe: [UInt8], _ channelBinding: [UInt8]) -> [UInt8]?

    let channel: SecureChannel
    let interface: PeerInterface
    /// What carries out the machine's actions; a caller sets its till hooks (`decisionMilliseconds`,
    /// `approvalHoldUntil`, `beforeLookUp`) before `run()` and reads `receiptUnrecorded` after.
    public let actions: PeerActions
    /// Multiplies every wait's timeout; tests of silent links shorten them.
    private let timeoutScale: Double
    /// The receiver speaks only after the connector did: it answers probes, and sends its hello after the
    /// payer's (nil for a payer).
    private let probeResponder: ProbeResponder?
    private let waitsForConnector: Bool

    /// Prepares a session on an open channel. The wallet's latest checkpoint goes into `hello`.
    public init(
        wallet: Wallet, channel: SecureChannel, role: Role, interface: PeerInterface, ranging: RangingConfiguration,
        policy: RangingPolicy, displayName: String, walletLock: NSLock = NSLock(), timeoutScale: Double = 1,
        pinHoldMilliseconds: Int64 = PeerActions.pinHoldMillisecondsMax, probeResponder: ProbeResponder? = nil,
        till: Bool = false
    ) throws {
        precondition(timeoutScale > 0 && timeoutScale <= 1, "timeouts may only be shortened, for tests of silent links")
        self.timeoutScale = timeoutScale
        self.probeResponder = probeResponder
        if case .receive = role { waitsForConnector = true } else { waitsForConnector = false }
        self.channel = channel
        self.interface = interface
        let (hello, trusted) = try walletLock.withLock {
            (
                try PeerActions.hello(
                    wallet: wallet, displayName: displayName, randomBytes: { SystemRandom.bytes($0) }),
                try wallet.trustedIssuers()
            )
        }
        // The channel's transcript hash is a SHA-256 output, so its length is the channel's own invariant.
        var context = PeerSessionContext(
            transcriptHash: Digest32(exactly: channel.summary.transcriptHash), channelBinding: channel.channelBinding,
            hello: hello, rangingPolicy: policy, trustedIssuers: trusted, isIssuer: wallet.isIssuer)
        if wallet.isIssuer { context.outstanding = walletLock.withLock { wallet.state.balances } }
        // A payer at a till: its own wallet's refusals go out as one code (21), never the reason.
        if till, !waitsForConnector { context.masksWalletRefusals = true }
        let machine: PeerActions.Machine
        switch role {
        case .pay(let intent): machine = .payer(PayerMachine(paying: intent, context: context, transferID: .random()))
        case .answerRequest: machine = .payer(PayerMachine(answeringRequestWith: context, transferID: .random()))
        case .retry(let message): machine = .payer(PayerMachine(retrying: message, context: context))
        case .receive(let request): machine = .payee(PayeeMachine(context: context, request: request))
        }
        actions = PeerActions(
            wallet: wallet, machine: machine, helloSize: hello.checkpoint.checkpoint.size,
            environment: ChannelEnvironment(channel: channel, person: interface, ranging: ranging),
            walletLock: walletLock, pinHoldMilliseconds: pinHoldMilliseconds)
        if till { actions.decisionMilliseconds = TillLimits.decisionMilliseconds }
    }

    // MARK: Till sessions

    /// A till's admission (docs/TILL.md §1.1): asked when the connector's first payment message arrived;
    /// nil serves the session, a reason refuses it (`tillBusy`, or `timeout` for a closed till) in place of
    /// the hello. Set before `run()`.
    public var admit: (() -> PeerFailureReason?)?
    private let control = NSLock()
    private var withdrawRequested = false
    private var pastReady = false

    /// Asks the session, from another thread (the till operator's cancel), to withdraw before `ready`.
    /// Returns false when it is too late: the ready record is stored and only the payer's transfer (or its
    /// absence) can end the session.
    public func requestWithdraw() -> Bool {
        control.withLock {
            withdrawRequested = true
            return !pastReady
        }
    }

    /// Whether this session stored a ready record (a payee): from then on the payer may have debited.
    public var readyStored: Bool { control.withLock { pastReady } }

    // MARK: The loop

    /// Runs the session to its end and returns how it ended. The channel is closed and the token locked.
    public func run() -> PeerOutcome {
        interface.event(
            "channel", ["sas": channel.sas.digits, "sasWords": channel.sas.words.joined(separator: " ")],
            "secure channel up; compare the code with the other person: \(channel.sas)")
        defer {
            actions.finishSession()
            channel.close()
        }
        // A receiver says nothing, its hello included, until the connector has spoken: a probe (answered),
        // then the payer's first message, which the machine gets right after its own start.
        var firstMessage: [UInt8]?
        if waitsForConnector {
            guard
                let first = Self.awaitConnector(
                    channel: channel, timeoutScale: timeoutScale, probeResponder: probeResponder,
                    log: { [interface] in interface.event($0, $1, $2) })
            else { return .failed(.timeout, byPeer: true) }
            firstMessage = first
            if let refusal = admit?() {
                let failure = PeerMessage.failure(PeerFailure(offerID: nil, reason: refusal))
                try? ChannelMessages.send(
                    failure.encoded, on: channel, whole: Self.messageRecordType, fragment: Self.fragmentRecordType)
                interface.event(
                    "connection", ["refused": "\(refusal)"], "a second payer was told: \(refusal); closed")
                return .failed(refusal, byPeer: false)
            }
        }
        var queue = actions.start()
        var currentWait: PeerWait?
        var deadline = Date()
        var fragments: [UInt8] = []
        while true {
            // The channel environment never rethrows: every failure becomes the machine's answer.
            while !queue.isEmpty { queue += (try? actions.perform(queue.removeFirst())) ?? [] }
            let withdraw = control.withLock {
                pastReady = actions.readyStored
                defer { withdrawRequested = false }
                return withdrawRequested
            }
            if withdraw {
                queue = actions.withdraw()
                continue
            }
            if let first = firstMessage {
                firstMessage = nil
                queue = actions.deliver(bytes: first)
                continue
            }
            if let outcome = actions.outcome { return outcome }
            if actions.hasReleasableMessage {
                queue = actions.releaseHeldMessage()
                continue
            }
            actions.releasePINIfExpired()
            guard let wait = actions.wait else { return .failed(.localFailure, byPeer: false) }
            if wait != currentWait {
                currentWait = wait
                // A till's decision deadline is absolute, on the environment's clock (the system clock here).
                deadline =
                    actions.deadline(for: wait).map { Date(timeIntervalSince1970: Double($0) / 1000) }
                    ?? Date(timeIntervalSinceNow: Double(wait.seconds) * timeoutScale)
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                interface.event(
                    "timeout", ["wait": wait.rawValue], "no answer while waiting for \(wait.rawValue); giving up")
                queue = actions.timeoutExpired()
                continue
            }
            do {
                guard let record = try channel.receive(timeoutSeconds: min(remaining, Self.pollSeconds)) else {
                    queue = actions.linkDropped()
                    continue
                }
                // Only payment records make messages; another protocol's record (a probe, a contact message)
                // mid-session is dropped, never glued onto the next message.
                guard record.type == Self.messageRecordType || record.type == Self.fragmentRecordType else {
                    interface.event(
                        "protocol", ["error": "record type \(record.type) mid-session"],
                        "ignored a record of type \(record.type), which no payment sends")
                    continue
                }
                fragments += record.payload
                guard fragments.count <= PeerMessage.encodedByteCountMax else {
                    queue = actions.linkDropped(); continue
                }
                guard record.type == Self.messageRecordType else { continue }
                let bytes = fragments
                fragments = []
                queue = actions.deliver(bytes: bytes)
            } catch let error as ChannelError where error.code == .timeout {
                continue
            } catch {
                interface.event("link", ["error": "\(error)"], "the link dropped: \(error)")
                queue = actions.linkDropped()
            }
        }
    }

    /// The receiver's wait for the connector's first payment message, answering contact probes meanwhile
    /// (with `probeResponder`, or with an empty answer); nil when the connector hangs up, stays silent for the
    /// hello's wait, or sends something else.
    private static func awaitConnector(
        channel: SecureChannel, timeoutScale: Double, probeResponder: ProbeResponder?,
        log interface: (String, [String: String], String) -> Void
    ) -> [UInt8]? {
        let deadline = Date(timeIntervalSinceNow: Double(PeerWait.peerHello.seconds) * timeoutScale)
        var fragments: [UInt8] = []
        var probes = 0
        while deadline.timeIntervalSinceNow > 0 {
            do {
                guard let record = try channel.receive(timeoutSeconds: min(deadline.timeIntervalSinceNow, 1)) else {
                    return nil
                }
                switch record.type {
                case Self.probeRecordType:
                    // One probe per channel: a connector that probes again is guessing.
                    probes += 1
                    guard probes == 1 else { return nil }
                    let answer = probeResponder?(record.payload, channel.channelBinding) ?? []
                    interface(
                        "probe", ["answered": answer.isEmpty ? "no" : "yes"],
                        answer.isEmpty
                            ? "a connector asked for a contact this wallet does not have"
                            : "a contact's probe checked; answered")
                    try channel.send(type: Self.answerRecordType, payload: answer)
                case Self.fragmentRecordType:
                    fragments += record.payload
                    guard fragments.count <= PeerMessage.encodedByteCountMax else { return nil }
                case Self.messageRecordType:
                    return fragments + record.payload
                default:
                    interface(
                        "ignored", ["record": "\(record.type)"],
                        "the connector sent something other than a payment (record type \(record.type)); closed")
                    return nil
                }
            } catch let error as ChannelError where error.code == .timeout {
                continue
            } catch {
                interface("link", ["error": "\(error)"], "the link dropped: \(error)")
                return nil
            }
        }
        return nil
    }

    /// A receiver that will not serve this connection (a busy till: `tillBusy`; a closed one: `timeout`)
    /// still speaks second: it waits for the connector's first payment message as a session would (a contact
    /// probe gets an empty answer), then sends `failure(no offer, reason)` in place of its hello and closes
    /// the channel. Nothing of the wallet is read or sent. Returns whether the failure went out.
    @discardableResult
    public static func refuse(
        channel: SecureChannel, reason: PeerFailureReason, timeoutScale: Double = 1,
        log: @escaping (String, [String: String], String) -> Void = { _, _, _ in }
    ) -> Bool {
        precondition(timeoutScale > 0 && timeoutScale <= 1, "timeouts may only be shortened, for tests of silent links")
        defer { channel.close() }
        guard awaitConnector(channel: channel, timeoutScale: timeoutScale, probeResponder: nil, log: log) != nil else {
            return false
        }
        let failure = PeerMessage.failure(PeerFailure(offerID: nil, reason: reason))
        do {
            try ChannelMessages.send(
                failure.encoded, on: channel, whole: messageRecordType, fragment: fragmentRecordType)
        } catch {
            log("link", ["error": "\(error)"], "the link dropped: \(error)")
            return false
        }
        log("refused", ["reason": "\(reason)"], "told the connector: \(reason); closed")
        return true
    }

    /// The payer's side of `pay --to NAME`, before anything else on a new channel: sends the probe for this
    /// channel and checks the answer against the contact's discovery key. A receiver that is not the contact
    /// (a replayed or relayed announcement) cannot answer, and then nothing else is sent, not even the hello.
    public static func probe(channel: SecureChannel, discoveryKey: SecretBytes, timeoutSeconds: Double = 10) throws
        -> Bool
    {
        try channel.send(
            type: probeRecordType,
            payload: ContactSecret.probe(discoveryKey: discoveryKey, channelBinding: channel.channelBinding))
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        while deadline.timeIntervalSinceNow > 0 {
            do {
                guard let record = try channel.receive(timeoutSeconds: deadline.timeIntervalSinceNow) else {
                    return false
                }
                guard record.type == answerRecordType else { return false }
                let expected = ContactSecret.answer(discoveryKey: discoveryKey, channelBinding: channel.channelBinding)
                return ConstantTime.equal(record.payload, expected)
            } catch let error as ChannelError where error.code == .timeout {
                continue
            }
        }
        return false
    }

    /// The first and last two bytes of a key's fingerprint: "3F2A…9C1B".
    public static func shortFingerprint(_ key: P256.PublicKey) -> String { PeerActions.shortFingerprint(key) }

    /// One line about a receipt: who countersigned what.
    public static func describe(_ receipt: SignedReceipt) -> String { PeerActions.describe(receipt) }

    /// A short stable name for `--json`.
    public static func name(of outcome: PeerOutcome) -> String { PeerActions.name(of: outcome) }
}

/// PeerActions' environment for a real session: the channel (messages fragmented into records), the system
/// clock, the ranging source, and the process's token holds (several sessions may share one token).
final class ChannelEnvironment: PeerEnvironment {
    let channel: SecureChannel
    let person: PeerInterface
    let ranging: RangingConfiguration

    init(channel: SecureChannel, person: PeerInterface, ranging: RangingConfiguration) {
        self.channel = channel
        self.person = person
        self.ranging = ranging
    }

    func send(_ message: PeerMessage) throws {
        try ChannelMessages.send(
            message.encoded, on: channel, whole: PeerDriver.messageRecordType, fragment: PeerDriver.fragmentRecordType)
    }

    func now() -> Int64 { Wallet.systemClock() }

    func rangingSamples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        try ranging.samples(show: show)
    }

    func armPINTimer(milliseconds: Int64, _ fire: @escaping @Sendable () -> Void) {
        HoldTimers.shared.arm(after: Double(milliseconds) / 1000, fire)
    }

    func holdToken(_ token: WalletToken) { TokenHolds.shared.acquire(token) }
    func releaseToken(_ token: WalletToken) { TokenHolds.shared.release(token) }
    func lockTokenIfUnheld(_ token: WalletToken) { TokenHolds.shared.lockIfUnheld(token) }
}
