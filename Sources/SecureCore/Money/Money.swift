import SecureCrypto

/// A non-negative amount: a count of minor units of one currency. There is no floating point here and
/// no trapping arithmetic: every operation that could overflow or go below zero throws instead.
///
/// Amounts are never negative because direction lives in the ledger entry's kind (a payment out is a
/// debit of a positive amount), which keeps "a balance is never negative" a property of the type.
public struct Money: Hashable, Sendable, CustomStringConvertible {
    /// The count of minor units (cents for EUR, yen for JPY); always ≥ 0.
    public let minorUnits: Int64
    /// The currency, whose scale says where the decimal point goes.
    public let currency: Currency

    /// Makes an amount; a negative count is refused.
    public init(minorUnits: Int64, currency: Currency) throws {
        guard minorUnits >= 0 else {
            throw MoneyError(.negative, "an amount cannot be negative (got \(minorUnits) minor units of \(currency))")
        }
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// Zero in a currency.
    public static func zero(_ currency: Currency) -> Money {
        // Zero is never negative; the initializer cannot fail.
        try! Money(minorUnits: 0, currency: currency)
    }

    /// Whether the amount is zero.
    public var isZero: Bool { minorUnits == 0 }

    /// The amount in the strict text format, "4.50 EUR".
    public var description: String { MoneyText.format(self) }

    /// The sum, or an error on a currency mismatch or overflow.
    public func adding(_ other: Money) throws -> Money {
        try requireSameCurrency(other, "add")
        let (sum, overflow) = minorUnits.addingReportingOverflow(other.minorUnits)
        guard !overflow else {
            throw MoneyError(.overflow, "\(self) + \(other) exceeds the largest amount this wallet can hold")
        }
        return try Money(minorUnits: sum, currency: currency)
    }

    /// The difference, or an error on a currency mismatch or when `other` is larger.
    public func subtracting(_ other: Money) throws -> Money {
        try requireSameCurrency(other, "subtract")
        guard other.minorUnits <= minorUnits else {
            throw MoneyError(.negativeResult, "\(self) − \(other) would be negative")
        }
        return try Money(minorUnits: minorUnits - other.minorUnits, currency: currency)
    }

    /// The amount times a non-negative factor, or an error on overflow.
    public func multiplied(by factor: Int64) throws -> Money {
        guard factor >= 0 else { throw MoneyError(.negative, "an amount cannot be multiplied by a negative factor") }
        let (product, overflow) = minorUnits.multipliedReportingOverflow(by: factor)
        guard !overflow else {
            throw MoneyError(.overflow, "\(self) × \(factor) exceeds the largest amount this wallet can hold")
        }
        return try Money(minorUnits: product, currency: currency)
    }

    private func requireSameCurrency(_ other: Money, _ verb: String) throws {
        guard currency == other.currency else {
            throw MoneyError(.currencyMismatch, "cannot \(verb) \(other.currency) and \(currency) amounts")
        }
    }
}

extension Money: Comparable {
    /// Orders amounts of one currency; comparing two currencies is our bug, not the user's.
    public static func < (lhs: Money, rhs: Money) -> Bool {
        precondition(lhs.currency == rhs.currency, "compared \(lhs.currency) with \(rhs.currency)")
        return lhs.minorUnits < rhs.minorUnits
    }
}

/// An error in an amount: its text, its arithmetic or its currency. Equality is by code.
public typealias MoneyError = CodedFailure<MoneyErrorCode>

/// Stable codes for `MoneyError`: the kinds of failure.
public enum MoneyErrorCode: FailureCode, CaseNameCode {
    case empty
    case layout
    case negative
    case leadingPlus
    case exponent
    case notANumber
    case malformedAmount
    case tooManyDecimals
    case overflow
    case missingCurrency
    case malformedCurrency
    case unknownCurrency
    case currencyMismatch
    case negativeResult

    /// Amounts come from the user's arguments, so a bad one is a usage error.
    public var kind: FailureKind { .usage }
}

extension Money {
    /// Bytes of an amount in binary encodings: the currency, then minor units as 8-byte big-endian.
    static let encodedByteCount = Currency.encodedByteCount + 8

    func encode(into writer: inout ByteWriter) {
        currency.encode(into: &writer)
        writer.write(minorUnits)
    }

    static func decode(from reader: inout ByteReader) throws -> Money? {
        guard let currency = try Currency.decode(from: &reader), let units = reader.readInt64() else { return nil }
        guard units >= 0 else { throw FormatError(.invalidValue, "an encoded amount is negative") }
        return try Money(minorUnits: units, currency: currency)
    }
}
