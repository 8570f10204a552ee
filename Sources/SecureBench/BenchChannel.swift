import CommandLineSupport
import Foundation
import SecureChannel
import SecureCrypto

/// `secure-bench channel [--json]`: the channel against its own parts, all measured in this run.
/// - the handshake in process (both machines in one thread) against the sum of its primitives: two X-Wing
///   key generations, two encapsulations (each to a received 1,216-byte key, so including the key's
///   parse and checks, as X-Wing's Encaps(pk) defines it), two decapsulations, two HKDF derivations and
///   four HMACs (each side makes one confirmation and checks the other's); goal ≤ 1.2×;
/// - record throughput through the in-memory link against AES-256-GCM seal + open on the same record
///   size; goal ≥ 0.8×;
/// - the handshake over loopback TCP (connect included): p50 and p99.
/// Build with -c release; a debug build prints a warning first.
func runChannelBenchmark(json: Bool) throws {
    BenchCommands.warnIfDebug()
    let load = BenchCommands.loadAverage()
    if !json { print("channel benchmark: load average \(load) at the start") }
    let rounds = 11
    var handshake: [Double] = [], primitives: [Double] = []
    for round in 0..<rounds {
        // Alternate the order so that drift on a shared machine hits both sides alike.
        if round % 2 == 0 {
            handshake.append(try ChannelBench.inProcessHandshakeMicroseconds(count: 100))
            primitives.append(try ChannelBench.primitivesMicroseconds(count: 100))
        } else {
            primitives.append(try ChannelBench.primitivesMicroseconds(count: 100))
            handshake.append(try ChannelBench.inProcessHandshakeMicroseconds(count: 100))
        }
    }
    let handshakeMedian = BenchCommands.median(handshake), primitivesMedian = BenchCommands.median(primitives)

    var throughput: [[String: Any]] = []
    var throughputLines: [String] = []
    for size in [ChannelLimits.recordPayloadByteCountMax, 1024] {
        var ours: [Double] = [], baseline: [Double] = []
        for round in 0..<rounds {
            let count = size >= 16_384 ? 2_000 : 10_000
            if round % 2 == 0 {
                ours.append(try ChannelBench.recordMegabytesPerSecond(size: size, count: count))
                baseline.append(try ChannelBench.gcmMegabytesPerSecond(size: size, count: count))
            } else {
                baseline.append(try ChannelBench.gcmMegabytesPerSecond(size: size, count: count))
                ours.append(try ChannelBench.recordMegabytesPerSecond(size: size, count: count))
            }
        }
        let oursMedian = BenchCommands.median(ours), baselineMedian = BenchCommands.median(baseline)
        throughput.append([
            "recordBytes": size, "channelMegabytesPerSecond": oursMedian,
            "aesGCMMegabytesPerSecond": baselineMedian, "ratio": oursMedian / baselineMedian, "goalMin": 0.8,
        ])
        throughputLines.append(
            String(
                format:
                    "records of %d B through the in-memory link: channel %.0f MB/s vs AES-256-GCM seal+open %.0f MB/s, ratio %.2f (goal ≥ 0.80)",
                size, oursMedian, baselineMedian, oursMedian / baselineMedian))
    }

    let tcp = try ChannelBench.tcpHandshakeMilliseconds(count: 200)
    let p50 = ChannelBench.percentile(tcp, 0.50), p99 = ChannelBench.percentile(tcp, 0.99)

    if json {
        printJSON([
            "benchmark": "channel", "loadAverage": load, "suite": "\(ChannelSuite.xwingAES256GCM)", "rounds": rounds,
            "handshakeInProcess": [
                "channelMicroseconds": handshakeMedian, "primitivesMicroseconds": primitivesMedian,
                "ratio": handshakeMedian / primitivesMedian, "goalMax": 1.2,
            ],
            "recordThroughput": throughput,
            "handshakeLoopbackTCP": ["count": tcp.count, "p50Milliseconds": p50, "p99Milliseconds": p99],
        ])
    } else {
        print(
            String(
                format:
                    "handshake in process (median of %d rounds): channel %.0f µs vs its primitives %.0f µs, ratio %.2f (goal ≤ 1.20)",
                rounds, handshakeMedian, primitivesMedian, handshakeMedian / primitivesMedian))
        for line in throughputLines { print(line) }
        print(
            String(
                format: "handshake over loopback TCP (%d, connect included): p50 %.2f ms, p99 %.2f ms", tcp.count, p50,
                p99))
    }
}

/// The measurements, each returning a per-operation figure.
enum ChannelBench {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    /// Both machines stepping each other in one thread: the handshake's own cost, no transport.
    static func inProcessHandshakeMicroseconds(count: Int) throws -> Double {
        let start = now()
        for _ in 0..<count {
            var initiator = InitiatorHandshake<XWing>(), responder = ResponderHandshake<XWing>()
            var toResponder: [[UInt8]] = [], toInitiator: [[UInt8]] = []
            var done = 0
            for case .send(let body) in initiator.start() { toResponder.append(body) }
            while done < 2 {
                if let frame = toResponder.first {
                    toResponder.removeFirst()
                    for action in try responder.receive(frame) {
                        switch action {
                        case .send(let body): toInitiator.append(body)
                        case .complete: done += 1
                        }
                    }
                } else if let frame = toInitiator.first {
                    toInitiator.removeFirst()
                    for action in try initiator.receive(frame) {
                        switch action {
                        case .send(let body): toResponder.append(body)
                        case .complete: done += 1
                        }
                    }
                } else {
                    preconditionFailure("the handshake stalled")
                }
            }
        }
        return Double(now() - start) / Double(count) / 1000
    }

