import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecurePeer
@testable import SecureStore
@testable import SecureWallet

/// Key rotation on real SoftHSM tokens and SQLCipher files.
@Suite("Key rotation", .serialized)
struct RotationTests {
    typealias Issuer = WalletOperationTests.Issuer

    /// Rotates with the wallet's backup token.
    @discardableResult
    static func rotate(_ test: TestWallet, destroyOld: Bool = false, crash: Wallet.RotationStep? = nil) throws
        -> Wallet.RotationResult
    {
        let backup = try test.backup.session()
        defer { backup.close() }
        return try test.wallet!.rotate(backup: backup, destroyOld: destroyOld, crash: crash)
    }

    @Test func rotateThenPayAndReceive() throws {
        let issuer = try Issuer()
        let alice = try WalletOperationTests.funded("rot-a", "30.00 EUR", issuer: issuer)
        let bob = try WalletOperationTests.payee("rot-b", trusting: issuer)
        let oldKey = alice.wallet!.signingKey
        let result = try Self.rotate(alice)
        #expect(result.events.map(\.event.sequence) == [1, 2])
        #expect(result.events.allSatisfy { $0.countersignature != nil }, "the old key was at hand and countersigned")
        var wallet: Wallet! = alice.wallet!
        #expect(wallet.signingKey != oldKey)
        #expect(wallet.keyLog.events.count == 3)
        #expect(wallet.latest!.checkpoint.walletKey == wallet.signingKey)
        #expect(wallet.latest!.checkpoint.keySequence == 2)
        // Pay after the rotation: the transfer's checkpoint is dated by the new key.
        let transfer = try wallet.spend(
            to: bob.wallet!.walletID, amount: try wallet.asset("10.00 EUR"), category: "food")
        #expect(transfer.payload.order.payerKey == wallet.signingKey)
        guard
            case .recorded(let credit) = try bob.wallet!.accept(
                transfer, payerLog: alice.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        else { Issue.record("the payee did not credit a transfer made after the rotation"); return }
        let receipt = try bob.wallet!.receipt(for: transfer, creditPosition: credit.position)
        try wallet.confirm(receipt, payeeLog: bob.wallet!.keyLog)
        // Receive after the rotation, with the payee rotated too.
        try Self.rotate(bob)
        let back = try bob.wallet!.spend(to: wallet.walletID, amount: try bob.wallet!.asset("4.00 EUR"), category: "")
        guard
            case .recorded = try wallet.accept(
                back, payerLog: bob.wallet!.keyLog, policy: TransferPolicy(acceptsWithoutProximity: true))
        else {
            Issue.record("a transfer from a rotated payer was not credited"); return
        }
        #expect(try WalletOperationTests.balance(alice) == "24.00 EUR")
        // Reopen: the key in force comes from the ledger; the whole ledger verifies across the rotation.
        let keyInForce = wallet.signingKey
        wallet = nil
        let reopened = try alice.reopen()
        #expect(reopened.signingKey == keyInForce)
        let report = try LedgerVerifier.verify(reopened.ledger, walletID: reopened.walletID)
        #expect(report.isValid, "\(report.problems)")
        #expect(report.keyLog?.events.count == 3)
        try alice.setBudget("food", "50.00 EUR")
        // Proofs across the rotation verify against the key-event log (from an audit bundle): an entry from
        // before it in the latest checkpoint, and the old key's checkpoint extended by the new key's. The
        // consistency proof verifies with neither key alone.
        let wallet2 = alice.wallet!
        let first = try #require(try wallet2.ledger.entry(at: 1))
        let log = try AuditBundleFile.keyEventLog(json: Data(try AuditBundleFile.export(wallet2)))
        #expect(try LedgerProof.inclusion(of: first.id, in: wallet2).verify(log: log).contains("entry 1"))
        let across = try LedgerProof.consistency(from: 2, to: wallet2.size, in: wallet2)
        #expect(try across.verify(log: log).contains("extends checkpoint 2"))
        #expect(throws: WalletError.self) { try across.verify(key: oldKey) }
        #expect(throws: WalletError.self) { try across.verify(key: wallet2.signingKey) }
    }

    @Test func destroyOldDeletesOnlyRetiredKeys() throws {
        let test = try TestWallet("rot-destroy")
        let old = test.wallet!.signingKey
        let result = try Self.rotate(test, destroyOld: true)
        #expect(result.destroyed == 2, "the old key on the wallet's token and the hop key on the backup")
        let main = try test.main.session(), backup = try test.backup.session()
        defer { main.close(); backup.close() }
        let remaining = try main.keys().map(\.publicKey) + backup.keys().map(\.publicKey)
        #expect(!remaining.contains(old))
        #expect(remaining.contains(test.wallet!.signingKey))
        #expect(
            remaining.contains { $0.fingerprintDigest == test.wallet!.keyEvent.event.nextKeyDigest },
            "the next key is kept")
        try test.setBudget("x", "1.00 EUR")
    }

