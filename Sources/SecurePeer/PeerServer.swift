import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureToken

/// The caps and deadlines of a receiver that serves until stopped. The defaults are `ChannelLimits`'
/// listener limits; tests set them lower to reach them with fewer attackers.
public struct ListenerLimits: Sendable {
    /// Handshakes in progress at once (`ChannelLimits.listenerHandshakeCountMax`).
    public var handshakeCountMax = ChannelLimits.listenerHandshakeCountMax
    /// Live sessions at once (`ChannelLimits.listenerSessionCountMax`).
    public var sessionCountMax = ChannelLimits.listenerSessionCountMax
    /// Handshakes and sessions of one source address (`ChannelLimits.listenerPerSourceCountMax`).
    public var perSourceCountMax = ChannelLimits.listenerPerSourceCountMax
    /// The handshake deadline (`ChannelLimits.handshakeTimeoutSeconds`).
    public var handshakeTimeoutSeconds = ChannelLimits.handshakeTimeoutSeconds
    /// The session deadline (`ChannelLimits.listenerSessionTimeoutSeconds`).
    public var sessionTimeoutSeconds = ChannelLimits.listenerSessionTimeoutSeconds
    /// The wait for live sessions when stopping (`ChannelLimits.listenerDrainTimeoutSeconds`).
    public var drainTimeoutSeconds = ChannelLimits.listenerDrainTimeoutSeconds

    /// The shipped limits.
    public init() {}
}

/// Accepts connections until stopped and runs each on its own thread: first the channel's handshake under
/// its deadline, then the caller's session under the session deadline. A failed connection is logged and
/// never ends the server. Handshakes, live sessions and the connections of one source address are capped;
/// at a cap the oldest connection that waits on its peer is dropped (a handshake always does; a session does
/// unless it is at a prompt or reading the PIN, which is waiting on our own person, or its person approved,
/// or the caller marked it busy), and when none can be dropped the newcomer is.
public final class PeerServer: @unchecked Sendable {
    /// A connection past its handshake, as `serve(sessions:)` hands it to the caller's session.
    public struct Session: @unchecked Sendable {
        /// The open channel.
        public let channel: SecureChannel
        let connection: Connection
        let server: PeerServer

        /// The connector's address.
        public var source: String { connection.source }

        /// Wraps the person so that the server sees when a prompt or a PIN read is open (no cap or deadline
        /// drops the session then) and when the person approved (no cap drops it from then on).
        public func watch(_ person: PeerInterface) -> PeerInterface {
            PersonWatch(person: person, connection: connection, lock: server.lock)
        }

        /// Marks the session busy, or no longer: a busy session is never dropped by a cap (a till's payer,
        /// whatever other connections arrive meanwhile; the till refuses those itself, `PeerDriver.refuse`),
        /// and a first `stop()` waits for it as for an approved one.
        public func markBusy(_ busy: Bool = true) {
            server.lock.withLock { connection.busy = busy }
        }
    }

    /// One accepted connection, as the server tracks it.
    final class Connection: @unchecked Sendable {
        let number: Int
        let source: String
        let transport: TCPTransport
        var live = false
        var liveSince = Date()
        /// How many prompts or PIN reads of this session are open (a count: they may nest).
        var withPerson = 0
        /// Whether our person approved in this session: from then on the payer may have debited, so a
        /// stopping receiver lets the session finish.
        var approved = false
        /// Whether the caller marked the session busy (a till's one payer, docs/TILL.md §1.1): like an approved
        /// one, it is never dropped by a cap, nor by a first stop.
        var busy = false
        var evicted = false

        /// Whether no cap may drop the session: its person approved (the payer may debit), or it is busy.
        var isKept: Bool { approved || busy }

        init(number: Int, source: String, transport: TCPTransport) {
            self.number = number
            self.source = source
            self.transport = transport
        }
    }

    /// How often the accept loop wakes to check for a stop and for sessions past their deadline.
    static let pollSeconds = 0.25