    /// The primitives of one handshake, run as bare calls.
    static func primitivesMicroseconds(count: Int) throws -> Double {
        let key = SecretBytes(randomCount: 64)
        let salt = [UInt8](repeating: 1, count: 32), info = [UInt8](repeating: 2, count: 87)
        let macKey = SecretBytes(randomCount: 32), macMessage = [UInt8](repeating: 3, count: 59)
        var sink = 0
        let start = now()
        for _ in 0..<count {
            let first = XWing.PrivateKey.generate(), second = XWing.PrivateKey.generate()
            let firstEncoded = first.publicKey.rawRepresentation, secondEncoded = second.publicKey.rawRepresentation
            let toSecond = try XWing.PublicKey(rawRepresentation: secondEncoded).encapsulate()
            let toFirst = try XWing.PublicKey(rawRepresentation: firstEncoded).encapsulate()
            sink &+= try second.decapsulate(toSecond.ciphertext).count
            sink &+= try first.decapsulate(toFirst.ciphertext).count
            for _ in 0..<2 {
                sink &+= try HKDFSHA256.deriveKey(inputKeyMaterial: key, salt: salt, info: info, outputByteCount: 176)
                    .count
            }
            for _ in 0..<4 { sink &+= HMACSHA256.authenticationCode(key: macKey, message: macMessage).count }
        }
        let elapsed = now() - start
        precondition(sink > 0)
        return Double(elapsed) / Double(count) / 1000
    }

    /// Records sealed by one channel, carried by the in-memory link and opened by the other, one at a time
    /// like the baseline, so both work on the same cache-resident record.
    static func recordMegabytesPerSecond(size: Int, count: Int) throws -> Double {
        let link = MemoryLink()
        let responderBox = Handoff<SecureChannel>()
        let thread = Thread { responderBox.set(Result { try SecureChannel.respond(over: link.responderEnd) }) }
        thread.start()
        let alice = try SecureChannel.initiate(over: link.initiatorEnd)
        let bob = try responderBox.wait()
        defer { alice.close(); bob.close() }
        let payload = [UInt8](repeating: 0x5a, count: size)
        let start = now()
        var received = 0
        for _ in 0..<count {
            try alice.send(type: 1, payload: payload)
            received += try bob.receive(timeoutSeconds: 5)?.payload.count ?? 0
        }
        precondition(received == size * count)
        return Double(size * count) / (Double(now() - start) / 1e9) / 1e6
    }

    /// OpenSSL's AES-256-GCM (through SecureCrypto) sealing and opening the same records.
    static func gcmMegabytesPerSecond(size: Int, count: Int) throws -> Double {
        let key = SecretBytes(randomCount: 32)
        let payload = [UInt8](repeating: 0x5a, count: size)
        let associatedData = [UInt8](repeating: 0, count: 51)
        var nonce = [UInt8](repeating: 0, count: 12)
        var sink = 0
        let start = now()
        for index in 0..<count {
            nonce[11] = UInt8(truncatingIfNeeded: index)
            nonce[10] = UInt8(truncatingIfNeeded: index >> 8)
            let sealed = try AES256GCM.seal(payload, key: key, nonce: nonce, associatedData: associatedData)
            sink &+= try AES256GCM.open(sealed, key: key, nonce: nonce, associatedData: associatedData).count
        }
        let elapsed = now() - start
        precondition(sink == size * count)
        return Double(size * count) / (Double(elapsed) / 1e9) / 1e6
    }

    /// Connect and handshake over loopback TCP, `count` times, against a responder on another thread.
    static func tcpHandshakeMilliseconds(count: Int) throws -> [Double] {
        let listener = try TCPListener()
        defer { listener.close() }
        let finished = DispatchSemaphore(value: 0)
        // The responder thread must be done before the process exits, or it races OpenSSL's exit cleanup.
        defer { finished.wait() }
        let server = Thread {
            defer { finished.signal() }
            for _ in 0..<count {
                guard let transport = try? listener.accept(timeoutSeconds: 10) else { return }
                if let channel = try? SecureChannel.respond(over: transport) {
                    _ = try? channel.receive(timeoutSeconds: 10)
                    channel.close()
                }
            }
        }
        server.start()
        var times: [Double] = []
        for _ in 0..<count {
            let start = now()
            let channel = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
            times.append(Double(now() - start) / 1e6)
            channel.close()
        }
        return times
    }
}

/// Hands a value (or the error that stood in its place) from one thread to another.
final class Handoff<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var value: Result<Value, Error>?

    func set(_ result: Result<Value, Error>) {
        value = result
        done.signal()
    }

    func wait() throws -> Value {
        done.wait()
        return try value!.get()
    }
}
