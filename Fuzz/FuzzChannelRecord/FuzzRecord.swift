import SecureCrypto

@testable import SecureChannel // the record keys are internal; scripts/fuzz builds with -enable-testing

/// An opener for the responder's side of one honest session, made once per process.
nonisolated(unsafe) private var session: (opener: RecordOpener, record: [UInt8]) = {
    var initiator = InitiatorHandshake<XWing>(), responder = ResponderHandshake<XWing>()
    var initiatorOutcome: HandshakeOutcome?, responderOutcome: HandshakeOutcome?
    var toResponder: [[UInt8]] = [], toInitiator: [[UInt8]] = []
    func collect(_ actions: [HandshakeAction], _ queue: inout [[UInt8]], _ outcome: inout HandshakeOutcome?) {
        for action in actions {
            switch action {
            case .send(let body): queue.append(body)
            case .complete(let result): outcome = result
            }
        }
    }
    collect(initiator.start(), &toResponder, &initiatorOutcome)
    while !toResponder.isEmpty || !toInitiator.isEmpty {
        if !toResponder.isEmpty {
            collect(try! responder.receive(toResponder.removeFirst()), &toInitiator, &responderOutcome)
        } else {
            collect(try! initiator.receive(toInitiator.removeFirst()), &toResponder, &initiatorOutcome)
        }
    }
    // The responder's opener, and one honest record from the initiator for it.
    var sealer = initiatorOutcome!.makeSealer()
    let record = try! sealer.seal(ChannelRecord(type: 1, payload: Array("a fuzzed record".utf8)))
    var check = responderOutcome!.makeOpener()
    precondition((try? check.open(record)) != nil, "the honest record opens")
    return (responderOutcome!.makeOpener(), record)
}()

/// libFuzzer entry: the record decoder and the record opener. Decoding never traps and round-trips; no
/// fuzzed input opens (it would need a forged AES-GCM tag).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Inputs starting 0xFE edit an honest record: (position(2), xor(1)) edits, a trailing byte truncates.
    if bytes.count >= 1 && bytes[0] == 0xFE {
        var record = session.record
        var index = 1
        while index + 3 <= bytes.count {
            record[(Int(bytes[index]) << 8 | Int(bytes[index + 1])) % record.count] ^= bytes[index + 2]
            index += 3
        }
        if index < bytes.count { record = Array(record.prefix(record.count * Int(bytes[index]) / 256)) }
        if record == session.record { return 0 } // the honest record itself opens, as it should
        bytes = record
    }
    if let message = try? RecordMessage.decode(bytes) {
        precondition(message.encoded == bytes, "a record has two encodings")
    }
    var copy = session.opener
    if (try? copy.open(bytes)) != nil { preconditionFailure("a fuzzed record opened") }
    return 0
}
