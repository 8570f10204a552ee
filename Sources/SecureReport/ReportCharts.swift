import Foundation
import SecureCore

/// The colours of the charts. Each kind of chart has a plot background and data colours of its own, so a
/// person (and the screenshot test) can tell them apart; they are SVG presentation attributes, which the
/// page's Content-Security-Policy does not block.
public enum ChartColours {
    /// The balance chart's plot background (a light blue).
    public static let balanceBackground = "#eaf1fe"
    /// The balance line and its points (a strong blue).
    public static let balanceLine = "#1d4ed8"
    /// The budget chart's plot background (a light sand).
    public static let budgetBackground = "#fdf3e7"
    /// A window at most 80 % spent (green).
    public static let budgetWithin = "#15803d"
    /// A window above 80 % and within its limit (amber); also the 80 % line.
    public static let budgetAlert = "#d97706"
    /// A window over its limit (red); also the limit line.
    public static let budgetOver = "#b91c1c"
    /// Grid lines.
    static let grid = "#c9d2e0"
    /// Axis labels.
    static let label = "#3f4a5a"
}

/// The SVG of each chart, drawn from the geometry in ChartGeometry.swift. Each `<svg>` documents its scale in
/// data- attributes (`data-axis-max` minor units at `data-plot-top`, zero at `data-plot-bottom`, in the
/// viewBox's units), so a checker can recompute every bar and point from the amounts alone.
enum ReportCharts {
    /// The balance chart of one asset.
    static func balance(_ line: BalanceSeries, start: Int64, end: Int64, dates: ReportDates) -> String {
        let currency = line.asset.currency
        let largest = line.changes.map(\.minorUnits).reduce(line.opening, max)
        let geometry = StepChartGeometry(
            opening: line.opening, changes: line.changes.map { ($0.time, $0.minorUnits) }, start: start, end: end,
            frame: frame(largest: largest, currency: currency))
        var svg = open(
            kind: "balance", axis: geometry.amounts, currency: currency,
            label: "Balance of \(currency.code) issued by \(Asset.shortID(line.asset.issuer)) over time",
            extra: ["data-issuer": line.asset.issuer.hex])
        svg += plotArea(geometry.amounts.frame, fill: ChartColours.balanceBackground)
        svg += amountTicks(geometry.amounts, currency: currency)
        svg += timeTicks(geometry.times, dates: dates)
        svg += "<path d=\"\(geometry.path)\" fill=\"none\" stroke=\"\(ChartColours.balanceLine)\" "
        svg += "stroke-width=\"2.5\" stroke-linejoin=\"round\"/>\n"
        for point in geometry.points {
            let text = "\(dates.dateTime(point.time)): \(amountText(point.minorUnits, currency))"
            svg += "<circle data-point=\"\" cx=\"\(SVGNumber.text(point.x))\" cy=\"\(SVGNumber.text(point.y))\" "
            svg += "r=\"4\" fill=\"\(ChartColours.balanceLine)\" stroke=\"#ffffff\" stroke-width=\"1.5\">"
            svg += "<title>\(HTMLText.escaped(text))</title></circle>\n"
        }
        return svg + "</svg>\n"
    }

