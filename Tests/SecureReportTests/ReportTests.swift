import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureReport

/// The report's pure parts, without a token: axes, bars, points, escaping, and the page's policy.
@Suite("Report: chart geometry, escaping and the page")
struct ReportTests {
    @Test(
        "round steps are 1, 2 or 5 times a power of ten",
        arguments: [
            (Int64(1), Int64(1)), (3, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 200), (1999, 2000),
            (2001, 5000), (Int64.max, Int64.max),
        ])
    func roundUp(value: Int64, expected: Int64) {
        #expect(AmountAxis.roundUp(value) == expected, "\(value)")
    }

    @Test("the amount axis covers the largest value in at most four round steps")
    func amountAxis() {
        let axis = AmountAxis(largest: 5000) // 50.00 EUR
        #expect(axis.step == 2000 && axis.maximum == 6000, "\(axis)")
        #expect(axis.ticks == [0, 2000, 4000, 6000])
        let frame = PlotFrame.standard
        #expect(axis.y(0) == frame.bottom && axis.y(6000) == frame.top)
        #expect(abs(axis.y(3000) - (frame.bottom + frame.top) / 2) < 1e-9)
        #expect(AmountAxis(largest: 0).maximum == 1, "an all-zero chart still has an axis")
        let huge = AmountAxis(largest: Int64.max - 1)
        #expect(huge.maximum == Int64.max && huge.ticks.first == 0, "no overflow at the top")
    }

    @Test("bar heights are proportional to the amounts, and the limit lines sit at 100 % and 80 %")
    func bars() {
        let chart = BarChartGeometry(windows: [(spent: 1500, limit: 2000), (spent: 2500, limit: 2000)])
        let axis = chart.amounts
        #expect(axis.maximum == 3000)
        let unit = (PlotFrame.standard.bottom - PlotFrame.standard.top) / 3000
        #expect(abs(chart.bars[0].height - 1500 * unit) < 1e-9)
        #expect(abs(chart.bars[1].height - 2500 * unit) < 1e-9)
        #expect(abs(chart.bars[0].y + chart.bars[0].height - PlotFrame.standard.bottom) < 1e-9, "bars stand on zero")
        #expect(abs(chart.bars[0].limitY - axis.y(2000)) < 1e-9 && abs(chart.bars[0].alertY - axis.y(1600)) < 1e-9)
        #expect(chart.bars[0].x + chart.bars[0].width <= chart.bars[1].x, "bars do not overlap")
        #expect(ReportCharts.barColour(spent: 1600, limit: 2000) == ChartColours.budgetWithin)
        #expect(ReportCharts.barColour(spent: 1601, limit: 2000) == ChartColours.budgetAlert)
        #expect(ReportCharts.barColour(spent: 2001, limit: 2000) == ChartColours.budgetOver)
    }

