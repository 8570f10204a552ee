import Foundation
import SecureCore
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureStore
@testable import SecureWallet

/// Attack 6 of issue 12, in its real form: someone who holds the database key (the owner unwraps it with the
/// token; a thief of a folder copy and a PIN-less process could too) rewrites the wallet's index tables, and
/// the stock `secure` binary must refuse to sign anything until the index is the one its latest checkpoint
/// commits to (D). The key is unwrapped as that owner can, with the stock `pkcs11-tool` doing the ECDH on the
/// wallet's SoftHSM token (this process never loads the world's SoftHSM, whose configuration is its own), and
/// the SQLCipher file is then edited directly.
@Suite("Index commitment: a rewritten index locks the wallet", .serialized)
struct IndexCommitmentCLITests {
    typealias World = WalletCLITests.World

    /// The token's ECDH through `pkcs11-tool --derive`, for `WrappedKeyFile.unwrap`.
    struct ToolUnwrapper: KeyAgreementUnwrapper {
        let world: World
        let name: String
        let keyID: String
        let publicKey: P256.PublicKey

        /// The index of the slot whose token is labelled exactly `name` (`--token-label` matches a prefix, so
        /// "alice" would find "alice-bk").
        func slotIndex() throws -> String {
            let list = try Run.program(
                "/usr/bin/pkcs11-tool", ["--module", IndexCommitmentCLITests.module, "--list-slots"],
                environment: world.environment)
            var index: String?
            for line in list.output.split(separator: "\n") {
                if line.hasPrefix("Slot "), let number = line.dropFirst(5).split(separator: " ").first {
                    index = String(number)
                } else if line.contains("token label"), let label = line.split(separator: ":").last,
                    label.trimmingCharacters(in: .whitespaces) == name, let index
                {
                    return index
                }
            }
            throw CLITests.CLIFailure("no slot holds the token \(name): \(list.output)")
        }

        func sharedSecret(with ephemeral: P256.PublicKey) throws -> SecretBytes {
            let peer = world.directory + "/\(name)-peer.der", secret = world.directory + "/\(name)-secret.bin"
            try Data(ephemeral.spki).write(to: URL(fileURLWithPath: peer))
            let pin = try String(contentsOfFile: world.directory + "/toks/\(name).pin", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let derive = try Run.program(
                "/usr/bin/pkcs11-tool",
                [
                    "--module", IndexCommitmentCLITests.module, "--slot-index", try slotIndex(), "--login", "--pin",
                    pin,
                    "--derive", "-m", "ECDH1-DERIVE", "--id", keyID, "--input-file", peer, "--output-file", secret,
                ], environment: world.environment)
            guard derive.status == 0 else { throw CLITests.CLIFailure("pkcs11-tool --derive: \(derive.stderr)") }
            defer { try? FileManager.default.removeItem(atPath: secret) }
            return SecretBytes([UInt8](try Data(contentsOf: URL(fileURLWithPath: secret))))
        }
    }

    static let module = "/usr/lib/softhsm/libsofthsm2.so"

    /// A software issuer that `name` trusts, and a voucher of `amount` from it to `name` in `file`.
    static func voucher(_ world: World, _ file: String, to name: String, amount: String) throws {
        var issuer = try TestIssuer(signer: try SoftwareSigner())
        try issuer.card.text.write(toFile: world.directory + "/\(file).card", atomically: true, encoding: .utf8)
        let trust = try world.run(["issuer", "trust", "\(file).card"] + world.wallet(name))
        #expect(trust.status == 0, "\(trust.stderr)")
        let voucher = try issuer.voucher(try MoneyText.parse(amount), to: try card(world, name).walletID)
        try Data(voucher.encoded).write(to: URL(fileURLWithPath: world.directory + "/" + file))
    }

    static func card(_ world: World, _ name: String) throws -> WalletCard {
        try WalletCard.parse(try String(contentsOfFile: world.directory + "/\(name).card", encoding: .utf8))
    }

    /// Runs SQL on `name`'s ledger with its database key, unwrapped on its token as its owner can: what an
    /// adversary with that key (and no PIN to sign a checkpoint) can do.
    static func tamper(_ world: World, _ name: String, _ sql: String) throws {
        let paths = WalletPaths(directory: world.directory + "/" + name)
        let metadata = try WalletMetadata.load(paths)
        let wrapped = try WrappedKeyFile(
            encoded: Array(try #require(FileManager.default.contents(atPath: paths.wrappedKey))))
        let unwrapper = ToolUnwrapper(
            world: world, name: name, keyID: metadata.agreementKeyID,
            publicKey: try card(world, name).log.current.agreementKey)
        let store = try LedgerStore.open(
            path: paths.database, key: try wrapped.unwrap(with: unwrapper), expectedSalt: wrapped.databaseSalt,
            walletID: try metadata.parsedWalletID())
        try store.database.execute(sql)
        #expect(store.database.changes > 0, "the tampering changed no row: \(sql)")
    }

    /// The wallet's entry count, from `wallet show --json`.
    static func size(_ world: World, _ name: String) throws -> Int {
        try LedgerDefectCLITests.size(world, name)
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
        try Self.voucher(world, "v1", to: "alice", amount: "100.00 EUR")
        let deposit = try world.run(["deposit", "v1"] + world.wallet("alice"))
        #expect(deposit.status == 0, "\(deposit.stderr)")
        let size = try Self.size(world, "alice")
        try Self.tamper(world, "alice", "DELETE FROM statements WHERE kind = \(EntryKind.deposit.rawValue)")

        Self.expectIndexLock(try world.run(["deposit", "v1"] + world.wallet("alice")), "the second deposit")
        let spend = try world.run(
            ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", "t1"]
                + world.wallet("alice"))
        Self.expectIndexLock(spend, "the spend")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/t1"), "no transfer was written")
        #expect(try Self.size(world, "alice") == size, "nothing was appended")

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
        try Self.voucher(world, "v1", to: "alice", amount: "100.00 EUR")
        #expect(try world.run(["deposit", "v1"] + world.wallet("alice")).status == 0)
        #expect(try world.run(["issuer", "trust", "v1.card"] + world.wallet("bob")).status == 0)
        func spend(_ out: String) throws -> ProcessResult {
            try world.run(
                ["spend", "--to", "bob.card", "--amount", "5.00 EUR", "--category", "x", "--out", out]
                    + world.wallet("alice"))
        }
        let first = try spend("t1")
        #expect(first.status == 0, "\(first.stderr)")

        try Self.tamper(world, "alice", "UPDATE outgoing SET status = 1")
        Self.expectIndexLock(try spend("t2"), "a spend after the status edit")
        let pending = try world.run(["pending"] + world.wallet("alice"))
        #expect(pending.status == 0, "\(pending.stderr)")

        try Self.tamper(world, "alice", "UPDATE outgoing SET status = 0")
        let again = try spend("t3")
        #expect(again.status == 0, "the lock was not derived from the tables: \(again.stderr)")
        let accept = try world.run(["accept", "t3", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
    }
}
