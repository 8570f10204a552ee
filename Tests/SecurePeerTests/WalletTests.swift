import Foundation
import SecureBench
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureStore
@_spi(Benchmark) @testable import SecureWallet

@Suite("Wallet storage on SoftHSM and SQLCipher", .serialized)
struct WalletTests {
    @Test func createAppendReopenAndVerify() throws {
        let test = try TestWallet("basic")
        #expect(test.wallet?.size == 1)
        #expect(test.wallet?.anchorKind == "token")
        #expect(test.wallet?.walletID == test.wallet.map { WalletID(inception: $0.keyEvent.event) })
        try test.setBudget("food", "200.00 EUR")
        try test.setBudget("travel", "50.00 EUR")
        let reopened = try test.reopen()
        #expect(reopened.size == 3)
        #expect(reopened.lockReason == nil)
        #expect(reopened.state.budgets["food"]?.limit == (try MoneyText.parse("200.00 EUR")))
        let report = try LedgerVerifier.verify(reopened.ledger, walletID: reopened.walletID)
        #expect(report.isValid, "\(report.problems)")
        #expect(report.entries == 3 && report.checkpoints == 3)
        let replayed = try LedgerState.replay(try (0..<3).map { try reopened.ledger.entry(at: $0)! })
        #expect(report.state == replayed)
    }

    @Test func batchAppendSignsOneCheckpointAndReopensWithoutReplay() throws {
        let test = try TestWallet("batch")
        let balance = try appendHistory(try #require(test.wallet))
        // The wallet above is released here, with its lock, so that it can be opened again.
        let reopened = try test.reopen()
        #expect(reopened.size == 27 && reopened.lockReason == nil)
        #expect(reopened.euros == balance)
        let report = try LedgerVerifier.verify(reopened.ledger, walletID: reopened.walletID)
        #expect(report.isValid, "\(report.problems)")
        #expect(report.entries == 27 && report.checkpoints == 3) // inception, the budget's batch, the history's batch
        #expect(report.state.balances == reopened.state.balances)
    }

    /// The budget, then 25 entries of history in one batch, then a batch that fails; returns the balance.
    private func appendHistory(_ wallet: Wallet) throws -> Money {
        try wallet.appendBatch([try SyntheticHistory.budgetDraft()])
        var history = SyntheticHistory(
            walletID: wallet.walletID, payerKey: wallet.signingKey, issuer: try SoftwareSigner())
        try wallet.appendBatch(try history.drafts(from: SyntheticHistory.firstPosition, count: 25))
        #expect(wallet.size == 27)
        // A batch with one refused entry (a payment above the balance) changes nothing, not even its good entries.
        let balance = wallet.euros
        let tooMuch = try TransferOrder(
            transferID: .random(), payerWalletID: wallet.walletID, payerKey: wallet.signingKey,
            payeeWalletID: WalletID(bytes: [UInt8](repeating: 7, count: 32))!,
            amount: try wallet.asset(for: try balance.adding(try Money(minorUnits: 1, currency: .eur)), issuer: nil),
            proximity: .none, channelBinding: []
        ).debitDraft(category: "rent")
        #expect(throws: LedgerError.self) {
            try wallet.appendBatch(try history.drafts(from: wallet.size, count: 2) + [tooMuch])
        }
        #expect(wallet.size == 27 && wallet.euros == balance)
        return balance
    }

