import SecureCrypto

/// What a balance is counted in: one issuer's money in one currency, as ledgers that hold many issuers'
/// money name it (a Stellar asset is a code plus its issuer). Two issuers' euros are two assets: a wallet
/// holds them apart, a payment moves exactly one, and a payee takes only an asset whose issuer it trusts.
/// Budgets stay per currency, because they limit spending whatever the issuer.
public struct Asset: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The wallet id of the issuer whose liability the money is.
    public let issuer: WalletID
    /// The currency, whose scale says where the decimal point goes.
    public let currency: Currency

    public init(issuer: WalletID, currency: Currency) {
        self.issuer = issuer
        self.currency = currency
    }

    /// Ordered by (issuer id bytes, currency code): the order of balances in a checkpoint.
    public static func < (lhs: Asset, rhs: Asset) -> Bool {
        if lhs.issuer != rhs.issuer { return lhs.issuer.bytes.lexicographicallyPrecedes(rhs.issuer.bytes) }
        return lhs.currency.code < rhs.currency.code
    }

    /// "EUR issued by 3F2A…9C1B": the currency and the short issuer id people compare.
    public var description: String { "\(currency.code) issued by \(Asset.shortID(issuer))" }

    /// The first and last two bytes of a wallet id in hex: "3F2A…9C1B".
    public static func shortID(_ id: WalletID) -> String {
        let hex = id.hex.uppercased()
        return String(hex.prefix(4)) + "…" + String(hex.suffix(4))
    }

    /// Zero of this asset.
    public var zero: AssetAmount { AssetAmount(issuer: issuer, money: .zero(currency)) }
}

/// An amount of one asset: an issuer id and a `Money`. Encoded as issuer id (32 bytes) ‖ Money.
public struct AssetAmount: Hashable, Sendable, CustomStringConvertible {
    /// The issuer whose liability this is.
    public let issuer: WalletID
    /// The amount in the asset's currency.
    public let money: Money

    public init(issuer: WalletID, money: Money) {
        self.issuer = issuer
        self.money = money
    }

    /// The asset the amount is counted in.
    public var asset: Asset { Asset(issuer: issuer, currency: money.currency) }
    /// Whether the amount is zero.
    public var isZero: Bool { money.isZero }
    /// The currency.
    public var currency: Currency { money.currency }

    /// "4.50 EUR (issuer 3F2A…9C1B)".
    public var description: String { "\(money) (issuer \(Asset.shortID(issuer)))" }

    /// Bytes of an encoded asset amount: the issuer id, then the money.
    static let encodedByteCount = WalletID.byteCount + Money.encodedByteCount

    func encode(into writer: inout ByteWriter) {
        writer.write(issuer)
        money.encode(into: &writer)
    }

    static func decode(from reader: inout ByteReader) throws -> AssetAmount? {
        guard let issuer = reader.read(WalletID.self), let money = try Money.decode(from: &reader) else { return nil }
        return AssetAmount(issuer: issuer, money: money)
    }
}

extension MoneyText {
    /// "4.50 EUR (issuer 3F2A…9C1B)": an amount with the issuer people compare, as prompts show it.
    public static func format(_ amount: AssetAmount) -> String { amount.description }
}
