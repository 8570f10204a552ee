import Foundation
import SecureCrypto

/// The span a budget's limit applies to.
public enum BudgetWindowKind: UInt8, Sendable, CaseIterable {
    /// A calendar day, midnight to midnight.
    case day = 1
    /// An ISO 8601 week, Monday 00:00 to the next Monday 00:00.
    case week = 2
    /// A calendar month, from the first day's midnight.
    case month = 3
}

/// One concrete window: [start, end) in ledger milliseconds.
public struct BudgetWindow: Hashable, Sendable {
    /// The window's kind.
    public let kind: BudgetWindowKind
    /// The first millisecond inside the window.
    public let start: Int64
    /// The first millisecond after it.
    public let end: Int64

    /// Whether a time falls inside.
    public func contains(_ time: Int64) -> Bool { time >= start && time < end }
}

/// A spending limit for one category, counted in the time zone the budget entry recorded, so replay on
/// any machine finds the same windows.
public struct Budget: Hashable, Sendable {
    /// The category the limit applies to.
    public let category: String
    /// The limit per window; payments in other currencies cannot be counted against it.
    public let limit: Money
    /// Day, week or month.
    public let window: BudgetWindowKind
    /// A hard-cap category refuses a payment over the limit instead of asking for an override.
    public let isHardCap: Bool
    /// The IANA time zone name the windows are computed in, e.g. "Europe/Berlin".
    public let timeZoneIdentifier: String

    /// The longest category name in bytes: enough for any label a person types, small enough to keep
    /// entries and checkpoints (which list open windows by category) compact.
    public static let categoryByteCountMax = 64
    /// The longest IANA zone name in the tz database is 32 bytes; twice that leaves room for new ones.
    public static let timeZoneIdentifierByteCountMax = 64

    /// Makes a budget after checking the category and that the time zone is known to this machine.
    public init(
        category: String, limit: Money, window: BudgetWindowKind, isHardCap: Bool,
        timeZoneIdentifier: String
    ) throws {
        try Budget.validateCategory(category)
        let zoneBytes = timeZoneIdentifier.utf8.count
        guard zoneBytes > 0, zoneBytes <= Budget.timeZoneIdentifierByteCountMax,
            TimeZone(identifier: timeZoneIdentifier) != nil
        else {
            throw BudgetError(.unknownTimeZone, "\"\(timeZoneIdentifier)\" is not an IANA time zone this machine knows")
        }
        self.category = category
        self.limit = limit
        self.window = window
        self.isHardCap = isHardCap
        self.timeZoneIdentifier = timeZoneIdentifier
    }

    /// Checks a category name: 1 to 64 bytes of UTF-8 without control characters.
    public static func validateCategory(_ category: String) throws {
        let bytes = category.utf8.count
        guard bytes > 0, bytes <= categoryByteCountMax else {
            throw BudgetError(
                .invalidCategory, "a category name is 1 to \(categoryByteCountMax) bytes; \"\(category)\" has \(bytes)")
        }
        guard !category.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw BudgetError(.invalidCategory, "a category name cannot contain control characters")
        }
    }

    /// The window of this budget's kind that contains `time`, in the budget's time zone.
    public func window(containing time: Int64) throws -> BudgetWindow {
        guard LedgerTime.isValid(time) else {
            throw BudgetError(.timeOutOfRange, "the time \(time) ms lies outside the years 1970 to 9999")
        }
        // The identifier was checked at init, so the zone exists.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: timeZoneIdentifier)!
        calendar.firstWeekday = 2 // Monday, as ISO 8601 says
        calendar.minimumDaysInFirstWeek = 4
        let component: Calendar.Component =
            switch window {
            case .day: .day
            case .week: .weekOfYear
            case .month: .month
            }
        guard let interval = calendar.dateInterval(of: component, for: LedgerTime.date(time)) else {
            throw BudgetError(
                .timeOutOfRange, "no \(window) window contains the time \(time) ms in \(timeZoneIdentifier)")
        }
        let start = LedgerTime.milliseconds(interval.start)
        let end = LedgerTime.milliseconds(interval.end)
        precondition(start <= time && time < end, "Foundation returned a window that misses its own instant")
        return BudgetWindow(kind: window, start: start, end: end)
    }

    /// The verdict for a payment of `payment` when `spent` has already been spent in the current window.
    /// Computed exactly in integers: OK when 5(S + r) ≤ 4L, an alert when 5(S + r) > 4L and S + r ≤ L,
    /// over budget when S + r > L. Sums are formed in UInt64 and products in 128 bits, so no value that
    /// fits in Money can overflow here.
    public func verdict(spent: Money, payment: Money) throws -> BudgetVerdict {
        guard spent.currency == limit.currency, payment.currency == limit.currency else {
            throw BudgetError(
                .currencyMismatch,
                "the \(category) budget counts \(limit.currency); "
                    + "a \(payment.currency) payment cannot be counted against it")
        }
        let usage = BudgetUsage(category: category, spent: spent, payment: payment, limit: limit, isHardCap: isHardCap)
        // Both are ≤ Int64.max, so their sum is < UInt64.max.
        let total = UInt64(spent.minorUnits) + UInt64(payment.minorUnits)
        let limitUnits = UInt64(limit.minorUnits)
        if total > limitUnits { return isHardCap ? .refusedByHardCap(usage) : .overBudget(usage) }
        let fiveTotal = UInt64(5).multipliedFullWidth(by: total)
        let fourLimit = UInt64(4).multipliedFullWidth(by: limitUnits)
        let isAlert = (fiveTotal.high, fiveTotal.low) > (fourLimit.high, fourLimit.low)
        return isAlert ? .alert(usage) : .ok
    }
}

/// The figures behind a verdict, for messages and the bars `secure budget show` draws.
public struct BudgetUsage: Hashable, Sendable {
    /// The category.
    public let category: String
    /// Spent so far in the open window, before this payment.
    public let spent: Money
    /// The payment being checked.
    public let payment: Money
    /// The window's limit.
    public let limit: Money
    /// Whether the category refuses instead of allowing an override.
    public let isHardCap: Bool
}

/// A budget check's outcome. It is a value, not an error: the caller decides what to ask the user.
public enum BudgetVerdict: Hashable, Sendable {
    /// At most 80% of the limit after the payment.
    case ok
    /// Above 80% but within the limit.
    case alert(BudgetUsage)
    /// Above the limit; the payment needs an explicit override, which the entry records.
    case overBudget(BudgetUsage)
    /// Above the limit of a hard-cap category; the payment is refused.
    case refusedByHardCap(BudgetUsage)
}

/// An error in a budget's definition or use. Equality is by code.
public typealias BudgetError = CodedFailure<BudgetErrorCode>

/// Stable codes for `BudgetError`: the kinds of failure.
public enum BudgetErrorCode: FailureCode, CaseNameCode {
    case invalidCategory
    case unknownTimeZone
    case timeOutOfRange
    case currencyMismatch

    /// A budget is defined by the user's arguments, so a bad one is a usage error.
    public var kind: FailureKind { .usage }
}