    @Test func databaseFileIsEncrypted() throws {
        let test = try TestWallet("enc")
        try test.setBudget("groceries-unique-marker", "10.00 EUR")
        test.close()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: test.paths.database))
        #expect(bytes.range(of: Data("groceries-unique-marker".utf8)) == nil)
        #expect(bytes.range(of: Data("SQLite format 3".utf8)) == nil)
    }

    @Test func secondProcessGetsWalletBusy() throws {
        let test = try TestWallet("busy")
        #expect(throws: StoreError(.walletBusy, "")) { try WalletLock(path: test.paths.lock) }
        test.close()
        _ = try WalletLock(path: test.paths.lock)
    }

    @Test func readingOpenTakesNoLockAndReadsOneSnapshot() throws {
        let test = try TestWallet("snapshot")
        try test.setBudget("a", "1.00 EUR")
        let session = try test.main.session()
        defer { session.close() }
        // The appending wallet is open and holds the lock; a reader opens anyway.
        let reader = try Wallet.open(paths: test.paths, token: session, access: .reading)
        #expect(reader.isReadOnly && reader.size == 2)
        #expect(throws: StoreError(.walletBusy, "")) { try Wallet.open(paths: test.paths, token: session) }
        try test.setBudget("b", "2.00 EUR")
        #expect(try reader.ledger.size() == 2, "a reader's snapshot does not move while the writer appends")
        #expect(try reader.ledger.latestCheckpoint()?.size == 2)
        let later = try Wallet.open(paths: test.paths, token: session, access: .reading)
        #expect(later.size == 3 && later.state.budgets.count == 2)
        // A reading wallet cannot write: the database is open read-only.
        let issuerCard = try TestIssuer(signer: SoftwareSigner()).card
        #expect(throws: StoreError(.sqlite, "")) { try reader.trust(issuer: issuerCard) }
    }

    @Test func readingOpenReportsARepairAndWritesNothing() throws {
        let test = try TestWallet("readrepair")
        try test.setBudget("a", "1.00 EUR")
        let anchor = TokenAnchor(session: test.wallet!.token, walletID: test.wallet!.walletID)
        let anchorBefore = try #require(try anchor.load())
        try test.setBudget("b", "2.00 EUR")
        try anchor.store(anchorBefore) // a crash between the commit of entry 2 and its anchor update
        let walletID = test.wallet!.walletID
        test.close()
        let databaseBefore = try Data(contentsOf: URL(fileURLWithPath: test.paths.database))
        let session = try test.main.session()
        do {
            let reader = try Wallet.open(paths: test.paths, token: session, access: .reading)
            #expect(reader.lockReason == nil && reader.size == 3)
            #expect(reader.repairNeeded?.contains("secure ledger repair") == true, "\(reader.repairNeeded ?? "nil")")
        }
        let anchorAfterReading = try #require(
            try SignedCheckpoint.decode(try TokenAnchor(session: session, walletID: walletID).load()!))
        #expect(anchorAfterReading.checkpoint.size == 2, "a reader never moves the anchor")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: test.paths.database)) == databaseBefore,
            "a reader never writes the file")
        session.close()
        let writer = try test.reopen()
        #expect(writer.repairNeeded == nil)
        let anchored = try SignedCheckpoint.decode(
            try TokenAnchor(session: writer.token, walletID: writer.walletID).load()!)!
        #expect(anchored.checkpoint.size == 3, "an appending open repairs it")
    }

    @Test func crashBetweenCommitAndAnchorMovesTheAnchorForward() throws {
        let test = try TestWallet("crash")
        try test.setBudget("a", "1.00 EUR")
        let anchor = TokenAnchor(session: test.wallet!.token, walletID: test.wallet!.walletID)
        let anchorBefore = try #require(try anchor.load())
        try test.setBudget("b", "2.00 EUR")
        // The crash: the commit of entry 2 is durable, the anchor still holds checkpoint 2.
        try anchor.store(anchorBefore)
        let reopened = try test.reopen()
        #expect(reopened.lockReason == nil)
        let anchored = try SignedCheckpoint.decode(
            try TokenAnchor(session: reopened.token, walletID: reopened.walletID).load()!)!
        #expect(anchored.checkpoint.size == 3)
    }

    @Test func restoredOldCopyLocksTheWallet() throws {
        let test = try TestWallet("rollback")
        try test.setBudget("a", "1.00 EUR")
        test.close()
        let copy = TestTokens.layout.directory + "/copy-\(UUID().uuidString)"
        try test.copyFiles(to: copy)
        try test.reopen()
        try test.setBudget("b", "2.00 EUR")
        try test.setBudget("c", "3.00 EUR")
        test.close()
        try test.restoreFiles(from: copy, only: ["ledger.db", "ledger.db-wal", "ledger.db-shm"])
        let reopened = try test.reopen()
        #expect(reopened.lockReason == .behindAnchor(databaseSize: 2, anchorSize: 4))
        #expect(throws: WalletError(.locked, "")) { try test.setBudget("d", "4.00 EUR") }
        #expect(reopened.size == 2, "a refused append changes nothing")
    }

    @Test func anotherWalletsDatabaseIsNamedAsSuch() throws {
        let first = try TestWallet("foreign-a"), second = try TestWallet("foreign-b")
        first.close()
        second.close()
        try FileManager.default.removeItem(atPath: first.paths.database)
        try FileManager.default.copyItem(atPath: second.paths.database, toPath: first.paths.database)
        #expect(throws: StoreError(.foreignDatabase, "")) { try first.reopen() }
    }

    @Test func corruptedFileIsToldApartFromAWrongKey() throws {
        let test = try TestWallet("corrupt")
        try test.setBudget("a", "1.00 EUR")
        test.close()
        var bytes = try Data(contentsOf: URL(fileURLWithPath: test.paths.database))
        for offset in 16..<1024 { bytes[offset] ^= 0x5a } // past the salt: the first page's content
        try bytes.write(to: URL(fileURLWithPath: test.paths.database))
        #expect(throws: StoreError(.corrupted, "")) { try test.reopen() }
    }

    @Test func wrongKeyAndMissingWrappedKey() throws {
        let test = try TestWallet("wrongkey")
        let key = try test.databaseKey()
        test.close()
        let other = SecretBytes(randomCount: 32)
        let original = try #require(FileManager.default.contents(atPath: test.paths.wrappedKey))
        let wrapped = try WrappedKeyFile(encoded: Array(original))
        #expect(ConstantTime.equal(WrappedKeyFile.keyCheck(of: key), wrapped.keyCheck))
        #expect(!ConstantTime.equal(WrappedKeyFile.keyCheck(of: other), wrapped.keyCheck))
        let walletID = try WalletMetadata.load(test.paths).parsedWalletID()
        let database = try #require(FileManager.default.contents(atPath: test.paths.database))
        // The database itself does not open with another key: SQLCipher cannot read its first page.
        #expect(throws: StoreError(.corrupted, "")) {
            try LedgerStore.open(
                path: test.paths.database, key: other, expectedSalt: wrapped.databaseSalt,
                walletID: walletID)
        }
        // A wrapped-key file that hands the wallet's own token another key (its key-check matches that key)
        // gets as far as the database, which refuses it, and nothing is written.
        var impostor = WrappedKeyFile(walletID: walletID, key: other, databaseSalt: wrapped.databaseSalt)
        for recipient in wrapped.recipients { try impostor.wrap(other, to: recipient.recipientKey) }
        try Data(impostor.encoded).write(to: URL(fileURLWithPath: test.paths.wrappedKey))
        #expect(throws: StoreError(.corrupted, "")) { try test.reopen() }
        #expect(FileManager.default.contents(atPath: test.paths.database) == database, "a wrong key wrote nothing")
        // The missing file is named as missing.
        try FileManager.default.removeItem(atPath: test.paths.wrappedKey)
        #expect(throws: StoreError(.wrappedKeyMissing, "")) { try test.reopen() }
        // The right file opens the same database again.
        try original.write(to: URL(fileURLWithPath: test.paths.wrappedKey))
        #expect(try test.reopen().lockReason == nil)
        test.close()
    }

    @Test func wrongTokenIsRefused() throws {
        let test = try TestWallet("wrongtoken")
        test.close()
        let stranger = try TestTokens.fresh("stranger")
        #expect(throws: TokenError(.keyNotFound, "")) {
            try Wallet.open(paths: test.paths, token: try stranger.session())
        }
    }

    @Test func missingWalletIsNeverRecreated() throws {
        let paths = WalletPaths(directory: TestTokens.layout.directory + "/nowallet-\(UUID().uuidString)")
        let fresh = try TestTokens.fresh("nowallet")
        #expect(throws: StoreError(.walletMissing, "")) { try Wallet.open(paths: paths, token: try fresh.session()) }
        #expect(!FileManager.default.fileExists(atPath: paths.database))
    }
}

