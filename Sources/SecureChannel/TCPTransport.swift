import Foundation

/// Frames over a TCP connection (IPv4; the tests use loopback only): length(4) ‖ body, bodies up to `frameByteCountMax`.
/// Backpressure: a send waits (up to its timeout) while the kernel's buffers are full, and a receive
/// reads no more than the frame in progress, so a peer that does not read slows its sender down instead
/// of growing a buffer.
public final class TCPTransport: FrameTransport, @unchecked Sendable {
    private let socket: Socket
    private let sendLock = NSLock()
    private let receiveLock = NSLock()
    private var decoder = FrameDecoder()
    private var peerClosed = false
    /// The peer's IPv4 address for an accepted connection ("" for one this side opened).
    public let peerAddress: String

    init(socket: Socket, peerAddress: String = "") {
        self.socket = socket
        self.peerAddress = peerAddress
    }

    /// Connects to `host` (an IPv4 address) on `port`, waiting up to `timeoutSeconds`.
    public static func connect(
        host: String = "127.0.0.1", port: UInt16,
        timeoutSeconds: Double = ChannelLimits.connectTimeoutSeconds
    ) throws -> TCPTransport {
        TCPTransport(
            socket: try Socket.connect(host: host, port: port, deadline: Deadline(secondsFromNow: timeoutSeconds)))
    }

    public func send(_ body: [UInt8], timeoutSeconds: Double) throws {
        guard !body.isEmpty, body.count <= ChannelLimits.frameByteCountMax else {
            throw ChannelError(
                .tooLarge, "a frame body of \(body.count) bytes is outside 1...\(ChannelLimits.frameByteCountMax)")
        }
        try sendLock.withLock {
            try socket.sendAll(Frame.encode(body), deadline: Deadline(secondsFromNow: timeoutSeconds))
        }
    }

    public func receive(timeoutSeconds: Double) throws -> [UInt8]? {
        let deadline = Deadline(secondsFromNow: timeoutSeconds)
        return try receiveLock.withLock {
            while true {
                if let body = try decoder.next() { return body }
                if peerClosed { return nil }
                let bytes = try socket.receive(upTo: decoder.wantedByteCount, deadline: deadline)
                if bytes.isEmpty {
                    peerClosed = true
                    if decoder.pendingByteCount > 0 {
                        throw ChannelError(.truncated, "the peer closed the connection in the middle of a frame")
                    }
                    return nil
                }
                decoder.append(bytes)
            }
        }
    }

    public func close() { socket.shutdownBoth() }
}

/// Listens on an IPv4 address (loopback unless told otherwise) and accepts TCP transports.
public final class TCPListener: @unchecked Sendable {
    private let socket: Socket
    /// The port it listens on.
    public let port: UInt16

    /// Listens on `host`:`port`; port 0 picks a free port. The default is loopback: listening on a
    /// network address is the caller's explicit choice.
    public init(host: String = "127.0.0.1", port: UInt16 = 0) throws {
        (socket, self.port) = try Socket.listen(host: host, port: port)
    }

    /// Waits up to `timeoutSeconds` for one connection.
    public func accept(timeoutSeconds: Double) throws -> TCPTransport {
        let (accepted, peer) = try socket.accept(deadline: Deadline(secondsFromNow: timeoutSeconds))
        return TCPTransport(socket: accepted, peerAddress: peer)
    }

    /// Stops listening.
    public func close() { socket.shutdownBoth() }
}
