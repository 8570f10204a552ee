import Dispatch
import Foundation
import SecureBench
import SecureCore
import SecureCrypto
@_spi(Benchmark) import SecureStore
import SecureTestSupport

/// The ledger benchmark's verification fixture: a ledger of `count` entries, each
/// with its own signed checkpoint as a wallet's ledger has, whose wallet key is a `SoftwareSigner`.
/// Signing that many checkpoints on SoftHSM (a per-signature login each) takes too long, and
/// `LedgerVerifier` needs only the store and the wallet id, so no token is involved. The folder holds
/// `ledger.db`, `database-key` (hex; a fixture holds no money) and `wallet-id` (hex). It lives in the
/// secure-bench executable, not in SecureBench, so that only this binary links the test-only signer; the
/// ledger benchmark runs it as `secure-bench fixtures verify DIR COUNT` in a process of its own.
enum VerifyFixture {
    /// Entries written per transaction; their checkpoints are signed in parallel before it.
    static let batchCount = 4_096

    /// Builds the fixture in `directory`, which must not hold a ledger yet.
    static func build(directory: String, count: Int, cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        precondition(
            count > Int(SyntheticHistory.firstPosition), "the fixture holds at least the inception event and the budget"
        )
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: nil)
        let signer = try SoftwareSigner(), next = try SoftwareSigner(), agreement = try SoftwareSigner()
        let inception = try SignedKeyEvent(
            .inception(
                signingKey: signer.publicKey, nextKey: next.publicKey,
                agreementKey: agreement.publicKey), signer: signer)
        let walletID = WalletID(inception: inception.event)
        let key = SecretBytes(randomCount: 32)
        let store = try LedgerStore.create(path: directory + "/ledger.db", key: key, walletID: walletID)
        var history = SyntheticHistory(walletID: walletID, payerKey: signer.publicKey, issuer: agreement)
        var state = LedgerState()
        var peaks = MerkleCompactRange()
        let start: Int64 = 1_767_225_600_000 // 2026-01-01T00:00:00Z; one entry a minute after it
        var position = 0
        while position < count {
            let batch = min(batchCount, count - position)
            var drafts: [EntryDraft] = []
            if position == 0 { drafts.append(try SyntheticHistory.budgetDraft()) } // entry 1
            let historyStart = position == 0 ? Int(SyntheticHistory.firstPosition) : position
            drafts += try history.drafts(from: UInt64(historyStart), count: position + batch - historyStart)
            var entries: [LedgerEntry] = []
            var checkpoints: [Checkpoint] = []
            if position == 0 {
                entries.append(
                    try LedgerEntry(
                        position: 0, id: .random(), kind: .keyEvent, amount: nil, time: start,
                        payload: inception.encoded, previousLink: state.head))
                try state.apply(entries[0])
                peaks.append(leafHash: Merkle.leafHash(entries[0].encoded))
                checkpoints.append(try checkpoint(walletID, signer.publicKey, state, peaks, time: start))
            }
            for draft in drafts {
                let time = start + Int64(state.size) * 60_000
                let entry = try draft.entry(
                    position: state.size, id: .random(), time: time, previousLink: state.head)
                try state.apply(entry)
                peaks.append(leafHash: Merkle.leafHash(entry.encoded))
                entries.append(entry)
                checkpoints.append(try checkpoint(walletID, signer.publicKey, state, peaks, time: time))
            }
            let signed = try sign(checkpoints, with: signer, cores: cores)
            try store.appendPresigned(
                zip(entries, signed).map {
                    LedgerStore.Append(entry: $0, checkpoint: $1.encoded, checkpointSize: $1.checkpoint.size)
                },
                treePeaks: peaks)
            position += batch
        }
        try write(key.withUnsafeBytes { Hex.encode(Array($0)) }, to: directory + "/database-key")
        try write(walletID.hex, to: directory + "/wallet-id")
    }

    private static func checkpoint(
        _ walletID: WalletID, _ key: P256.PublicKey, _ state: LedgerState, _ peaks: MerkleCompactRange,
        time: Int64
    ) throws -> Checkpoint {
        try Checkpoint(
            walletID: walletID, walletKey: key, keySequence: 0, keyEventPosition: 0, state: state, root: peaks.root,
            time: time, index: LedgerIndex.emptyDigest) // read by LedgerVerifier only, never opened as a wallet
    }

    /// Signs on all cores; each signature gets its own OpenSSL context, so the one key is shared safely.
    private static func sign(_ checkpoints: [Checkpoint], with signer: SoftwareSigner, cores: Int) throws
        -> [SignedCheckpoint]
    {
        let results = UnsafeMutableBufferPointer<Result<SignedCheckpoint, Error>?>.allocate(capacity: checkpoints.count)
        results.initialize(repeating: nil)
        defer { results.deallocate() }
        nonisolated(unsafe) let output = results
        nonisolated(unsafe) let shared = signer
        let chunk = (checkpoints.count + cores - 1) / cores
        DispatchQueue.concurrentPerform(iterations: cores) { part in
            for index in (part * chunk)..<min(checkpoints.count, (part + 1) * chunk) {
                output[index] = Result { try checkpoints[index].sign(with: shared) }
            }
        }
        return try results.map { try $0!.get() }
    }

    private static func write(_ text: String, to path: String) throws {
        try DurableFile.write(Array((text + "\n").utf8), to: path)
    }

}