    private let listener: TCPListener
    private let limits: ListenerLimits
    private let log: (String, [String: String], String) -> Void
    fileprivate let lock = NSLock()
    /// Open connections by arrival number; the lowest number is the oldest.
    private var connections: [Int: Connection] = [:]
    private var nextNumber = 0
    private var stopRequests = 0
    private let finished = DispatchGroup()

    /// A server on `listener`; `log` receives one event per refused, failed or dropped connection.
    public init(
        listener: TCPListener, limits: ListenerLimits = ListenerLimits(),
        log: @escaping (String, [String: String], String) -> Void
    ) {
        self.listener = listener
        self.limits = limits
        self.log = log
    }

    /// Asks the server to stop: it accepts no more connections, drops the handshakes in progress and the
    /// sessions that no one approved yet and that are not at a prompt (nothing can have moved in them), and
    /// waits (at most the drain time) for the sessions past an approval, where the payer may have debited,
    /// and for open prompts. A second request drops every session.
    public func stop() {
        let doomed = lock.withLock { () -> [Connection] in
            stopRequests += 1
            return connections.values.filter {
                !$0.live || stopRequests > 1 || (!$0.isKept && $0.withPerson == 0)
            }
        }
        for connection in doomed { evict(connection, "the receiver is stopping") }
    }

    private var stopping: Bool { lock.withLock { stopRequests > 0 } }

    /// Serves until `stop()`. `session` runs each connection past its handshake, with a person wrapper that
    /// marks the session as waiting on our own person while a prompt or a PIN read is open.
    public func serve(session: @escaping @Sendable (SecureChannel, (PeerInterface) -> PeerInterface) -> Void) {
        serve(sessions: { served in session(served.channel, served.watch) })
    }

    /// Serves until `stop()`, handing each connection past its handshake to `sessions` as a `Session`, which
    /// can also mark it busy.
    public func serve(sessions session: @escaping @Sendable (Session) -> Void) {
        while !stopping {
            sweepDeadlines()
            let transport: TCPTransport
            do {
                transport = try listener.accept(timeoutSeconds: Self.pollSeconds)
            } catch let error as ChannelError where error.code == .timeout {
                continue
            } catch {
                log("connection", ["error": "\(error)"], "accepting a connection failed: \(error)")
                Thread.sleep(forTimeInterval: Self.pollSeconds)
                continue
            }
            guard let connection = admit(transport) else { continue }
            finished.enter()
            Thread.detachNewThread { [self] in
                defer { finished.leave() }
                run(connection, session: session)
            }
        }
        listener.close()
        let drained = finished.wait(timeout: .now() + limits.drainTimeoutSeconds)
        if drained == .timedOut {
            lock.withLock { Array(connections.values) }.forEach { evict($0, "the receiver stopped") }
            _ = finished.wait(timeout: .now() + Self.pollSeconds * 8)
        }
    }

    /// Registers a new connection under the handshake and per-source caps, dropping the oldest connection
    /// that waits on its peer when a cap is reached; nil when the newcomer itself is refused.
    private func admit(_ transport: TCPTransport) -> Connection? {
        let source = transport.peerAddress
        var dropped: [Connection] = []
        let connection = lock.withLock { () -> Connection? in
            let fromSource = connections.values.filter { $0.source == source && !$0.evicted }
            if fromSource.count >= limits.perSourceCountMax {
                guard let oldest = oldestWaitingOnPeer(fromSource) else { return nil }
                oldest.evicted = true
                dropped.append(oldest)
            }
            let handshakes = connections.values.filter { !$0.live && !$0.evicted }
            if handshakes.count >= limits.handshakeCountMax, let oldest = oldestWaitingOnPeer(handshakes) {
                oldest.evicted = true
                dropped.append(oldest)
            }
            nextNumber += 1
            let connection = Connection(number: nextNumber, source: source, transport: transport)
            connections[nextNumber] = connection
            return connection
        }
        for old in dropped { drop(old, "a cap was reached; the oldest connection waiting on its peer is dropped") }
        if connection == nil {
            transport.close()
            log(
                "connection", ["source": source, "refused": "per-source cap"],
                "refused a connection from \(source): it holds \(limits.perSourceCountMax) already, each at a prompt, "
                    + "approved or busy")
        }
        return connection
    }

