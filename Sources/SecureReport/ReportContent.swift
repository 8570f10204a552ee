import Foundation
import SecureCore

/// The dates a report covers, in ledger milliseconds, both ends included; nil is open.
public struct ReportRange: Hashable, Sendable {
    /// The first millisecond shown, or nil for the ledger's start.
    public let since: Int64?
    /// The last millisecond shown, or nil for now.
    public let until: Int64?

    /// The range from `since` to `until`.
    public init(since: Int64?, until: Int64?) {
        self.since = since
        self.until = until
    }

    /// Whether `time` falls inside.
    public func contains(_ time: Int64) -> Bool {
        if let since, time < since { return false }
        if let until, time > until { return false }
        return true
    }

    /// Whether any of `[start, end)` falls inside.
    public func overlaps(start: Int64, end: Int64) -> Bool {
        if let since, end <= since { return false }
        if let until, start > until { return false }
        return true
    }
}

/// One asset's balance over the range: what it was when the range opened, then each change.
public struct BalanceSeries: Hashable, Sendable {
    /// The asset.
    public let asset: Asset
    /// The balance when the range opened (or when the first change shown was made, when older ones were left
    /// out), in minor units.
    public internal(set) var opening: Int64 = 0
    /// The time the chart starts at when older changes were left out.
    public internal(set) var truncatedAt: Int64?
    /// Each change in the range: its time and the balance after it, in minor units.
    public internal(set) var changes: [Change] = []

    /// A balance after one entry.
    public struct Change: Hashable, Sendable {
        /// When the entry was made, in ledger milliseconds.
        public let time: Int64
        /// The balance after it, in minor units.
        public let minorUnits: Int64
    }
}

/// What one budget window spent, against the limit in force.
public struct BudgetWindowSpending: Hashable, Sendable {
    /// The window.
    public let window: BudgetWindow
    /// What the ledger counts as spent in it.
    public let spent: Money
    /// The budget's limit for it.
    public let limit: Money
}

/// One budget's windows in the range, oldest first.
public struct BudgetSeries: Hashable, Sendable {
    /// The budget's category.
    public let category: String
    /// The budget in force at the end of the range (or when it was last seen).
    public let budget: Budget
    /// Its windows, oldest first.
    public let windows: [BudgetWindowSpending]
    /// How many older windows were left out.
    public let windowsLeftOut: Int
}

/// One payment out, for the table of the largest.
public struct PaymentRow: Hashable, Sendable {
    /// When it was made.
    public let time: Int64
    /// The payee's wallet id.
    public let counterparty: [UInt8]
    /// Its category.
    public let category: String
    /// Its note (text the payer typed, or a payee's request note: peer text).
    public let note: String
    /// The amount.
    public let amount: AssetAmount
    /// Its ledger position.
    public let position: UInt64
    /// Its transfer id.
    public let transferID: StatementID?
    /// Whether a later entry reversed it.
    public internal(set) var isReversed = false
}

/// One event of the wallet's key-event log.
public struct KeyEventRow: Hashable, Sendable {
    /// Its sequence number (0 is the inception).
    public let sequence: UInt64
    /// "inception", "issuer inception", "rotation" or "recovery rotation".
    public let kind: String
    /// When the ledger entry that records it was made, if known.
    public let time: Int64?
    /// The fingerprint (SHA-256 of the SubjectPublicKeyInfo) of the key it put in force, in hex.
    public let keyFingerprint: String
    /// Where the key came from, as the event records it.
    public let origin: String
    /// The ledger position of the entry that records it.
    public let ledgerPosition: UInt64
    /// The SHA-256 (hex) of the ML-KEM-1024 contact key it put in force; nil when it names none (an event
    /// written before contact keys).
    public let contactKeyFingerprint: String?

    /// A row.
    public init(
        sequence: UInt64, kind: String, time: Int64?, keyFingerprint: String, origin: String, ledgerPosition: UInt64,
        contactKeyFingerprint: String? = nil
    ) {
        self.sequence = sequence
        self.kind = kind
        self.time = time
        self.keyFingerprint = keyFingerprint
        self.origin = origin
        self.ledgerPosition = ledgerPosition
        self.contactKeyFingerprint = contactKeyFingerprint
    }
}

/// The outcome of the ledger's full verification, as `secure ledger verify` reports it.
public struct VerificationSummary: Hashable, Sendable {
    /// Entries replayed.
    public let entries: UInt64
    /// Checkpoints whose signature and state were checked.
    public let checkpoints: Int
    /// Where the anchor is kept ("token" or "file").
    public let anchor: String
    /// What failed; empty when the ledger verifies.
    public let problems: [String]

    /// A summary.
    public init(entries: UInt64, checkpoints: Int, anchor: String, problems: [String]) {
        self.entries = entries
        self.checkpoints = checkpoints
        self.anchor = anchor
        self.problems = problems
    }

    /// Whether the ledger verifies.
    public var isValid: Bool { problems.isEmpty }
}

/// Everything a report shows, gathered from the ledger by `ReportBuilder` and the wallet by the caller.
public struct ReportContent: Sendable {
    /// The wallet's id.
    public var walletID: WalletID
    /// Whether the wallet is an issuer's (its balances are what it has outstanding).
    public var isIssuer: Bool
    /// When the report was made, in ledger milliseconds.
    public var generated: Int64
    /// The time zone dates are shown in.
    public var timeZone: TimeZone
    /// The dates covered.
    public var range: ReportRange
    /// Entries in the ledger, and how many fall in the range.
    public var entryCount: UInt64
    /// Entries that fall in the range.
    public var entriesInRange: UInt64
    /// Each asset's balance over the range.
    public var balances: [BalanceSeries]
    /// Each budget's windows in the range.
    public var budgets: [BudgetSeries]
    /// The largest payments out in the range, per currency, largest first.
    public var largestPayments: [PaymentRow]
    /// The wallet's key events.
    public var keyEvents: [KeyEventRow]
    /// The ledger's verification.
    public var verification: VerificationSummary
    /// Why the replay that draws the charts stopped early, if it did.
    public var replayProblem: String?
    /// Balances now, per asset.
    public var currentBalances: [AssetAmount]

    /// The content of one report.
    public init(
        walletID: WalletID, isIssuer: Bool, generated: Int64, timeZone: TimeZone, range: ReportRange,
        entryCount: UInt64, entriesInRange: UInt64, balances: [BalanceSeries], budgets: [BudgetSeries],
        largestPayments: [PaymentRow], keyEvents: [KeyEventRow], verification: VerificationSummary,
        replayProblem: String?, currentBalances: [AssetAmount]
    ) {
        self.walletID = walletID
        self.isIssuer = isIssuer
        self.generated = generated
        self.timeZone = timeZone
        self.range = range
        self.entryCount = entryCount
        self.entriesInRange = entriesInRange
        self.balances = balances
        self.budgets = budgets
        self.largestPayments = largestPayments
        self.keyEvents = keyEvents
        self.verification = verification
        self.replayProblem = replayProblem
        self.currentBalances = currentBalances
    }
}
