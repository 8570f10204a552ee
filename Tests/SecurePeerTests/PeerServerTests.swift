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
        func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> String? { nil }
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
}
