import Foundation

// The geometry of the report's charts: where an amount or a time lands in the SVG's coordinates. Pixel
// positions are Doubles because drawing needs fractions; no amount is ever computed from one. Every amount
// the report shows as text comes from the integer minor units through MoneyText.

/// The drawing area of one chart, in the SVG's user units (its viewBox): the whole chart is `width` by
/// `height`, and the plot (where bars and points go) is the rectangle inside the margins.
public struct PlotFrame: Hashable, Sendable {
    /// The chart's width in user units.
    public let width: Double
    /// The chart's height in user units.
    public let height: Double
    /// The plot's left edge (the amount axis).
    public let left: Double
    /// The plot's right edge.
    public let right: Double
    /// The plot's top edge: where the amount axis's maximum lands.
    public let top: Double
    /// The plot's bottom edge: where zero lands (the time or window axis).
    public let bottom: Double

    /// The frame every chart of the report starts from: 720 by 260 units, with room for amount labels of up
    /// to six characters on the left, the unit's name above the top label, and date labels below. The SVG
    /// scales to the page's width; the proportions stay.
    public static let standard = PlotFrame(width: 720, height: 260, left: 76, right: 700, top: 28, bottom: 214)

    /// The width of one character of a 12-unit tick label, at most: digits are 0.64 em in DejaVu Sans and
    /// narrower in the other common sans-serif faces, so 0.7 em leaves a margin.
    public static let labelCharacterWidth = 12 * 0.7
    /// The gap between a tick label's right end and the plot, and the margin kept left of the longest label.
    public static let labelGap = 8.0

    /// The standard frame with its left edge moved right, when needed, so a tick label of `characters`
    /// characters (right-aligned `labelGap` left of the plot) starts inside the SVG, `labelGap` from its edge.
    public static func fitting(labelCharacters characters: Int) -> PlotFrame {
        let needed = labelGap * 2 + Double(characters) * labelCharacterWidth
        let frame = standard
        return PlotFrame(
            width: frame.width, height: frame.height, left: max(frame.left, needed.rounded(.up)), right: frame.right,
            top: frame.top, bottom: frame.bottom)
    }
}

/// The vertical axis of a chart of amounts: zero at the plot's bottom, `maximum` (minor units) at its top,
/// with ticks at round amounts. Amounts in a chart are never negative (balances and spending).
public struct AmountAxis: Hashable, Sendable {
    /// The amount at the plot's top, in minor units: a round number at least as large as every value drawn.
    public let maximum: Int64
    /// The distance between ticks, in minor units.
    public let step: Int64
    /// The frame the axis maps into.
    public let frame: PlotFrame

    /// The axis for values up to `largest` minor units: four or fewer steps of 1, 2 or 5 times a power of
    /// ten, so tick labels read as round amounts. A chart of nothing but zeros gets an axis up to 1 unit.
    public init(largest: Int64, frame: PlotFrame = .standard) {
        let target = max(largest, 1)
        // The smallest round step that covers the largest value in four steps.
        let wanted = target / 4 + (target % 4 == 0 ? 0 : 1)
        let step = AmountAxis.roundUp(wanted)
        let steps = target / step + (target % step == 0 ? 0 : 1)
        let (top, overflow) = step.multipliedReportingOverflow(by: steps)
        self.step = step
        maximum = overflow ? Int64.max : top
        self.frame = frame
    }

    /// The smallest number of the form 1, 2 or 5 times a power of ten that is at least `value` (≥ 1); the
    /// largest such Int64 when none is larger.
    public static func roundUp(_ value: Int64) -> Int64 {
        var power: Int64 = 1
        while true {
            for factor: Int64 in [1, 2, 5] {
                let (candidate, overflow) = power.multipliedReportingOverflow(by: factor)
                if overflow { return Int64.max }
                if candidate >= value { return candidate }
            }
            let (next, overflow) = power.multipliedReportingOverflow(by: 10)
            if overflow { return Int64.max }
            power = next
        }
    }

    /// Where `minorUnits` lands vertically: the plot's bottom for zero, its top for `maximum`.
    public func y(_ minorUnits: Int64) -> Double {
        frame.bottom - Double(minorUnits) / Double(maximum) * (frame.bottom - frame.top)
    }

    /// The height of a bar of `minorUnits` standing on zero.
    public func height(_ minorUnits: Int64) -> Double { frame.bottom - y(minorUnits) }

    /// The tick amounts from zero to `maximum`, in minor units.
    public var ticks: [Int64] {
        var values: [Int64] = []
        var value: Int64 = 0
        while value <= maximum {
            values.append(value)
            let (next, overflow) = value.addingReportingOverflow(step)
            if overflow { break }
            value = next
        }
        return values
    }
}

/// The horizontal axis of a chart over time: `start` (ledger milliseconds) at the plot's left edge, `end` at
/// its right edge.
public struct TimeAxis: Hashable, Sendable {
    /// The time at the left edge, in milliseconds since 1970.
    public let start: Int64
    /// The time at the right edge; later than `start`.
    public let end: Int64
    /// The frame the axis maps into.
    public let frame: PlotFrame

