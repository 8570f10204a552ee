import SecureCrypto

@testable import SecureCore

/// Small builders shared by the ledger tests.
enum Fixture {
    static let berlin = "Europe/Berlin"
    /// 2024-03-01T12:00:00Z.
    static let time: Int64 = 1_709_294_400_000

    static func eur(_ units: Int64) -> Money { try! Money(minorUnits: units, currency: .eur) }

    /// The issuer of the fixtures' euros: a wallet id whose bytes are all 0x1A.
    static let issuer: WalletID = Fixture.id(0x1A)
    /// The fixtures' euro asset.
    static let euro = Asset(issuer: issuer, currency: .eur)

    /// `units` euro cents of the fixtures' issuer (or of `issuer`).
    static func asset(_ units: Int64, issuer: WalletID = Fixture.issuer) -> AssetAmount {
        AssetAmount(issuer: issuer, money: eur(units))
    }

    static func bytes(_ value: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: value, count: count) }

    /// An id or digest whose bytes all equal `value`.
    static func id<Value: FixedByteValue>(_ value: UInt8) -> Value { Value(bytes: bytes(value, Value.byteCount))! }

    static func statement(signer: UInt8, id: UInt8, payload: UInt8) -> StatementReference {
        StatementReference(signer: Fixture.id(signer), id: Fixture.id(id), payloadDigest: Fixture.id(payload))
    }

    /// One entry of every kind, with every optional field exercised somewhere.
    static func sampleEntries() throws -> [LedgerEntry] {
        let budget = try Budget(
            category: "food", limit: eur(20_000), window: .month, isHardCap: false,
            timeZoneIdentifier: berlin)
        let drafts: [(EntryKind, EntryFlags, AssetAmount?, String, StatementReference?, [UInt8])] = [
            (.keyEvent, [], nil, "", nil, [1, 2, 3]),
            (.deposit, [], asset(5_000), "", statement(signer: 0xA1, id: 1, payload: 0xD1), [0xAA]),
            (.budgetChange, [], nil, "food", nil, BudgetChange.set(budget).payload),
            (
                .paymentOut, [.budgetOverride, .withoutProximity], asset(450), "food",
                statement(signer: 0xB0, id: 2, payload: 0xD2), []
            ),
            (.paymentIn, [.withoutProximity], asset(100), "", statement(signer: 0xC1, id: 3, payload: 0xD3), [0xBB]),
            (.statementRefused, [], nil, "", statement(signer: 0xC1, id: 4, payload: 0xD4), []),
            (.conflictingStatement, [], nil, "", statement(signer: 0xC1, id: 3, payload: 0xD5), [0xCC]),
            (.reversal, [], asset(450), "", statement(signer: 0xC2, id: 2, payload: 0xD6), []),
            (.rollbackAccepted, [], nil, "", nil, [9]),
            (.budgetChange, [], nil, "food", nil, BudgetChange.remove(category: "food").payload),
        ]
        var entries: [LedgerEntry] = []
        var link = LedgerChain.genesisLink
        for (index, draft) in drafts.enumerated() {
            let entry = try LedgerEntry(
                position: UInt64(index), id: Fixture.id(UInt8(index + 1)), kind: draft.0, flags: draft.1,
                amount: draft.2,
                category: draft.3, counterparty: index % 2 == 0 ? [] : bytes(0xEE, 32),
                note: index == 3 ? "Kaffee ☕" : "",
                time: time + Int64(index) * 1000, statement: draft.4, payload: draft.5, previousLink: link)
            entries.append(entry)
            link = entry.link
        }
        return entries
    }
}

/// Builds a valid ledger one entry at a time: positions, links and times are filled in, and an entry the
/// state refuses is not kept.
struct LedgerBuilder {
    private(set) var state = LedgerState()
    private(set) var entries: [LedgerEntry] = []
    var time = Fixture.time
    var nextID: UInt64 = 1
    static let ownSigner: Digest32 = Fixture.id(0x0A)

    mutating func freshID() -> StatementID {
        defer { nextID += 1 }
        return StatementID(
            bytes: (0..<16).map { UInt8(truncatingIfNeeded: nextID >> (8 * UInt64($0 % 8))) ^ UInt8($0) })!
    }

    /// Makes the next entry without applying it.
    /// `amount` is counted in the asset of `issuer` (the fixtures' issuer unless named).
    mutating func draft(
        _ kind: EntryKind, _ amount: Money?, issuer: WalletID = Fixture.issuer, category: String = "",
        flags: EntryFlags = [], statement: StatementReference? = nil, payload: [UInt8] = []
    ) throws -> LedgerEntry {
        try LedgerEntry(
            position: state.size, id: freshID(), kind: kind, flags: flags,
            amount: amount.map { AssetAmount(issuer: issuer, money: $0) }, category: category,
            time: time, statement: statement, payload: payload, previousLink: state.head)
    }

    /// Makes, applies and keeps the next entry; throws (keeping nothing) when the state refuses it.
    @discardableResult
    mutating func append(
        _ kind: EntryKind, _ amount: Money?, issuer: WalletID = Fixture.issuer, category: String = "",
        flags: EntryFlags = [], statement: StatementReference? = nil, payload: [UInt8] = []
    ) throws -> LedgerEntry {
        let entry = try draft(
            kind, amount, issuer: issuer, category: category, flags: flags, statement: statement, payload: payload)
        try state.apply(entry)
        entries.append(entry)
        return entry
    }

    /// Deposits `amount` of the asset of the issuer whose wallet id bytes are all `issuer`.
    mutating func deposit(_ amount: Money, issuer: UInt8 = 0x1A) throws {
        let id = freshID()
        try append(
            .deposit, amount, issuer: Fixture.id(issuer),
            statement: StatementReference(
                signer: Fixture.id(issuer), id: id,
                payloadDigest: Fixture.id(0xD0)))
    }

    @discardableResult
    mutating func pay(
        _ amount: Money, issuer: WalletID = Fixture.issuer, category: String = "", flags: EntryFlags = []
    ) throws -> StatementReference {
        let reference = StatementReference(
            signer: LedgerBuilder.ownSigner, id: freshID(), payloadDigest: Fixture.id(0xD1))
        try append(.paymentOut, amount, issuer: issuer, category: category, flags: flags, statement: reference)
        return reference
    }

    mutating func setBudget(
        _ category: String, _ limit: Money, window: BudgetWindowKind = .day, hardCap: Bool = false,
        zone: String = "UTC"
    ) throws {
        let budget = try Budget(
            category: category, limit: limit, window: window, isHardCap: hardCap, timeZoneIdentifier: zone)
        try append(.budgetChange, nil, category: category, payload: BudgetChange.set(budget).payload)
    }
}
