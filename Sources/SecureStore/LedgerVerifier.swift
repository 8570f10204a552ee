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

        /// An empty report, before anything was checked.
        public init() {}
    }

    /// How many entries are read from the database at a time.
    static let batchCount: UInt64 = 10_000

    /// Verifies the whole ledger. `walletID` must be SHA-256 of entry 0's inception event.
    ///
    /// The replay runs on the calling thread; every `checkChunkCount` checkpoints it reaches go to a
    /// queue of `cores` workers that check them (signature, key in force, root, head, snapshot) while the
    /// replay goes on, so the replay's own time hides behind the signature checks instead of adding to them.
    /// Each chunk carries the key-event log as the replay had it then: whether a key was in force for a
    /// checkpoint of size s depends only on the events before position s, which that log holds.
    ///
    /// With `statements`, each entry's signed statement is checked too (`EntryStatementCheck`): vouchers
    /// and credits against the issuers trusted at their position (`statements` starts with the set trusted
    /// before entry 0, empty for a whole ledger, and follows each signed trust entry), transfers, refusals and receipts against their signers' logs, and each
    /// payment out against the signed transfer kept for it. Without it (benchmark fixtures of synthetic
    /// entries) only the chain, the rules and the checkpoints are checked.
    public static func verify(
        _ store: LedgerStore, walletID: WalletID, statements: StatementSources? = nil,
        cores: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws -> Report {
        var statements = statements
        var report = Report()
        let size = try store.size()
        guard size > 0, let first = try store.entry(at: 0), first.kind == .keyEvent,
            let inception = try? SignedKeyEvent.decode(first.payload)
        else {
            report.problems.append("entry 0 is not a signed inception event")
            return report
        }
        if WalletID(inception: inception.event) != walletID {
            report.problems.append("entry 0's inception event is not this wallet's (wallet id differs)")
        }
        guard var log = try? KeyEventLog(inception: inception) else {
            report.problems.append("entry 0's inception event breaks the key-event rules")
            return report
        }
        let checker = CheckpointChecker(walletID: walletID, cores: cores)
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
                if entry.kind == .keyEvent, position > 0, let problem = follow(&log, entry) {
                    report.problems.append(problem)
                    return report
                }
                if statements != nil, entry.kind == .settings,
                    let change = try? IssuerTrustChange.decode(entry.payload)
                {
                    // Each deposit and credit is checked against the issuers trusted at its position.
                    IssuerTrustChange.apply(change, to: &statements!.trustedIssuers)
                }
                if let statements,
                    let problem = EntryStatementCheck.problem(entry, encoded: encoded, ownLog: log, sources: statements)
                {
                    report.problems.append(problem)
                }
                peaks.append(leafHash: Merkle.leafHash(encoded))
                position += 1
                if let (checkpointSize, bytes) = checkpoints.first, checkpointSize == position {
                    checkpoints.removeFirst()
                    checker.add(
                        PendingCheckpoint(
                            size: position, encoded: bytes, snapshot: LedgerSnapshot(report.state),
                            peaks: peaks, head: report.state.head), log: log)
                }
            }
            if encodings.isEmpty { break }
        }
        report.entries = position
        if position != size { report.problems.append("entries stop at \(position) of \(size)") }
        let (checked, problems) = checker.finish()
        report.problems += problems
        report.keyLog = log
        report.checkpoints = checked
        return report
    }

    /// A rotation entry must hold a signed event that follows the log and takes effect at its own position.
    static func follow(_ log: inout KeyEventLog, _ entry: LedgerEntry) -> String? {
        guard let event = try? SignedKeyEvent.decode(entry.payload) else {
            return "entry \(entry.position)'s key event does not decode"
        }
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
        let head: Digest32
    }

    /// Checks checkpoints on `cores` workers while the replay runs, and returns the problems in size order.
    final class CheckpointChecker: @unchecked Sendable {
        // `buffer` and `submitted` belong to the replay's thread; `results` is shared under `lock`.
        private let walletID: WalletID
        private let queue = OperationQueue()
        private let lock = NSLock()
        private var results: [Int: [String]] = [:]
        private var buffer: [PendingCheckpoint] = []
        private var log: KeyEventLog?
        private var submitted = 0
        private var added = 0

        init(walletID: WalletID, cores: Int) {
            self.walletID = walletID
            queue.maxConcurrentOperationCount = max(1, cores)
            queue.qualityOfService = .userInitiated
        }

        /// Queues a checkpoint; `log` is the key-event log as the replay has it at the checkpoint's size.
        func add(_ pending: PendingCheckpoint, log: KeyEventLog) {
            buffer.append(pending)
            self.log = log
            added += 1
            if buffer.count == checkChunkCount { submit() }
        }

        private func submit() {
            guard !buffer.isEmpty, let log else { return }
            let chunk = buffer, index = submitted, walletID = walletID
            buffer = []
            submitted += 1
            queue.addOperation { [self] in
                var verifiers = Verifiers()
                let problems = chunk.compactMap {
                    LedgerVerifier.problem($0, log: log, verifiers: &verifiers, walletID: walletID)
                }
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

    /// One task's OpenSSL verify context for the key it last used (keys change only at rotations).
    struct Verifiers {
        private var key: P256.PublicKey?
        private var verifier: P256.Verifier?

        mutating func isValidSignature(_ signature: ECDSASignature, digest: [UInt8], by key: P256.PublicKey) -> Bool {
            if self.key != key {
                self.key = key
                verifier = key.verifier()
            }
            return verifier?.isValidSignature(signature, digest: digest)
                ?? key.isValidSignature(signature, digest: digest)
        }
    }

    private static func problem(
        _ item: PendingCheckpoint, log: KeyEventLog, verifiers: inout Verifiers,
        walletID: WalletID
    ) -> String? {
        let size = item.size
        let expected = log.event(signingCheckpointOfSize: size)
        guard let signed = try? SignedCheckpoint.decode(item.encoded, knownKey: expected?.signingKey) else {
            return "checkpoint \(size) does not decode"
        }
        let checkpoint = signed.checkpoint
        // SignedCheckpoint.isValid(signedBy:), with the task's verify context.
        guard let expected, checkpoint.walletKey == expected.signingKey,
            verifiers.isValidSignature(
                signed.signature, digest: Checkpoint.signatureLabel.digest(of: checkpoint.encoded),
                by: expected.signingKey)
        else {
            return "checkpoint \(size) is not signed by the wallet key in force at that size"
        }
        // KeyEventLog.check(signed), without its second verification of the signature just checked.
        let use =
            checkpoint.walletID == walletID
            ? log.keyUse(
                key: checkpoint.walletKey, sequence: checkpoint.keySequence, eventPosition: checkpoint.keyEventPosition,
                size: checkpoint.size)
            : .unknown
        switch use {
        case .inForce: break
        case .retired: return "checkpoint \(size) is signed by a key after its retirement"
        case .unknown, .beforeInForce:
            return "checkpoint \(size) names a key sequence or event position the log does not"
        }
        guard checkpoint.walletID == walletID, checkpoint.size == size else {
            return "checkpoint \(size) names another wallet or size"
        }
        guard checkpoint.root == item.peaks.root else {
            return "checkpoint \(size)'s root differs from the entries' tree"
        }
        guard checkpoint.head == item.head else {
            return "checkpoint \(size)'s chain head differs from the entries' chain"
        }
        guard checkpoint.snapshot == item.snapshot else {
            return "checkpoint \(size)'s balances or budgets differ from the replay"
        }
        return nil
    }
}
