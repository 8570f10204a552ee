import Foundation
import SecureCore
import SecureCrypto
import SecureToken

/// What a person decided at a prompt.
public enum PeerDecision: Sendable {
    case approve(overridingBudget: Bool)
    case decline
}

/// How a peer session talks to its person: prompts, the PIN and what to show. The CLI implements it for a
/// terminal (or `--yes` with `--pin-source`); tests implement it in code.
public protocol PeerInterface: AnyObject {
    /// Asks "Accept 4.50 EUR from 3F2A…9C (Alice)? [y/N]" or the payer's equivalent; blocking.
    func decide(_ approval: Approval) -> PeerDecision
    /// The payer's category for a payee's request; nil declines.
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> String?
    /// The PIN for this approval, read fresh each time (it is wiped after the machine-speed steps).
    func readPIN() throws -> PIN
    /// An event to show: a short name, fields for `--json`, and a sentence for people.
    func event(_ name: String, _ fields: [String: String], _ text: String)
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
    func samples(show: (UInt32) -> Void) throws -> (source: RangingSource, samples: [UInt32]) {
        switch self {
        case .simulated(let seed, let distance):
            var simulated = SimulatedRanging(seed: seed, distanceMillimetres: distance)
            let samples = simulated.samples(count: Self.sampleCount)
            samples.forEach(show)
            return (.simulated, samples)
        case .external(let path):
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw RangingError(.tooFewSamples, "cannot read ranging samples from \(path)")
            }
            defer { try? handle.close() }
            var samples: [UInt32] = []
            var pending: [UInt8] = []
            // Read until enough readings arrived: a device streams lines and never ends.
            while samples.count < Self.sampleCount {
                let chunk = handle.readData(ofLength: 256)
                if chunk.isEmpty { break }
                pending += chunk
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
}