    @Test func rotationFromTheSecondTokenAfterTheFirstIsGone() throws {
        let test = try TestWallet("rot-lost")
        try test.setBudget("food", "100.00 EUR")
        let walletID = test.wallet!.walletID
        test.close()
        let newToken = try TestTokens.fresh("rot-lost-new")
        do {
            let backup = try test.backup.session(), fresh = try newToken.session()
            defer { backup.close(); fresh.close() }
            try Wallet.recover(paths: test.paths, backup: backup, newToken: fresh, newTokenURI: newToken.uri)
        }
        // The test wallet's clock, as before the loss: the system's would be months past its entries.
        let now = test.now
        let recovered = try Wallet.open(paths: test.paths, token: try newToken.session(), clock: { now })
        #expect(throws: WalletError(.keyMismatch, "")) { try recovered.signer }
        let backup = try test.backup.session()
        defer { backup.close() }
        let result = try recovered.rotate(backup: backup, destroyOld: false)
        #expect(
            result.events.allSatisfy { $0.countersignature == nil } == false, "the hop key countersigns the home event")
        #expect(result.events[0].countersignature == nil, "the lost key cannot countersign")
        #expect(try recovered.signer.publicKey == recovered.signingKey)
        try recovered.appendDraft(
            EntryDraft(
                kind: .budgetChange, amount: nil, category: "food", statement: nil,
                payload: BudgetChange.remove(category: "food").payload))
        #expect(try LedgerVerifier.verify(recovered.ledger, walletID: walletID).isValid)
    }

    /// Each step of a rotation, stopped as by a crash: the wallet reopens with exactly one key in force
    /// (the last key event in its ledger), that key signs, and rotating again completes the rotation.
    @Test(arguments: Wallet.RotationStep.allCases)
    func crashDuringRotation(at step: Wallet.RotationStep) throws {
        let test = try TestWallet("rot-crash")
        let before = test.wallet!.keyLog
        #expect(throws: RotationCrash(step: step)) { try Self.rotate(test, destroyOld: true, crash: step) }
        let reopened = try test.reopen()
        let events = reopened.keyLog.events.count
        let expected: Int
        switch step {
        case .keyGenerated, .eventSigned: expected = 1
        case .eventRecorded, .homeKeyGenerated, .homeEventSigned: expected = 2
        case .homeEventRecorded, .metadataSaved, .oldKeysDestroyed: expected = 3
        }
        #expect(events == expected, "step \(step.rawValue)")
        #expect(reopened.keyLog.events.prefix(1).elementsEqual(before.events))
        #expect(reopened.latest!.checkpoint.walletKey == reopened.signingKey, "step \(step.rawValue): one key in force")
        #expect(
            try LedgerVerifier.verify(reopened.ledger, walletID: reopened.walletID).isValid, "step \(step.rawValue)")
        if events == 2 {
            // The hop key on the backup is in force; the wallet's token holds no key in force until the rotation ends.
            #expect(throws: WalletError(.keyMismatch, "")) { try reopened.signer }
        }
        if events != 3 { try Self.rotate(test) }
        #expect(test.wallet!.keyLog.events.count == 3, "step \(step.rawValue): rotating again completes the rotation")
        try test.setBudget("food", "5.00 EUR")
        // No more keys were made than the one rotation needs, crash or not: the leftover is reused.
        let main = try test.main.session(), backup = try test.backup.session()
        defer { main.close(); backup.close() }
        let logKeys = Set(
            test.wallet!.keyLog.events.map(\.event.signingKey.fingerprintDigest) + [
                test.wallet!.keyEvent.event.nextKeyDigest
            ]
        )
        let stray = (try main.keys() + backup.keys()).filter {
            $0.label.contains("-key-") && !logKeys.contains($0.publicKey.fingerprintDigest)
        }
        #expect(stray.isEmpty, "step \(step.rawValue): keys outside the log: \(stray.map(\.label))")
    }

    @Test func aRetiredKeyCannotSignForTheWallet() throws {
        let test = try TestWallet("rot-retired")
        let oldSession = try test.main.session()
        defer { oldSession.close() }
        let oldKey = try oldSession.keys().first { $0.publicKey == test.wallet!.signingKey }!
        let retiredInception = test.wallet!.keyEvent
        try Self.rotate(test)
        let wallet = test.wallet!
        // The thief holding the retired key signs a checkpoint dated in its own sequence but covering the ledger now.
        let state = wallet.state
        let late = try Checkpoint(
            walletID: wallet.walletID, walletKey: oldKey.publicKey, keySequence: 0, keyEventPosition: 0,
            state: state, root: wallet.latest!.checkpoint.root, time: wallet.latest!.checkpoint.time,
            index: wallet.latest!.checkpoint.index
        )
        .sign(with: TokenSigner(token: oldSession, key: oldKey))
        guard case .retired(let rotation) = wallet.keyLog.check(late) else {
            Issue.record("a retired key's checkpoint after its retirement was not refused"); return
        }
        let evidence = ForkEvidence(
            .retiredKeySignature(
                RetiredKeySignature(retiredEvent: retiredInception, rotation: rotation, checkpoint: late)),
            log: wallet.keyLog)
        #expect(evidence.verify().isProven)
    }
}