    /// The oldest of `candidates` that waits on its peer: a handshake, or a session with no prompt open that
    /// nobody approved or marked busy.
    private func oldestWaitingOnPeer(_ candidates: [Connection]) -> Connection? {
        candidates.filter { $0.withPerson == 0 && !$0.isKept && !$0.evicted }.min { $0.number < $1.number }
    }

    private func run(_ connection: Connection, session: (Session) -> Void) {
        defer {
            connection.transport.close()
            lock.withLock { _ = connections.removeValue(forKey: connection.number) }
        }
        let channel: SecureChannel
        do {
            channel = try SecureChannel.respond(
                over: connection.transport, timeoutSeconds: limits.handshakeTimeoutSeconds)
        } catch {
            let evicted = lock.withLock { connection.evicted }
            if !evicted {
                log(
                    "connection", ["source": connection.source, "error": "\(error)"],
                    "a connection from \(connection.source) failed its handshake: \(error)")
            }
            return
        }
        guard goLive(connection) else { return }
        session(Session(channel: channel, connection: connection, server: self))
    }

    /// Moves a connection past its handshake under the session cap; false when it is refused.
    private func goLive(_ connection: Connection) -> Bool {
        var dropped: Connection?
        let admitted = lock.withLock { () -> Bool in
            guard !connection.evicted, stopRequests == 0 else { return false }
            let live = connections.values.filter { $0.live && !$0.evicted }
            if live.count >= limits.sessionCountMax {
                guard let oldest = oldestWaitingOnPeer(live) else { return false }
                oldest.evicted = true
                dropped = oldest
            }
            connection.live = true
            connection.liveSince = Date()
            return true
        }
        if let dropped {
            drop(dropped, "the session cap was reached; the oldest session waiting on its peer is dropped")
        }
        if !admitted {
            log(
                "connection", ["source": connection.source, "refused": "session cap"],
                "refused a session from \(connection.source): \(limits.sessionCountMax) sessions are live, each at a prompt, "
                    + "approved or busy, or the receiver is stopping")
        }
        return admitted
    }

    /// Drops sessions past the session deadline, unless they are at a prompt (they are checked again later).
    private func sweepDeadlines() {
        let now = Date()
        let late = lock.withLock {
            connections.values.filter {
                $0.live && !$0.evicted && $0.withPerson == 0
                    && now.timeIntervalSince($0.liveSince) > limits.sessionTimeoutSeconds
            }
        }
        for connection in late { evict(connection, "the session deadline passed") }
    }

    private func evict(_ connection: Connection, _ reason: String) {
        let first = lock.withLock { () -> Bool in
            defer { connection.evicted = true }
            return !connection.evicted
        }
        if first { drop(connection, reason) }
    }

    private func drop(_ connection: Connection, _ reason: String) {
        log(
            "connection", ["source": connection.source, "dropped": reason],
            "dropped a connection from \(connection.source): \(reason)")
        connection.transport.close()
    }
}

/// Forwards to the person, marking the session as waiting on our own person while a prompt or PIN read is
/// open, so no cap and no deadline drops it then.
final class PersonWatch: PeerInterface {
    let person: PeerInterface
    let connection: PeerServer.Connection
    let lock: NSLock

    init(person: PeerInterface, connection: PeerServer.Connection, lock: NSLock) {
        self.person = person
        self.connection = connection
        self.lock = lock
    }

    private func atPrompt<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.withLock { connection.withPerson += 1 }
        defer { lock.withLock { connection.withPerson -= 1 } }
        return try body()
    }

    func decide(_ approval: Approval) -> PeerDecision {
        let decision = atPrompt { person.decide(approval) }
        if case .approve = decision { lock.withLock { connection.approved = true } }
        return decision
    }

    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        atPrompt { person.chooseCategory(for: request, from: peer) }
    }

    func readPIN() throws -> PIN { try atPrompt { try person.readPIN() } }

    func event(_ name: String, _ fields: [String: String], _ text: String) { person.event(name, fields, text) }

    func event(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String) {
        person.event(name, fields, amounts: amounts, text)
    }
}
