import Foundation
import SecureCore
import SecureCrypto

/// What the HTTP service needs from its store beyond the clearing's records (`ClearingStore`) and the
/// per-wallet sync records (`ClearingSyncTransaction`): the chunks of open sync sessions, batch numbers and
/// signed batches, evidence by digest, and quota counters (docs/CLEARING.md §3.2, §3.3). The PostgreSQL store
/// keeps them in `sync_sessions` (with the chunk bytes), `batches`/`cosignatures`, `evidence` and `quotas`, so
/// that every `serve` process sharing a database sees the same sessions, numbers and counts; the in-memory
/// store (`LockedInMemoryClearingStore`) keeps them for one process.
///
/// Contract, for every implementation:
/// - Each method is atomic on its own (its own transaction when the store has them) and safe to call from
///   several threads at once. None is called inside `transaction(locking:_:)`.
/// - Times are Unix milliseconds. Errors thrown are the store's own (a lost connection), never a client's.
public protocol ClearingServiceStore: ClearingStore where Transaction: ClearingSyncTransaction {
    /// Keeps one chunk's encoding under the key (wallet, session, first position), to expire at `expiresAt`.
    /// "Insert if absent, tell me whether I did": `.inserted` when this call wrote it; `.existedEqual` when
    /// the same bytes were already kept under the key (a re-delivery); `.existedDifferent` when other bytes
    /// were (nothing is written). The caller checked the chunk continues the session before calling.
    func putChunk(wallet: WalletID, session: SyncSessionID, firstPosition: UInt64, encoded: [UInt8], expiresAt: Int64)
        throws -> InsertResult
    /// The encodings of the session's chunks that have not expired, in increasing first position; empty when
    /// there are none.
    func chunks(wallet: WalletID, session: SyncSessionID) throws -> [[UInt8]]
    /// Deletes the session's chunks (after its claim, whatever the claim's outcome). Deleting none is harmless.
    func deleteChunks(wallet: WalletID, session: SyncSessionID) throws
    /// A batch number never returned before by any process sharing the store, increasing (PostgreSQL: a
    /// sequence). The first is 1. Numbers may be skipped (a process that takes one and crashes).
    func nextBatchNumber() throws -> UInt64
    /// Keeps a signed batch head and every cosignature under it (keyed by batch, and by (wallet, batch)).
    /// Storing the same batch twice is harmless.
    func storeBatch(head: SignedClearingTreeHead, cosignatures: [Cosignature]) throws
    /// The cosignature of `wallet` in the highest-numbered batch that holds one, or nil.
    func latestCosignature(wallet: WalletID) throws -> Cosignature?
    /// The evidence kept under `digest`, or nil.
    func evidence(digest: EvidenceDigest) throws -> EvidenceRecord?
    /// Counts one request of `bytes` bytes for `subject` ("wallet:HEX", "address:TEXT") in the window that
    /// starts at `windowStart`, and returns the window's totals including this request (PostgreSQL: `INSERT …
    /// ON CONFLICT (subject, window_start) DO UPDATE … RETURNING requests, bytes`).
    func countRequest(subject: String, windowStart: Int64, bytes: Int64) throws -> (requests: Int64, bytes: Int64)
}

/// `InMemoryClearingStore` made safe for the HTTP server's threads: every transaction and every read runs under
/// one lock, so transactions run one at a time as the in-memory store requires. It also keeps, in memory, what
/// `ClearingServiceStore` adds. For tests and for `secure-clearing serve --store memory`; nothing survives the
/// process.
public final class LockedInMemoryClearingStore: ClearingServiceStore, @unchecked Sendable {
    public typealias Transaction = InMemoryClearingStore

    // Recursive: the clearing's rules may read the store (a list head, a log) from inside another call.
    private let lock = NSRecursiveLock()
    private let inner: InMemoryClearingStore
    private var sessions: [SessionKey: [UInt64: (encoded: [UInt8], expiresAt: Int64)]] = [:]
    private var batchNumber: UInt64 = 0
    private var heads: [UInt64: SignedClearingTreeHead] = [:]
    private var latest: [WalletID: Cosignature] = [:]
    private var quotas: [QuotaKey: (requests: Int64, bytes: Int64)] = [:]
    private let now: @Sendable () -> Int64

    private struct SessionKey: Hashable {
        let wallet: WalletID
        let session: SyncSessionID
    }