@Suite("Following peers' key-event logs", .serialized)
struct PeerKeyLogTests {
    @Test func aPeerLogIsKeptAndFollowedThroughRotations() throws {
        let alice = try TestWallet("follow-a")
        let bob = try TestWallet("follow-b")
        let aliceID = alice.wallet!.walletID
        #expect(try bob.wallet!.followKeyEvents(of: aliceID, events: alice.wallet!.keyLog.events) == .followed)
        let inceptionOnly = alice.wallet!.keyLog
        try RotationTests.rotate(alice)
        #expect(try bob.wallet!.followKeyEvents(of: aliceID, events: alice.wallet!.keyLog.events) == .followed)
        #expect(try bob.wallet!.peerKeyLog(of: aliceID) == alice.wallet!.keyLog)
        // The stored log survives a reopen (schema 2's peer_key_events table).
        try bob.reopen()
        #expect(try bob.wallet!.peerKeyLog(of: aliceID)?.events.count == 3)
        // An older log is refused and changes nothing; a log of another wallet id is refused.
        guard case .refused = try bob.wallet!.followKeyEvents(of: aliceID, events: inceptionOnly.events) else {
            Issue.record("an older log replaced a newer one"); return
        }
        guard
            case .refused = try bob.wallet!.followKeyEvents(
                of: WalletID(bytes: Array(repeating: 7, count: 32))!, events: inceptionOnly.events)
        else {
            Issue.record("a log was kept under another wallet id"); return
        }
        #expect(try bob.wallet!.peerKeyLog(of: aliceID)?.events.count == 3)
    }

    @Test func schemaOneMigratesToTwo() throws {
        let test = try TestWallet("migrate")
        let key = try test.databaseKey()
        let salt = try LedgerStore.fileSalt(test.paths.database)
        let walletID = test.wallet!.walletID
        test.close()
        do {
            let store = try LedgerStore.open(
                path: test.paths.database, key: key, expectedSalt: salt, walletID: walletID)
            try store.database.execute("DROP TABLE peer_key_events")
            try store.database.execute("PRAGMA user_version = 1")
        }
        let store = try LedgerStore.open(path: test.paths.database, key: key, expectedSalt: salt, walletID: walletID)
        #expect(
            try store.peerKeyEventLog(wallet: WalletID(bytes: Array(repeating: 1, count: 32))!) == nil,
            "the table exists again")
    }
}
