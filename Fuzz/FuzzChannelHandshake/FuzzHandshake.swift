import SecureChannel
import SecureCrypto

/// The machines at each stage of one honest handshake, made once per process.
nonisolated(unsafe) private var stages:
    (
        initiators: [InitiatorHandshake<XWing>], responders: [ResponderHandshake<XWing>],
        frames: [[UInt8]]
    ) = {
        var initiator = InitiatorHandshake<XWing>(), responder = ResponderHandshake<XWing>()
        var initiators: [InitiatorHandshake<XWing>] = [], responders: [ResponderHandshake<XWing>] = []
        var frames: [[UInt8]] = []
        func pump(_ actions: [HandshakeAction]) { for case .send(let body) in actions { frames.append(body) } }
        pump(initiator.start())
        responders.append(responder); pump(try! responder.receive(frames[0]))
        initiators.append(initiator); pump(try! initiator.receive(frames[1]))
        responders.append(responder); pump(try! responder.receive(frames[2]))
        initiators.append(initiator); pump(try! initiator.receive(frames[3]))
        initiators.append(initiator); pump(try! initiator.receive(frames[4]))
        responders.append(responder)
        return (initiators, responders, frames)
    }()

/// libFuzzer entry: the handshake decoders and every stage of both machines. Decoding never traps, a
/// decoded message re-encodes to exactly its input (one encoding per message), and the machines either
/// step or throw.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Inputs starting 0xFE edit an honest message instead, so the fuzzer reaches the checks behind a valid
    // key and a valid commitment: byte 1 picks the message, then (position(2), xor(1)) edits, and a
    // trailing single byte cuts the message to that many 1/256ths.
    if bytes.count >= 2 && bytes[0] == 0xFE {
        var message = stages.frames[Int(bytes[1]) % stages.frames.count]
        var index = 2
        while index + 3 <= bytes.count {
            let position = (Int(bytes[index]) << 8 | Int(bytes[index + 1])) % message.count
            message[position] ^= bytes[index + 2]
            index += 3
        }
        if index < bytes.count { message = Array(message.prefix(message.count * Int(bytes[index]) / 256)) }
        bytes = message
    }
    if let message = try? HandshakeMessage.decode(bytes) {
        precondition(message.encoded == bytes, "a handshake message has two encodings")
    }
    if let contribution = try? Contribution.decode(bytes) {
        precondition(contribution.encoded == bytes, "a contribution has two encodings")
    }
    for machine in stages.initiators {
        var copy = machine
        _ = try? copy.receive(bytes)
    }
    for machine in stages.responders {
        var copy = machine
        _ = try? copy.receive(bytes)
    }
    return 0
}