    /// The budget chart of one category: a bar per window, with the window's limit and its 80 % line.
    static func budget(_ series: BudgetSeries) -> String {
        let windows = series.windows.map { ($0.spent.minorUnits, $0.limit.minorUnits) }
        let currency = series.budget.limit.currency
        let largest = windows.map { max($0.0, $0.1) }.max() ?? 0
        let geometry = BarChartGeometry(windows: windows, frame: frame(largest: largest, currency: currency))
        var svg = open(
            kind: "budget", axis: geometry.amounts, currency: currency,
            label: "Spending in \(series.category) per \(windowWord(series.budget.window)) against its limit",
            extra: ["data-category": series.category])
        svg += plotArea(geometry.amounts.frame, fill: ChartColours.budgetBackground)
        svg += amountTicks(geometry.amounts, currency: currency)
        let windowDates = ReportDates(timeZone: TimeZone(identifier: series.budget.timeZoneIdentifier) ?? .current)
        let labelEvery = max(1, (series.windows.count + 5) / 6)
        for (index, (bar, window)) in zip(geometry.bars, series.windows).enumerated() {
            let colour = barColour(spent: window.spent.minorUnits, limit: window.limit.minorUnits)
            let start = windowDates.day(window.window.start)
            svg += "<rect data-bar=\"\" data-window-start=\"\(start)\" x=\"\(SVGNumber.text(bar.x))\" "
            svg += "y=\"\(SVGNumber.text(bar.y))\" width=\"\(SVGNumber.text(bar.width))\" "
            svg += "height=\"\(SVGNumber.text(bar.height))\" fill=\"\(colour)\" rx=\"2\">"
            svg += "<title>\(HTMLText.escaped(windowDates.window(window.window)))</title></rect>\n"
            svg += limitLine(bar, y: bar.limitY, percent: 100, colour: ChartColours.budgetOver)
            svg += limitLine(bar, y: bar.alertY, percent: 80, colour: ChartColours.budgetAlert)
            let centre = SVGNumber.text(bar.x + bar.width / 2)
            // A narrow slot gets the amount without its currency (the axis names it), so labels do not collide.
            let crowded = bar.slotRight - bar.slotLeft < 90
            let value =
                crowded
                ? numberText(window.spent.minorUnits, currency) : amountText(window.spent.minorUnits, currency)
            svg += text(
                centre, SVGNumber.text(max(bar.y - 6, 12)), value, anchor: "middle", weight: "600",
                size: crowded ? 11 : 12)
            if index % labelEvery == 0 {
                svg += text(
                    centre, SVGNumber.text(geometry.amounts.frame.bottom + 20),
                    windowDates.windowLabel(window.window), anchor: "middle")
            }
        }
        return svg + "</svg>\n"
    }

    /// The colour of a bar: green up to 80 % of the limit, amber up to the limit, red above (the same
    /// thresholds as the budget's own check: 5 · spent ≤ 4 · limit is within).
    static func barColour(spent: Int64, limit: Int64) -> String {
        if spent > limit { return ChartColours.budgetOver }
        let five = UInt64(5).multipliedFullWidth(by: UInt64(max(spent, 0)))
        let four = UInt64(4).multipliedFullWidth(by: UInt64(max(limit, 0)))
        return (five.high, five.low) > (four.high, four.low) ? ChartColours.budgetAlert : ChartColours.budgetWithin
    }

    /// The frame for a chart whose values reach `largest` minor units: wide enough on the left for the
    /// longest tick label, which is the axis maximum's (every tick has as many decimals and no more digits).
    static func frame(largest: Int64, currency: Currency) -> PlotFrame {
        PlotFrame.fitting(labelCharacters: numberText(AmountAxis(largest: largest).maximum, currency).count)
    }

    private static func open(
        kind: String, axis: AmountAxis, currency: Currency, label: String, extra: [String: String]
    ) -> String {
        let frame = axis.frame
        var attributes: [(String, String)] = [
            ("viewBox", "0 0 \(SVGNumber.text(frame.width)) \(SVGNumber.text(frame.height))"),
            ("role", "img"), ("aria-label", label), ("data-chart", kind), ("data-currency", currency.code),
            ("data-currency-scale", String(currency.scale)), ("data-axis-max", String(axis.maximum)),
            ("data-plot-left", SVGNumber.text(frame.left)), ("data-plot-right", SVGNumber.text(frame.right)),
            ("data-plot-top", SVGNumber.text(frame.top)), ("data-plot-bottom", SVGNumber.text(frame.bottom)),
        ]
        attributes += extra.sorted { $0.key < $1.key }
        let text = attributes.map { "\($0.0)=\"\(HTMLText.escaped($0.1))\"" }.joined(separator: " ")
        return "<svg \(text)>\n<title>\(HTMLText.escaped(label))</title>\n"
    }

