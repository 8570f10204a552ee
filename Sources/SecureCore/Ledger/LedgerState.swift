import SecureCrypto

/// What the ledger's entries add up to: balances, budgets, the open budget windows' spending and the
/// statements already recorded. It is derived, never stored as truth: replaying the entries from the
/// start reproduces it exactly, and a checkpoint signs its snapshot.
///
/// `apply` checks every rule before it changes anything, so a refused entry leaves the state untouched.
public struct LedgerState: Hashable, Sendable {
    /// Entries applied so far; the next entry's position.
    public private(set) var size: UInt64 = 0
    /// h(size−1), or h(−1) (32 zero bytes) before entry 0.
    public private(set) var head = LedgerChain.genesisLink
    /// The latest entry's time; entries never go back in time.
    public private(set) var lastTime: Int64 = LedgerTime.millisecondsMin
    /// The balance per asset, for every asset that has ever been credited. In an issuer's ledger these are
    /// the outstanding totals of what it minted, less what was paid back to it: liabilities, never money
    /// it can spend.
    public private(set) var balances: [Asset: Money] = [:]
    /// The wallet whose ledger this is (the digest of entry 0's inception event), once entry 0 is applied.
    public private(set) var owner: WalletID?
    /// Whether the wallet was incepted as an issuer: its ledger mints and redeems and holds nothing else.
    public private(set) var isIssuer = false
    /// The budget per category.
    public private(set) var budgets: [String: Budget] = [:]
    /// Spending in the most recent window of each budgeted category that has seen a payment.
    public private(set) var windowTotals: [String: WindowTotal] = [:]
    /// The settings the `settings` entries so far add up to.
    public private(set) var settings = WalletSettings()
    /// Every recorded statement by (signer, id).
    private var statements: [StatementKey: RecordedStatement] = [:]
    /// The position of each `conflictingStatement` entry by the second payload it keeps, so one conflict is
    /// recorded once: the same second payload again is a duplicate of that entry.
    private var conflicts: [StatementReference: UInt64] = [:]
    /// This wallet's payments out by transfer id, for reversals.
    private var paymentsOut: [StatementID: PaymentOut] = [:]
    /// Where statements recorded before a resumption point are looked up; nil for a replayed state.
    private var index = IndexReference(nil)
    /// The clearing's replay (docs/CLEARING.md §2.1): entries that reach it opaque only advance position and
    /// chain (`applyOpaque`), budget and settings entries change nothing, and every money rule still holds.
    public private(set) var isMoneyOnly = false

    /// A wallet never has more budgets than a person manages by hand; the bound keeps checkpoints small.
    public static let budgetCountMax = 256

    /// The state before entry 0.
    public init() {}

    /// An empty state of a known wallet, which statement checks take for "nothing recorded yet" while they
    /// still need to know whose ledger it is.
    public init(checkingFor owner: WalletID, isIssuer: Bool) {
        self.owner = owner
        self.isIssuer = isIssuer
        if isIssuer { settings = settings.issuers() }
    }

    /// The state at a signed checkpoint, without replaying what came before: balances and window totals
    /// from the checkpoint's snapshot, budgets and the last entry's time from the store, and statements
    /// recorded before the checkpoint from `index`. A full verification replays instead and must arrive
    /// at the same snapshot.
    public init(
        resumingAt checkpoint: Checkpoint, isIssuer: Bool, budgets: [Budget],
        settings: WalletSettings = WalletSettings(), lastTime: Int64, index: StatementIndex
    ) {
        size = checkpoint.size
        self.settings = isIssuer ? settings.issuers() : settings
        head = checkpoint.head
        owner = checkpoint.walletID
        self.isIssuer = isIssuer
        self.lastTime = lastTime
        for balance in checkpoint.snapshot.balances { balances[balance.asset] = balance.money }
        for budget in budgets { self.budgets[budget.category] = budget }
        for total in checkpoint.snapshot.windowTotals { windowTotals[total.category] = total }
        self.index = IndexReference(index)
    }

    /// The money-only state before entry 0: the clearing's replay of a wallet whose budgets, settings and
    /// other issuers' money it never sees (docs/CLEARING.md §2.1).
    public static func moneyOnly() -> LedgerState {
        var state = LedgerState()
        state.isMoneyOnly = true
        return state
    }