    @Test("a balance's points sit at its times and amounts, joined by steps")
    func steps() {
        let chart = StepChartGeometry(
            opening: 0, changes: [(time: 10_000, minorUnits: 5000), (time: 20_000, minorUnits: 3800)], start: 0,
            end: 40_000)
        let frame = PlotFrame.standard
        #expect(
            chart.points.map(\.x) == [frame.left + 0.25 * (frame.right - frame.left), (frame.left + frame.right) / 2])
        #expect(chart.points.map(\.y) == [chart.amounts.y(5000), chart.amounts.y(3800)])
        #expect(chart.path.hasPrefix("M76 214 H232 V"), "\(chart.path)")
        #expect(chart.path.hasSuffix(" H700"), "\(chart.path)")
        #expect(SVGNumber.text(-0.001) == "0" && SVGNumber.text(12.345) == "12.35" && SVGNumber.text(7) == "7")
    }

    /// The `<text>` elements of an SVG: x, y, anchor, font size and content.
    static func texts(_ svg: String) -> [(x: Double, y: Double, anchor: String, size: Double, content: String)] {
        let pattern =
            #"<text x="([-0-9.]+)" y="([-0-9.]+)" font-size="([0-9.]+)"[^>]*text-anchor="(\w+)"[^>]*>([^<]*)</text>"#
        let expression = try! NSRegularExpression(pattern: pattern)
        return expression.matches(in: svg, range: NSRange(svg.startIndex..., in: svg)).map { match in
            func group(_ index: Int) -> String { String(svg[Range(match.range(at: index), in: svg)!]) }
            return (Double(group(1))!, Double(group(2))!, group(4), Double(group(3))!, group(5))
        }
    }

    @Test(
        "every amount label fits inside the chart, however large the balance, and the unit clears the top label",
        arguments: [Int64(5000), 100_000_000, 100_000_000_000, Int64.max / 2])
    func labelsFit(balance: Int64) throws {
        let issuer = try #require(WalletID(bytes: [UInt8](repeating: 7, count: 32)))
        var line = BalanceSeries(asset: Asset(issuer: issuer, currency: .eur))
        line.changes = [BalanceSeries.Change(time: 1000, minorUnits: balance)]
        let svg = ReportCharts.balance(
            line, start: 0, end: 2000, dates: ReportDates(timeZone: TimeZone(identifier: "UTC")!))
        let viewBox = try #require(svg.components(separatedBy: "viewBox=\"0 0 ").dropFirst().first)
        let width = try #require(Double(viewBox.prefix { $0 != " " }))
        let ticks = Self.texts(svg).filter { $0.anchor == "end" }
        #expect(ticks.count >= 2)
        // DejaVu Sans (the usual sans-serif on Linux, and the widest common one) draws a digit 0.64 em wide and a
        // point 0.32 em: the label's left end is its anchor less that width.
        for tick in ticks {
            let digits = Double(tick.content.filter(\.isNumber).count)
            let left = tick.x - tick.size * (0.64 * digits + 0.32 * Double(tick.content.count) - 0.32 * digits)
            #expect(left >= 0 && tick.x <= width, "\(tick.content) starts at \(left)")
        }
        let unit = try #require(Self.texts(svg).first { $0.content == "EUR" })
        let top = try #require(ticks.map(\.y).min())
        // Capitals rise 0.73 em above the baseline; the unit's baseline must be above the top label's capitals.
        #expect(unit.y - 0.73 * unit.size >= 0, "the unit is inside the chart")
        #expect(unit.y + 2 <= top - 0.73 * ticks[0].size, "the unit (at \(unit.y)) clears the top label (at \(top))")
    }

    @Test("a zero limit from an older ledger: both lines on the zero axis, and the legend says so")
    func zeroLimit() throws {
        let budget = try Budget(
            category: "food", limit: Money(minorUnits: 0, currency: .eur), window: .month, isHardCap: false,
            timeZoneIdentifier: "UTC")
        let window = try budget.window(containing: 1_000_000)
        let series = BudgetSeries(
            category: "food", budget: budget,
            windows: [
                BudgetWindowSpending(
                    window: window, spent: try Money(minorUnits: 200, currency: .eur), limit: budget.limit)
            ], windowsLeftOut: 0)
        let geometry = BarChartGeometry(windows: [(spent: 200, limit: 0)])
        #expect(
            geometry.bars[0].limitY == PlotFrame.standard.bottom && geometry.bars[0].alertY == PlotFrame.standard.bottom
        )
        let html = ReportPage.budgets([series])
        #expect(html.contains("data-limit=\"100\"") && html.contains("data-limit=\"80\""))
        #expect(html.contains("<li data-zero-limit=\"\">the limit is 0.00 EUR"), "\(html)")
        #expect(html.contains("fill=\"\(ChartColours.budgetOver)\""), "any spending is over a zero limit")
        let positive = BudgetSeries(
            category: "food",
            budget: try Budget(
                category: "food", limit: Money(minorUnits: 100, currency: .eur), window: .month, isHardCap: false,
                timeZoneIdentifier: "UTC"),
            windows: [
                BudgetWindowSpending(
                    window: window, spent: try Money(minorUnits: 20, currency: .eur),
                    limit: try Money(minorUnits: 100, currency: .eur))
            ], windowsLeftOut: 0)
        #expect(!ReportPage.budgets([positive]).contains("data-zero-limit"))
    }

    @Test("peer text cannot open an element or end an attribute")
    func escaping() {
        #expect(HTMLText.escaped("<svg onload=alert(1)>") == "&lt;svg onload=alert(1)&gt;")
        #expect(HTMLText.escaped("a\"b'c&d") == "a&quot;b&#39;c&amp;d")
        #expect(HTMLText.peer("one\ntwo\u{202E}") == "one\\u{A}two\\u{202E}")
        let longest = String(repeating: "\u{1B}", count: LedgerEntry.noteByteCountMax)
        #expect(!HTMLText.peer(longest).hasSuffix("…"), "a whole note always fits")
    }

    @Test("the page allows its one style sheet by hash, and holds no script, source or outside address")
    func page() throws {
        var wallet = try SoftwareWallet(seed: 16)
        try wallet.fundFromNothing(try Money(minorUnits: 5000, currency: .eur))
        let payee = try #require(WalletID(bytes: wallet.randomBytes(32)))
        try wallet.append(
            try wallet.order(to: payee, amount: Money(minorUnits: 1200, currency: .eur))
                .debitDraft(category: "food", note: "<svg onload=alert(1)> \"=1+1\", &c\nnext"))
        var builder = ReportBuilder(range: ReportRange(since: nil, until: nil))
        for entry in wallet.entries { builder.add(entry) }
        #expect(builder.balances.first?.changes.map(\.minorUnits) == [5000, 3800])
        #expect(builder.largestPayments.map(\.amount.money.minorUnits) == [1200])
        let html = ReportPage.html(
            ReportContent(
                walletID: wallet.walletID, isIssuer: false, generated: wallet.time + 1000,
                timeZone: TimeZone(identifier: "UTC")!, range: ReportRange(since: nil, until: nil),
                entryCount: builder.entryCount, entriesInRange: builder.entriesInRange, balances: builder.balances,
                budgets: builder.budgets(now: wallet.time), largestPayments: builder.largestPayments, keyEvents: [],
                verification: VerificationSummary(entries: 3, checkpoints: 1, anchor: "token", problems: []),
                replayProblem: nil, currentBalances: builder.currentBalances))
        let digest = Data(SHA256.hash(Array(ReportPage.styleSheet.utf8))).base64EncodedString()
        #expect(html.contains("content=\"default-src &#39;none&#39;; style-src &#39;sha256-\(digest)&#39;"))
        #expect(html.contains("<style>\(ReportPage.styleSheet)</style>"))
        #expect(!html.lowercased().contains("<script") && !html.lowercased().contains("src="))
        #expect(html.components(separatedBy: "http").count - 1 == html.components(separatedBy: "http-equiv").count - 1)
        #expect(!html.contains("<svg onload"))
        #expect(html.contains("&lt;svg onload=alert(1)&gt; &quot;=1+1&quot;, &amp;c\\u{A}next"))
        #expect(!html.contains(" style="), "no style attributes: the policy would block them")
    }

    /// A wallet of a deposit of 50.00 and three payments (12.00, 7.50, 3.25), one entry a second.
    static func paidWallet() throws -> SoftwareWallet {
        var wallet = try SoftwareWallet(seed: 17)
        try wallet.fundFromNothing(try Money(minorUnits: 5000, currency: .eur))
        let payee = try #require(WalletID(bytes: wallet.randomBytes(32)))
        for (units, note) in [(1200, "a"), (750, "b"), (325, "c")] {
            try wallet.append(
                try wallet.order(to: payee, amount: Money(minorUnits: Int64(units), currency: .eur))
                    .debitDraft(category: "food", note: note))
        }
        return wallet
    }

    @Test("a range keeps the balance it opens with and the changes inside it")
    func range() throws {
        let wallet = try Self.paidWallet()
        // Entries: 0 inception, 1 deposit, 2 to 4 the payments; from the second payment's time to the third's.
        let times = wallet.entries.map(\.time)
        var builder = ReportBuilder(range: ReportRange(since: times[3], until: times[4]))
        for entry in wallet.entries { builder.add(entry) }
        let line = try #require(builder.balances.first)
        #expect(line.opening == 3800, "the balance before the range: 50.00 - 12.00")
        #expect(line.changes.map(\.minorUnits) == [3050, 2725])
        #expect(builder.entriesInRange == 2 && builder.entryCount == 5)
        #expect(builder.largestPayments.map(\.note) == ["b", "c"], "only the payments in the range, largest first")
        #expect(builder.currentBalances.map(\.money.minorUnits) == [2725])
    }

    @Test("a ledger that does not verify says so at the top, with its problems escaped")
    func problems() throws {
        let wallet = try Self.paidWallet()
        var builder = ReportBuilder(range: ReportRange(since: nil, until: nil))
        for entry in wallet.entries { builder.add(entry) }
        let html = ReportPage.html(
            ReportContent(
                walletID: wallet.walletID, isIssuer: false, generated: wallet.time, timeZone: .current,
                range: ReportRange(since: nil, until: nil), entryCount: builder.entryCount,
                entriesInRange: builder.entriesInRange, balances: builder.balances,
                budgets: builder.budgets(now: wallet.time), largestPayments: builder.largestPayments,
                keyEvents: [],
                verification: VerificationSummary(
                    entries: 5, checkpoints: 0, anchor: "file", problems: ["row <b>3</b> differs"]),
                replayProblem: nil, currentBalances: builder.currentBalances))
        #expect(html.contains("class=\"badge bad\">PROBLEMS") && !html.contains(">Verified<"))
        #expect(html.contains("<li>row &lt;b&gt;3&lt;/b&gt; differs</li>"))
        #expect(html.contains("No budget is set."))
    }
}
