import SecureCrypto

/// An error of the clearing's own work (not a client's fault): sums past Int64, a list that keeps moving.
public typealias ClearingBookError = CodedFailure<ClearingBookErrorCode>

/// Stable codes for `ClearingBookError`.
public enum ClearingBookErrorCode: FailureCode, CaseNameCode {
    /// A conservation sum does not fit in Int64 minor units.
    case overflow
    /// Another process kept appending to the issuer's list while this one published.
    case listBusy

    /// Neither is the user's doing: the command exits 1.
    public var kind: FailureKind { .failure }
}

/// A wallet whose own records do not add up to the balance its cosigned checkpoint shows.
public struct WalletResidue: Hashable, Sendable {
    /// The wallet.
    public let wallet: WalletID
    /// Its checkpoint's balance minus what its records give, in minor units.
    public let difference: Int64
}

/// The conservation report of one asset (docs/CLEARING.md §2.8), every term in signed minor units:
///
///     minted − redeemed = synced balances + unsynced balances + undeposited vouchers
///                         + debits without credit − credits without debit − deposits without mint + residue
///
/// The issuer's own wallet is left out of the balances: its balance of its asset is the outstanding total
/// (minted − redeemed), a liability, not money held.
public struct ConservationReport: Hashable, Sendable {
    /// The asset.
    public let asset: Asset
    /// Σ the issuer's `mint` records.
    public internal(set) var minted: Int64 = 0
    /// Σ the issuer's `redemption` records.
    public internal(set) var redeemed: Int64 = 0
    /// Σ the cosigned balances of the wallets synced within the period.
    public internal(set) var syncedBalances: Int64 = 0
    /// Σ the last cosigned balances of the wallets not synced within it.
    public internal(set) var unsyncedBalances: Int64 = 0
    /// How many wallets not synced within the period hold or held this asset.
    public internal(set) var unsyncedCount = 0
    /// The oldest of their last syncs, as an age in milliseconds at the report's time; nil when none.
    public internal(set) var oldestUnsyncedAge: Int64?
    /// Σ mints with no deposit.
    public internal(set) var undepositedVouchers: Int64 = 0
    /// Σ deposits with no mint: the issuer has not synced its mint yet.
    public internal(set) var depositsWithoutMint: Int64 = 0
    /// Σ debits neither matched nor reversed: money in flight.
    public internal(set) var debitsWithoutCredit: Int64 = 0
    /// Σ credits not matched: their payer's last-known balance still holds them.
    public internal(set) var creditsWithoutDebit: Int64 = 0
    /// What the equation leaves over; zero when every record and balance agrees.
    public internal(set) var residue: Int64 = 0
    /// The wallets whose records do not give their own balance, which a non-zero residue comes from.
    public internal(set) var walletsWithResidue: [WalletResidue] = []

    init(asset: Asset) { self.asset = asset }
}

