import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore

/// The physical checks of `ledger verify` (`LedgerStore.physicalProblems`).
@Suite("Store audit: every table read, every blob decoded")
struct StoreAuditTests {
    /// Every table of the schema has its row check, so a table added later cannot go unread.
    @Test func everyTableOfTheSchemaIsChecked() throws {
        let store = try LedgerStoreTests.filled(3)
        #expect(try store.tableNames() == LedgerStore.tableChecks.map(\.0).sorted())
    }

    /// The flip test in SecureCLITests assumes SQLCipher 3's 1024-byte pages.
    @Test func pagesAreOneKibibyte() throws {
        let store = try LedgerStoreTests.filled(1)
        let statement = try store.database.prepare("PRAGMA cipher_page_size")
        #expect(try statement.step())
        #expect(statement.integer(0) == 1024)
    }

    /// A clean store has no problems; each damaged row is named with its table and key.
    @Test func aRowThatDoesNotDecodeIsNamedWithItsTableAndKey() throws {
        let store = try LedgerStoreTests.filled(3)
        // The fixture's checkpoints are one-byte placeholders, which the check rightly names.
        #expect(store.physicalProblems().count == 3)
        try store.database.execute("DELETE FROM checkpoints")
        #expect(store.physicalProblems() == [])
        try store.database.execute("UPDATE entries SET encoded = x'00' WHERE position = 1")
        try store.database.execute("INSERT INTO refusals (signer, id, signed) VALUES (x'01', x'02', x'03')")
        try store.database.execute("INSERT INTO meta (name, value) VALUES ('trusted-issuers', x'0102')")
        let problems = store.physicalProblems()
        #expect(problems.contains { $0.hasPrefix("table entries, row 1:") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("table refusals, row 02:") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("table meta, row trusted-issuers:") }, "\(problems)")
        #expect(problems.count == 3, "\(problems)")
    }
}
