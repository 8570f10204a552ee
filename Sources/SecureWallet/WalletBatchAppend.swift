import SecureCore
import SecureCrypto

// The batch append, for bulk loads such as the ledger benchmark's fixtures (SecureBench's
// `SyntheticHistory` supplies the drafts). It holds no key: the one checkpoint it writes is signed on the
// wallet's token. It is `@_spi(Benchmark)`: a person's money never moves through it.

extension Wallet {
    /// Appends drafts in order under one checkpoint: every entry is applied first (any refusal happens
    /// before the token is asked for anything), then one checkpoint covering them all is signed on the
    /// token, over their index D, inside the transaction that commits entries and checkpoint, and the
    /// anchor moves. For bulk loads such as the ledger benchmark's fixtures; money moved by a person goes
    /// through `append`, one checkpoint per entry. A failure before the commit changes nothing.
    @discardableResult
    @_spi(Benchmark) public func appendBatch(_ drafts: [EntryDraft]) throws -> [LedgerEntry] {
        if let lockReason { throw WalletError(.locked, "the wallet is locked and refuses to spend: \(lockReason)") }
        precondition(!drafts.isEmpty, "a batch appends at least one entry")
        let time = try nextEntryTime()
        var next = state
        var nextPeaks = peaks
        var entries: [LedgerEntry] = []
        entries.reserveCapacity(drafts.count)
        for draft in drafts {
            let entry = try draft.entry(
                position: next.size, id: .random(), time: time,
                previousLink: next.head)
            try next.apply(entry)
            nextPeaks.append(leafHash: Merkle.leafHash(entry.encoded))
            entries.append(entry)
        }
        var sealed: SignedCheckpoint?
        try store.appendBatch(entries, treePeaks: nextPeaks) { index in
            let signed = try sign(state: next, root: nextPeaks.root, time: time, index: index)
            sealed = signed
            return signed.encoded
        }
        guard let signed = sealed else { preconditionFailure("a committed batch was sealed") }
        commit(state: next, peaks: nextPeaks, latest: signed)
        // As in `append`: the batch is committed whatever happens now, so an anchor that cannot follow is
        // recorded, not thrown; the next append or open moves it forward.
        do {
            try anchor.store(signed.encoded)
            anchorLag = nil
        } catch {
            anchorLag = "\(error)"
        }
        return entries
    }
}
