import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import SecureToken
import Testing

@testable import SecureStore
@testable import SecureWallet

/// Attack 6 of issue 12, in its real form: someone who holds the database key (the owner unwraps it with the
/// token; a thief of a folder copy and a PIN-less process could too) rewrites the wallet's index tables, and
/// the stock `secure` binary must refuse to sign anything until the index is the one its latest checkpoint
/// commits to (D). The wallets live on tokens of the test process's own SoftHSM folder (`TestTokens`), so
/// this process can unwrap the database key as that adversary does and edit the SQLCipher file directly.
@Suite("Index commitment: a rewritten index locks the wallet", .serialized)
struct IndexCommitmentCLITests {
    /// Two wallets (alice, bob) made by `secure wallet init` on tokens of the test process's SoftHSM folder.
    final class World {
        let directory: String
        let environment: [String: String]
        var tokens: [String: TestTokens.Fresh] = [:]

        init() throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("secure-index-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            environment = [
                "SOFTHSM2_CONF": TestTokens.layout.configPath, "XDG_STATE_HOME": directory + "/state",
                "XDG_DATA_HOME": directory + "/data",
            ]
            for name in ["alice", "bob"] {
                let main = try TestTokens.fresh("ix-" + name), backup = try TestTokens.fresh("ix-" + name + "-bk")
                tokens[name] = main
                let made = try run([
                    "wallet", "init", "--wallet", name, "--token", main.uri.description, "--pin-source",
                    "file:" + main.pinPath, "--backup-token", backup.uri.description, "--backup-pin-source",
                    "file:" + backup.pinPath,
                ])
                guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
                let card = try run(["wallet", "show", "--card"] + wallet(name))
                try card.output.write(toFile: directory + "/\(name).card", atomically: true, encoding: .utf8)
            }
        }

        func wallet(_ name: String) -> [String] { ["--wallet", name, "--pin-source", "file:" + tokens[name]!.pinPath] }

        func run(_ arguments: [String]) throws -> ProcessResult {
            try Run.program(Run.secure, arguments, environment: environment, directory: directory)
        }

        /// A software issuer that `name` trusts, and a voucher of `amount` from it to `name` in `file`.
        func voucher(_ file: String, to name: String, amount: String) throws {
            let issuer = try SoftwareSigner()
            try issuer.publicKey.pem.write(toFile: directory + "/\(file).pem", atomically: true, encoding: .utf8)
            let trust = try run(["issuer", "trust", "\(file).pem"] + wallet(name))
            #expect(trust.status == 0, "\(trust.stderr)")
            let card = try WalletCard.parse(try String(contentsOfFile: directory + "/\(name).card", encoding: .utf8))
            let voucher = try Voucher(
                issuerKey: issuer.publicKey, recipientWalletID: card.walletID, amount: try MoneyText.parse(amount),
                voucherID: .random(), issuerSequence: 1
            ).sign(with: issuer)
            try Data(voucher.encoded).write(to: URL(fileURLWithPath: directory + "/" + file))
        }

