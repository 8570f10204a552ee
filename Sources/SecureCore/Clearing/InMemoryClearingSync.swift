/// The per-wallet sync records of `Clearing` in memory, beside the money records, rolled back with them.
extension InMemoryClearingStore: ClearingSyncTransaction {
    public func log(_ wallet: WalletID) -> KeyEventLog? { tables.logs[wallet] }

    public func keepLog(_ log: KeyEventLog) {
        if let held = tables.logs[log.walletID], held.events.count >= log.events.count { return }
        tables.logs[log.walletID] = log
    }

    public func isAdmitted(_ wallet: WalletID) -> Bool { tables.admitted[wallet] != nil }

    public func admit(_ wallet: WalletID, time: Int64) {
        if tables.admitted[wallet] == nil { tables.admitted[wallet] = time }
    }

    public func mint(_ key: VoucherKey) -> VoucherRecord? { tables.mints[key] }

    public func syncState(_ wallet: WalletID) -> WalletSyncState? { tables.syncStates[wallet] }

    public func replaceSyncState(_ state: WalletSyncState, expectedSize: UInt64) -> Bool {
        guard (tables.syncStates[state.walletID]?.size ?? 0) == expectedSize else { return false }
        tables.syncStates[state.walletID] = state
        return true
    }

    public func history(_ wallet: WalletID) -> SyncHistory {
        tables.histories[wallet] ?? SyncHistory(entries: [], claims: [], sentTransfers: [])
    }

    public func appendHistory(_ wallet: WalletID, entries: [SyncEntry], claim: ClaimedMap, transfers: [SignedTransfer]) {
        let held = history(wallet)
        tables.histories[wallet] = SyncHistory(
            entries: held.entries + entries, claims: held.claims + [claim],
            sentTransfers: held.sentTransfers + transfers)
    }
}
