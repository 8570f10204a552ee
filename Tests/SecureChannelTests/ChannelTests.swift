import Foundation
import SecureCrypto
import Testing

@testable import SecureChannel

@Suite("Channel over the in-memory link")
struct MemoryChannelTests {
    @Test func roundTripAndCleanClose() throws {
        let link = MemoryLink()
        let (alice, bob) = try channelPair(link)
        #expect(alice.summary.sessionId == bob.summary.sessionId)
        #expect(alice.channelBinding == bob.channelBinding && alice.sas == bob.sas)
        #expect(alice.summary.suite == .xwingAES256GCM)
        try alice.send(type: 1, payload: Array("offer".utf8))
        try alice.send(type: 2, payload: [])
        try bob.send(type: 3, payload: [UInt8](repeating: 0xAB, count: ChannelLimits.recordPayloadByteCountMax))
        #expect(try bob.receive(timeoutSeconds: 2) == ChannelRecord(type: 1, payload: Array("offer".utf8)))
        #expect(try bob.receive(timeoutSeconds: 2) == ChannelRecord(type: 2, payload: []))
        #expect(try alice.receive(timeoutSeconds: 2)?.payload.count == ChannelLimits.recordPayloadByteCountMax)
        alice.close()
        #expect(try bob.receive(timeoutSeconds: 2) == nil, "a clean close")
        #expect(try bob.receive(timeoutSeconds: 2) == nil)
        #expect(errorCode { try alice.send(type: 1, payload: [1]) } == .closed)
    }

    /// Frames from the initiator: commit 0, reveal 1, initiator confirm 2, then records from 3.
    static func recordFault(_ fault: MemoryLink.Fault) -> MemoryLink {
        MemoryLink { direction, index, _ in direction == .initiatorToResponder && index == 3 ? fault : .deliver }
    }

