import Foundation

/// Ledger times are Int64 milliseconds since the Unix epoch, UTC. This enum holds their bounds and the
/// one conversion to Foundation's `Date`, which the budget windows need.
public enum LedgerTime {
    /// 1970-01-01T00:00:00.000Z. Nothing in a wallet predates it, and refusing negatives keeps times simple.
    public static let millisecondsMin: Int64 = 0
    /// 9999-12-31T23:59:59.999Z: the last instant with a four-digit year, and far inside the range in which
    /// a Double holds whole milliseconds exactly (2^53), so converting to `Date` and back is lossless.
    public static let millisecondsMax: Int64 = 253_402_300_799_999

    /// Whether a time lies within the bounds.
    public static func isValid(_ milliseconds: Int64) -> Bool {
        milliseconds >= millisecondsMin && milliseconds <= millisecondsMax
    }

    // Date counts seconds in a Double. That is acceptable here, on the time path, not the money path:
    // within the bounds above every millisecond is exactly representable.
    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
