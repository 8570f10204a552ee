import SecureCrypto

/// An error from a ledger rule: an entry that may not be appended, or a chain that does not hold
/// together. Equality is by code. A failed `apply` leaves the state it was called on unchanged.
public typealias LedgerError = CodedFailure<LedgerErrorCode>

/// Stable codes for `LedgerError`: the kinds of failure.
public enum LedgerErrorCode: FailureCode, CaseNameCode {
    /// An entry's fields break the rules of its kind.
    case invalidEntry
    /// An entry's position is not the next one.
    case positionGap
    /// An entry's previous link is not the head of the chain.
    case linkMismatch
    /// An entry is older than the one before it.
    case timeWentBackwards
    /// A debit exceeds the balance.
    case insufficientFunds
    /// A credit would push a balance or a window total past Int64.max minor units.
    case overflow
    /// The signer's statement id was already recorded with the same payload.
    case duplicateStatement
    /// The signer's statement id was already recorded with a different payload.
    case conflictingStatement
    /// Conflict evidence names a statement that was never recorded, or one with the same payload.
    case noConflict
    /// A reversal names no payment out of this wallet, or one already reversed or of another amount.
    case invalidReversal
    /// A payment out exceeds its category budget without the override flag.
    case overBudget
    /// A payment out exceeds a hard-cap category budget.
    case hardCapExceeded
    /// A payment out in a budgeted category is in another currency than the budget.
    case budgetCurrencyMismatch
    /// A budget removal names a category without a budget.
    case noSuchBudget
    /// A state snapshot breaks a limit or holds duplicate keys.
    case invalidState

    /// A ledger rule the wallet broke is not one of the failures the command line names, so it exits 1.
    public var kind: FailureKind { .failure }
}