    static func expectRefusal(_ link: MemoryLink, _ code: ChannelError.Code, acceptedFirst: Bool) throws {
        let (alice, bob) = try channelPair(link)
        try alice.send(type: 1, payload: [1])
        try alice.send(type: 1, payload: [2])
        if acceptedFirst { #expect(try bob.receive(timeoutSeconds: 2)?.payload == [1]) }
        #expect(errorCode { _ = try bob.receive(timeoutSeconds: 2) } == code)
        #expect(errorCode { _ = try bob.receive(timeoutSeconds: 2) } == .closed, "the channel stays closed")
        #expect(errorCode { try bob.send(type: 1, payload: [3]) } == .closed)
    }

    @Test func duplicatedRecordIsRefused() throws {
        try Self.expectRefusal(Self.recordFault(.duplicate), .recordOutOfOrder, acceptedFirst: true)
    }

    @Test func droppedRecordIsNoticed() throws {
        try Self.expectRefusal(Self.recordFault(.drop), .recordOutOfOrder, acceptedFirst: false)
    }

    @Test func reorderedRecordIsRefused() throws {
        try Self.expectRefusal(Self.recordFault(.delay(frames: 1)), .recordOutOfOrder, acceptedFirst: false)
    }

    @Test func tamperedRecordIsRefused() throws {
        let link = MemoryLink { direction, index, body in
            guard direction == .initiatorToResponder && index == 3 else { return .deliver }
            var altered = body
            altered[altered.count - 1] ^= 1
            return .replace(altered)
        }
        try Self.expectRefusal(link, .recordAuthenticationFailed, acceptedFirst: false)
    }

    @Test func foreignRecordIsRefused() throws {
        let otherLink = MemoryLink()
        let (other, otherPeer) = try channelPair(otherLink)
        try other.send(type: 1, payload: [1])
        let foreign = otherLink.sentFrames(.initiatorToResponder)[3]
        _ = otherPeer
        let link = MemoryLink { direction, index, _ in
            direction == .initiatorToResponder && index == 3 ? .replace(foreign) : .deliver
        }
        try Self.expectRefusal(link, .recordAuthenticationFailed, acceptedFirst: false)
    }

    @Test func hangingUpWithoutCloseIsAnError() throws {
        let link = MemoryLink()
        let (alice, bob) = try channelPair(link)
        try alice.send(type: 1, payload: [1])
        link.initiatorEnd.close()
        #expect(try bob.receive(timeoutSeconds: 2)?.payload == [1])
        #expect(errorCode { _ = try bob.receive(timeoutSeconds: 2) } == .truncated)
    }

    @Test func handshakeTimesOutWhenNobodyAnswers() throws {
        let link = MemoryLink()
        let start = Date()
        #expect(errorCode { _ = try SecureChannel.respond(over: link.responderEnd, timeoutSeconds: 0.3) } == .timeout)
        #expect(Date().timeIntervalSince(start) >= 0.29)
        let other = MemoryLink()
        #expect(errorCode { _ = try SecureChannel.initiate(over: other.initiatorEnd, timeoutSeconds: 0.3) } == .timeout)
    }

    /// A lost handshake message stalls both sides. The side with the shorter limit gives up with
    /// `.timeout` and hangs up, so the other sees `.closed` at once instead of waiting out its own limit.
    @Test func lostHandshakeMessageTimesOut() throws {
        // The hello is lost: the initiator (0.3 s) gives up first.
        let lostHello = MemoryLink { direction, index, _ in
            direction == .responderToInitiator && index == 0 ? .drop : .deliver
        }
        let responder = Background {
            errorCode { _ = try SecureChannel.respond(over: lostHello.responderEnd, timeoutSeconds: 5) }
        }
        #expect(
            errorCode { _ = try SecureChannel.initiate(over: lostHello.initiatorEnd, timeoutSeconds: 0.3) } == .timeout)
        #expect(try responder.wait() == .closed)
        // The reveal is lost: the responder (0.3 s) gives up first.
        let lostReveal = MemoryLink { direction, index, _ in
            direction == .initiatorToResponder && index == 1 ? .drop : .deliver
        }
        let initiator = Background {
            errorCode { _ = try SecureChannel.initiate(over: lostReveal.initiatorEnd, timeoutSeconds: 5) }
        }
        let start = Date()
        #expect(
            errorCode { _ = try SecureChannel.respond(over: lostReveal.responderEnd, timeoutSeconds: 0.3) } == .timeout)
        #expect(try initiator.wait() == .closed)
        #expect(Date().timeIntervalSince(start) < 4, "the initiator did not wait out its own limit")
    }

    @Test func injectedHandshakeMessagesFailTheHandshake() throws {
        // A duplicated commit reaches the responder while it waits for the reveal.
        let link = MemoryLink { direction, index, _ in
            direction == .initiatorToResponder && index == 0 ? .duplicate : .deliver
        }
        let responder = Background {
            errorCode { _ = try SecureChannel.respond(over: link.responderEnd, timeoutSeconds: 2) }
        }
        let initiator = errorCode { _ = try SecureChannel.initiate(over: link.initiatorEnd, timeoutSeconds: 2) }
        #expect(try responder.wait() == .unexpectedMessage)
        #expect(initiator == .closed || initiator == .timeout)
    }

    @Test func receiveTimesOutAndTheChannelStaysUsable() throws {
        let (alice, bob) = try channelPair(MemoryLink())
        #expect(errorCode { _ = try bob.receive(timeoutSeconds: 0.1) } == .timeout)
        try alice.send(type: 4, payload: [4])
        #expect(try bob.receive(timeoutSeconds: 2)?.payload == [4])
    }

    /// A peer that does not read fills its bounded queue; the next send waits, then times out.
    @Test func backpressureOnTheMemoryLink() throws {
        let link = MemoryLink()
        for _ in 0..<ChannelLimits.memoryQueueFrameCountMax { try link.initiatorEnd.send([1], timeoutSeconds: 1) }
        #expect(errorCode { try link.initiatorEnd.send([1], timeoutSeconds: 0.1) } == .timeout)
        _ = try link.responderEnd.receive(timeoutSeconds: 1)
        try link.initiatorEnd.send([1], timeoutSeconds: 0.1)
    }

    @Test func faultHooksAreDeterministic() throws {
        let link = MemoryLink { _, index, body in
            switch index {
            case 0: .duplicate
            case 1: .drop
            case 2: .delay(frames: 2)
            case 5: .replace(body + [0])
            default: .deliver
            }
        }
        for value in UInt8(0)..<7 { try link.initiatorEnd.send([value], timeoutSeconds: 1) }
        link.initiatorEnd.close()
        var received: [[UInt8]] = []
        while let body = try link.responderEnd.receive(timeoutSeconds: 1) { received.append(body) }
        #expect(received == [[0], [0], [3], [4], [2], [5, 0], [6]])
    }
}