@Suite("Recovery and leaving a lock", .serialized)
struct RecoveryTests {
    @Test func recoverWithTheBackupTokenOntoANewToken() throws {
        let test = try TestWallet("recover")
        try test.setBudget("food", "100.00 EUR")
        let walletID = test.wallet!.walletID
        test.close()
        // The main token is "lost": recovery uses only the backup token and a new one.
        let newToken = try TestTokens.fresh("recover-new")
        let backup = try test.backup.session(), fresh = try newToken.session()
        try Wallet.recover(paths: test.paths, backup: backup, newToken: fresh, newTokenURI: newToken.uri)
        backup.close()
        fresh.close()
        var reopened: Wallet? = try Wallet.open(paths: test.paths, token: try newToken.session())
        try readOnlyChecks(reopened!, walletID: walletID)
        reopened = nil
        // A stranger's token cannot recover it.
        let stranger = try TestTokens.fresh("recover-x")
        #expect(throws: WalletError(.keyMismatch, "")) {
            try Wallet.recover(
                paths: test.paths, backup: try stranger.session(), newToken: try newToken.session(),
                newTokenURI: newToken.uri)
        }
    }

    func readOnlyChecks(_ reopened: Wallet, walletID: WalletID) throws {
        #expect(reopened.walletID == walletID)
        #expect(reopened.state.budgets["food"] != nil, "reading works")
        #expect(reopened.lockReason == nil)
        #expect(throws: WalletError(.keyMismatch, "")) {
            try reopened.appendDraft(
                EntryDraft(
                    kind: .budgetChange, amount: nil, category: "food", statement: nil,
                    payload: BudgetChange.remove(category: "food").payload))
        }
        #expect(try LedgerVerifier.verify(reopened.ledger, walletID: walletID).isValid)
    }

    @Test func acceptRollbackReanchorsAndRecordsIt() throws {
        let test = try TestWallet("accept")
        try test.setBudget("a", "1.00 EUR")
        test.close()
        let copy = TestTokens.layout.directory + "/copy-\(UUID().uuidString)"
        try test.copyFiles(to: copy)
        try test.reopen()
        try test.setBudget("b", "2.00 EUR")
        test.close()
        try test.restoreFiles(from: copy, only: ["ledger.db", "ledger.db-wal", "ledger.db-shm"])
        try test.reopen()
        #expect(test.wallet!.lockReason != nil)
        let entry = try test.wallet!.acceptRollback()
        #expect(entry.kind == .rollbackAccepted)
        #expect(try SignedCheckpoint.decode(entry.payload)?.checkpoint.size == 3, "the abandoned anchor is kept")
        try test.reopen()
        #expect(test.wallet!.lockReason == nil)
        try test.setBudget("c", "3.00 EUR")
        #expect(try LedgerVerifier.verify(test.wallet!.ledger, walletID: test.wallet!.walletID).isValid)
    }
}
