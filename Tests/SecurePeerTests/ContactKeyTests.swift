import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecureStore
@testable import SecureWallet

/// The wallet's long-term ML-KEM-1024 contact key on real SoftHSM tokens and a real SQLCipher file: named by
/// each key event (version 3), its seed kept in the database by sequence, replaced by rotation and recovery,
/// checked against the event, and refused with a way out for a wallet made before contact keys.
@Suite("Contact keys", .serialized)
struct ContactKeyTests {
    /// A wallet made as one made before contact keys was: its inception is a version 2 event.
    static func olderWallet(_ name: String) throws -> TestWallet {
        try TestWallet(name, inceptionVersion: 2)
    }

    @Test func aNewWalletHasAContactKeyNamedByItsInception() throws {
        let test = try TestWallet("ck-new")
        defer { test.close() }
        let wallet = try #require(test.wallet)
        let inception = wallet.keyLog.events[0].event
        #expect(inception.version == 3 && inception.hasContactKey)
        let (publicKey, privateKey) = try wallet.contactKeyPair()
        #expect(KeyEvent.contactKeyDigest(of: publicKey) == inception.contactKeyDigest)
        #expect(wallet.keyLog.currentContactKeyDigest == inception.contactKeyDigest)
        #expect(try wallet.contactPublicKey == publicKey)
        #expect(privateKey.publicKey == publicKey)
        #expect(try wallet.ledger.contactKeySequences() == [0])
        // The pair works: what is encapsulated to the public key, the private key opens.
        let (secret, ciphertext) = publicKey.encapsulate()
        #expect(try privateKey.decapsulate(ciphertext) == secret)
        #expect(try wallet.verifyLedger().isValid)
    }

    @Test func aReopenedWalletGivesTheSameKeyPair() throws {
        let test = try TestWallet("ck-reopen")
        defer { test.close() }
        let (publicKey, _) = try test.wallet!.contactKeyPair()
        let (secret, ciphertext) = publicKey.encapsulate()
        let reopened = try test.reopen()
        let (again, privateKey) = try reopened.contactKeyPair()
        #expect(again == publicKey)
        #expect(try privateKey.decapsulate(ciphertext) == secret, "the reopened key opens what was sealed before")
        test.close()
        // A reading open (no lock, one WAL snapshot) reads it too.
        let reader = try Wallet.open(paths: test.paths, token: try test.main.session(), access: .reading)
        defer { (reader.token as? TokenSession)?.close() }
        #expect(try reader.contactKeyPair().publicKey == publicKey)
    }

    @Test func rotationPutsANewContactKeyInForceAndKeepsTheOldSeeds() throws {
        let test = try TestWallet("ck-rotate")
        defer { test.close() }
        let current: MLKEM1024.PublicKey
        do {
            let wallet = try #require(test.wallet)
            let (first, firstPrivate) = try wallet.contactKeyPair()
            let (secret, ciphertext) = first.encapsulate()
            let backup = try test.backup.session()
            defer { backup.close() }
            let result = try wallet.rotate(backup: backup, destroyOld: false)
            #expect(result.events.count == 2)
            let digests = wallet.keyLog.events.map(\.event.contactKeyDigest)
            #expect(Set(digests).count == 3 && wallet.keyLog.events.allSatisfy { $0.event.hasContactKey })
            current = try wallet.contactKeyPair().publicKey
            #expect(current != first && KeyEvent.contactKeyDigest(of: current) == digests[2])
            #expect(try wallet.ledger.contactKeySequences() == [0, 1, 2], "every seed is kept by its sequence")
            // The old seed still makes the old key, which still opens what was sealed to it.
            let old = try wallet.contactPrivateKey(for: wallet.keyLog.events[0].event)
            #expect(old.publicKey == first && old.seed == firstPrivate.seed)
            #expect(try old.decapsulate(ciphertext) == secret)
        }
        let reopened = try test.reopen()
        #expect(try reopened.contactKeyPair().publicKey == current)
        #expect(try reopened.verifyLedger().isValid)
    }

