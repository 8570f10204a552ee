import Foundation
import SecureCore
import SecureCrypto

/// The one cosignature batcher of a `serve` process (docs/CLEARING.md §2.7, §3.1): closed syncs' leaves go
/// into a `CosignatureBatch`; a thread of its own closes the batch when it is due (full, or
/// `ClearingLimits.batchMillisecondsMax` after its first leaf), takes a batch number from the store, signs the
/// head once with the clearing key, stores the batch and wakes the handlers waiting for their cosignatures.
/// The same thread runs the listing sweep (`ClearingBook.publishListings`) every `sweepMilliseconds`.
public final class ClearingBatcher<Store: ClearingServiceStore>: @unchecked Sendable {
    /// What the batcher signs for.
    public struct Identity: Sendable {
        /// The issuer whose clearing this is.
        public let issuer: WalletID
        /// The sequence of the issuer's key event that delegated the clearing key.
        public let delegationSequence: UInt64

        /// Collects them.
        public init(issuer: WalletID, delegationSequence: UInt64) {
            self.issuer = issuer
            self.delegationSequence = delegationSequence
        }
    }

    /// How long a handler waits for its batch before it answers 503 (a batch closes within a second; the
    /// rest is room for the signature and the store).
    public static var waitMillisecondsMax: Int64 { 5000 }
    /// Batches whose cosignatures are kept for their waiters: a waiter is woken within one batch, so a few
    /// are plenty; older ones are dropped.
    static var keptBatchCountMax: UInt64 { 64 }

    private let condition = NSCondition()
    private var batch = CosignatureBatch()
    /// The number of the batch being filled, counted in this process (not the store's batch number).
    private var generation: UInt64 = 0
    private var results: [UInt64: Result<[WalletID: Cosignature], Error>] = [:]
    private var stopped = false
    private var thread: Thread?
    private var lastSweep: Int64 = 0
    /// The latest head this process signed.
    private var latestHead: SignedClearingTreeHead?

    private let store: Store
    private let identity: Identity
    private let signer: MessageSigner
    private let sweep: () -> Void
    private let sweepMilliseconds: Int64
    private let now: @Sendable () -> Int64

    /// A batcher signing with `signer` (which must be the delegated clearing key); `sweep` runs every
    /// `sweepMilliseconds` on the batcher's thread. `start()` starts the thread.
    public init(
        store: Store, identity: Identity, signer: MessageSigner, sweepMilliseconds: Int64,
        now: @escaping @Sendable () -> Int64, sweep: @escaping () -> Void
    ) {
        precondition(sweepMilliseconds > 0)
        self.store = store
        self.identity = identity
        self.signer = signer
        self.sweep = sweep
        self.sweepMilliseconds = sweepMilliseconds
        self.now = now
    }

    /// Starts the thread that closes batches and sweeps listings.
    public func start() {
        condition.withLock {
            precondition(thread == nil, "a batcher starts once")
            let made = Thread { [self] in run() }
            made.name = "clearing-batcher"
            thread = made
            made.start()
        }
    }

    /// Stops the thread (a batch being filled is closed first, so no waiter is left behind).
    public func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// The latest head this process signed, if any.
    public var latestSignedHead: SignedClearingTreeHead? { condition.withLock { latestHead } }

    /// Adds a closed sync's leaf and waits for the batch that cosigns it; throws the signing or store error
    /// of that batch, or `ClearingServiceError.unavailable` when no batch closed in time.
    public func cosign(_ leaf: CosignatureLeaf) throws -> Cosignature {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Double(Self.waitMillisecondsMax) / 1000)
        while !batch.add(leaf, now: now()) {
            // Full: the thread is closing it; wait for the next.
            condition.broadcast()
            guard condition.wait(until: deadline) else { throw unavailable() }
        }
        let mine = generation
        condition.broadcast()
        while results[mine] == nil {
            guard condition.wait(until: deadline) else { throw unavailable() }
        }
        switch results[mine]! {
        case .failure(let error): throw error
        case .success(let cosignatures):
            guard let cosignature = cosignatures[leaf.wallet] else { throw unavailable() }
            return cosignature
        }
    }

    private func unavailable() -> ClearingServiceError {
        ClearingServiceError(.unavailable, "no cosignature batch closed in time; retry")
    }

    private func run() {
        condition.lock()
        while true {
            let time = now()
            if batch.isDue(now: time) || (stopped && !batch.leaves.isEmpty) {
                closeBatch(time: time)
                continue
            }
            if stopped { break }
            if time - lastSweep >= sweepMilliseconds {
                lastSweep = time
                condition.unlock()
                sweep()
                condition.lock()
                continue
            }
            var wake = lastSweep + sweepMilliseconds
            if let opened = batch.openedAt { wake = min(wake, opened + ClearingLimits.batchMillisecondsMax) }
            let seconds = Double(max(1, wake - time)) / 1000
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
        condition.unlock()
    }

    /// Called with the lock held; signs and stores without it, so handlers keep adding to the next batch.
    private func closeBatch(time: Int64) {
        var closing = batch
        batch = CosignatureBatch()
        let closed = generation
        generation += 1
        condition.unlock()
        let result = Result { () throws -> [WalletID: Cosignature] in
            let number = try store.nextBatchNumber()
            let list = try store.listHead()
            guard
                let cosignatures = try closing.close(
                    issuer: identity.issuer, delegationSequence: identity.delegationSequence, batch: number,
                    time: time, list: list, signer: signer), let head = cosignatures.first?.head
            else { return [:] }
            try store.storeBatch(head: head, cosignatures: cosignatures)
            return Dictionary(uniqueKeysWithValues: cosignatures.map { ($0.leaf.wallet, $0) })
        }
        condition.lock()
        if case .success(let cosignatures) = result, let head = cosignatures.first?.value.head {
            latestHead = head
        }
        results[closed] = result
        if closed >= Self.keptBatchCountMax { results[closed - Self.keptBatchCountMax] = nil }
        condition.broadcast()
    }
}