    /// Money-only mode: an entry seen only as (position, id, δ) advances the position and the chain
    /// (h(n) = SHA-256(τ ‖ h(n−1) ‖ n ‖ δ ‖ id)) and nothing else. Throws when it is not the next position.
    public mutating func applyOpaque(position: UInt64, id: StatementID, digest: Digest32) throws {
        precondition(isMoneyOnly, "only a money-only state takes opaque entries")
        guard position == size else {
            throw LedgerError(.positionGap, "entry \(position) cannot follow \(size) entries")
        }
        head = LedgerChain.link(previous: head, position: position, entryDigest: digest, id: id)
        size += 1
    }

    /// The state after `entries`, applied in order from position 0.
    public static func replay(_ entries: some Sequence<LedgerEntry>) throws -> LedgerState {
        var state = LedgerState()
        for entry in entries { try state.apply(entry) }
        return state
    }

    /// The balance of `asset`, zero when nothing was ever credited in it.
    public func balance(_ asset: Asset) -> Money { balances[asset] ?? .zero(asset.currency) }

    /// Minor units of `currency` held over every issuer's asset: what the simulator and benchmarks count
    /// money by. Each balance is at most Int64.max; their sum over issuers is not a balance and may wrap.
    public func minorUnitsHeld(_ currency: Currency) -> Int64 {
        balances.filter { $0.key.currency == currency }.values.reduce(Int64(0)) { $0 &+ $1.minorUnits }
    }

    /// The assets held in `currency` with a positive balance, in asset order.
    public func assets(in currency: Currency) -> [Asset] {
        balances.filter { $0.key.currency == currency && !$0.value.isZero }.keys.sorted()
    }

    /// Whether crediting `amount` keeps the balance within the largest amount a wallet can hold: the check
    /// a statement makes before it becomes a credit that `apply` would refuse.
    public func canCredit(_ amount: AssetAmount) -> Bool { (try? credited(amount)) != nil }

    /// Whether a statement is new, a re-delivery of one already recorded, or a conflicting payload under
    /// a recorded id. The wallet asks before it builds an entry; a duplicate returns the original entry.
    /// A conflicting payload already kept by a `conflictingStatement` entry is a duplicate of that entry:
    /// evidence of one conflict is recorded once, however often it is delivered.
    public func lookup(_ statement: StatementReference) -> StatementLookup {
        guard let recorded = statements[statement.key] ?? index.recorded(statement) else { return .new }
        if recorded.payloadDigest == statement.payloadDigest { return .duplicate(position: recorded.position) }
        if let kept = conflicts[statement] ?? index.conflict(statement) { return .duplicate(position: kept) }
        return .conflict(position: recorded.position)
    }

    /// Whether this wallet's payment out with `transferID` was reversed.
    public func isReversed(transferID: TransferID) -> Bool { paymentOut(transferID)?.isReversed ?? false }

    /// Whether this wallet's payment out with `transferID` was confirmed by a receipt.
    public func isConfirmed(transferID: TransferID) -> Bool { paymentOut(transferID)?.isConfirmed ?? false }

    private func paymentOut(_ transferID: TransferID) -> PaymentOut? {
        paymentsOut[StatementID(transferID)] ?? index.paymentOut(transferID: StatementID(transferID))
    }

    /// The budget verdict for paying `payment` in `category` at `time`, or nil when the category has no
    /// budget. The same check `apply` enforces for payments out.
    public func budgetVerdict(category: String, payment: Money, time: Int64) throws -> BudgetVerdict? {
        // Budgets count spending per currency, whatever the issuer.
        guard let budget = budgets[category] else { return nil }
        let (_, spent) = try openWindow(budget, time: time)
        return try budget.verdict(spent: spent, payment: payment)
    }

