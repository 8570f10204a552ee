import Foundation
import SecureChannel
import SecureCore
import SecurePeer
import SecureToken
import Testing

/// The receiver's eviction rule, on real loopback sockets: at the session cap the oldest session waiting on
/// its peer is dropped, never one waiting on our own person (here, a PIN read that blocks until released).
@Suite("PeerServer caps and eviction", .serialized)
struct PeerServerTests {
    /// A person whose PIN read blocks until the test releases it, then fails (no token is needed).
    final class BlockingPerson: PeerInterface, @unchecked Sendable {
        let release = DispatchSemaphore(value: 0)
        let reading = DispatchSemaphore(value: 0)

        func decide(_ approval: Approval) -> PeerDecision { .decline }
        func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice { .decline }
        func readPIN() throws -> PIN {
            reading.signal()
            release.wait()
            throw ChannelError(.closed, "released")
        }
        func event(_ name: String, _ fields: [String: String], _ text: String) {}
    }

    final class Log: @unchecked Sendable {
        var lines: [String] = []
        let lock = NSLock()
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var text: String { lock.withLock { lines.joined(separator: "\n") } }
    }

    @Test func aSessionAtThePromptIsNeverDroppedButOneWaitingOnItsPeerIs() throws {
        let listener = try TCPListener()
        var limits = ListenerLimits()
        limits.sessionCountMax = 1
        limits.drainTimeoutSeconds = 5
        let log = Log()
        let server = PeerServer(listener: listener, limits: limits) { _, _, text in log.add(text) }
        let person = BlockingPerson()
        nonisolated(unsafe) let first = person
        let sessions = DispatchSemaphore(value: 0)
        let serving = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.serve { channel, watch in
                // The first session reads the PIN (waiting on our person), then waits on its peer.
                if sessions.wait(timeout: .now()) == .success {
                    _ = try? watch(first).readPIN()
                }
                _ = try? channel.receive(timeoutSeconds: 30)
            }
            serving.signal()
        }
        sessions.signal() // one token: only the first session reads the PIN
        let a = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        #expect(person.reading.wait(timeout: .now() + 10) == .success, "the first session never reached the PIN")

        // At the cap with the only live session at the prompt: the newcomer is refused, the first is kept.
        let b = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        #expect((try? b.receive(timeoutSeconds: 5)) == nil, "the second session was not refused")
        #expect(log.text.contains("refused a session"), "\(log.text)")

        // Once the PIN read is over, the first session waits on its peer and a newcomer drops it.
        person.release.signal()
        Thread.sleep(forTimeInterval: 0.3)
        let c = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        #expect((try? a.receive(timeoutSeconds: 5)) == nil, "the first session, waiting on its peer, was kept")
        let logged = Date(timeIntervalSinceNow: 5) // the server logs just after it closes the connection
        while !log.text.contains("dropped a connection") && Date() < logged { Thread.sleep(forTimeInterval: 0.05) }
        #expect(log.text.contains("dropped a connection"), "\(log.text)")

        server.stop()
        server.stop() // a second stop drops the live session too
        #expect(serving.wait(timeout: .now() + 10) == .success, "the server did not stop")
        c.close()
        b.close()
    }

    /// A till's one payer (docs/TILL.md §7.7): a session the caller marked busy is never dropped by a cap,
    /// though it waits on its peer; newcomers are refused instead, and it goes on.
    @Test func aBusySessionIsNeverDroppedByACap() throws {
        let listener = try TCPListener()
        var limits = ListenerLimits()
        limits.sessionCountMax = 1
        limits.drainTimeoutSeconds = 5
        let log = Log()
        let server = PeerServer(listener: listener, limits: limits) { _, _, text in log.add(text) }
        let busy = DispatchSemaphore(value: 0)
        let serving = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.serve(sessions: { session in
                // The busy session waits on its peer, then echoes one record back.
                session.markBusy()
                busy.signal()
                if let record = try? session.channel.receive(timeoutSeconds: 30) {
                    try? session.channel.send(type: record.type, payload: record.payload)
                }
            })
            serving.signal()
        }
        let a = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        #expect(busy.wait(timeout: .now() + 10) == .success, "the first session never started")
        // Two newcomers at the cap: each is refused, and the busy session is kept.
        for _ in 0..<2 {
            let newcomer = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
            #expect((try? newcomer.receive(timeoutSeconds: 5)) == nil, "a newcomer was served")
            newcomer.close()
        }
        #expect(log.text.contains("refused a session") && !log.text.contains("dropped"), "\(log.text)")
        try a.send(type: 1, payload: [7])
        let echo = try a.receive(timeoutSeconds: 5)
        #expect(echo?.payload == [7], "the busy session was dropped")
        a.close()
        server.stop()
        #expect(serving.wait(timeout: .now() + 10) == .success, "the server did not stop")
    }
}
