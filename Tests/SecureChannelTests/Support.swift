import Foundation
import SecureCrypto

@testable import SecureChannel

/// A fixed X-Wing key from one repeated byte, so runs are reproducible.
func fixedKey(_ byte: UInt8) -> XWing.PrivateKey { try! XWing.PrivateKey(seed: [UInt8](repeating: byte, count: 32)) }

/// Fixed 16 contribution bytes.
func fixedRandom(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: Contribution.randomByteCount) }

typealias Initiator = InitiatorHandshake<XWing>
typealias Responder = ResponderHandshake<XWing>

/// A reproducible pair: keys and randomness from fixed bytes (encapsulation still uses the CSPRNG).
func fixedPair(_ seed: UInt8 = 1) -> (Initiator, Responder) {
    (
        Initiator(privateKey: fixedKey(seed), random: fixedRandom(seed)),
        Responder(privateKey: fixedKey(seed &+ 100), random: fixedRandom(seed &+ 100))
    )
}

/// The frames of one honest handshake, in the order they were sent, with both outcomes.
struct HonestRun {
    /// commit, hello, reveal, response, responder confirm, initiator confirm.
    var messages: [[UInt8]] = []
    var initiator: HandshakeOutcome?
    var responder: HandshakeOutcome?
}

/// Runs two machines against each other in one thread. `alter` may change (or replace) each frame in
/// flight: (index in the overall sequence, body) → body.
func drive(
    _ initiator: inout Initiator, _ responder: inout Responder,
    alter: (Int, [UInt8]) -> [UInt8] = { $1 }
) throws -> HonestRun {
    // The messages and the two outcomes are separate variables: the nested function appends to the
    // messages while an outcome is passed inout, which would be an overlapping access to one struct.
    var messages: [[UInt8]] = []
    var initiatorOutcome: HandshakeOutcome?, responderOutcome: HandshakeOutcome?
    var toResponder: [[UInt8]] = [], toInitiator: [[UInt8]] = []
    func collect(_ actions: [HandshakeAction], into queue: inout [[UInt8]], outcome: inout HandshakeOutcome?) {
        for action in actions {
            switch action {
            case .send(let body):
                let altered = alter(messages.count, body)
                messages.append(altered)
                queue.append(altered)
            case .complete(let result): outcome = result
            }
        }
    }
    collect(initiator.start(), into: &toResponder, outcome: &initiatorOutcome)
    while !toResponder.isEmpty || !toInitiator.isEmpty {
        if !toResponder.isEmpty {
            let frame = toResponder.removeFirst()
            collect(try responder.receive(frame), into: &toInitiator, outcome: &responderOutcome)
        } else {
            let frame = toInitiator.removeFirst()
            collect(try initiator.receive(frame), into: &toResponder, outcome: &initiatorOutcome)
        }
    }
    return HonestRun(messages: messages, initiator: initiatorOutcome, responder: responderOutcome)
}

/// A value shared with another thread; the lock makes it Sendable.
final class Box<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// Runs `body` on another thread; `wait()` returns its result or rethrows its error.
final class Background<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Value, Error>?

    init(_ body: @escaping @Sendable () throws -> Value) {
        Thread.detachNewThread { [self] in
            result = Result { try body() }
            done.signal()
        }
    }

    func wait() throws -> Value {
        done.wait()
        return try result!.get()
    }
}

/// Both ends of a handshake over an in-memory link.
func channelPair(_ link: MemoryLink, timeoutSeconds: Double = 5) throws -> (
    initiator: SecureChannel, responder: SecureChannel
) {
    let responder = Background { try SecureChannel.respond(over: link.responderEnd, timeoutSeconds: timeoutSeconds) }
    let initiator = Result { try SecureChannel.initiate(over: link.initiatorEnd, timeoutSeconds: timeoutSeconds) }
    let responderResult = Result { try responder.wait() }
    return (try initiator.get(), try responderResult.get())
}

/// The error code a throwing expression produced, or nil when it did not throw.
func errorCode(_ body: () throws -> Void) -> ChannelError.Code? {
    do {
        try body()
        return nil
    } catch let error as ChannelError {
        return error.code
    } catch {
        return nil
    }
}
