import Foundation
import SecureCore
import SecureCrypto

/// The report as one self-contained HTML page: inline SVG charts, one style sheet, no script, nothing
/// loaded from anywhere. Its Content-Security-Policy is `default-src 'none'`, with the style sheet allowed
/// by its SHA-256 alone, so even text that slipped past the escaping could neither run nor fetch.
public enum ReportPage {
    /// The page's style sheet: layout and type only (the charts' colours are SVG attributes). It is allowed
    /// by its hash in the Content-Security-Policy; no element carries a style attribute.
    static let styleSheet = """
        :root{color-scheme:light}
        *{box-sizing:border-box}
        body{margin:0;background:#f3f5f8;color:#1c2430;font:16px/1.5 system-ui,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif}
        main{max-width:980px;margin:0 auto;padding:24px 16px 48px}
        h1{font-size:1.8rem;margin:0 0 6px}
        h2{font-size:1.25rem;margin:0 0 12px;padding-bottom:6px;border-bottom:2px solid #dbe1ea}
        h3{font-size:1.02rem;margin:18px 0 6px}
        section{background:#fff;border:1px solid #dbe1ea;border-radius:10px;padding:16px 20px;margin:18px 0}
        .verified{border-left:8px solid #15803d}
        .problems{border-left:8px solid #b91c1c;background:#fff7f6}
        .badge{display:inline-block;padding:2px 12px;border-radius:999px;font-weight:700;margin-right:8px}
        .badge.ok{background:#dcfce7;color:#14532d}
        .badge.bad{background:#fee2e2;color:#7f1d1d}
        .meta{color:#4a5568;margin:2px 0}
        dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:10px 0 0}
        dt{color:#4a5568}
        dd{margin:0;overflow-wrap:anywhere}
        figure{margin:8px 0 18px}
        .chart{overflow-x:auto}
        .chart svg{display:block;width:100%;min-width:600px;height:auto;font-family:inherit}
        figcaption{color:#4a5568;font-size:.9rem;margin-top:6px}
        .legend{list-style:none;display:flex;flex-wrap:wrap;gap:6px 18px;padding:0;margin:6px 0 0;font-size:.9rem;color:#4a5568}
        .legend svg{vertical-align:-2px;margin-right:6px}
        .table{overflow-x:auto}
        table{border-collapse:collapse;width:100%;font-size:.95rem}
        th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e5e9f0;vertical-align:top}
        th{font-size:.78rem;text-transform:uppercase;letter-spacing:.05em;color:#4a5568;white-space:nowrap}
        .amount{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
        .note{overflow-wrap:anywhere;min-width:10em}
        .id,code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.88em;overflow-wrap:anywhere}
        .date{white-space:nowrap}
        .muted{color:#6b7280}
        footer{color:#6b7280;font-size:.85rem;margin-top:24px}
        @media (max-width:640px){main{padding:12px 8px}section{padding:12px}h1{font-size:1.4rem}}
        """

    /// The Content-Security-Policy: nothing may load or run, except the one style sheet above by its hash.
    static var contentSecurityPolicy: String {
        let digest = Data(SHA256.hash(Array(styleSheet.utf8))).base64EncodedString()
        return "default-src 'none'; style-src 'sha256-\(digest)'; base-uri 'none'; form-action 'none'"
    }

