import SecureCrypto

/// An ISO 4217 currency: its three-letter code and the number of decimals in its minor unit. A currency
/// can only be made from the built-in table, so its scale is fixed for the life of every amount in it.
public struct Currency: Hashable, Sendable, CustomStringConvertible {
    /// The three upper-case ASCII letters of the ISO 4217 alphabetic code.
    public let code: String
    /// Digits after the decimal point in the minor unit (EUR 2, JPY 0, KWD 3, CLF 4).
    public let scale: UInt8

    private init(uncheckedCode code: String, scale: UInt8) {
        self.code = code
        self.scale = scale
    }

    /// Looks a code up in the built-in table; nil when it is not there.
    public init?(code: String) {
        guard let scale = Currency.scales[code] else { return nil }
        self.init(uncheckedCode: code, scale: scale)
    }

    public var description: String { code }

    /// The largest scale in the table. Money text never has more decimals than this.
    public static let scaleMax: UInt8 = 4

    /// 10^scale, the number of minor units in one major unit.
    public var minorUnitsPerMajorUnit: Int64 {
        var result: Int64 = 1
        for _ in 0..<scale { result *= 10 }
        return result
    }

    /// Minor-unit scales from ISO 4217 (list one, as published by SIX). The table is part of the
    /// protocol: encodings carry code and scale, and a decoder refuses a scale that disagrees with it,
    /// so a currency whose scale ISO changes needs a new encoding version, not an edit here.
    static let scales: [String: UInt8] = [
        "AED": 2, "ARS": 2, "AUD": 2, "BDT": 2, "BGN": 2, "BHD": 3, "BRL": 2, "CAD": 2, "CHF": 2,
        "CLF": 4, "CLP": 0, "CNY": 2, "COP": 2, "CZK": 2, "DKK": 2, "EGP": 2, "EUR": 2, "GBP": 2,
        "HKD": 2, "HUF": 2, "IDR": 2, "ILS": 2, "INR": 2, "IQD": 3, "ISK": 0, "JOD": 3, "JPY": 0,
        "KES": 2, "KRW": 0, "KWD": 3, "LYD": 3, "MAD": 2, "MXN": 2, "MYR": 2, "NGN": 2, "NOK": 2,
        "NZD": 2, "OMR": 3, "PEN": 2, "PHP": 2, "PKR": 2, "PLN": 2, "PYG": 0, "QAR": 2, "RON": 2,
        "RSD": 2, "SAR": 2, "SEK": 2, "SGD": 2, "THB": 2, "TND": 3, "TRY": 2, "TWD": 2, "UAH": 2,
        "UGX": 0, "USD": 2, "UYU": 2, "UYW": 4, "VND": 0, "XAF": 0, "XOF": 0, "ZAR": 2,
    ]

    /// Every currency in the table, sorted by code.
    public static var all: [Currency] {
        scales.keys.sorted().map { Currency(uncheckedCode: $0, scale: scales[$0]!) }
    }

    /// The euro.
    public static let eur = Currency(code: "EUR")!
    /// The US dollar.
    public static let usd = Currency(code: "USD")!
    /// The yen, a currency without minor units.
    public static let jpy = Currency(code: "JPY")!
    /// The Kuwaiti dinar, a currency with three decimals.
    public static let kwd = Currency(code: "KWD")!
}

extension Currency {
    /// Bytes of a currency in binary encodings: three ASCII letters and the scale.
    static let encodedByteCount = 4

    func encode(into writer: inout ByteWriter) {
        writer.write(fixed: Array(code.utf8), count: 3)
        writer.write(scale)
    }

    /// Reads code and scale and checks both against the table.
    static func decode(from reader: inout ByteReader) throws -> Currency? {
        guard let letters = reader.readFixed(3), let scale = reader.readUInt8() else { return nil }
        let code = String(decoding: letters, as: UTF8.self)
        guard letters.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }),
            let currency = Currency(code: code)
        else {
            throw FormatError(.invalidValue, "the currency code \(Hex.encode(letters)) is not in the table")
        }
        guard currency.scale == scale else {
            throw FormatError(.invalidValue, "\(code) has scale \(currency.scale), but the record says \(scale)")
        }
        return currency
    }
}
