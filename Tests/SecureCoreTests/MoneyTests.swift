import Testing

@testable import SecureCore

@Suite("Money")
struct MoneyTests {
    @Test(
        "parse accepts the strict form and fewer decimals than the scale",
        arguments: [
            ("4.50 EUR", Int64(450), "EUR"), ("4.5 EUR", 450, "EUR"), ("4 EUR", 400, "EUR"), ("0.01 USD", 1, "USD"),
            ("0 EUR", 0, "EUR"), ("5 JPY", 5, "JPY"), ("1.234 KWD", 1234, "KWD"), ("0.0001 CLF", 1, "CLF"),
            ("92233720368547758.07 EUR", Int64.max, "EUR"), ("9223372036854775807 JPY", Int64.max, "JPY"),
        ])
    func parsesValidText(text: String, minorUnits: Int64, code: String) throws {
        let money = try MoneyText.parse(text)
        #expect(money.minorUnits == minorUnits, "case \(text)")
        #expect(money.currency.code == code, "case \(text)")
    }

    @Test(
        "parse refuses each malformed text with its own code",
        arguments: [
            ("", MoneyError.Code.empty),
            ("-4.50 EUR", .negative), ("\u{2212}4.50 EUR", .negative), ("-0 EUR", .negative),
            ("+4.50 EUR", .leadingPlus),
            ("1e3 EUR", .exponent), ("4.5E1 EUR", .exponent), ("1e-2 EUR", .exponent),
            ("NaN EUR", .notANumber), ("inf EUR", .notANumber), ("Infinity EUR", .notANumber),
            ("4.505 EUR", .tooManyDecimals), ("4.500 EUR", .tooManyDecimals), ("5.0 JPY", .tooManyDecimals),
            ("92233720368547758.08 EUR", .overflow), ("99999999999999999999 JPY", .overflow),
            ("4.50 XYZ", .unknownCurrency), ("4.50 eur", .malformedCurrency), ("4.50 EURO", .malformedCurrency),
            ("4.50", .missingCurrency), ("EUR 4.50", .layout), (" 4.50 EUR", .layout), ("4.50 EUR ", .layout),
            ("4\u{00A0}50 EUR", .layout), ("4.50\tEUR", .layout),
            ("4 50 EUR", .malformedAmount), ("4.50  EUR", .malformedAmount), ("1,000.00 EUR", .malformedAmount),
            ("1_000 EUR", .malformedAmount), ("4. EUR", .malformedAmount), (".50 EUR", .malformedAmount),
            ("4.5.0 EUR", .malformedAmount), ("04.50 EUR", .malformedAmount), ("0x10 EUR", .malformedAmount),
            ("four EUR", .malformedAmount), (String(repeating: "1", count: 70) + " EUR", .layout),
        ])
    func refusesMalformedText(text: String, code: MoneyError.Code) {
        #expect(throws: MoneyError(code, "")) { try MoneyText.parse(text) }
    }

    @Test("every refusal carries a sentence naming the problem")
    func refusalsHaveSentences() {
        for text in ["", "-1 EUR", "1.234 EUR", "1 XYZ"] {
            do {
                _ = try MoneyText.parse(text)
                Issue.record("case \(text) parsed")
            } catch let error as MoneyError {
                #expect(error.message.count > 20, "case \(text): \(error.message)")
            } catch {
                Issue.record("case \(text): unexpected \(error)")
            }
        }
    }

    @Test("format prints exactly scale decimals and round-trips through parse")
    func formatRoundTrips() throws {
        #expect(try Money(minorUnits: 450, currency: .eur).description == "4.50 EUR")
        #expect(try Money(minorUnits: 5, currency: .eur).description == "0.05 EUR")
        #expect(try Money(minorUnits: 7, currency: .jpy).description == "7 JPY")
        #expect(try Money(minorUnits: 1005, currency: .kwd).description == "1.005 KWD")
        #expect(try Money(minorUnits: Int64.max, currency: .eur).description == "92233720368547758.07 EUR")
        for currency in Currency.all {
            for units: Int64 in [0, 1, 9, 10, 99, 100, 101, 123_456_789, Int64.max - 1, Int64.max] {
                let money = try Money(minorUnits: units, currency: currency)
                #expect(try MoneyText.parse(money.description) == money, "case \(units) \(currency)")
            }
        }
    }

    @Test("the table has the real scales of common currencies")
    func tableScales() {
        let expected: [String: UInt8] = [
            "EUR": 2, "USD": 2, "GBP": 2, "CHF": 2, "SEK": 2, "JPY": 0, "KRW": 0,
            "KWD": 3, "BHD": 3, "OMR": 3, "CLF": 4,
        ]
        for (code, scale) in expected { #expect(Currency(code: code)?.scale == scale, "case \(code)") }
        #expect(Currency(code: "XYZ") == nil)
        #expect(Currency.all.allSatisfy { $0.scale <= Currency.scaleMax })
    }

    @Test("arithmetic is checked: overflow, negative results and mixed currencies throw")
    func checkedArithmetic() throws {
        let big = try Money(minorUnits: Int64.max, currency: .eur)
        let one = try Money(minorUnits: 1, currency: .eur)
        #expect(throws: MoneyError(.overflow, "")) { try big.adding(one) }
        #expect(throws: MoneyError(.overflow, "")) { try big.multiplied(by: 2) }
        #expect(throws: MoneyError(.negativeResult, "")) { try one.subtracting(big) }
        #expect(throws: MoneyError(.currencyMismatch, "")) { try one.adding(Money(minorUnits: 1, currency: .usd)) }
        #expect(throws: MoneyError(.negative, "")) { try Money(minorUnits: -1, currency: .eur) }
        #expect(try big.subtracting(big).isZero)
        #expect(try one.adding(one).minorUnits == 2)
    }
}