    private struct QuotaKey: Hashable {
        let subject: String
        let windowStart: Int64
    }

    /// An empty store; `now` (Unix ms) decides which chunks have expired.
    public init(_ inner: InMemoryClearingStore = InMemoryClearingStore(), now: @escaping @Sendable () -> Int64) {
        self.inner = inner
        self.now = now
    }

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    public func transaction<Result>(locking wallets: [WalletID], _ body: (InMemoryClearingStore) throws -> Result)
        throws -> Result
    {
        try locked { try inner.transaction(locking: wallets, body) }
    }

    public func allWallets() throws -> [WalletRow] { locked { inner.allWallets() } }
    public func allDebits() throws -> [DebitRecord] { locked { inner.allDebits() } }
    public func allCredits() throws -> [CreditRecord] { locked { inner.allCredits() } }
    public func allReversals() throws -> [ReversalRecord] { locked { inner.allReversals() } }
    public func allMatches() throws -> Set<TransferKey> { locked { inner.allMatches() } }
    public func allMints() throws -> [VoucherRecord] { locked { inner.allMints() } }
    public func allDeposits() throws -> [VoucherRecord] { locked { inner.allDeposits() } }
    public func allEvidence() throws -> [EvidenceRecord] { locked { inner.allEvidence() } }
    public func allInconsistencies() throws -> [InconsistencyRecord] { locked { inner.allInconsistencies() } }
    public func listHead() throws -> ListHead { locked { inner.listHead() } }
    public func listIncrements(from version: UInt64) throws -> [ListIncrement] {
        locked { inner.listIncrements(from: version) }
    }
    public func appendListIncrement(_ increment: ListIncrement, expected: ListHead) throws -> Bool {
        locked { inner.appendListIncrement(increment, expected: expected) }
    }
    public func listings() throws -> [Listing] { locked { inner.listings() } }
    public func insertSettlement(_ settlement: SignedClearingSettlement) throws -> InsertResult {
        locked { inner.insertSettlement(settlement) }
    }
    public func allSettlements() throws -> [SignedClearingSettlement] { locked { inner.allSettlements() } }

    public func putChunk(
        wallet: WalletID, session: SyncSessionID, firstPosition: UInt64, encoded: [UInt8], expiresAt: Int64
    ) throws -> InsertResult {
        locked {
            let key = SessionKey(wallet: wallet, session: session)
            let time = now()
            var held = sessions[key, default: [:]].filter { $0.value.expiresAt > time }
            if let existing = held[firstPosition] {
                return existing.encoded == encoded ? .existedEqual : .existedDifferent
            }
            held[firstPosition] = (encoded, expiresAt)
            sessions[key] = held
            return .inserted
        }
    }

    public func chunks(wallet: WalletID, session: SyncSessionID) throws -> [[UInt8]] {
        locked {
            let time = now()
            return (sessions[SessionKey(wallet: wallet, session: session)] ?? [:])
                .filter { $0.value.expiresAt > time }
                .sorted { $0.key < $1.key }.map(\.value.encoded)
        }
    }

    public func deleteChunks(wallet: WalletID, session: SyncSessionID) throws {
        locked { sessions[SessionKey(wallet: wallet, session: session)] = nil }
    }

    public func nextBatchNumber() throws -> UInt64 {
        locked {
            batchNumber += 1
            return batchNumber
        }
    }

    public func storeBatch(head: SignedClearingTreeHead, cosignatures: [Cosignature]) throws {
        locked {
            heads[head.head.batch] = head
            for cosignature in cosignatures {
                let wallet = cosignature.leaf.wallet
                if let held = latest[wallet], held.head.head.batch > head.head.batch { continue }
                latest[wallet] = cosignature
            }
        }
    }

    public func latestCosignature(wallet: WalletID) throws -> Cosignature? { locked { latest[wallet] } }

    public func evidence(digest: EvidenceDigest) throws -> EvidenceRecord? {
        locked { inner.allEvidence().first { $0.digest == digest } }
    }

    public func countRequest(subject: String, windowStart: Int64, bytes: Int64) throws -> (
        requests: Int64, bytes: Int64
    ) {
        locked {
            let key = QuotaKey(subject: subject, windowStart: windowStart)
            let held = quotas[key] ?? (0, 0)
            let counted = (requests: held.requests + 1, bytes: held.bytes + bytes)
            quotas[key] = counted
            return counted
        }
    }
}