    /// The axis over `[start, end]`; a range of one instant is widened by a second each way, so a single
    /// point sits in the middle.
    public init(start: Int64, end: Int64, frame: PlotFrame = .standard) {
        if end > start {
            self.start = start
            self.end = end
        } else {
            self.start = start - 1000
            self.end = start + 1000
        }
        self.frame = frame
    }

    /// Where `time` lands horizontally.
    public func x(_ time: Int64) -> Double {
        frame.left + Double(time - start) / Double(end - start) * (frame.right - frame.left)
    }

    /// Evenly spaced times for labels, both ends included: `count` of them (at least 2).
    public func ticks(count: Int = 5) -> [Int64] {
        let intervals = Int64(max(count, 2) - 1)
        return (0...intervals).map { start + (end - start) / intervals * $0 }
    }
}

/// One point of a balance chart: the balance after a change, where it is drawn.
public struct ChartPoint: Hashable, Sendable {
    /// The time of the change, in ledger milliseconds.
    public let time: Int64
    /// The balance after it, in minor units.
    public let minorUnits: Int64
    /// Where the point is drawn.
    public let x: Double
    /// Where the point is drawn.
    public let y: Double
}

/// A balance over time, drawn as steps: the balance holds until the next change, where it jumps.
public struct StepChartGeometry: Hashable, Sendable {
    /// The amount axis.
    public let amounts: AmountAxis
    /// The time axis.
    public let times: TimeAxis
    /// A point at each change.
    public let points: [ChartPoint]
    /// The SVG path ("M x y H x V y …") of the steps, from the left edge at `opening` to the right edge.
    public let path: String

    /// The chart of a balance that was `opening` minor units at `start` and changed to each of `changes`
    /// (time, balance after) in order, up to `end`.
    public init(
        opening: Int64, changes: [(time: Int64, minorUnits: Int64)], start: Int64, end: Int64,
        frame: PlotFrame = .standard
    ) {
        let largest = changes.map(\.minorUnits).reduce(opening, max)
        amounts = AmountAxis(largest: largest, frame: frame)
        times = TimeAxis(start: start, end: end, frame: frame)
        points = changes.map { [amounts, times] change in
            ChartPoint(
                time: change.time, minorUnits: change.minorUnits, x: times.x(change.time),
                y: amounts.y(change.minorUnits))
        }
        var path = "M\(SVGNumber.text(times.frame.left)) \(SVGNumber.text(amounts.y(opening)))"
        for point in points { path += " H\(SVGNumber.text(point.x)) V\(SVGNumber.text(point.y))" }
        path += " H\(SVGNumber.text(times.frame.right))"
        self.path = path
    }
}

/// One bar of a budget chart: one window's spending against that window's limit.
public struct BarGeometry: Hashable, Sendable {
    /// The bar's left edge.
    public let x: Double
    /// The bar's top edge.
    public let y: Double
    /// The bar's width.
    public let width: Double
    /// The bar's height: the spending on the amount axis.
    public let height: Double
    /// The left and right ends of the window's slot, across which its limit lines are drawn.
    public let slotLeft: Double
    /// The right end of the window's slot.
    public let slotRight: Double
    /// Where the window's limit lands.
    public let limitY: Double
    /// Where 80 % of the window's limit lands: the alert line.
    public let alertY: Double
}

/// Bars side by side, one per window, on one amount axis that covers every bar and every limit.
public struct BarChartGeometry: Hashable, Sendable {
    /// The amount axis.
    public let amounts: AmountAxis
    /// One bar per window, left to right.
    public let bars: [BarGeometry]

    /// The chart of `windows` (spent, limit) in minor units, in order.
    public init(windows: [(spent: Int64, limit: Int64)], frame: PlotFrame = .standard) {
        let largest = windows.map { max($0.spent, $0.limit) }.max() ?? 0
        let amounts = AmountAxis(largest: largest, frame: frame)
        self.amounts = amounts
        let slot = (frame.right - frame.left) / Double(max(windows.count, 1))
        // A bar fills 60 % of its slot, and never more than 120 units: one window alone is not a wall.
        let width = min(slot * 0.6, 120)
        bars = windows.enumerated().map { index, window in
            let slotLeft = frame.left + slot * Double(index)
            // 4 · limit / 5, from integers: the alert line is exact in minor units, like the budget's check.
            let alert = window.limit / 5 * 4 + window.limit % 5 * 4 / 5
            return BarGeometry(
                x: slotLeft + (slot - width) / 2, y: amounts.y(window.spent), width: width,
                height: amounts.height(window.spent), slotLeft: slotLeft, slotRight: slotLeft + slot,
                limitY: amounts.y(window.limit), alertY: amounts.y(alert))
        }
    }
}

/// Numbers as SVG attributes: two decimals at most, a point as the separator whatever the locale, no
/// "-0".
public enum SVGNumber {
    /// The number as an SVG attribute value.
    public static func text(_ value: Double) -> String {
        let hundredths = (value * 100).rounded()
        if hundredths == 0 { return "0" }
        var text = String(format: "%.2f", hundredths / 100)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