    /// The whole page.
    public static func html(_ content: ReportContent) -> String {
        let dates = ReportDates(timeZone: content.timeZone)
        let title = "Wallet report \(Asset.shortID(content.walletID))"
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="\(HTMLText.escaped(contentSecurityPolicy))">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>\(HTMLText.escaped(title))</title>
            <style>\(styleSheet)</style>
            </head>
            <body>
            <main>

            """
        page += header(content, dates: dates)
        page += verification(content.verification)
        page += balances(content, dates: dates)
        page += budgets(content.budgets)
        page += payments(content.largestPayments, dates: dates)
        page += keyEvents(content.keyEvents, dates: dates)
        page += """
            <footer>Made by <code>secure report</code>. This file runs no script and loads nothing: its \
            Content-Security-Policy is <code>default-src 'none'</code>. Text that other wallets chose (notes, \
            names) is shown as text, with control characters made visible as <code>\\u{…}</code>.</footer>
            </main>
            </body>
            </html>

            """
        return page
    }

    private static func header(_ content: ReportContent, dates: ReportDates) -> String {
        // Foundation names UTC "GMT"; --utc says UTC.
        let zone = content.timeZone.identifier == "GMT" ? "UTC" : content.timeZone.identifier
        let range: String
        switch (content.range.since, content.range.until) {
        case (nil, nil): range = "all entries"
        case (let since?, nil): range = "from \(dates.dateTime(since))"
        case (nil, let until?): range = "until \(dates.dateTime(until))"
        case (let since?, let until?): range = "\(dates.dateTime(since)) to \(dates.dateTime(until))"
        }
        let word = content.isIssuer ? "outstanding" : "issued by"
        let balances =
            content.currentBalances.isEmpty
            ? "nothing yet"
            : content.currentBalances.map {
                content.isIssuer
                    ? "\(MoneyText.format($0.money)) \(word)"
                    : "\(MoneyText.format($0.money)) \(word) \(Asset.shortID($0.issuer))"
            }.joined(separator: "; ")
        return """
            <header>
            <h1>\(content.isIssuer ? "Issuer report" : "Wallet report")</h1>
            <p class="meta">Wallet <span class="id">\(content.walletID.hex)</span></p>
            <dl>
            <dt>Balance now</dt><dd>\(HTMLText.escaped(balances))</dd>
            <dt>Covers</dt><dd>\(HTMLText.escaped(range)) (\(content.entriesInRange) of \(content.entryCount) entries)</dd>
            <dt>Made</dt><dd>\(HTMLText.escaped(dates.stamp(content.generated))) (dates in \(HTMLText.escaped(zone)))</dd>
            </dl>
            </header>

            """
    }

    private static func verification(_ summary: VerificationSummary) -> String {
        var html = "<section class=\"\(summary.isValid ? "verified" : "problems")\" id=\"verification\">\n"
        html += "<h2>Ledger verification</h2>\n"
        html +=
            summary.isValid
            ? "<p><span class=\"badge ok\">Verified</span>every check of <code>secure ledger verify</code> passed.</p>\n"
            : "<p><span class=\"badge bad\">PROBLEMS</span>the ledger does not verify; the wallet refuses to spend "
                + "until it does.</p>\n"
        html += """
            <dl>
            <dt>Entries</dt><dd>\(summary.entries), each chained to the one before and replayed from the first</dd>
            <dt>Checkpoints</dt><dd>\(summary.checkpoints), each signature and state checked</dd>
            <dt>Also checked</dt><dd>the Merkle tree, every entry's signed statement, every database row, \
            the index tables against the latest checkpoint</dd>
            <dt>Anchor</dt><dd>on the \(HTMLText.escaped(summary.anchor))</dd>
            </dl>

            """
        if !summary.problems.isEmpty {
            html += "<h3>Problems</h3>\n<ul>\n"
            html += summary.problems.map { "<li>\(HTMLText.peer($0))</li>\n" }.joined()
            html += "</ul>\n<p>Restore the wallet folder from the newest backup, then run "
            html += "<code>secure ledger verify</code> again.</p>\n"
        }
        return html + "</section>\n"
    }

    private static func balances(_ content: ReportContent, dates: ReportDates) -> String {
        var html = "<section id=\"balances\">\n<h2>\(content.isIssuer ? "Outstanding" : "Balance") over time</h2>\n"
        if let problem = content.replayProblem {
            html += "<p class=\"problems\">The charts stop early: \(HTMLText.peer(problem))</p>\n"
        }
        if content.balances.isEmpty { html += "<p class=\"muted\">No balance in this range.</p>\n" }
        for line in content.balances {
            let first = line.truncatedAt ?? line.changes.first?.time ?? content.generated
            let lastChange = line.changes.last?.time ?? first
            let end = max(min(content.range.until ?? content.generated, content.generated), lastChange)
            var start = line.truncatedAt ?? content.range.since ?? first
            // With no --since, the chart starts a little before the first change, so its point is clear of
            // the axis.
            if content.range.since == nil, line.truncatedAt == nil { start = first - max((end - first) / 40, 1000) }
            let asset = "\(line.asset.currency.code) issued by \(Asset.shortID(line.asset.issuer))"
            html += "<figure>\n<h3>\(HTMLText.escaped(asset))</h3>\n<div class=\"chart\">\n"
            html += ReportCharts.balance(line, start: start, end: end, dates: dates)
            html += "</div>\n<figcaption>A point at each change (\(line.changes.count) in this range)"
            if let truncated = line.truncatedAt {
                html += "; the last \(ReportBuilder.balanceChangeCountMax) changes, from \(dates.dateTime(truncated))"
            }
            html += ". Amounts in \(line.asset.currency.code).</figcaption>\n</figure>\n"
        }
        return html + "</section>\n"
    }

    static func budgets(_ series: [BudgetSeries]) -> String {
        var html = "<section id=\"budgets\">\n<h2>Spending against budgets</h2>\n"
        if series.isEmpty {
            html += "<p class=\"muted\">No budget is set. <code>secure budget set CATEGORY LIMIT</code> adds one.</p>\n"
        }
        for budget in series {
            let word = ReportCharts.windowWord(budget.budget.window)
            let limit = MoneyText.format(budget.budget.limit)
            html += "<figure>\n<h3>\(HTMLText.peer(budget.category)): \(HTMLText.escaped(limit)) per \(word)"
            html += budget.budget.isHardCap ? " (hard cap)" : ""
            html += "</h3>\n<div class=\"chart\">\n" + ReportCharts.budget(budget) + "</div>\n"
            // A limit of zero (`budget set` refuses one now; an older ledger may hold one) puts both lines on
            // the zero axis: the legend says so rather than leave a person looking for them.
            let zero = budget.windows.first { $0.limit.minorUnits <= 0 }?.limit
            html += legend(zeroLimit: zero)
            html += "<figcaption>Spent per \(word) (windows in \(HTMLText.escaped(budget.budget.timeZoneIdentifier)))"
            if budget.windowsLeftOut > 0 { html += "; \(budget.windowsLeftOut) older windows left out" }
            html += ".</figcaption>\n</figure>\n"
        }
        return html + "</section>\n"
    }

    private static func legend(zeroLimit: Money?) -> String {
        func swatch(_ colour: String, dashed: Bool = false) -> String {
            let shape =
                dashed
                ? "<line x1=\"0\" x2=\"18\" y1=\"6\" y2=\"6\" stroke=\"\(colour)\" stroke-width=\"2\" "
                    + "stroke-dasharray=\"\(colour == ChartColours.budgetOver ? "8 4" : "3 3")\"/>"
                : "<rect width=\"12\" height=\"12\" rx=\"2\" fill=\"\(colour)\"/>"
            return "<svg width=\"18\" height=\"12\" viewBox=\"0 0 18 12\" aria-hidden=\"true\">\(shape)</svg>"
        }
        return """
            <ul class="legend">
            <li>\(swatch(ChartColours.budgetWithin))within 80 %</li>
            <li>\(swatch(ChartColours.budgetAlert))above 80 %</li>
            <li>\(swatch(ChartColours.budgetOver))over the limit</li>
            <li>\(swatch(ChartColours.budgetAlert, dashed: true))80 % of the limit</li>
            <li>\(swatch(ChartColours.budgetOver, dashed: true))the limit</li>
            \(zeroLimit.map { zeroLimitItem($0) } ?? "")</ul>

            """
    }

    private static func zeroLimitItem(_ limit: Money) -> String {
        "<li data-zero-limit=\"\">the limit is \(HTMLText.escaped(MoneyText.format(limit))) (set by an older version): "
            + "both lines lie on the zero axis, and any spending is over it</li>\n"
    }

    private static func payments(_ rows: [PaymentRow], dates: ReportDates) -> String {
        var html = "<section id=\"payments\">\n<h2>Largest payments</h2>\n"
        guard !rows.isEmpty else { return html + "<p class=\"muted\">No payments out in this range.</p>\n</section>\n" }
        html += "<div class=\"table\"><table>\n<thead><tr><th>Date</th><th>To</th><th>Category</th><th>Note</th>"
        html += "<th class=\"amount\">Amount</th></tr></thead>\n<tbody>\n"
        for row in rows {
            let to = row.counterparty.isEmpty ? "" : shortWalletID(row.counterparty)
            html += "<tr data-position=\"\(row.position)\"><td class=\"date\">"
            html += "\(HTMLText.escaped(dates.dateTime(row.time)))</td>"
            html += "<td class=\"id\">\(HTMLText.escaped(to))</td><td>\(HTMLText.peer(row.category))</td>"
            html += "<td class=\"note\">\(HTMLText.peer(row.note))</td>"
            html += "<td class=\"amount\">\(HTMLText.escaped(MoneyText.format(row.amount.money)))"
            html += row.isReversed ? " <span class=\"muted\">(reversed)</span>" : ""
            html += "</td></tr>\n"
        }
        return html + "</tbody></table></div>\n</section>\n"
    }

    private static func keyEvents(_ rows: [KeyEventRow], dates: ReportDates) -> String {
        var html = "<section id=\"key-events\">\n<h2>Key events</h2>\n"
        html += "<p class=\"meta\">The wallet's key-event log: the key each event put in force, where it came "
        html += "from, and the contact key it put in force.</p>\n<div class=\"table\"><table>\n<thead><tr><th>#</th>"
        html += "<th>Event</th><th>Date</th><th>Signing key (SHA-256)</th><th>Origin</th>"
        html += "<th>Contact key (SHA-256)</th><th>Entry</th></tr></thead>\n<tbody>\n"
        for row in rows {
            let fingerprint = String(row.keyFingerprint.prefix(16)) + "…"
            html += "<tr><td>\(row.sequence)</td><td>\(HTMLText.escaped(row.kind))</td>"
            html += "<td class=\"date\">\(HTMLText.escaped(row.time.map(dates.dateTime) ?? "unknown"))</td>"
            html += "<td class=\"id\" title=\"\(HTMLText.escaped(row.keyFingerprint))\">"
            html += "\(HTMLText.escaped(fingerprint))</td><td>\(HTMLText.escaped(row.origin))</td>"
            if let contact = row.contactKeyFingerprint {
                html += "<td class=\"id\" title=\"\(HTMLText.escaped(contact))\">"
                html += "\(HTMLText.escaped(String(contact.prefix(16)) + "…"))</td>"
            } else {
                html += "<td>none</td>"
            }
            html += "<td>\(row.ledgerPosition)</td></tr>\n"
        }
        return html + "</tbody></table></div>\n</section>\n"
    }

    /// A wallet id as people compare it: the first and last four hex digits (as `history` shows it).
    static func shortWalletID(_ bytes: [UInt8]) -> String {
        let hex = Hex.encode(bytes).uppercased()
        return hex.count <= 8 ? hex : String(hex.prefix(4)) + "…" + String(hex.suffix(4))
    }
}
