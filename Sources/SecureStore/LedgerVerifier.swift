import Dispatch
import Foundation
import SecureCore
import SecureCrypto

/// A full verification of a ledger: it replays every entry from entry 0 (chain links, positions, every
/// ledger rule), rebuilds the Merkle tree, and checks every stored checkpoint: its signature by the
/// wallet key, and its size, root, head and snapshot against what the replay computed. Signature checks,
/// the expensive part, run on all cores.
public enum LedgerVerifier {
    /// What a verification found.
    public struct Report: Sendable {
        public var entries: UInt64 = 0
        public var checkpoints = 0
        public var problems: [String] = []
        /// The state the replay arrived at.
        public var state = LedgerState()
        public var isValid: Bool { problems.isEmpty }
    }

    /// How many entries are read from the database at a time.
    static let batchCount: UInt64 = 10_000

    /// Verifies the whole ledger. `walletID` must be SHA-256 of entry 0's inception event.
    ///
    /// The replay runs on the calling thread; every `checkChunkCount` checkpoints it reaches go to a
    /// queue of `cores` workers that check them (signature, root, head, snapshot) while the replay goes
    /// on, so the replay's own time hides behind the signature checks instead of adding to them.
    public static func verify(_ store: LedgerStore, walletID: [UInt8], cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> Report {
        var report = Report()
        let size = try store.size()
        guard size > 0, let first = try store.entry(at: 0), first.kind == .keyEvent,
              let inception = try? SignedKeyEvent.decode(first.payload) else {
            report.problems.append("entry 0 is not a signed inception event")
            return report
        }
        if inception.event.digest != walletID { report.problems.append("entry 0's inception event is not this wallet's (wallet id differs)") }
        let checker = CheckpointChecker(key: inception.event.signingKey, walletID: walletID, cores: cores)
        defer { checker.cancel() }
        var peaks = MerkleCompactRange()
        var position: UInt64 = 0
        while position < size {
            let end = min(size, position + batchCount)
            let encodings = try store.encodedEntries(from: position, to: end)
            var checkpoints = try store.encodedCheckpoints(after: position, through: end)[...]
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
                peaks.append(leafHash: Merkle.leafHash(encoded))
                position += 1
                if let (checkpointSize, bytes) = checkpoints.first, checkpointSize == position {
                    checkpoints.removeFirst()
                    checker.add(PendingCheckpoint(size: position, encoded: bytes, snapshot: LedgerSnapshot(report.state),
                                                  peaks: peaks, head: report.state.head))
                }
            }
            if encodings.isEmpty { break }
        }
        report.entries = position
        if position != size { report.problems.append("entries stop at \(position) of \(size)") }
        let (checked, problems) = checker.finish()
        report.problems += problems
        report.checkpoints = checked
        return report
    }

    /// How many checkpoints one worker task checks: large enough that queueing costs nothing beside
    /// the signature checks (about 60 µs each), small enough that the workers start early.
    static let checkChunkCount = 256

    /// What the replay knew when it reached a checkpoint's size.
    struct PendingCheckpoint: Sendable {
        let size: UInt64
        let encoded: [UInt8]
        let snapshot: LedgerSnapshot
        /// The tree's compact range at `size`; its root is folded by the worker, off the replay's thread.
        let peaks: MerkleCompactRange
        let head: [UInt8]
    }

    /// Checks checkpoints on `cores` workers while the replay runs, and returns the problems in size order.
    final class CheckpointChecker: @unchecked Sendable {
        // `buffer` and `submitted` belong to the replay's thread; `results` is shared under `lock`.
        private let key: P256.PublicKey
        private let walletID: [UInt8]
        private let queue = OperationQueue()
        private let lock = NSLock()
        private var results: [Int: [String]] = [:]
        private var buffer: [PendingCheckpoint] = []
        private var submitted = 0
        private var added = 0

        init(key: P256.PublicKey, walletID: [UInt8], cores: Int) {
            self.key = key
            self.walletID = walletID
            queue.maxConcurrentOperationCount = max(1, cores)
            queue.qualityOfService = .userInitiated
        }

        func add(_ pending: PendingCheckpoint) {
            buffer.append(pending)
            added += 1
            if buffer.count == checkChunkCount { submit() }
        }

        private func submit() {
            guard !buffer.isEmpty else { return }
            let chunk = buffer, index = submitted, key = key, walletID = walletID
            buffer = []
            submitted += 1
            queue.addOperation { [self] in
                // One verify context per task: set up once, not once per signature.
                let verifier = key.verifier()
                let problems = chunk.compactMap { LedgerVerifier.problem($0, key: key, verifier: verifier, walletID: walletID) }
                lock.withLock { results[index] = problems }
            }
        }

        /// Waits for every check; returns how many checkpoints were checked and the problems found.
        func finish() -> (Int, [String]) {
            submit()
            queue.waitUntilAllOperationsAreFinished()
            return lock.withLock { (added, (0..<submitted).flatMap { results[$0] ?? [] }) }
        }

        /// Stops checks still queued (after the replay found a broken entry) and waits for running ones.
        func cancel() {
            queue.cancelAllOperations()
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    private static func problem(_ item: PendingCheckpoint, key: P256.PublicKey, verifier: P256.Verifier?,
                                walletID: [UInt8]) -> String? {
        let size = item.size
        guard let signed = try? SignedCheckpoint.decode(item.encoded, knownKey: key) else { return "checkpoint \(size) does not decode" }
        let checkpoint = signed.checkpoint
        // SignedCheckpoint.isValid(signedBy:), with the task's verifier when OpenSSL gave one.
        let digest = Checkpoint.signatureLabel.digest(of: checkpoint.encoded)
        let verified = verifier?.isValidSignature(signed.signature, digest: digest) ?? key.isValidSignature(signed.signature, digest: digest)
        guard checkpoint.walletKey == key, verified else { return "checkpoint \(size) is not signed by the wallet key" }
        guard checkpoint.walletID == walletID, checkpoint.size == size else { return "checkpoint \(size) names another wallet or size" }
        guard checkpoint.root == item.peaks.root else { return "checkpoint \(size)'s root differs from the entries' tree" }
        guard checkpoint.head == item.head else { return "checkpoint \(size)'s chain head differs from the entries' chain" }
        guard checkpoint.snapshot == item.snapshot else { return "checkpoint \(size)'s balances or budgets differ from the replay" }
        return nil
    }
}
