import Foundation
import SecureCore

/// Dates as the report writes them: ISO 8601 in one time zone ($TZ, or UTC with --utc, like `history`).
struct ReportDates {
    let timeZone: TimeZone

    private func formatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = format
        return formatter
    }

    /// `time` (ledger milliseconds) in `format`.
    func string(_ time: Int64, format: String) -> String {
        formatter(format).string(from: Date(timeIntervalSince1970: Double(time) / 1000))
    }

    /// "2026-12-01".
    func day(_ time: Int64) -> String { string(time, format: "yyyy-MM-dd") }

    /// "2026-12-01 09:30".
    func dateTime(_ time: Int64) -> String { string(time, format: "yyyy-MM-dd HH:mm") }

    /// "2026-12-01 09:30:05 +01:00".
    func stamp(_ time: Int64) -> String { string(time, format: "yyyy-MM-dd HH:mm:ss xxx") }

    /// The format of time-axis labels for a span: days for a long one, minutes or seconds for a short one.
    func tickFormat(span: Int64) -> String {
        if span >= 2 * 86_400_000 { return "yyyy-MM-dd" }
        return span >= 600_000 ? "MM-dd HH:mm" : "HH:mm:ss"
    }

    /// A budget window's label under its bar: "2026-12-01", "wk 2026-11-30", "2026-12".
    func windowLabel(_ window: BudgetWindow) -> String {
        switch window.kind {
        case .day: day(window.start)
        case .week: "wk " + day(window.start)
        case .month: string(window.start, format: "yyyy-MM")
        }
    }

    /// A budget window in words: "2026-11-30 to 2026-12-06".
    func window(_ window: BudgetWindow) -> String {
        let first = day(window.start)
        let last = day(window.end - 1)
        return first == last ? first : "\(first) to \(last)"
    }
}