    /// Applies one entry, or throws and changes nothing.
    public mutating func apply(_ entry: LedgerEntry) throws {
        try checkSequence(entry)
        let effect = try effect(of: entry)
        // Nothing below throws: the entry is accepted.
        if let (asset, balance) = effect.balance { balances[asset] = balance }
        if let (owner, isIssuer) = effect.inception {
            self.owner = owner
            self.isIssuer = isIssuer
            if isIssuer { settings = settings.issuers() }
        }
        if let total = effect.windowTotal { windowTotals[total.category] = total }
        if let (category, budget) = effect.budget {
            budgets[category] = budget
            if effect.resetsWindow { windowTotals[category] = nil }
        }
        if let statement = entry.statement, effect.recordsStatement {
            statements[statement.key] = RecordedStatement(
                payloadDigest: statement.payloadDigest, position: entry.position)
        }
        if let statement = entry.statement, effect.recordsConflict { conflicts[statement] = entry.position }
        if let (id, payment) = effect.paymentOut { paymentsOut[id] = payment }
        if let settings = effect.settings { self.settings = settings }
        size += 1
        head = entry.link
        lastTime = entry.time
    }

    /// The state with one more entry applied.
    public func applying(_ entry: LedgerEntry) throws -> LedgerState {
        var next = self
        try next.apply(entry)
        return next
    }

    private func checkSequence(_ entry: LedgerEntry) throws {
        guard entry.position == size else {
            throw LedgerError(.positionGap, "entry \(entry.position) cannot follow \(size) entries")
        }
        guard entry.previousLink == head else {
            throw LedgerError(.linkMismatch, "entry \(entry.position) does not link to the head of the chain")
        }
        guard entry.time >= lastTime else {
            throw LedgerError(.timeWentBackwards, "entry \(entry.position) is dated before the entry it follows")
        }
    }

    private func effect(of entry: LedgerEntry) throws -> Effect {
        try checkRole(entry)
        switch entry.kind {
        case .deposit, .paymentIn, .mint: return try credit(entry)
        case .paymentOut: return try debit(entry)
        case .redemption: return try redemption(entry)
        case .reversal: return try reversal(entry)
        case .confirmation: return try confirmation(entry)
        case .budgetChange:
            // Money-only: the clearing never sees budgets, so no budget rule is applied (docs/CLEARING.md §2.1).
            if isMoneyOnly { return Effect() }
            return try budgetChange(entry)
        case .statementRefused:
            try requireNew(entry)
            return Effect(recordsStatement: true)
        case .conflictingStatement:
            // Valid entries of this kind always name a statement.
            let statement = entry.statement!
            switch lookup(statement) {
            case .conflict: return Effect(recordsConflict: true)
            case .duplicate(let position) where (conflicts[statement] ?? index.conflict(statement)) == position:
                throw LedgerError(
                    .duplicateStatement,
                    "entry \(entry.position) records again the conflict that entry \(position) keeps; "
                        + "one conflict is recorded once")
            case .duplicate, .new:
                throw LedgerError(
                    .noConflict,
                    "entry \(entry.position) records a conflict with no recorded statement "
                        + "under that id and another payload")
            }
        case .keyEvent:
            guard entry.position == 0 else { return Effect() }
            // A wallet's entry 0 is its inception (the wallet checks it against its id when it opens); a
            // payload that is none leaves the ledger an ordinary wallet's of unknown owner, which never mints.
            guard let signed = try? SignedKeyEvent.decode(entry.payload), signed.event.kind.isInception else {
                return Effect()
            }
            return Effect(inception: (WalletID(inception: signed.event), signed.event.kind == .issuerInception))
        case .rollbackAccepted: return Effect()
        case .settings:
            if isMoneyOnly { return Effect() }
            return Effect(settings: try settings.applying(try SettingsChange.decode(payload: entry.payload)))
        }
    }

    /// An issuer's ledger mints and redeems its own asset and moves no money otherwise; any other wallet's
    /// ledger never mints or redeems. Entry 0 decides which the ledger is.
    private func checkRole(_ entry: LedgerEntry) throws {
        switch entry.kind {
        case .mint, .redemption:
            guard isIssuer else {
                throw LedgerError(
                    .invalidEntry, "entry \(entry.position) (\(entry.kind)) belongs only in an issuer's ledger")
            }
            guard entry.amount?.issuer == owner else {
                throw LedgerError(
                    .invalidEntry, "entry \(entry.position) (\(entry.kind)) moves an asset of another issuer")
            }
        case .deposit, .paymentIn, .paymentOut, .reversal, .confirmation:
            guard !isIssuer else {
                throw LedgerError(
                    .invalidEntry,
                    "entry \(entry.position) (\(entry.kind)) moves money in an issuer's ledger, which only mints "
                        + "and redeems")
            }
        case .budgetChange, .keyEvent, .rollbackAccepted, .statementRefused, .conflictingStatement, .settings: break
        }
    }

