import Foundation
import SecureCore

/// Gathers a report's figures from the ledger, one entry at a time in order from position 0. It replays the
/// entries with `LedgerState`, the same rules the wallet appended them by, so the balances and budget
/// windows it charts are the ones the ledger itself counts (a reversal credits, a budget change restarts a
/// window). It holds a bounded amount whatever the ledger's length.
public struct ReportBuilder {
    /// A balance chart draws at most this many changes per asset (the latest ones): a point per change stays
    /// legible, and the page stays small (about 100 bytes per point).
    public static let balanceChangeCountMax = 1000
    /// A budget chart draws at most this many windows (the latest ones): a year of months, or a quarter of weeks.
    public static let budgetWindowCountMax = 12
    /// The table of largest payments lists at most this many per currency.
    public static let largestPaymentCountMax = 10
    /// Key events the report can date: a key-event log holds at most 1024 events (`KeyEventLog.eventCountMax`).
    static let keyEventTimeCountMax = KeyEventLog.eventCountMax

    private let range: ReportRange
    private var state = LedgerState()
    private var series: [Asset: BalanceSeries] = [:]
    private var windows: [String: [Int64: BudgetWindowSpending]] = [:]
    private var windowsLeftOut: [String: Int] = [:]
    private var lastBudget: [String: Budget] = [:]
    private var payments: [Currency: [PaymentRow]] = [:]
    private var reversed: Set<StatementID> = []
    private var keyEventTimes: [UInt64: Int64] = [:]
    /// Entries seen, and entries in the range.
    public private(set) var entryCount: UInt64 = 0
    /// Entries in the range.
    public private(set) var entriesInRange: UInt64 = 0
    /// Why the replay stopped, if an entry did not apply; later entries are then not charted.
    public private(set) var replayProblem: String?

    /// A builder for a report over `range`.
    public init(range: ReportRange) { self.range = range }

    /// Takes the next entry of the ledger.
    public mutating func add(_ entry: LedgerEntry) {
        entryCount += 1
        if entry.kind == .keyEvent, keyEventTimes.count < Self.keyEventTimeCountMax {
            keyEventTimes[entry.position] = entry.time
        }
        guard replayProblem == nil else { return }
        // Only the two small tables the report compares are kept: copying the whole state would copy its
        // table of every recorded statement at each entry.
        let balances = state.balances
        let windowTotals = state.windowTotals
        do {
            try state.apply(entry)
        } catch {
            replayProblem = "entry \(entry.position) does not replay: \(error)"
            return
        }
        let inRange = range.contains(entry.time)
        if inRange { entriesInRange += 1 }
        recordBalances(before: balances, entry: entry, inRange: inRange)
        recordWindows(before: windowTotals)
        if entry.kind == .reversal, let id = entry.statement?.id { reversed.insert(id) }
        if inRange, entry.kind == .paymentOut, let amount = entry.amount { recordPayment(entry, amount) }
    }

    private mutating func recordBalances(before: [Asset: Money], entry: LedgerEntry, inRange: Bool) {
        for (asset, money) in state.balances where before[asset] != money {
            var line = series[asset] ?? BalanceSeries(asset: asset)
            if let since = range.since, entry.time < since {
                line.opening = money.minorUnits
            } else if inRange {
                line.changes.append(.init(time: entry.time, minorUnits: money.minorUnits))
                if line.changes.count > Self.balanceChangeCountMax {
                    let dropped = line.changes.removeFirst()
                    line.opening = dropped.minorUnits
                    line.truncatedAt = dropped.time
                }
            } else {
                continue
            }
            series[asset] = line
        }
    }

    private mutating func recordWindows(before: [String: WindowTotal]) {
        for (category, total) in state.windowTotals where before[category] != total {
            guard range.overlaps(start: total.window.start, end: total.window.end),
                let budget = state.budgets[category]
            else { continue }
            lastBudget[category] = budget
            var list = windows[category] ?? [:]
            list[total.window.start] = BudgetWindowSpending(
                window: total.window, spent: total.spent, limit: budget.limit)
            if list.count > Self.budgetWindowCountMax, let oldest = list.keys.min() {
                list[oldest] = nil
                windowsLeftOut[category, default: 0] += 1
            }
            windows[category] = list
        }
    }

    private mutating func recordPayment(_ entry: LedgerEntry, _ amount: AssetAmount) {
        var list = payments[amount.currency] ?? []
        list.append(
            PaymentRow(
                time: entry.time, counterparty: entry.counterparty, category: entry.category, note: entry.note,
                amount: amount, position: entry.position, transferID: entry.statement?.id))
        // Largest first; of equal amounts the earlier first.
        list.sort {
            ($0.amount.money.minorUnits, -Int64(truncatingIfNeeded: $0.position))
                > ($1.amount.money.minorUnits, -Int64(truncatingIfNeeded: $1.position))
        }
        if list.count > Self.largestPaymentCountMax { list.removeLast() }
        payments[amount.currency] = list
    }

    /// When the ledger entry at `position` was made, if it recorded a key event.
    public func keyEventTime(_ position: UInt64) -> Int64? { keyEventTimes[position] }

    /// The balance series, by asset: every asset held at some time in the range (one held before the range
    /// and not changed in it is a flat line at its opening balance).
    public var balances: [BalanceSeries] { series.values.sorted { $0.asset < $1.asset } }

    /// The budget series, by category; every budget in force gets its window containing `now` when that
    /// window is in the range, spent or not.
    public func budgets(now: Int64) -> [BudgetSeries] {
        var all = windows
        var budgets = lastBudget
        for (category, budget) in state.budgets {
            budgets[category] = budget
            guard let window = try? budget.window(containing: now),
                range.overlaps(start: window.start, end: window.end)
            else { continue }
            var list = all[category] ?? [:]
            if list[window.start] == nil {
                let spent = state.windowTotals[category].flatMap { $0.window == window ? $0.spent : nil }
                list[window.start] = BudgetWindowSpending(
                    window: window, spent: spent ?? .zero(budget.limit.currency), limit: budget.limit)
            }
            all[category] = list
        }
        return all.keys.sorted().compactMap { category in
            guard let budget = budgets[category], let list = all[category] else { return nil }
            let ordered = list.values.sorted { $0.window.start < $1.window.start }
            let kept = Array(ordered.suffix(Self.budgetWindowCountMax))
            return BudgetSeries(
                category: category, budget: budget, windows: kept,
                windowsLeftOut: (windowsLeftOut[category] ?? 0) + ordered.count - kept.count)
        }
    }

    /// The largest payments out in the range, per currency (by code), largest first.
    public var largestPayments: [PaymentRow] {
        payments.keys.sorted { $0.code < $1.code }.flatMap { currency in
            payments[currency]!.map { row in
                var row = row
                if let id = row.transferID { row.isReversed = reversed.contains(id) }
                return row
            }
        }
    }

    /// The balances after the last entry replayed.
    public var currentBalances: [AssetAmount] {
        state.balances.sorted { $0.key < $1.key }.map { AssetAmount(issuer: $0.key.issuer, money: $0.value) }
    }
}
