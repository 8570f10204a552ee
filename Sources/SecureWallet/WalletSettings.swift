import Foundation
import SecureCore
import SecureCrypto
import SecureStore

extension Wallet {
    /// The settings in force, derived from the ledger's signed `settings` entries.
    public var settings: WalletSettings { state.settings }

    /// Sets the payee's offline limit for the amount's currency: appends a signed `settings` entry.
    @discardableResult
    public func setOfflineLimit(_ limit: OfflineLimit) throws -> LedgerEntry {
        try appendDraft(
            EntryDraft(
                kind: .settings, amount: nil, statement: nil, payload: SettingsChange.offlineLimit(limit).payload))
    }

    /// Gives up (`allowed`) or requires again one safeguard of the wallet's token: appends a signed `settings`
    /// entry when the setting changes, and repeats the allowances in `wallet.json`. Refused while the wallet
    /// is locked, like every append. Returns the entry, or nil when the setting already was so.
    @discardableResult
    public func setTokenAllowance(_ allowance: TokenAllowance, allowed: Bool) throws -> LedgerEntry? {
        var entry: LedgerEntry?
        if state.settings.tokenAllowances.contains(allowance) != allowed {
            entry = try appendDraft(
                EntryDraft(
                    kind: .settings, amount: nil,
                    note: allowed ? "token used with --allow-\(allowance)" : "token must not need --allow-\(allowance)",
                    statement: nil, payload: SettingsChange.tokenAllowance(allowance, allowed: allowed).payload))
        }
        let cached = state.settings.tokenAllowances.map(\.description).sorted()
        if metadata.allow ?? [] != cached {
            metadata.allow = cached
            try metadata.save(paths)
        }
        return entry
    }

    /// What `payer` was credited within each currency's offline-limit window ending now (at the time a new
    /// entry would get, so a clock refused as too far ahead moves no window), from this ledger's `paymentIn`
    /// entries, plus the payer's approvals (ready records) that no transfer consumed yet. Entries are dated in
    /// ledger order, so only those after the window's start are read.
    public func offlineCredits(from payer: WalletID) throws -> PayerOfflineCredits {
        let time = budgetTime
        if faultHooks?.ignoresOfflineLimit == true {
            return PayerOfflineCredits.tally(payer: payer, settings: state.settings, time: time, entries: [])
        }
        let earliest = PayerOfflineCredits.earliestTime(settings: state.settings, time: time)
        var recent: [LedgerEntry] = []
        try store.forEachEntry(kind: .paymentIn, from: try firstPosition(after: earliest)) { recent.append($0) }
        let approved = try store.unconsumedReadyRecords(payer: payer).map { bytes in
            guard let record = try ReadyRecord.decode(bytes), record.payerWalletID == payer else {
                throw StoreError(.corrupted, "a stored ready record does not decode")
            }
            return record.amount.money
        }
        return PayerOfflineCredits.tally(
            payer: payer, settings: state.settings, time: time, entries: recent, approved: approved)
    }

    /// The first position whose entry is dated after `time` (entry times never go backwards): a binary
    /// search of about log₂(size) entry reads.
    private func firstPosition(after time: Int64) throws -> UInt64 {
        var low: UInt64 = 0
        var high = state.size
        while low < high {
            let middle = low + (high - low) / 2
            guard let entry = try store.entry(at: middle) else {
                throw StoreError(.corrupted, "entry \(middle) is missing")
            }
            if entry.time > time { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Moves the anchor to `kind`: appends the signed `settings` entry (refused while the wallet is locked,
    /// like every append, so a restored wallet cannot leave the token anchor that caught it), writes the
    /// latest checkpoint to the new anchor, then removes the token's anchor object when leaving it (while the
    /// object exists it decides) and repeats the kind in `wallet.json`. A run stopped half way is finished
    /// by running it again, which appends nothing more.
    public func changeAnchor(to kind: AnchorKind) throws {
        if let lockReason { throw WalletError(.locked, "the wallet is locked and keeps its anchor: \(lockReason)") }
        if kind == .token {
            // A token that cannot keep the anchor says so before anything is signed.
            _ = try Wallet.chooseAnchor(session: token, allowFileAnchor: false)
        }
        if state.settings.anchorKind != kind {
            try appendDraft(
                EntryDraft(
                    kind: .settings, amount: nil, note: "anchor kept by the \(kind)", statement: nil,
                    payload: SettingsChange.anchorKind(kind).payload))
        }
        guard let latest else { preconditionFailure("an open wallet has a signed checkpoint") }
        let onToken = TokenAnchor(session: token, walletID: walletID)
        let next: AnchorStorage =
            kind == .token ? onToken : FileAnchor(path: WalletPaths.fileAnchor(walletID: walletID))
        try next.store(latest.encoded)
        if kind == .file { try onToken.destroy() }
        anchor = next
        anchorLag = nil
        metadata.anchor = kind.description
        try metadata.save(paths)
    }
}