    /// Money of this issuer's asset paid back to it: the outstanding total shrinks, and never below zero.
    private func redemption(_ entry: LedgerEntry) throws -> Effect {
        try requireNew(entry)
        let amount = entry.amount!
        let outstanding = balance(amount.asset)
        guard amount.money <= outstanding else {
            throw LedgerError(
                .insufficientFunds, "redeeming \(amount) exceeds the \(outstanding) outstanding")
        }
        return Effect(balance: (amount.asset, try! outstanding.subtracting(amount.money)), recordsStatement: true)
    }

    private func requireNew(_ entry: LedgerEntry) throws {
        switch lookup(entry.statement!) {
        case .new: return
        case .duplicate(let position):
            throw LedgerError(
                .duplicateStatement, "entry \(entry.position) records a statement already recorded by entry \(position)"
            )
        case .conflict(let position):
            throw LedgerError(
                .conflictingStatement,
                "entry \(entry.position) reuses the id of entry \(position)'s statement "
                    + "with another payload")
        }
    }

    private func credited(_ amount: AssetAmount) throws -> (Asset, Money) {
        guard balances[amount.asset] != nil || balances.count < LedgerSnapshot.balanceCountMax else {
            throw LedgerError(
                .overflow, "crediting \(amount) would make more than \(LedgerSnapshot.balanceCountMax) assets")
        }
        do {
            return (amount.asset, try balance(amount.asset).adding(amount.money))
        } catch {
            throw LedgerError(.overflow, "crediting \(amount) would exceed the largest balance this wallet can hold")
        }
    }

    private func credit(_ entry: LedgerEntry) throws -> Effect {
        try requireNew(entry)
        return Effect(balance: try credited(entry.amount!), recordsStatement: true)
    }

    private func debit(_ entry: LedgerEntry) throws -> Effect {
        try requireNew(entry)
        let amount = entry.amount!
        let balance = balance(amount.asset)
        guard amount.money <= balance else {
            throw LedgerError(.insufficientFunds, "paying \(amount) needs more than the balance of \(balance)")
        }
        var windowTotal: WindowTotal?
        if let budget = budgets[entry.category] {
            windowTotal = try spend(amount.money, under: budget, entry: entry)
        }
        // amount ≤ balance, so the subtraction cannot fail.
        let newBalance = try! balance.subtracting(amount.money)
        let payment = PaymentOut(amount: amount, position: entry.position, isReversed: false, isConfirmed: false)
        return Effect(
            balance: (amount.asset, newBalance), windowTotal: windowTotal, recordsStatement: true,
            paymentOut: (entry.statement!.id, payment))
    }

    /// Enforces the budget verdict that was shown before signing and returns the window's new total.
    private func spend(_ amount: Money, under budget: Budget, entry: LedgerEntry) throws -> WindowTotal {
        let (window, spent) = try openWindow(budget, time: entry.time)
        let verdict: BudgetVerdict
        do {
            verdict = try budget.verdict(spent: spent, payment: amount)
        } catch {
            throw LedgerError(
                .budgetCurrencyMismatch,
                "entry \(entry.position) pays \(amount.currency) in the "
                    + "\(budget.category) budget, which counts \(budget.limit.currency)")
        }
        switch verdict {
        case .ok, .alert: break
        case .overBudget:
            guard entry.flags.contains(.budgetOverride) else {
                throw LedgerError(
                    .overBudget, "entry \(entry.position) exceeds the \(budget.category) budget without an override")
            }
        case .refusedByHardCap:
            throw LedgerError(
                .hardCapExceeded, "entry \(entry.position) exceeds the hard cap of the \(budget.category) budget")
        }
        // spent + amount ≤ Int64.max was not checked by the verdict when overridden.
        guard let total = try? spent.adding(amount) else {
            throw LedgerError(.overflow, "the \(budget.category) window total would overflow")
        }
        return WindowTotal(category: budget.category, window: window, spent: total)
    }