    @Test func aCorruptedSeedIsDetected() throws {
        let test = try TestWallet("ck-corrupt")
        defer { test.close() }
        let wallet = try #require(test.wallet)
        let seed = try #require(try wallet.ledger.contactKeySeed(sequence: 0))
        var changed = seed.copyBytes()
        changed[5] ^= 0x01
        try wallet.ledger.database.prepare("UPDATE contact_keys SET seed = ? WHERE sequence = 0")
            .bind([.blob(changed)]).run()
        #expect(throws: WalletError(.verificationFailed, "")) { try wallet.contactKeyPair() }
        do {
            _ = try wallet.contactKeyPair()
        } catch let error as WalletError {
            #expect("\(error)".contains("does not make the key that event names"), "\(error)")
        }
        let report = try wallet.verifyLedger()
        #expect(
            report.problems.contains { $0.contains("contact_keys, row 0") && $0.contains("does not make") },
            "\(report.problems)")
        // A seed of the wrong length, and a missing one, are caught too.
        try wallet.ledger.database.prepare("UPDATE contact_keys SET seed = ? WHERE sequence = 0")
            .bind([.blob([1, 2, 3])]).run()
        #expect(throws: WalletError(.verificationFailed, "")) { try wallet.contactKeyPair() }
        try wallet.ledger.database.execute("DELETE FROM contact_keys")
        #expect(throws: WalletError(.verificationFailed, "")) { try wallet.contactKeyPair() }
        #expect(
            try wallet.verifyLedger().problems.contains { $0.contains("key event 0's contact key is missing") })
    }

    @Test func aSeedForAnEventWithoutAContactKeyIsAProblem() throws {
        let test = try Self.olderWallet("ck-stray")
        defer { test.close() }
        let wallet = try #require(test.wallet)
        try wallet.ledger.database.prepare("INSERT INTO contact_keys (sequence, seed) VALUES (0, ?)")
            .bind([.blob([UInt8](repeating: 7, count: 64))]).run()
        #expect(
            try wallet.verifyLedger().problems.contains {
                $0.contains("contact_keys, row 0") && $0.contains("names a contact key")
            })
    }

    @Test func aWalletMadeBeforeContactKeysIsToldToRotate() throws {
        let test = try Self.olderWallet("ck-older")
        defer { test.close() }
        let inceptionBytes: [UInt8]
        do {
            let wallet = try #require(test.wallet)
            let inception = wallet.keyLog.events[0].event
            #expect(inception.version == 2 && inception.encoded.count == 277 && !inception.hasContactKey)
            #expect(wallet.keyLog.currentContactKeyDigest == nil)
            #expect(try wallet.contactPublicKey == nil)
            do {
                _ = try wallet.contactKeyPair()
                Issue.record("a wallet without a contact key gave one")
            } catch let error as WalletError {
                #expect(error.code == .noContactKey && error.kind == .refused)
                #expect("\(error)".contains("secure keys rotate"), "\(error)")
            }
            #expect(try wallet.ledger.contactKeySequences().isEmpty)
            #expect(try wallet.verifyLedger().isValid, "a version 2 wallet still verifies")
            inceptionBytes = wallet.keyLog.events[0].encoded
        }
        // Its version 2 inception stays as it was written; one rotation gives it a contact key.
        let reopened = try test.reopen()
        #expect(reopened.keyLog.events[0].encoded == inceptionBytes)
        let backup = try test.backup.session()
        defer { backup.close() }
        _ = try reopened.rotate(backup: backup, destroyOld: false)
        #expect(reopened.keyLog.events.map(\.event.version) == [2, 3, 3])
        let (publicKey, privateKey) = try reopened.contactKeyPair()
        #expect(KeyEvent.contactKeyDigest(of: publicKey) == reopened.keyLog.currentContactKeyDigest)
        let (secret, ciphertext) = publicKey.encapsulate()
        #expect(try privateKey.decapsulate(ciphertext) == secret)
        #expect(try reopened.ledger.contactKeySequences() == [1, 2])
        #expect(try reopened.verifyLedger().isValid)
    }

    /// A wallet from before contact keys is also on schema 4 (no `contact_keys` table): a reading open asks for
    /// `ledger repair`, an appending open migrates it, and a rotation then gives it a contact key.
    @Test func aSchemaFourWalletMigratesAndRotatesToAContactKey() throws {
        let test = try Self.olderWallet("ck-schema")
        let key = try test.databaseKey()
        let salt = try LedgerStore.fileSalt(test.paths.database)
        let walletID = test.wallet!.walletID
        test.close()
        do {
            let store = try LedgerStore.open(
                path: test.paths.database, key: key, expectedSalt: salt, walletID: walletID)
            try store.database.execute("DROP TABLE contact_keys")
            try store.database.execute("PRAGMA user_version = 4")
        }
        #expect(throws: StoreError(.schemaOutdated, "")) {
            _ = try Wallet.open(paths: test.paths, token: try test.main.session(), access: .reading)
        }
        let reopened = try test.reopen()
        #expect(try reopened.ledger.contactKeySequences().isEmpty, "the table exists again, empty")
        #expect(throws: WalletError(.noContactKey, "")) { try reopened.contactKeyPair() }
        let backup = try test.backup.session()
        defer { backup.close(); test.close() }
        _ = try reopened.rotate(backup: backup, destroyOld: false)
        #expect(try reopened.contactPublicKey != nil)
        #expect(try reopened.verifyLedger().isValid)
    }

    /// After the wallet's token is lost, the backup token opens the database and with it the same seed; the
    /// rotation that follows puts a new contact key in force.
    @Test func theBackupTokenRecoversTheContactKey() throws {
        let test = try TestWallet("ck-lost")
        let (publicKey, _) = try test.wallet!.contactKeyPair()
        test.close()
        let newToken = try TestTokens.fresh("ck-lost-new")
        do {
            let backup = try test.backup.session(), fresh = try newToken.session()
            defer { backup.close(); fresh.close() }
            try Wallet.recover(paths: test.paths, backup: backup, newToken: fresh, newTokenURI: newToken.uri)
        }
        let now = test.now
        let recovered = try Wallet.open(paths: test.paths, token: try newToken.session(), clock: { now })
        defer { (recovered.token as? TokenSession)?.close() }
        #expect(try recovered.contactKeyPair().publicKey == publicKey, "the same seed, opened by the backup token")
        let backup = try test.backup.session()
        defer { backup.close() }
        _ = try recovered.rotate(backup: backup, destroyOld: false)
        #expect(try recovered.contactKeyPair().publicKey != publicKey)
    }

    /// The recovery words open the database and make a recovery rotation, which puts a new contact key in force.
    @Test func aRecoveryRotationPutsANewContactKeyInForce() throws {
        let main = try TestTokens.fresh("ck-words"), backupToken = try TestTokens.fresh("ck-words-bk")
        let paths = WalletPaths(
            directory: TestTokens.layout.directory + "/wallet-ck-words-\(UUID().uuidString.prefix(8))")
        let secret = SecretBytes(randomCount: RecoveryWords.secretByteCount)
        let first: MLKEM1024.PublicKey
        do {
            let backup = try backupToken.session(), session = try main.session()
            defer { backup.close(); session.close() }
            let wallet = try Wallet.create(
                paths: paths, token: session,
                options: Wallet.InitOptions(
                    tokenURI: main.uri, backup: (backup, backupToken.uri), allowFileAnchor: false,
                    recoverySecret: secret))
            first = try wallet.contactKeyPair().publicKey
        }
        let newToken = try TestTokens.fresh("ck-words-new")
        let fresh = try newToken.session()
        defer { fresh.close() }
        let rotation = try Wallet.recover(
            paths: paths, recoverySecret: secret, newToken: fresh, newTokenURI: newToken.uri)
        #expect(rotation.event.isRecovery && rotation.event.hasContactKey)
        let recovered = try Wallet.open(paths: paths, token: fresh)
        let (publicKey, _) = try recovered.contactKeyPair()
        #expect(publicKey != first && KeyEvent.contactKeyDigest(of: publicKey) == rotation.event.contactKeyDigest)
        #expect(try recovered.contactPrivateKey(for: recovered.keyLog.events[0].event).publicKey == first)
        #expect(try recovered.verifyLedger().isValid)
    }
}
