import Foundation
import SecureCore
import SecureCrypto
import SecureStore
import SecureTestSupport
import SecureToken
import SecureWallet
import Testing

/// The contact key across processes, with the real `secure` binary on SoftHSM tokens: the seed one process
/// wrote is the one another reads. The binary runs on token folders of its own (a SoftHSM process reading a
/// folder in which this test process is making tokens can fail with CKR_GENERAL_ERROR), so this process reads
/// what the binary wrote through the recovery words' copy of the database key, with no token, and makes its
/// wallet from before contact keys on its own tokens and hands the binary copies of them.
@Suite("Contact keys with the real binary", .serialized)
struct ContactKeyCLITests {
    typealias World = WalletCLITests.World

    /// Each key event of the wallet with the contact key its stored seed makes, read as a second process reads
    /// it: the recovery words unwrap the database key (keys.bin's type 3 copy), and the database is opened for
    /// reading. Every key made from a seed must be the one its event names.
    static func contactKeys(_ world: World, _ name: String) throws -> [(event: KeyEvent, key: MLKEM1024.PrivateKey)] {
        let text = try String(contentsOfFile: world.directory + "/\(name).words", encoding: .utf8)
        let phrase = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: " ")
        let secret = try RecoveryWords.secret(of: phrase)
        let folder = world.directory + "/" + name
        let wrapped = try WrappedKeyFile(
            encoded: Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/keys.bin"))))
        let store = try LedgerStore.openForReading(
            path: folder + "/ledger.db", key: try wrapped.unwrap(recoverySecret: secret),
            expectedSalt: wrapped.databaseSalt, walletID: wrapped.walletID)
        var keys: [(event: KeyEvent, key: MLKEM1024.PrivateKey)] = []
        for entry in try store.entries(kind: .keyEvent) {
            let event = try #require(try SignedKeyEvent.decode(entry.payload)).event
            guard event.hasContactKey else { continue }
            let seed = try #require(try store.contactKeySeed(sequence: event.sequence), "seed of \(event.sequence)")
            let key = try MLKEM1024.PrivateKey(seed: seed)
            #expect(KeyEvent.contactKeyDigest(of: key.publicKey) == event.contactKeyDigest, "event \(event.sequence)")
            keys.append((event, key))
        }
        return keys
    }

    static func showJSON(_ world: World, _ arguments: [String]) throws -> [String: Any] {
        let show = try world.run(["wallet", "show", "--json"] + arguments)
        #expect(show.status == 0, "\(show.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(show.stdout)) as? [String: Any])
    }

