import Foundation
import SecureCrypto

/// A finished channel over a transport: the driver that carries out the handshake machines' actions and
/// then seals and opens records. Any refused record or transport failure closes it for good.
///
/// One thread may send while another receives.
public final class SecureChannel: @unchecked Sendable {
    /// What the handshake established; the peer protocol signs `summary.channelBinding` and shows
    /// `summary.sas`.
    public let summary: ChannelSummary
    private let transport: FrameTransport
    private let sendLock = NSLock()
    private let receiveLock = NSLock()
    private var sealer: RecordSealer
    private var opener: RecordOpener
    private let stateLock = NSLock()
    private var failure: ChannelError?
    private var sentClose = false
    private var receivedClose = false

    init(outcome: HandshakeOutcome, transport: FrameTransport) {
        summary = outcome.summary
        sealer = outcome.makeSealer()
        opener = outcome.makeOpener()
        self.transport = transport
    }

    /// A test hook's observer of plaintext records, and its lock.
    private static let observerLock = NSLock()
    nonisolated(unsafe) private static var observer:
        (@Sendable (_ sent: Bool, _ type: UInt8, _ payload: [UInt8]) -> Void)?

    /// Test hook: `observer` sees every application record of every channel in this process, in plaintext,
    /// as it is sealed (`sent`) or after it is opened. Tests use it to check what crossed a channel (for
    /// example, that no identity crossed before a contact exchange's proximity gate opened) without trusting
    /// the command's own output. The `secure` CLI sets it only when SECURE_TEST_CHANNEL_RECORDS names a file.
    public static func observeRecords(
        _ observer: @escaping @Sendable (_ sent: Bool, _ type: UInt8, _ payload: [UInt8]) -> Void
    ) {
        observerLock.withLock { Self.observer = observer }
    }

    private static func observe(sent: Bool, _ record: ChannelRecord) {
        observerLock.withLock { observer }?(sent, record.type, record.payload)
    }

    /// The 16-byte session id.
    public var sessionId: [UInt8] { summary.sessionId }
    /// The 32-byte channel binding value.
    public var channelBinding: [UInt8] { summary.channelBinding }
    /// The short authentication string.
    public var sas: ShortAuthenticationString { summary.sas }

    /// Runs the initiator's handshake with the shipped suite (X-Wing) and returns the open channel.
    /// Throws `.timeout` when it does not finish in `timeoutSeconds`; the transport is closed on failure.
    public static func initiate(
        over transport: FrameTransport,
        timeoutSeconds: Double = ChannelLimits.handshakeTimeoutSeconds
    ) throws -> SecureChannel {
        var machine = InitiatorHandshake<XWing>()
        return try run(
            over: transport, timeoutSeconds: timeoutSeconds, start: { machine.start() },
            receive: { try machine.receive($0) })
    }

    /// Runs the responder's handshake with the shipped suite (X-Wing); see `initiate`.
    public static func respond(
        over transport: FrameTransport,
        timeoutSeconds: Double = ChannelLimits.handshakeTimeoutSeconds
    ) throws -> SecureChannel {
        var machine = ResponderHandshake<XWing>()
        return try run(
            over: transport, timeoutSeconds: timeoutSeconds, start: { machine.start() },
            receive: { try machine.receive($0) })
    }

    /// The driver: does what the machine asks until it completes, fails or runs out of time.
    static func run(
        over transport: FrameTransport, timeoutSeconds: Double, start: () -> [HandshakeAction],
        receive: ([UInt8]) throws -> [HandshakeAction]
    ) throws -> SecureChannel {
        let deadline = Deadline(secondsFromNow: timeoutSeconds)
        do {
            var actions = start()
            while true {
                for action in actions {
                    switch action {
                    case .send(let body):
                        try transport.send(body, timeoutSeconds: deadline.remainingSeconds)
                    case .complete(let outcome):
                        return SecureChannel(outcome: outcome, transport: transport)
                    }
                }
                guard deadline.remainingSeconds > 0 else { throw handshakeTimeout(timeoutSeconds) }
                let frame: [UInt8]?
                do {
                    frame = try transport.receive(timeoutSeconds: deadline.remainingSeconds)
                } catch let error as ChannelError where error.code == .timeout {
                    throw handshakeTimeout(timeoutSeconds)
                }
                guard let frame else {
                    throw ChannelError(.closed, "the peer closed the connection during the handshake")
                }
                actions = try receive(frame)
            }
        } catch {
            transport.close()
            throw error
        }
    }

    private static func handshakeTimeout(_ seconds: Double) -> ChannelError {
        ChannelError(.timeout, "the handshake did not finish within \(seconds) s")
    }

    /// Seals and sends one record. `type` 0 is the channel's own close record, so passing it is our bug.
    public func send(type: UInt8, payload: [UInt8], timeoutSeconds: Double = ChannelLimits.sendTimeoutSeconds) throws {
        precondition(type != ChannelRecord.closeType, "record type 0 is reserved for close()")
        try sendLock.withLock {
            try checkOpen(sending: true)
            let record = ChannelRecord(type: type, payload: payload)
            Self.observe(sent: true, record)
            let frame = try sealer.seal(record)
            do {
                try transport.send(frame, timeoutSeconds: timeoutSeconds)
            } catch let error as ChannelError {
                fail(error)
                throw error
            }
        }
    }

    /// The next record, or nil once the peer has closed cleanly. A refused record (tampered, replayed,
    /// reordered, from another direction or session) throws and closes the channel; so does a peer that
    /// hangs up without a close record, since its last records may have been cut off.
    public func receive(timeoutSeconds: Double = ChannelLimits.receiveTimeoutSecondsDefault) throws -> ChannelRecord? {
        try receiveLock.withLock {
            if stateLock.withLock({ receivedClose }) { return nil }
            try checkOpen(sending: false)
            let frame: [UInt8]?
            do {
                frame = try transport.receive(timeoutSeconds: timeoutSeconds)
            } catch let error as ChannelError where error.code == .timeout {
                throw error // a quiet peer is not a broken channel; the caller decides whether to wait again
            }
            do {
                guard let frame else {
                    throw ChannelError(
                        .truncated, "the peer hung up without closing the channel; the last records may be lost")
                }
                let record = try opener.open(frame)
                if record.type == ChannelRecord.closeType {
                    stateLock.withLock { receivedClose = true }
                    return nil
                }
                Self.observe(sent: false, record)
                return record
            } catch let error as ChannelError {
                fail(error)
                throw error
            }
        }
    }

    /// Sends the close record (if the channel is still healthy) and closes the transport. After it, sends
    /// throw `.closed`; records the peer sent before our close are lost.
    public func close() {
        sendLock.withLock {
            let healthy = stateLock.withLock { failure == nil && !sentClose }
            if healthy, let frame = try? sealer.seal(ChannelRecord(type: ChannelRecord.closeType, payload: [])) {
                try? transport.send(frame, timeoutSeconds: ChannelLimits.sendTimeoutSeconds)
            }
            stateLock.withLock { sentClose = true }
        }
        transport.close()
    }

    private func checkOpen(sending: Bool) throws {
        try stateLock.withLock {
            if let failure { throw ChannelError(.closed, "the channel was closed after an error: \(failure.message)") }
            if sending && sentClose { throw ChannelError(.closed, "the channel is closed") }
        }
    }

    private func fail(_ error: ChannelError) {
        stateLock.withLock { if failure == nil { failure = error } }
        transport.close()
    }
}