extension ClearingBook {
    /// The conservation report of each of the issuer's assets at `now`, sorted by asset; a wallet is unsynced
    /// when its last sync is more than `unsyncedAfter` milliseconds old. Throws `ClearingBookError.overflow`
    /// when a sum leaves Int64, and the store's own errors.
    public func conservation(now: Int64, unsyncedAfter: Int64) throws -> [ConservationReport] {
        var reports: [Asset: ConservationReport] = [:]
        func update(_ asset: Asset, _ body: (inout ConservationReport) throws -> Void) throws {
            var report = reports[asset] ?? ConservationReport(asset: asset)
            try body(&report)
            reports[asset] = report
        }
        var own = OwnSums()
        let matches = try store.allMatches()
        let reversed = Set(try store.allReversals().map(\.key))
        let mints = try store.allMints()
        let deposits = try store.allDeposits()
        let mintKeys = Set(mints.map(\.key))
        let depositKeys = Set(deposits.map(\.key))
        for mint in mints {
            try own.add(issuer, mint.amount, +1)
            try update(mint.amount.asset) { report in
                try Checked.add(&report.minted, mint.amount)
                if !depositKeys.contains(mint.key) { try Checked.add(&report.undepositedVouchers, mint.amount) }
            }
        }
        for deposit in deposits {
            try own.add(deposit.recipient, deposit.amount, +1)
            if !mintKeys.contains(deposit.key) {
                try update(deposit.amount.asset) { try Checked.add(&$0.depositsWithoutMint, deposit.amount) }
            }
        }
        // A match counts only with both its records: a lost debit or credit then shows in the residue.
        let debits = try store.allDebits()
        let credits = try store.allCredits()
        let debitKeys = Set(debits.map(\.key))
        let creditKeys = Set(credits.map(\.key))
        for debit in debits {
            try own.add(debit.key.payer, debit.amount, -1)
            let matched = matches.contains(debit.key) && creditKeys.contains(debit.key)
            if !matched && !reversed.contains(debit.key) {
                try update(debit.amount.asset) { try Checked.add(&$0.debitsWithoutCredit, debit.amount) }
            }
        }
        for credit in credits {
            try own.add(credit.payee, credit.amount, credit.isRedemption ? -1 : +1)
            let matched = matches.contains(credit.key) && debitKeys.contains(credit.key)
            try update(credit.amount.asset) { report in
                if credit.isRedemption { try Checked.add(&report.redeemed, credit.amount) }
                if !matched { try Checked.add(&report.creditsWithoutDebit, credit.amount) }
            }
        }
        for reversal in try store.allReversals() { try own.add(reversal.key.payer, reversal.amount, +1) }
        for row in try store.allWallets() {
            let age = now - row.lastSyncAt
            let unsynced = age > unsyncedAfter
            var assets = Set(own.sums[row.walletID, default: [:]].keys)
            for balance in row.balances where balance.issuer == issuer { assets.insert(balance.asset) }
            for asset in assets {
                let held = row.balances.first { $0.asset == asset }?.money.minorUnits ?? 0
                let expected = own.sums[row.walletID]?[asset] ?? 0
                try update(asset) { report in
                    if row.walletID != issuer {
                        if unsynced {
                            try Checked.add(&report.unsyncedBalances, held)
                        } else {
                            try Checked.add(&report.syncedBalances, held)
                        }
                    }
                    if held != expected {
                        report.walletsWithResidue.append(
                            WalletResidue(wallet: row.walletID, difference: try Checked.difference(held, expected)))
                    }
                }
            }
            if unsynced {
                for asset in assets { try update(asset) { $0.noteUnsynced(age: age) } }
            }
        }
        return try reports.values.sorted { $0.asset < $1.asset }.map { report in
            var report = report
            try report.computeResidue()
            return report
        }
    }
}

extension ConservationReport {
    mutating func noteUnsynced(age: Int64) {
        unsyncedCount += 1
        oldestUnsyncedAge = max(oldestUnsyncedAge ?? age, age)
    }

    mutating func computeResidue() throws {
        var right: Int64 = 0
        for term in [syncedBalances, unsyncedBalances, undepositedVouchers, debitsWithoutCredit] {
            try Checked.add(&right, term)
        }
        try Checked.add(&right, try Checked.difference(0, creditsWithoutDebit))
        try Checked.add(&right, try Checked.difference(0, depositsWithoutMint))
        residue = try Checked.difference(try Checked.difference(minted, redeemed), right)
        walletsWithResidue.sort { $0.wallet.bytes.lexicographicallyPrecedes($1.wallet.bytes) }
    }
}

/// Per wallet and asset, what its own records give: deposits, credits and reversals less debits (and for
/// the issuer, mints less redemptions).
private struct OwnSums {
    var sums: [WalletID: [Asset: Int64]] = [:]

    mutating func add(_ wallet: WalletID, _ amount: AssetAmount, _ sign: Int64) throws {
        var value = sums[wallet]?[amount.asset] ?? 0
        try Checked.add(&value, sign * amount.money.minorUnits)
        sums[wallet, default: [:]][amount.asset] = value
    }
}

/// Int64 sums that fail with `ClearingBookError.overflow` instead of trapping.
enum Checked {
    static func add(_ total: inout Int64, _ amount: AssetAmount) throws { try add(&total, amount.money.minorUnits) }

    static func add(_ total: inout Int64, _ value: Int64) throws {
        let (sum, overflow) = total.addingReportingOverflow(value)
        guard !overflow else { throw ClearingBookError(.overflow, "a conservation sum exceeds Int64 minor units") }
        total = sum
    }

    static func difference(_ a: Int64, _ b: Int64) throws -> Int64 {
        let (result, overflow) = a.subtractingReportingOverflow(b)
        guard !overflow else {
            throw ClearingBookError(.overflow, "a conservation difference exceeds Int64 minor units")
        }
        return result
    }
}