    /// The window containing `time` and what was spent in it so far.
    private func openWindow(_ budget: Budget, time: Int64) throws -> (BudgetWindow, Money) {
        if let total = windowTotals[budget.category], total.window.contains(time) { return (total.window, total.spent) }
        return (try budget.window(containing: time), .zero(budget.limit.currency))
    }

    private func reversal(_ entry: LedgerEntry) throws -> Effect {
        let statement = entry.statement!
        let amount = entry.amount!
        guard let payment = paymentsOut[statement.id] ?? index.paymentOut(transferID: statement.id),
            !payment.isReversed, payment.amount == amount
        else {
            throw LedgerError(
                .invalidReversal,
                "entry \(entry.position) reverses no unreversed payment out of \(amount) "
                    + "with transfer id \(statement.id)")
        }
        guard !payment.isConfirmed else {
            throw LedgerError(
                .invalidReversal,
                "entry \(entry.position) reverses payment \(statement.id), which the payee's receipt confirmed")
        }
        try requireNew(entry)
        let reversed = PaymentOut(
            amount: payment.amount, position: payment.position, isReversed: true, isConfirmed: false)
        return Effect(balance: try credited(amount), recordsStatement: true, paymentOut: (statement.id, reversed))
    }

    /// A receipt confirms one payment out that is neither reversed nor confirmed yet.
    private func confirmation(_ entry: LedgerEntry) throws -> Effect {
        let statement = entry.statement!
        guard let payment = paymentsOut[statement.id] ?? index.paymentOut(transferID: statement.id),
            !payment.isReversed, !payment.isConfirmed
        else {
            throw LedgerError(
                .invalidReversal,
                "entry \(entry.position) confirms no open payment out with transfer id \(statement.id)")
        }
        try requireNew(entry)
        let confirmed = PaymentOut(
            amount: payment.amount, position: payment.position, isReversed: false, isConfirmed: true)
        return Effect(recordsStatement: true, paymentOut: (statement.id, confirmed))
    }

    private func budgetChange(_ entry: LedgerEntry) throws -> Effect {
        switch try BudgetChange.decode(payload: entry.payload, category: entry.category) {
        case .set(let budget):
            let old = budgets[budget.category]
            guard old != nil || budgets.count < LedgerState.budgetCountMax else {
                throw LedgerError(
                    .invalidEntry, "entry \(entry.position) would exceed \(LedgerState.budgetCountMax) budgets")
            }
            // A new limit keeps the window's spending; a new window shape, zone or currency starts afresh.
            let keepsWindow =
                old.map {
                    $0.window == budget.window && $0.timeZoneIdentifier == budget.timeZoneIdentifier
                        && $0.limit.currency == budget.limit.currency
                } ?? false
            return Effect(budget: (budget.category, budget), resetsWindow: !keepsWindow)
        case .remove(let category):
            guard budgets[category] != nil else {
                throw LedgerError(
                    .noSuchBudget, "entry \(entry.position) removes the \(category) budget, which does not exist")
            }
            return Effect(budget: (category, nil), resetsWindow: true)
        }
    }
}

/// Spending in one budget window.
public struct WindowTotal: Hashable, Sendable {
    /// The budgeted category.
    public let category: String
    /// The window.
    public let window: BudgetWindow
    /// Spent in the window so far.
    public let spent: Money
}

/// Whether a statement was seen before. See `LedgerState.lookup(_:)`.
public enum StatementLookup: Hashable, Sendable {
    /// Never recorded.
    case new
    /// Recorded with the same payload by the entry at `position`.
    case duplicate(position: UInt64)
    /// Recorded with another payload by the entry at `position`.
    case conflict(position: UInt64)
}

