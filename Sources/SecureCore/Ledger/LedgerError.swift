import SecureCrypto

/// An error from a ledger rule: an entry that may not be appended, or a chain that does not hold
/// together. Equality is by code. A failed `apply` leaves the state it was called on unchanged.
public typealias LedgerError = CodedFailure<LedgerErrorCode>

/// Stable codes for `LedgerError`: the kinds of failure.
public enum LedgerErrorCode: String, FailureCode {
    /// An entry's fields break the rules of its kind.
    case invalidEntry = "invalid-entry"
    /// An entry's position is not the next one.
    case positionGap = "position-gap"
    /// An entry's previous link is not the head of the chain.
    case linkMismatch = "link-mismatch"
    /// An entry is older than the one before it.
    case timeWentBackwards = "time-went-backwards"
    /// A debit exceeds the balance.
    case insufficientFunds = "insufficient-funds"
    /// A credit would push a balance or a window total past Int64.max minor units.
    case overflow = "overflow"
    /// The signer's statement id was already recorded with the same payload.
    case duplicateStatement = "duplicate-statement"
    /// The signer's statement id was already recorded with a different payload.
    case conflictingStatement = "conflicting-statement"
    /// Conflict evidence names a statement that was never recorded, or one with the same payload.
    case noConflict = "no-conflict"
    /// A reversal names no payment out of this wallet, or one already reversed or of another amount.
    case invalidReversal = "invalid-reversal"
    /// A payment out exceeds its category budget without the override flag.
    case overBudget = "over-budget"
    /// A payment out exceeds a hard-cap category budget.
    case hardCapExceeded = "hard-cap-exceeded"
    /// A payment out in a budgeted category is in another currency than the budget.
    case budgetCurrencyMismatch = "budget-currency-mismatch"
    /// A budget removal names a category without a budget.
    case noSuchBudget = "no-such-budget"
    /// A state snapshot breaks a limit or holds duplicate keys.
    case invalidState = "invalid-state"

    /// A ledger rule the wallet broke is not one of the failures the command line names, so it exits 1.
    public var kind: FailureKind { .failure }
}
