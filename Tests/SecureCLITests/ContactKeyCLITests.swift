import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import SecureWallet
import Testing

/// The contact key across processes: the real `secure` binary makes and rotates a wallet on SoftHSM tokens of
/// this test process's token folder, and this process opens the same wallet through SecureWallet, so the seed
/// one process wrote is the one another reads. `wallet show` and `keys rotate` print the key's fingerprint,
/// and `ledger verify` (a process of its own) makes each key from its seed and checks it against its event.
@Suite("Contact keys with the real binary", .serialized)
struct ContactKeyCLITests {
    /// Tokens in this process's folder, so that both this process and the binary see them.
    struct Setup {
        let main: TestTokens.Fresh
        let backup: TestTokens.Fresh
        let directory: String

        init(_ name: String) throws {
            main = try TestTokens.fresh(name)
            backup = try TestTokens.fresh(name + "-bk")
            directory = TestTokens.layout.directory + "/cli-\(name)-\(UUID().uuidString.prefix(8))"
        }

        var wallet: [String] { ["--wallet", directory, "--pin-source", "file:" + main.pinPath] }
        var backupOptions: [String] {
            [
                "--backup-token", backup.uri.withoutPIN.tokenOnly.description, "--backup-pin-source",
                "file:" + backup.pinPath,
            ]
        }

        func run(_ arguments: [String]) throws -> ProcessResult {
            try Run.program(
                Run.secure, arguments,
                environment: [
                    "SOFTHSM2_CONF": TestTokens.layout.configPath,
                    "XDG_STATE_HOME": TestTokens.layout.directory + "/state",
                ])
        }

        /// The wallet opened in this process, for reading.
        func open() throws -> Wallet {
            try Wallet.open(paths: WalletPaths(directory: directory), token: try main.session(), access: .reading)
        }

        func showJSON() throws -> [String: Any] {
            let show = try run(["wallet", "show", "--json"] + wallet)
            #expect(show.status == 0, "\(show.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(show.stdout)) as? [String: Any])
        }
    }

    @Test func theSeedOneProcessWroteMakesTheKeyAnotherReads() throws {
        let setup = try Setup("ckcli")
        let made = try setup.run(
            ["wallet", "init", "--token", setup.main.uri.withoutPIN.tokenOnly.description] + setup.backupOptions
                + setup.wallet)
        #expect(made.status == 0, "\(made.stderr)")
        let shown = try setup.showJSON()
        #expect(shown["format"] as? String == "secure-wallet-v3")
        let fingerprint = try #require(shown["contactKeyFingerprint"] as? String)
        let text = try setup.run(["wallet", "show"] + setup.wallet)
        #expect(text.output.contains("contact key  \(fingerprint)\n"), "\(text.output)")

        // This process reads the seed the binary wrote: the pair it makes is the one the event names.
        let first: MLKEM1024.PublicKey
        do {
            let wallet = try setup.open()
            defer { (wallet.token as? TokenSession)?.close() }
            let (publicKey, privateKey) = try wallet.contactKeyPair()
            #expect(KeyEvent.contactKeyDigest(of: publicKey).hex == fingerprint)
            let (secret, ciphertext) = publicKey.encapsulate()
            #expect(try privateKey.decapsulate(ciphertext) == secret)
            first = publicKey
        }

        // A rotation by the binary puts a new one in force; this process then reads both by sequence.
        let rotated = try setup.run(["keys", "rotate", "--json"] + setup.backupOptions + setup.wallet)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let rotation = try #require(try JSONSerialization.jsonObject(with: Data(rotated.stdout)) as? [String: Any])
        #expect(rotation["format"] as? String == "secure-key-rotation-v3")
        let newFingerprint = try #require(rotation["contactKeyFingerprint"] as? String)
        #expect(newFingerprint != fingerprint && newFingerprint.count == 64)
        #expect(try setup.showJSON()["contactKeyFingerprint"] as? String == newFingerprint)
        do {
            let wallet = try setup.open()
            defer { (wallet.token as? TokenSession)?.close() }
            #expect(try KeyEvent.contactKeyDigest(of: wallet.contactKeyPair().publicKey).hex == newFingerprint)
            #expect(try wallet.contactPublicKey != first)
        }
        let verify = try setup.run(["ledger", "verify"] + setup.wallet)
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
    }

    /// A wallet made before contact keys (its inception a version 2 event, made here through SecureWallet):
    /// the binary shows "none" with the way out, verifies it, and one `keys rotate` gives it a contact key.
    @Test func aWalletWithoutAContactKeyIsShownHowToGetOne() throws {
        let setup = try Setup("ckcli-old")
        do {
            let backup = try setup.backup.session(), session = try setup.main.session()
            defer { backup.close(); session.close() }
            var options = Wallet.InitOptions(
                tokenURI: setup.main.uri, backup: (backup, setup.backup.uri), allowFileAnchor: false)
            options.inceptionVersion = 2
            let wallet = try Wallet.create(
                paths: WalletPaths(directory: setup.directory), token: session, options: options)
            #expect(wallet.keyLog.current.version == 2)
        }
        let text = try setup.run(["wallet", "show"] + setup.wallet)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.output.contains("contact key  none (rotate to add one: `secure keys rotate"), "\(text.output)")
        #expect(try setup.showJSON()["contactKeyFingerprint"] is NSNull)
        let verify = try setup.run(["ledger", "verify"] + setup.wallet)
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
        let rotated = try setup.run(["keys", "rotate"] + setup.backupOptions + setup.wallet)
        #expect(rotated.status == 0 && rotated.output.contains("contact key: "), "\(rotated.stderr)")
        let fingerprint = try #require(try setup.showJSON()["contactKeyFingerprint"] as? String)
        let wallet = try setup.open()
        defer { (wallet.token as? TokenSession)?.close() }
        #expect(try KeyEvent.contactKeyDigest(of: wallet.contactKeyPair().publicKey).hex == fingerprint)
        #expect(try setup.run(["ledger", "verify"] + setup.wallet).status == 0)
    }
}
