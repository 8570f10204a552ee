import Testing

@testable import SecureCore

@Suite("Budgets")
struct BudgetTests {
    func budget(
        _ limit: Int64, window: BudgetWindowKind = .month, hardCap: Bool = false,
        zone: String = "Europe/Berlin"
    ) throws -> Budget {
        try Budget(
            category: "food", limit: Money(minorUnits: limit, currency: .eur), window: window,
            isHardCap: hardCap, timeZoneIdentifier: zone)
    }

    func eur(_ units: Int64) throws -> Money { try Money(minorUnits: units, currency: .eur) }

    @Test(
        "the verdict's boundaries sit exactly at 80% and 100%",
        arguments: [
            (Int64(0), Int64(80), "ok"), (0, 81, "alert"), (50, 30, "ok"), (50, 31, "alert"), (0, 100, "alert"),
            (100, 0, "alert"), (0, 101, "over"), (100, 1, "over"), (0, 0, "ok"),
        ])
    func boundaries(spent: Int64, payment: Int64, expected: String) throws {
        let verdict = try budget(100).verdict(spent: eur(spent), payment: eur(payment))
        let name =
            switch verdict {
            case .ok: "ok"
            case .alert: "alert"
            case .overBudget: "over"
            case .refusedByHardCap: "refused"
            }
        #expect(name == expected, "case S=\(spent) r=\(payment)")
    }

    @Test("a hard cap refuses where a soft budget asks for an override")
    func hardCap() throws {
        guard
            case .refusedByHardCap(let usage) = try budget(100, hardCap: true).verdict(spent: eur(60), payment: eur(41))
        else {
            Issue.record("expected a refusal")
            return
        }
        let sixty = try eur(60)
        let fortyOne = try eur(41)
        #expect(usage.spent == sixty && usage.payment == fortyOne && usage.isHardCap)
        guard case .alert = try budget(100, hardCap: true).verdict(spent: eur(60), payment: eur(40)) else {
            Issue.record("expected an alert")
            return
        }
    }

    @Test("amounts near Int64.max neither trap nor misjudge")
    func extremeAmounts() throws {
        let max = Int64.max
        // S + r overflows Int64 but is computed in UInt64: over budget.
        guard case .overBudget = try budget(max).verdict(spent: eur(max), payment: eur(max)) else {
            Issue.record("expected over budget")
            return
        }
        // 5(S + r) overflows 64 bits; S + r = L is an alert.
        guard case .alert = try budget(max).verdict(spent: eur(max - 1), payment: eur(1)) else {
            Issue.record("expected an alert")
            return
        }
        // L = 5k: S + r = 4k is exactly 80% and is ok; one more unit is an alert.
        let k = max / 5
        guard case .ok = try budget(5 * k).verdict(spent: eur(4 * k), payment: eur(0)),
            case .alert = try budget(5 * k).verdict(spent: eur(4 * k), payment: eur(1))
        else {
            Issue.record("expected ok then alert")
            return
        }
    }

    @Test("a payment in another currency is an error, not a verdict")
    func currencyMismatch() throws {
        #expect(throws: BudgetError(.currencyMismatch, "")) {
            try budget(100).verdict(spent: eur(0), payment: Money(minorUnits: 1, currency: .usd))
        }
    }

    @Test("categories and time zones are validated")
    func validation() throws {
        #expect(throws: BudgetError(.unknownTimeZone, "")) { try budget(1, zone: "Mars/Olympus") }
        #expect(throws: BudgetError(.unknownTimeZone, "")) { try budget(1, zone: "") }
        #expect(throws: BudgetError(.invalidCategory, "")) {
            try Budget(category: "", limit: eur(1), window: .day, isHardCap: false, timeZoneIdentifier: "UTC")
        }
        #expect(throws: BudgetError(.invalidCategory, "")) {
            try Budget(
                category: String(repeating: "x", count: 65), limit: eur(1), window: .day, isHardCap: false,
                timeZoneIdentifier: "UTC")
        }
        #expect(throws: BudgetError(.invalidCategory, "")) {
            try Budget(category: "a\nb", limit: eur(1), window: .day, isHardCap: false, timeZoneIdentifier: "UTC")
        }
        #expect(throws: BudgetError(.timeOutOfRange, "")) { try budget(1).window(containing: -1) }
        #expect(throws: BudgetError(.timeOutOfRange, "")) { try budget(1).window(containing: .max) }
    }

    @Test(
        "windows follow the recorded time zone, DST and ISO weeks",
        arguments: [
            // The day of the 2024 spring DST change in Berlin is 23 hours long.
            (
                "Europe/Berlin", BudgetWindowKind.day, Int64(1_711_879_200_000), Int64(1_711_839_600_000),
                Int64(1_711_922_400_000)
            ),
            // 2025-01-01 (a Wednesday) lies in ISO week 2025-W01, Monday 2024-12-30 to Monday 2025-01-06.
            ("Europe/Berlin", .week, 1_735_722_000_000, 1_735_513_200_000, 1_736_118_000_000),
            // 2024-02-29 23:30 in Los Angeles is still February there…
            ("America/Los_Angeles", .month, 1_709_278_200_000, 1_706_774_400_000, 1_709_280_000_000),
            // …and already the afternoon of 1 March in Tokyo.
            ("Asia/Tokyo", .day, 1_709_278_200_000, 1_709_218_800_000, 1_709_305_200_000),
            // Window starts belong to the window they start.
            ("Europe/Berlin", .day, 1_711_839_600_000, 1_711_839_600_000, 1_711_922_400_000),
        ])
    func windows(zone: String, kind: BudgetWindowKind, time: Int64, start: Int64, end: Int64) throws {
        let window = try budget(1, window: kind, zone: zone).window(containing: time)
        #expect(window.start == start && window.end == end, "case \(zone) \(kind) \(time)")
        #expect(window.contains(time) && !window.contains(end))
    }
}
