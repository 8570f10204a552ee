import SecureCrypto

/// The payload of a budget-change entry: a budget set (or replaced) or removed. The category lives in
/// the entry's category field, so it is not repeated here. See docs/PROTOCOL.md, "Ledger entry encoding".
public enum BudgetChange: Hashable, Sendable {
    /// Sets or replaces the category's budget.
    case set(Budget)
    /// Removes the category's budget.
    case remove(category: String)

    /// The payload's version byte.
    static let encodingVersion: UInt8 = 1

    /// The category the change applies to.
    public var category: String {
        switch self {
        case .set(let budget): budget.category
        case .remove(let category): category
        }
    }

    /// The payload bytes for a budget-change entry.
    public var payload: [UInt8] {
        var writer = ByteWriter()
        writer.write(BudgetChange.encodingVersion)
        switch self {
        case .set(let budget):
            writer.write(UInt8(1))
            budget.limit.encode(into: &writer)
            writer.write(budget.window.rawValue)
            writer.write(UInt8(budget.isHardCap ? 1 : 0))
            writer.write(prefixed8: Array(budget.timeZoneIdentifier.utf8), max: Budget.timeZoneIdentifierByteCountMax)
        case .remove:
            writer.write(UInt8(2))
        }
        return writer.bytes
    }

    /// Decodes a payload for `category`. Unlike stream decoders this one never returns nil: the payload
    /// is a complete field, so a short one is malformed.
    public static func decode(payload: [UInt8], category: String) throws -> BudgetChange {
        var reader = ByteReader(payload)
        func short() -> FormatError { FormatError(.invalidValue, "the budget change payload is truncated") }
        guard try reader.readVersion(encodingVersion, of: "budget change") else { throw short() }
        guard let action = reader.readUInt8() else { throw short() }
        let change: BudgetChange
        switch action {
        case 1:
            guard let limit = try Money.decode(from: &reader), let windowByte = reader.readUInt8(),
                let flags = reader.readUInt8(),
                let zone = try reader.readPrefixed8(max: Budget.timeZoneIdentifierByteCountMax, field: "time zone")
            else { throw short() }
            guard let window = BudgetWindowKind(rawValue: windowByte) else {
                throw FormatError(.invalidValue, "budget window \(windowByte) is not known")
            }
            guard flags <= 1 else { throw FormatError(.invalidValue, "unknown budget flag bits \(flags)") }
            guard zone.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw FormatError(.invalidValue, "the time zone name is not printable ASCII")
            }
            do {
                change = .set(
                    try Budget(
                        category: category, limit: limit, window: window, isHardCap: flags == 1,
                        timeZoneIdentifier: String(decoding: zone, as: UTF8.self)))
            } catch let error as BudgetError {
                throw FormatError(.invalidValue, error.message)
            }
        case 2:
            change = .remove(category: category)
        default:
            throw FormatError(.invalidValue, "budget change action \(action) is not known")
        }
        try reader.expectEnd("budget change")
        return change
    }
}
