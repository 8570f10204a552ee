import SecureCrypto
@testable import SecureCore

/// Small builders shared by the ledger tests.
enum Fixture {
    static let berlin = "Europe/Berlin"
    /// 2024-03-01T12:00:00Z.
    static let time: Int64 = 1_709_294_400_000

    static func eur(_ units: Int64) -> Money { try! Money(minorUnits: units, currency: .eur) }

    static func bytes(_ value: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: value, count: count) }

    static func statement(signer: UInt8, id: UInt8, payload: UInt8) -> StatementReference {
        try! StatementReference(signer: bytes(signer, 32), id: bytes(id, 16), payloadDigest: bytes(payload, 32))
    }

    /// One entry of every kind, with every optional field exercised somewhere.
    static func sampleEntries() throws -> [LedgerEntry] {
        let budget = try Budget(category: "food", limit: eur(20_000), window: .month, isHardCap: false,
                                timeZoneIdentifier: berlin)
        let drafts: [(EntryKind, EntryFlags, Money?, String, StatementReference?, [UInt8])] = [
            (.keyEvent, [], nil, "", nil, [1, 2, 3]),
            (.deposit, [], eur(5_000), "", statement(signer: 0xA1, id: 1, payload: 0xD1), [0xAA]),
            (.budgetChange, [], nil, "food", nil, BudgetChange.set(budget).payload),
            (.paymentOut, [.budgetOverride, .withoutProximity], eur(450), "food", statement(signer: 0xB0, id: 2, payload: 0xD2), []),
            (.paymentIn, [.withoutProximity], eur(100), "", statement(signer: 0xC1, id: 3, payload: 0xD3), [0xBB]),
            (.statementRefused, [], nil, "", statement(signer: 0xC1, id: 4, payload: 0xD4), []),
            (.conflictingStatement, [], nil, "", statement(signer: 0xC1, id: 3, payload: 0xD5), [0xCC]),
            (.reversal, [], eur(450), "", statement(signer: 0xC2, id: 2, payload: 0xD6), []),
            (.rollbackAccepted, [], nil, "", nil, [9]),
            (.budgetChange, [], nil, "food", nil, BudgetChange.remove(category: "food").payload),
        ]
        var entries: [LedgerEntry] = []
        var link = LedgerChain.genesisLink
        for (index, draft) in drafts.enumerated() {
            let entry = try LedgerEntry(
                position: UInt64(index), id: bytes(UInt8(index + 1), 16), kind: draft.0, flags: draft.1, amount: draft.2,
                category: draft.3, counterparty: index % 2 == 0 ? [] : bytes(0xEE, 32), note: index == 3 ? "Kaffee ☕" : "",
                time: time + Int64(index) * 1000, statement: draft.4, payload: draft.5, previousLink: link)
            entries.append(entry)
            link = entry.link
        }
        return entries
    }
}
