import SecureCore
import SecureCrypto
import Testing

/// Every stable code of SecureCrypto and SecureCore, pinned to the text it had when the enums still spelled
/// each text out (`case invalidEntry = "invalid-entry"`): the texts are printed in `--json` output and named in
/// the docs, so deriving them from the case names must not change one.
@Suite("Stable codes")
struct StableCodeTests {
    /// Checks that the enum's cases, in order, have exactly the pinned texts, and that each text names its case.
    func expectCodes<Code: CaseNameCode>(_ pinned: [(Code, String)], sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(Code.allCases.map(\.rawValue) == pinned.map(\.1), sourceLocation: sourceLocation)
        for (code, text) in pinned {
            #expect(code.rawValue == text, sourceLocation: sourceLocation)
            #expect(Code(rawValue: text) == code, "\(text)", sourceLocation: sourceLocation)
        }
        #expect(Code(rawValue: "no-such-code") == nil, sourceLocation: sourceLocation)
    }

    @Test("the crypto and format codes keep their texts")
    func cryptoCodes() {
        expectCodes([
            (CryptoErrorCode.openSSL, "openssl"), (.invalidKey, "invalid-key"),
            (.invalidSignature, "invalid-signature"),
            (.invalidLength, "invalid-length"), (.invalidEncoding, "invalid-encoding"),
            (.authenticationFailed, "authentication-failed"), (.randomFailed, "random-failed"),
            (.invalidCiphertext, "invalid-ciphertext"),
        ])
        expectCodes([
            (FormatErrorCode.unsupportedVersion, "unsupported-version"), (.fieldTooLong, "field-too-long"),
            (.invalidValue, "invalid-value"), (.trailingBytes, "trailing-bytes"), (.notCanonical, "not-canonical"),
        ])
    }

    @Test("the ledger codes keep their texts")
    func ledgerCodes() {
        expectCodes([
            (LedgerErrorCode.invalidEntry, "invalid-entry"), (.positionGap, "position-gap"),
            (.linkMismatch, "link-mismatch"), (.timeWentBackwards, "time-went-backwards"),
            (.insufficientFunds, "insufficient-funds"), (.overflow, "overflow"),
            (.duplicateStatement, "duplicate-statement"), (.conflictingStatement, "conflicting-statement"),
            (.noConflict, "no-conflict"), (.invalidReversal, "invalid-reversal"), (.overBudget, "over-budget"),
            (.hardCapExceeded, "hard-cap-exceeded"), (.budgetCurrencyMismatch, "budget-currency-mismatch"),
            (.noSuchBudget, "no-such-budget"), (.invalidState, "invalid-state"),
        ])
        expectCodes([
            (ForkVerdict.NotProvenReason.differentWallets, "different-wallets"), (.badSignature, "bad-signature"),
            (.sizesDiffer, "sizes-differ"), (.noConflict, "no-conflict"), (.indexOutOfRange, "index-out-of-range"),
            (.proofInvalid, "proof-invalid"), (.wrongLog, "wrong-log"), (.keyNotInForce, "key-not-in-force"),
            (.claimMissing, "claim-missing"), (.notCommitted, "not-committed"), (.missingSource, "missing-source"),
        ])
    }

    @Test("the money, budget and ranging codes keep their texts")
    func moneyCodes() {
        expectCodes([
            (MoneyErrorCode.empty, "empty"), (.layout, "layout"), (.negative, "negative"),
            (.leadingPlus, "leading-plus"), (.exponent, "exponent"), (.notANumber, "not-a-number"),
            (.malformedAmount, "malformed-amount"), (.tooManyDecimals, "too-many-decimals"), (.overflow, "overflow"),
            (.missingCurrency, "missing-currency"), (.malformedCurrency, "malformed-currency"),
            (.unknownCurrency, "unknown-currency"), (.currencyMismatch, "currency-mismatch"),
            (.negativeResult, "negative-result"),
        ])
        expectCodes([
            (BudgetErrorCode.invalidCategory, "invalid-category"), (.unknownTimeZone, "unknown-time-zone"),
            (.timeOutOfRange, "time-out-of-range"), (.currencyMismatch, "currency-mismatch"),
        ])
        expectCodes([
            (RangingErrorCode.tooFewSamples, "too-few-samples"), (.tooManySamples, "too-many-samples"),
            (.spreadTooWide, "spread-too-wide"), (.readingOutOfRange, "reading-out-of-range"),
            (.malformedLine, "malformed-line"),
        ])
    }

    @Test("a code's error hashes and compares by code")
    func hashing() {
        let errors: Set<LedgerError> = [
            LedgerError(.overflow, "a"), LedgerError(.overflow, "b"), LedgerError(.overBudget, "c"),
        ]
        #expect(errors.count == 2)
    }
}