/// Statements recorded before the point a state was resumed at, as the store knows them.
public protocol StatementIndex: AnyObject, Sendable {
    /// The payload digest and position recorded for (signer, id), if any.
    func recordedStatement(signer: Digest32, id: StatementID) -> (payloadDigest: Digest32, position: UInt64)?
    /// The position of the `conflictingStatement` entry that keeps exactly this statement, if any.
    func recordedConflict(_ statement: StatementReference) -> UInt64?
    /// This wallet's payment out with a transfer id: its amount, position, and whether a reversal or a
    /// confirmation followed.
    func paymentOut(transferID: StatementID) -> (
        amount: AssetAmount, position: UInt64, isReversed: Bool, isConfirmed: Bool
    )?
}

/// Holds the index without taking part in equality: two states are equal by what they contain.
private struct IndexReference: Hashable, @unchecked Sendable {
    let index: StatementIndex?

    init(_ index: StatementIndex?) { self.index = index }

    static func == (lhs: IndexReference, rhs: IndexReference) -> Bool { true }
    func hash(into hasher: inout Hasher) {}

    func recorded(_ statement: StatementReference) -> RecordedStatement? {
        index?.recordedStatement(signer: statement.signer, id: statement.id).map {
            RecordedStatement(payloadDigest: $0.payloadDigest, position: $0.position)
        }
    }

    func conflict(_ statement: StatementReference) -> UInt64? { index?.recordedConflict(statement) }

    func paymentOut(transferID: StatementID) -> PaymentOut? {
        index?.paymentOut(transferID: transferID).map {
            PaymentOut(amount: $0.amount, position: $0.position, isReversed: $0.isReversed, isConfirmed: $0.isConfirmed)
        }
    }
}

private struct RecordedStatement: Hashable, Sendable {
    let payloadDigest: Digest32
    let position: UInt64
}

private struct PaymentOut: Hashable, Sendable {
    let amount: AssetAmount
    let position: UInt64
    let isReversed: Bool
    let isConfirmed: Bool
}

/// What an accepted entry changes, computed before anything is changed.
private struct Effect {
    var balance: (Asset, Money)?
    var inception: (WalletID, Bool)?
    var windowTotal: WindowTotal?
    var budget: (String, Budget?)?
    var resetsWindow = false
    var recordsStatement = false
    var recordsConflict = false
    var paymentOut: (StatementID, PaymentOut)?
    var settings: WalletSettings?
}

extension LedgerState {
    /// The encoding version of a money-only state.
    public static let moneyOnlyEncodingVersion: UInt8 = 1

    /// A money-only state as the clearing stores it between syncs (`WalletSyncState`): version u8 (1) ‖ size
    /// u64 ‖ head 32 ‖ last time i64 ‖ owner flag u8 (+ 32) ‖ issuer flag u8 ‖ u16 balances (asset amount) ‖
    /// u32 statements (signer 32 ‖ id 16 ‖ payload digest 32 ‖ position u64) ‖ u32 conflicts (reference 80 ‖
    /// position u64) ‖ u32 payments out (id 16 ‖ asset amount ‖ position u64 ‖ flags u8: 1 reversed, 2
    /// confirmed). Lists are sorted, so equal states encode equally. Budgets and settings are never part of it.
    public var moneyOnlyEncoded: [UInt8] {
        precondition(isMoneyOnly && index.index == nil, "only a replayed money-only state is stored")
        var writer = ByteWriter()
        writer.write(Self.moneyOnlyEncodingVersion)
        writer.write(size)
        writer.write(head)
        writer.write(lastTime)
        writer.write(UInt8(owner == nil ? 0 : 1))
        if let owner { writer.write(owner) }
        writer.write(UInt8(isIssuer ? 1 : 0))
        writer.write(UInt16(balances.count))
        // Each entry records at most one statement, one conflict or one payment out: positions order them.
        for (asset, money) in balances.sorted(by: { $0.key < $1.key }) {
            AssetAmount(issuer: asset.issuer, money: money).encode(into: &writer)
        }
        writer.write(UInt32(statements.count))
        for (key, recorded) in statements.sorted(by: { $0.value.position < $1.value.position }) {
            writer.write(key.signer)
            writer.write(key.id)
            writer.write(recorded.payloadDigest)
            writer.write(recorded.position)
        }
        writer.write(UInt32(conflicts.count))
        for (reference, position) in conflicts.sorted(by: { $0.value < $1.value }) {
            writer.write(reference.signer)
            writer.write(reference.id)
            writer.write(reference.payloadDigest)
            writer.write(position)
        }
        writer.write(UInt32(paymentsOut.count))
        for (id, payment) in paymentsOut.sorted(by: { $0.value.position < $1.value.position }) {
            writer.write(id)
            payment.amount.encode(into: &writer)
            writer.write(payment.position)
            writer.write(UInt8((payment.isReversed ? 1 : 0) | (payment.isConfirmed ? 2 : 0)))
        }
        return writer.bytes
    }