        /// Runs SQL on `name`'s ledger with its database key, unwrapped on its token as its owner can: what an
        /// adversary with that key (and no PIN to sign a checkpoint) can do.
        func tamper(_ name: String, _ sql: String) throws {
            let paths = WalletPaths(directory: directory + "/" + name)
            let session = try tokens[name]!.session()
            defer { session.close() }
            let metadata = try WalletMetadata.load(paths)
            let wrapped = try WrappedKeyFile(
                encoded: Array(try #require(FileManager.default.contents(atPath: paths.wrappedKey))))
            let agreement = try Wallet.keyOnToken(session, idHex: metadata.agreementKeyID, what: "key-agreement")
            let key = try wrapped.unwrap(with: TokenUnwrapper(session: session, key: agreement))
            let store = try LedgerStore.open(
                path: paths.database, key: key, expectedSalt: wrapped.databaseSalt,
                walletID: try metadata.parsedWalletID())
            try store.database.execute(sql)
            #expect(store.database.changes > 0, "the tampering changed no row: \(sql)")
        }

        /// The wallet's entry count, from `wallet show --json`.
        func size(_ name: String) throws -> Int {
            let show = try run(["wallet", "show", "--json"] + wallet(name))
            let row = try JSONSerialization.jsonObject(with: Data(show.stdout)) as? [String: Any]
            return try #require(row?["entries"] as? Int, "\(show.output) \(show.stderr)")
        }
    }

    /// The message every command that would sign gives on a rewritten index: exit 10, naming the index and
    /// `secure ledger verify`.
    static func expectIndexLock(_ result: ProcessResult, _ what: String) {
        #expect(result.status == 10, "\(what): exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("index"), "\(what): \(result.stderr)")
        #expect(result.stderr.contains("secure ledger verify"), "\(what): \(result.stderr)")
    }

    /// Attack 6: with the database key, deleting a deposit's `statements` row let the same voucher be
    /// deposited again, and `spend` went on signing although `ledger verify` failed. Now the open recomputes
    /// D, finds the index differs from the latest checkpoint's, and the wallet signs nothing: the second
    /// deposit and the spend exit 10 and change nothing, reading commands still open and say LOCKED, and
    /// `ledger verify` names the index.
    @Test func aDeletedDepositRowLocksTheWalletAgainstDepositAndSpend() throws {
        let world = try World()
        try world.voucher("v1", to: "alice", amount: "100.00 EUR")
        let deposit = try world.run(["deposit", "v1"] + world.wallet("alice"))
        #expect(deposit.status == 0, "\(deposit.stderr)")
        let size = try world.size("alice")
        try world.tamper("alice", "DELETE FROM statements WHERE kind = \(EntryKind.deposit.rawValue)")

        Self.expectIndexLock(try world.run(["deposit", "v1"] + world.wallet("alice")), "the second deposit")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        Self.expectIndexLock(spend, "the spend")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/t1"), "no transfer was written")
        #expect(try world.size("alice") == size, "nothing was appended")

        let balance = try world.run(["balance"] + world.wallet("alice"))
        #expect(balance.status == 0, "\(balance.stderr)")
        #expect(balance.output.contains("100.00 EUR"), "\(balance.output)")
        #expect(balance.stderr.contains("LOCKED") && balance.stderr.contains("index"), "\(balance.stderr)")
        let show = try world.run(["wallet", "show"] + world.wallet("alice"))
        #expect(show.status == 0 && show.output.contains("LOCKED") && show.output.contains("index"), "\(show.output)")

        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status == 10, "exit \(verify.status): \(verify.output) \(verify.stderr)")
        #expect(verify.output.contains("index tables"), "\(verify.output)")
        #expect(!verify.output.contains("anchor: "), "the index lock is not reported as the anchor's: \(verify.output)")
    }

    /// A sent transfer's status is committed too: marking a pending payment confirmed (which would hide it
    /// from `pending` and its retry) locks the wallet. The lock is derived at each open from the tables, never
    /// stored: with the row put back, the same wallet spends again.
    @Test func anEditedOutgoingStatusLocksTheWalletUntilTheRowIsPutBack() throws {
        let world = try World()
        try world.voucher("v1", to: "alice", amount: "100.00 EUR")
        #expect(try world.run(["deposit", "v1"] + world.wallet("alice")).status == 0)
        func spend(_ out: String) throws -> ProcessResult {
            try world.run(
                ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", out]
                    + world.wallet("alice"))
        }
        let first = try spend("t1")
        #expect(first.status == 0, "\(first.stderr)")

        try world.tamper("alice", "UPDATE outgoing SET status = 1")
        Self.expectIndexLock(try spend("t2"), "a spend after the status edit")
        let pending = try world.run(["pending"] + world.wallet("alice"))
        #expect(pending.status == 0, "\(pending.stderr)")

        try world.tamper("alice", "UPDATE outgoing SET status = 0")
        let again = try spend("t3")
        #expect(again.status == 0, "the lock was not derived from the tables: \(again.stderr)")
        let accept = try world.run(["accept", "t3", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
    }
}
