import Dispatch
import Foundation
import SecureCore
import SecureCrypto

/// A full verification of a ledger: it replays every entry from entry 0 (chain links, positions, every
/// ledger rule, the key-event log across rotations), rebuilds the Merkle tree, and checks every stored
/// checkpoint: its signature by the key in force for its size, and its size, root, head and snapshot
/// against what the replay computed. Signature checks, the expensive part, run on all cores.
public enum LedgerVerifier {
    /// What a verification found.
    public struct Report: Sendable {
        public var entries: UInt64 = 0
        public var checkpoints = 0
        public var problems: [String] = []
        /// The state the replay arrived at.
        public var state = LedgerState()
        /// The key-event log the replay followed.
        public var keyLog: KeyEventLog?
        public var isValid: Bool { problems.isEmpty }
    }

    /// How many entries are read from the database at a time.
    static let batchCount: UInt64 = 10_000

    /// Verifies the whole ledger. `walletID` must be SHA-256 of entry 0's inception event.
    public static func verify(_ store: LedgerStore, walletID: [UInt8], cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> Report {
        var report = Report()
        let size = try store.size()
        guard size > 0, let first = try store.entry(at: 0), first.kind == .keyEvent,
              let inception = try? SignedKeyEvent.decode(first.payload) else {
            report.problems.append("entry 0 is not a signed inception event")
            return report
        }
        if inception.event.digest != walletID { report.problems.append("entry 0's inception event is not this wallet's (wallet id differs)") }
        guard var log = try? KeyEventLog(inception: inception) else {
            report.problems.append("entry 0's inception event breaks the key-event rules")
            return report
        }
        let checkpointSizes = Set(try store.checkpointSizes())
        var peaks = MerkleCompactRange()
        var pending: [(UInt64, [UInt8], LedgerSnapshot, [UInt8], [UInt8])] = []  // size, encoded, snapshot, root, head
        var position: UInt64 = 0
        while position < size {
            let encodings = try store.encodedEntries(from: position, to: min(size, position + batchCount))
            for encoded in encodings {
                guard let entry = try? LedgerEntry.decode(encoded), entry.position == position else {
                    report.problems.append("entry \(position) does not decode or is out of place")
                    return report
                }
                do {
                    try report.state.apply(entry)
                } catch {
                    report.problems.append("entry \(position) breaks a ledger rule: \(error)")
                    return report
                }
                if entry.kind == .keyEvent, position > 0, let problem = follow(&log, entry) {
                    report.problems.append(problem)
                    return report
                }
                peaks.append(leafHash: Merkle.leafHash(encoded))
                position += 1
                if checkpointSizes.contains(position), let bytes = try store.checkpoint(size: position) {
                    pending.append((position, bytes, LedgerSnapshot(report.state), peaks.root, report.state.head))
                }
            }
            if encodings.isEmpty { break }
        }
        report.entries = position
        if position != size { report.problems.append("entries stop at \(position) of \(size)") }
        report.problems += checkCheckpoints(pending, log: log, walletID: walletID, cores: cores)
        report.keyLog = log
        report.checkpoints = pending.count
        return report
    }

    /// Checks checkpoints in parallel; returns the problems in size order.
    /// A rotation entry must hold a signed event that follows the log and takes effect at its own position.
    static func follow(_ log: inout KeyEventLog, _ entry: LedgerEntry) -> String? {
        guard let event = try? SignedKeyEvent.decode(entry.payload) else { return "entry \(entry.position)'s key event does not decode" }
        guard event.event.ledgerPosition == entry.position else {
            return "entry \(entry.position)'s key event names ledger position \(event.event.ledgerPosition)"
        }
        do {
            try log.append(event)
        } catch {
            return "entry \(entry.position)'s key event is refused: \(error)"
        }
        return nil
    }

    static func checkCheckpoints(_ pending: [(UInt64, [UInt8], LedgerSnapshot, [UInt8], [UInt8])], log: KeyEventLog,
                                 walletID: [UInt8], cores: Int) -> [String] {
        let results = UnsafeMutableBufferPointer<String?>.allocate(capacity: pending.count)
        results.initialize(repeating: nil)
        defer { results.deallocate() }
        let chunk = max(1, (pending.count + cores * 4 - 1) / (cores * 4))
        let chunkCount = (pending.count + chunk - 1) / chunk
        nonisolated(unsafe) let output = results
        DispatchQueue.concurrentPerform(iterations: chunkCount) { index in
            for item in pending[(index * chunk)..<min(pending.count, (index + 1) * chunk)].indices {
                output[item] = problem(pending[item], log: log, walletID: walletID)
            }
        }
        return results.compactMap { $0 }
    }

    private static func problem(_ item: (UInt64, [UInt8], LedgerSnapshot, [UInt8], [UInt8]), log: KeyEventLog,
                                walletID: [UInt8]) -> String? {
        let (size, bytes, snapshot, root, head) = item
        guard let signed = try? SignedCheckpoint.decode(bytes) else { return "checkpoint \(size) does not decode" }
        guard let expected = log.event(signingCheckpointOfSize: size), signed.isValid(signedBy: expected.signingKey) else {
            return "checkpoint \(size) is not signed by the wallet key in force at that size"
        }
        switch log.check(signed) {
        case .inForce: break
        case .retired: return "checkpoint \(size) is signed by a key after its retirement"
        case .unknown, .beforeInForce: return "checkpoint \(size) names a key sequence or event position the log does not"
        }
        let checkpoint = signed.checkpoint
        guard checkpoint.walletID == walletID, checkpoint.size == size else { return "checkpoint \(size) names another wallet or size" }
        guard checkpoint.root == root else { return "checkpoint \(size)'s root differs from the entries' tree" }
        guard checkpoint.head == head else { return "checkpoint \(size)'s chain head differs from the entries' chain" }
        guard checkpoint.snapshot == snapshot else { return "checkpoint \(size)'s balances or budgets differ from the replay" }
        return nil
    }
}