    private static func plotArea(_ frame: PlotFrame, fill: String) -> String {
        "<rect data-plot-area=\"\" x=\"\(SVGNumber.text(frame.left))\" y=\"\(SVGNumber.text(frame.top))\" "
            + "width=\"\(SVGNumber.text(frame.right - frame.left))\" "
            + "height=\"\(SVGNumber.text(frame.bottom - frame.top))\" fill=\"\(fill)\"/>\n"
    }

    private static func amountTicks(_ axis: AmountAxis, currency: Currency) -> String {
        let frame = axis.frame
        var svg = ""
        for tick in axis.ticks {
            let y = SVGNumber.text(axis.y(tick))
            svg += "<line x1=\"\(SVGNumber.text(frame.left))\" x2=\"\(SVGNumber.text(frame.right))\" y1=\"\(y)\" "
            svg += "y2=\"\(y)\" stroke=\"\(ChartColours.grid)\" stroke-width=\"\(tick == 0 ? 1.5 : 0.75)\"/>\n"
            svg += text(
                SVGNumber.text(frame.left - 8), SVGNumber.text(axis.y(tick) + 4), numberText(tick, currency),
                anchor: "end", extra: " data-tick=\"\(tick)\"")
        }
        // The unit's name sits clear above the top tick's label (whose glyphs rise about 9 units above its
        // baseline at top + 4).
        svg += text(
            SVGNumber.text(PlotFrame.labelGap), SVGNumber.text(frame.top - 14), currency.code, anchor: "start",
            weight: "600")
        return svg
    }

    private static func timeTicks(_ axis: TimeAxis, dates: ReportDates) -> String {
        let format = dates.tickFormat(span: axis.end - axis.start)
        var svg = ""
        for (index, tick) in axis.ticks().enumerated() {
            let anchor = index == 0 ? "start" : (tick == axis.ticks().last ? "end" : "middle")
            let x = axis.x(tick)
            svg += "<line x1=\"\(SVGNumber.text(x))\" x2=\"\(SVGNumber.text(x))\" "
            svg += "y1=\"\(SVGNumber.text(axis.frame.bottom))\" y2=\"\(SVGNumber.text(axis.frame.bottom + 5))\" "
            svg += "stroke=\"\(ChartColours.label)\"/>\n"
            svg += text(
                SVGNumber.text(x), SVGNumber.text(axis.frame.bottom + 20), dates.string(tick, format: format),
                anchor: anchor)
        }
        return svg
    }

    private static func limitLine(_ bar: BarGeometry, y: Double, percent: Int, colour: String) -> String {
        let y = SVGNumber.text(y)
        return "<line data-limit=\"\(percent)\" x1=\"\(SVGNumber.text(bar.slotLeft + 4))\" "
            + "x2=\"\(SVGNumber.text(bar.slotRight - 4))\" y1=\"\(y)\" y2=\"\(y)\" stroke=\"\(colour)\" "
            + "stroke-width=\"2\" stroke-dasharray=\"\(percent == 100 ? "8 4" : "3 3")\"/>\n"
    }

    private static func text(
        _ x: String, _ y: String, _ content: String, anchor: String, weight: String = "400", size: Int = 12,
        extra: String = ""
    ) -> String {
        "<text x=\"\(x)\" y=\"\(y)\" font-size=\"\(size)\" font-weight=\"\(weight)\" fill=\"\(ChartColours.label)\" "
            + "text-anchor=\"\(anchor)\"\(extra)>\(HTMLText.escaped(content))</text>\n"
    }

    /// An amount as the CLI writes it: "12.50 EUR".
    static func amountText(_ minorUnits: Int64, _ currency: Currency) -> String {
        guard let money = try? Money(minorUnits: minorUnits, currency: currency) else { return "\(minorUnits)" }
        return MoneyText.format(money)
    }

    /// An amount without its currency, for tick labels: "12.50".
    static func numberText(_ minorUnits: Int64, _ currency: Currency) -> String {
        String(amountText(minorUnits, currency).split(separator: " ").first ?? "")
    }

    static func windowWord(_ kind: BudgetWindowKind) -> String {
        switch kind {
        case .day: "day"
        case .week: "week"
        case .month: "month"
        }
    }
}