@Suite("Channel over loopback TCP")
struct TCPChannelTests {
    @Test func loopbackRoundTrip() throws {
        let listener = try TCPListener()
        let server = Background { () throws -> [UInt8] in
            let channel = try SecureChannel.respond(over: try listener.accept(timeoutSeconds: 5))
            var echoed = 0
            while let record = try channel.receive(timeoutSeconds: 5) {
                try channel.send(type: record.type, payload: record.payload.reversed())
                echoed += 1
            }
            channel.close()
            return channel.channelBinding + [UInt8(echoed)]
        }
        let client = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        let big = (0..<ChannelLimits.recordPayloadByteCountMax).map { UInt8(truncatingIfNeeded: $0) }
        for payload in [Array("hello".utf8), [], big] {
            try client.send(type: 9, payload: payload)
            #expect(try client.receive(timeoutSeconds: 5) == ChannelRecord(type: 9, payload: payload.reversed()))
        }
        client.close()
        let result = try server.wait()
        #expect(Array(result.prefix(32)) == client.channelBinding)
        #expect(result.last == 3)
        listener.close()
    }

    @Test func readAndAcceptTimeouts() throws {
        let listener = try TCPListener()
        #expect(errorCode { _ = try listener.accept(timeoutSeconds: 0.1) } == .timeout)
        let client = try TCPTransport.connect(port: listener.port)
        let server = try listener.accept(timeoutSeconds: 2)
        #expect(errorCode { _ = try server.receive(timeoutSeconds: 0.1) } == .timeout)
        // A client that connects and says nothing is dropped at the handshake timeout.
        #expect(errorCode { _ = try SecureChannel.respond(over: server, timeoutSeconds: 0.3) } == .timeout)
        #expect(try client.receive(timeoutSeconds: 2) == nil, "the server closed the connection")
        listener.close()
    }

    /// A peer that does not read: the kernel buffers fill and the sender waits, then times out, rather than
    /// buffering without bound.
    @Test func backpressureOverTCP() throws {
        let listener = try TCPListener()
        let client = try TCPTransport.connect(port: listener.port)
        let server = try listener.accept(timeoutSeconds: 2)
        let frame = [UInt8](repeating: 1, count: ChannelLimits.frameByteCountMax)
        var sent = 0
        let code = errorCode {
            while sent < 10_000 {
                try client.send(frame, timeoutSeconds: 0.2)
                sent += 1
            }
        }
        #expect(code == .timeout, "sent \(sent) frames")
        #expect(sent < 10_000)
        _ = server
        listener.close()
    }

    @Test func connectToAClosedPortFails() throws {
        let listener = try TCPListener()
        let port = listener.port
        listener.close()
        #expect(errorCode { _ = try TCPTransport.connect(port: port, timeoutSeconds: 1) } == .transport)
        #expect(
            errorCode { _ = try TCPTransport.connect(host: "wallet.local", port: port) } == .transport,
            "names are not looked up")
        #expect(errorCode { _ = try TCPListener(host: "127.0.0.256") } == .transport)
    }
}

@Suite("Channel error codes")
struct ChannelErrorCodeTests {
    /// The texts the codes had when the enum still spelled each one out: error descriptions and logs print
    /// them, so deriving them from the case names must not change one.
    @Test("each code keeps its stable text")
    func texts() {
        let pinned: [(ChannelError.Code, String)] = [
            (.truncated, "truncated"), (.malformed, "malformed"), (.unexpectedMessage, "unexpected-message"),
            (.unsupportedVersion, "unsupported-version"), (.noCommonSuite, "no-common-suite"),
            (.commitmentMismatch, "commitment-mismatch"), (.invalidPeerKey, "invalid-peer-key"),
            (.keyConfirmationFailed, "key-confirmation-failed"),
            (.recordAuthenticationFailed, "record-authentication-failed"), (.recordOutOfOrder, "record-out-of-order"),
            (.tooLarge, "too-large"), (.timeout, "timeout"), (.closed, "closed"), (.transport, "transport"),
        ]
        #expect(ChannelError.Code.allCases.map(\.rawValue) == pinned.map(\.1))
        for (code, text) in pinned { #expect(ChannelError.Code(rawValue: text) == code, "\(text)") }
        #expect(ChannelError(.tooLarge, "a frame of 9 bytes").description == "too-large: a frame of 9 bytes")
    }
}