    /// Decodes `moneyOnlyEncoded` at the reader: nil when short, throws when malformed.
    static func decodeMoneyOnly(from reader: inout ByteReader) throws -> LedgerState? {
        guard try reader.readVersion(moneyOnlyEncodingVersion, of: "money-only ledger state") else { return nil }
        var state = LedgerState.moneyOnly()
        guard let size = reader.readUInt64(), let head = reader.read(Digest32.self), let time = reader.readInt64(),
            let ownerFlag = reader.readUInt8()
        else { return nil }
        state.size = size
        state.head = head
        state.lastTime = time
        guard ownerFlag <= 1 else { throw FormatError(.invalidValue, "an owner flag is 0 or 1") }
        if ownerFlag == 1 {
            guard let owner = reader.read(WalletID.self) else { return nil }
            state.owner = owner
        }
        guard let issuerFlag = reader.readUInt8(), let balanceCount = reader.readUInt16() else { return nil }
        guard issuerFlag <= 1 else { throw FormatError(.invalidValue, "an issuer flag is 0 or 1") }
        state.isIssuer = issuerFlag == 1
        if state.isIssuer { state.settings = state.settings.issuers() }
        guard Int(balanceCount) <= LedgerSnapshot.balanceCountMax else {
            throw FormatError(.fieldTooLong, "more than \(LedgerSnapshot.balanceCountMax) balances")
        }
        for _ in 0..<balanceCount {
            guard let amount = try AssetAmount.decode(from: &reader) else { return nil }
            guard state.balances.updateValue(amount.money, forKey: amount.asset) == nil, amount.money.minorUnits >= 0
            else { throw FormatError(.invalidValue, "a balance is repeated or negative") }
        }
        guard let statementCount = try readCount(&reader, max: size) else { return nil }
        for _ in 0..<statementCount {
            guard let signer = reader.read(Digest32.self), let id = reader.read(StatementID.self),
                let digest = reader.read(Digest32.self), let position = reader.readUInt64()
            else { return nil }
            state.statements[StatementKey(signer: signer, id: id)] = RecordedStatement(
                payloadDigest: digest, position: position)
        }
        guard let conflictCount = try readCount(&reader, max: size) else { return nil }
        for _ in 0..<conflictCount {
            guard let signer = reader.read(Digest32.self), let id = reader.read(StatementID.self),
                let digest = reader.read(Digest32.self), let position = reader.readUInt64()
            else { return nil }
            state.conflicts[StatementReference(signer: signer, id: id, payloadDigest: digest)] = position
        }
        guard let paymentCount = try readCount(&reader, max: size) else { return nil }
        for _ in 0..<paymentCount {
            guard let id = reader.read(StatementID.self), let amount = try AssetAmount.decode(from: &reader),
                let position = reader.readUInt64(), let flags = reader.readUInt8()
            else { return nil }
            guard flags <= 2 else {
                throw FormatError(.invalidValue, "a payment out is reversed or confirmed, not both")
            }
            state.paymentsOut[id] = PaymentOut(
                amount: amount, position: position, isReversed: flags & 1 != 0, isConfirmed: flags & 2 != 0)
        }
        return state
    }

    private static func readCount(_ reader: inout ByteReader, max: UInt64) throws -> UInt32? {
        guard let count = reader.readUInt32() else { return nil }
        // Each record comes from one entry, so there are never more than the state's size.
        guard UInt64(count) <= max else { throw FormatError(.invalidValue, "more records than entries") }
        return count
    }
}