    @Test func theSeedOneProcessWroteMakesTheKeyAnotherReads() throws {
        let world = try World(wallets: [])
        for label in ["carol", "carol-bk"] {
            let made = try Run.program(
                Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", label])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let made = try world.run(
            [
                "wallet", "init", "--token", "pkcs11:token=carol?module-name=softhsm2",
                "--backup-token", "pkcs11:token=carol-bk?module-name=softhsm2",
                "--backup-pin-source", "file:toks/carol-bk.pin", "--recovery-words", "--recovery-words-file",
                "carol.words",
            ] + world.wallet("carol"))
        #expect(made.status == 0, "\(made.stderr)")
        let shown = try Self.showJSON(world, world.wallet("carol"))
        #expect(shown["format"] as? String == "secure-wallet-v3")
        let fingerprint = try #require(shown["contactKeyFingerprint"] as? String)
        let text = try world.run(["wallet", "show"] + world.wallet("carol"))
        #expect(text.output.contains("contact key  \(fingerprint)\n"), "\(text.output)")

        // This process reads the seed the binary wrote: the pair it makes is the one the event names, and works.
        let first = try Self.contactKeys(world, "carol")
        #expect(first.count == 1 && first[0].event.contactKeyDigest.hex == fingerprint)
        let (secret, ciphertext) = first[0].key.publicKey.encapsulate()
        #expect(try first[0].key.decapsulate(ciphertext) == secret)

        // A rotation by the binary puts a new one in force; this process then reads all three by sequence.
        let rotated = try world.run(
            ["keys", "rotate", "--json", "--backup-pin-source", "file:toks/carol-bk.pin"] + world.wallet("carol"))
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let rotation = try #require(try JSONSerialization.jsonObject(with: Data(rotated.stdout)) as? [String: Any])
        #expect(rotation["format"] as? String == "secure-key-rotation-v3")
        let newFingerprint = try #require(rotation["contactKeyFingerprint"] as? String)
        #expect(newFingerprint != fingerprint && newFingerprint.count == 64)
        #expect(try Self.showJSON(world, world.wallet("carol"))["contactKeyFingerprint"] as? String == newFingerprint)
        let all = try Self.contactKeys(world, "carol")
        #expect(all.map(\.event.sequence) == [0, 1, 2] && all[2].event.contactKeyDigest.hex == newFingerprint)
        #expect(all[0].key.publicKey == first[0].key.publicKey, "the first seed is kept")
        #expect(try all[0].key.decapsulate(ciphertext) == secret)
        let verify = try world.run(["ledger", "verify"] + world.wallet("carol"))
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
    }

    /// Copies of `tokens` (found by their label in SoftHSM's token.object) in a token folder of their own under
    /// `directory`, with its SoftHSM config, so the binary never reads this process's token folder. A child
    /// process finds and copies them: SoftHSM in this process holds fcntl locks on those files, and this process
    /// closing any descriptor of one (as reading it would) drops them, which can fail another test's token.
    static func privateTokens(_ tokens: [TestTokens.Fresh], in directory: String) throws -> String {
        let target = directory + "/tokens"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for token in tokens {
            let copied = try Run.program(
                "/bin/sh",
                [
                    "-c",
                    "n=0; for d in \"$1\"/*/; do if grep -qF -- \"$2\" \"$d/token.object\"; then cp -a \"$d\" \"$3/\"; "
                        + "n=$((n+1)); fi; done; echo $n",
                    "sh", TestTokens.layout.tokenDirectory, token.token.label, target,
                ])
            #expect(copied.status == 0 && copied.output == "1\n", "the token \(token.token.label): \(copied.stderr)")
            try FileManager.default.copyItem(
                atPath: token.pinPath, toPath: directory + "/" + token.token.label + ".pin")
        }
        let config = directory + "/softhsm2.conf"
        try "directories.tokendir = \(target)\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    /// A wallet made before contact keys (its inception a version 2 event, made here through SecureWallet):
    /// the binary shows "none" with the way out, verifies it, and one `keys rotate` gives it a contact key.
    @Test func aWalletWithoutAContactKeyIsShownHowToGetOne() throws {
        let main = try TestTokens.fresh("ckcli-old"), backup = try TestTokens.fresh("ckcli-old-bk")
        let made = TestTokens.layout.directory + "/ckcli-old-\(UUID().uuidString.prefix(8))"
        do {
            let backupSession = try backup.session(), session = try main.session()
            defer { backupSession.close(); session.close() }
            var options = Wallet.InitOptions(
                tokenURI: main.uri, backup: (backupSession, backup.uri), allowFileAnchor: false)
            options.inceptionVersion = 2
            let wallet = try Wallet.create(paths: WalletPaths(directory: made), token: session, options: options)
            #expect(wallet.keyLog.current.version == 2)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-ckcli-\(UUID())").path
        let config = try Self.privateTokens([main, backup], in: directory)
        try FileManager.default.copyItem(atPath: made, toPath: directory + "/wallet")
        let wallet = ["--wallet", "wallet", "--pin-source", "file:" + main.token.label + ".pin"]
        let backupOptions = ["--backup-pin-source", "file:" + backup.token.label + ".pin"]
        func run(_ arguments: [String]) throws -> ProcessResult {
            try Run.program(
                Run.secure, arguments, environment: ["SOFTHSM2_CONF": config, "XDG_STATE_HOME": directory + "/state"],
                directory: directory)
        }
        let text = try run(["wallet", "show"] + wallet)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.output.contains("contact key  none (rotate to add one: `secure keys rotate"), "\(text.output)")
        let json = try run(["wallet", "show", "--json"] + wallet)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any])
        #expect(document["contactKeyFingerprint"] is NSNull)
        let verify = try run(["ledger", "verify"] + wallet)
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
        let rotated = try run(["keys", "rotate"] + backupOptions + wallet)
        #expect(rotated.status == 0 && rotated.output.contains("contact key: "), "\(rotated.stderr)")
        let after = try run(["wallet", "show", "--json"] + wallet)
        let fingerprint =
            (try JSONSerialization.jsonObject(with: Data(after.stdout)) as? [String: Any])?[
                "contactKeyFingerprint"] as? String
        #expect(fingerprint?.count == 64, "\(after.output)")
        // `ledger verify` makes the key from the seed the rotation stored and checks it against its event.
        let again = try run(["ledger", "verify"] + wallet)
        #expect(again.status == 0 && again.output.contains("ledger OK"), "\(again.output) \(again.stderr)")
    }
}
