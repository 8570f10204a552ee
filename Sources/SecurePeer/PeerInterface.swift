import Foundation
import SecureCore
import SecureCrypto
import SecureToken

/// What a person decided at a prompt.
public enum PeerDecision: Sendable {
    case approve(overridingBudget: Bool)
    /// The person said no.
    case decline
    /// The person's wallet says no by its own policy (`--max-amount`, `--expect-payee`, a budget that `--yes`
    /// may not override): a payer ends with `refusedByPayerWallet` (21). A payee treats it as `decline`.
    case refuse
}

/// The payer's answer to a payee's request (request flow): a category to pay it under, or no.
public enum CategoryChoice: Sendable, Hashable {
    /// Pay under this category (its budget decides next).
    case category(String)
    /// The person said no: `declined` (1).
    case decline
    /// The wallet's own policy says no (an unexpected payee, a limit): `refusedByPayerWallet` (21).
    case refuse
}

/// How a peer session talks to its person: prompts, the PIN and what to show. The CLI implements it for a
/// terminal (or `--yes` with `--pin-source`); tests implement it in code.
public protocol PeerInterface: AnyObject {
    /// Asks "Accept 4.50 EUR from 3F2A…9C (Alice)? [y/N]" or the payer's equivalent; blocking.
    func decide(_ approval: Approval) -> PeerDecision
    /// The payer's category for a payee's request, or a decline or a refusal.
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice
    /// The PIN for this approval, read fresh each time (it is wiped after the machine-speed steps).
    func readPIN() throws -> PIN
    /// An event to show: a short name, fields for `--json`, and a sentence for people.
    func event(_ name: String, _ fields: [String: String], _ text: String)
    /// An event that carries amounts as well (a debit, a credit, the balance a session ends with), so that
    /// `--json` can print each as integer minor units with its currency and issuer. The default shows each
    /// amount as a text field.
    func event(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String)
}

extension PeerInterface {
    /// Shows each amount as a text field ("4.50 EUR (issuer 3F2A…9C1B)"), for interfaces that print no JSON.
    public func event(_ name: String, _ fields: [String: String], amounts: [String: AssetAmount], _ text: String) {
        event(name, fields.merging(amounts.mapValues { MoneyText.format($0) }) { _, amount in amount }, text)
    }
}

/// Where ranging samples come from for a session.
public enum RangingConfiguration: Sendable {
    /// Seeded samples around a distance. Refused by every verifier whose policy does not allow simulated
    /// ranging; the CLI needs `--allow-simulated-ranging` and says so on screen.
    case simulated(seed: UInt64, distanceMillimetres: UInt32)
    /// Readings from a file, a pipe or a serial device, one integer of millimetres per line.
    case external(path: String)

    /// How many samples a measurement takes: more than the minimum, so one bad reading cannot decide.
    static let sampleCount = 16

    /// Takes the samples, showing each distance as it arrives.
    func samples(
        timeoutSeconds: Double = Double(PeerLimits.rangingTimeoutSeconds), show: (UInt32) -> Void
    ) throws -> (source: RangingSource, samples: [UInt32]) {
        switch self {
        case .simulated(let seed, let distance):
            var simulated = SimulatedRanging(seed: seed, distanceMillimetres: distance)
            let samples = simulated.samples(count: Self.sampleCount)
            samples.forEach(show)
            return (.simulated, samples)
        case .external(let path):
            // Non-blocking open (a FIFO with no writer yet must not hang the session), then one poll(2) per
            // read with the time left: a device that stalls, or writes one line at a time, is read line by line
            // and the ranging timeout fires whatever it does.
            let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw RangingError(
                    .tooFewSamples, "cannot read ranging samples from \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutSeconds * 1e9)
            var samples: [UInt32] = []
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            var sawData = false
            while samples.count < Self.sampleCount {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else {
                    throw RangingError(
                        .tooFewSamples,
                        "the ranging source gave \(samples.count) of \(Self.sampleCount) readings in "
                            + "\(Int(timeoutSeconds)) s (a stalled device?)")
                }
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, Int32(min(1_000, (deadline - now) / 1_000_000 + 1)))
                if ready < 0 && errno == EINTR { continue }
                guard ready >= 0 else {
                    throw RangingError(.tooFewSamples, "cannot wait for \(path): \(String(cString: strerror(errno)))")
                }
                if ready == 0 { continue }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
                if count < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    throw RangingError(.tooFewSamples, "cannot read \(path): \(String(cString: strerror(errno)))")
                }
                if count == 0 {
                    // End of file: a regular file is done; a FIFO whose writer has not come yet (or left) is
                    // waited for until the deadline, a little at a time.
                    if sawData || !Self.isFIFO(descriptor) { break }
                    usleep(20_000)
                    continue
                }
                sawData = true
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    if let reading = try ExternalRangingParser.parse(lineBytes: Array(pending[..<newline])) {
                        samples.append(reading)
                        show(reading)
                    }
                    pending.removeSubrange(...newline)
                }
                guard pending.count <= ExternalRangingParser.lineByteCountMax else {
                    throw RangingError(
                        .malformedLine, "a ranging line is longer than \(ExternalRangingParser.lineByteCountMax) bytes")
                }
            }
            if !pending.isEmpty, let reading = try ExternalRangingParser.parse(lineBytes: pending) {
                samples.append(reading)
            }
            return (.external, Array(samples.prefix(Self.sampleCount)))
        }
    }

    private static func isFIFO(_ descriptor: Int32) -> Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO
    }
}
