/// The strict text form of an amount: "4.50 EUR". See docs/PROTOCOL.md, "Money text format".
///
/// Parsing accepts ASCII digits, at most one decimal point with digits on both sides, exactly one space
/// and a currency code from the table. Fewer decimals than the currency's scale are accepted ("4.5 EUR"
/// is 4.50 EUR): people write amounts that way and nothing is lost. More decimals are refused, even
/// trailing zeros, because rounding or silently dropping digits is never the parser's call.
public enum MoneyText {
    /// The longest text accepted. A 19-digit Int64, a point, four decimals, a space and a code fit in 28;
    /// the margin keeps error messages useful without letting a caller hand us megabytes.
    public static let textByteCountMax = 64

    /// Formats with exactly `scale` decimals: "4.50 EUR", "5 JPY", "0.125 KWD".
    public static func format(_ money: Money) -> String {
        let perMajor = money.currency.minorUnitsPerMajorUnit
        let major = money.minorUnits / perMajor
        guard money.currency.scale > 0 else { return "\(major) \(money.currency.code)" }
        let minor = String(money.minorUnits % perMajor)
        let padding = String(repeating: "0", count: Int(money.currency.scale) - minor.count)
        return "\(major).\(padding)\(minor) \(money.currency.code)"
    }

    /// Parses "4.50 EUR"; every refusal names what was wrong and how to write it instead.
    public static func parse(_ text: String) throws -> Money {
        let bytes = Array(text.utf8)
        try checkLayout(text, bytes)
        // checkLayout guarantees exactly one space with text on both sides.
        let space = bytes.lastIndex(of: UInt8(ascii: " "))!
        let amount = Array(bytes[..<space])
        let code = Array(bytes[(space + 1)...])
        try checkNumberShape(amount, text)
        let currency = try parseCurrency(code, amountText: amount)
        return try parseAmount(amount, currency: currency, text: text)
    }

    private static func checkLayout(_ text: String, _ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { throw MoneyError(.empty, "no amount was given; write one as in 4.50 EUR") }
        guard bytes.count <= textByteCountMax else {
            throw MoneyError(
                .layout, "the amount text is \(bytes.count) bytes long; at most \(textByteCountMax) are accepted")
        }
        if text.hasPrefix("\u{2212}") { throw MoneyError(.negative, "amounts cannot be negative: \"\(text)\"") }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            throw MoneyError(
                .layout,
                "\"\(text)\" contains a character other than printable ASCII (a non-breaking "
                    + "space or a typographic sign?); write the amount as in 4.50 EUR")
        }
        guard bytes.first != UInt8(ascii: " "), bytes.last != UInt8(ascii: " ") else {
            throw MoneyError(.layout, "\"\(text)\" starts or ends with a space; write the amount as in 4.50 EUR")
        }
        guard bytes.contains(UInt8(ascii: " ")) else {
            throw MoneyError(.missingCurrency, "\"\(text)\" has no currency; write it after the amount, as in 4.50 EUR")
        }
    }

    /// Refusals that do not depend on the currency: signs, exponents, NaN and infinity.
    private static func checkNumberShape(_ amount: [UInt8], _ text: String) throws {
        let lowered = String(decoding: amount, as: UTF8.self).lowercased()
        if amount.first == UInt8(ascii: "-") { throw MoneyError(.negative, "amounts cannot be negative: \"\(text)\"") }
        if amount.first == UInt8(ascii: "+") {
            throw MoneyError(.leadingPlus, "write the amount without a leading '+': \"\(text)\"")
        }
        if ["nan", "inf", "infinity"].contains(lowered) {
            throw MoneyError(.notANumber, "\"\(text)\" is not a number; write an amount as in 4.50 EUR")
        }
        if lowered.first.map({ $0.isNumber || $0 == "." }) == true, lowered.contains("e") {
            throw MoneyError(.exponent, "exponents are not accepted: write \"\(text)\" out in digits")
        }
    }

    private static func parseCurrency(_ code: [UInt8], amountText: [UInt8]) throws -> Currency {
        let codeText = String(decoding: code, as: UTF8.self)
        let isUpper = code.count == 3 && code.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        guard isUpper else {
            let amountLooksLikeCode = amountText.count == 3 && amountText.allSatisfy { $0 >= 0x41 && $0 <= 0x5a }
            if amountLooksLikeCode {
                let amount = String(decoding: amountText, as: UTF8.self)
                throw MoneyError(.layout, "write the amount before the currency, as in \(codeText) \(amount)")
            }
            throw MoneyError(
                .malformedCurrency, "\"\(codeText)\" is not a currency code; use three upper-case letters, as in EUR")
        }
        guard let currency = Currency(code: codeText) else {
            throw MoneyError(.unknownCurrency, "\(codeText) is not a currency this wallet knows")
        }
        return currency
    }

    private static func parseAmount(_ amount: [UInt8], currency: Currency, text: String) throws -> Money {
        let parts = amount.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
        try checkDigits(parts, amount: amount, text: text)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : []
        guard fraction.count <= Int(currency.scale) else {
            let allowed = currency.scale == 0 ? "no decimals" : "at most \(currency.scale) decimals"
            throw MoneyError(.tooManyDecimals, "\(currency) takes \(allowed); \"\(text)\" has \(fraction.count)")
        }
        let padded = fraction + [UInt8](repeating: UInt8(ascii: "0"), count: Int(currency.scale) - fraction.count)
        guard let units = decimalValue(whole + padded) else {
            throw MoneyError(.overflow, "\"\(text)\" is larger than the largest amount this wallet can hold")
        }
        return try Money(minorUnits: units, currency: currency)
    }

    private static func checkDigits(_ parts: [[UInt8]], amount: [UInt8], text: String) throws {
        func refuse(_ why: String) -> MoneyError {
            MoneyError(.malformedAmount, "\"\(text)\": \(why); write it as in 4.50 EUR")
        }
        if amount.contains(UInt8(ascii: " ")) { throw refuse("spaces are not allowed inside the amount") }
        if amount.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "'") }) {
            throw refuse("digit grouping is not accepted and the decimal separator is '.'")
        }
        guard parts.count <= 2 else { throw refuse("there is more than one decimal point") }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard parts.allSatisfy({ $0.allSatisfy(isDigit) }) else {
            throw refuse("only the digits 0–9 and one '.' are allowed")
        }
        guard !parts[0].isEmpty else { throw refuse("a digit is needed before the decimal point") }
        guard parts.count == 1 || !parts[1].isEmpty else { throw refuse("a digit is needed after the decimal point") }
        guard parts[0].count == 1 || parts[0][0] != UInt8(ascii: "0") else {
            throw refuse("leading zeros are not accepted")
        }
    }

    /// The value of ASCII digits, or nil when it does not fit in an Int64.
    private static func decimalValue(_ digits: [UInt8]) -> Int64? {
        var value: Int64 = 0
        for digit in digits {
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = shifted.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflowA, !overflowB else { return nil }
            value = next
        }
        return value
    }
}
