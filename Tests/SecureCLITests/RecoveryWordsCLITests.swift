import Foundation
import SecureTestSupport
import Testing

/// `wallet init --recovery-words` and `wallet recover --recovery-words` with the real binary and SoftHSM: the
/// words alone put a key on a fresh token in force, and that wallet then pays and is paid.
@Suite("secure recovery words", .serialized)
struct RecoveryWordsCLITests {
    typealias World = WalletCLITests.World

    /// Carol, beside the world's alice, made with recovery words written to carol.words.
    static func makeCarol(_ world: World) throws {
        for label in ["carol", "carol-bk", "carol-new"] {
            let made = try Run.program(
                Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", label])
            guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
        }
        let made = try world.run(
            [
                "wallet", "init", "--token", "pkcs11:token=carol?module-name=softhsm2",
                "--backup-token", "pkcs11:token=carol-bk?module-name=softhsm2",
                "--backup-pin-source", "file:toks/carol-bk.pin", "--recovery-words",
                "--recovery-words-file", "carol.words",
            ] + world.wallet("carol"))
        guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
        let card = try world.run(["wallet", "show", "--card"] + world.wallet("carol"))
        try card.output.write(toFile: world.directory + "/carol.card", atomically: true, encoding: .utf8)
    }

    static func words(_ world: World) throws -> [String] {
        let text = try String(contentsOfFile: world.directory + "/carol.words", encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.flatMap { $0.split(separator: " ") }
            .map(String.init)
    }

    static func recover(_ world: World, file: String) throws -> ProcessResult {
        try world.run(
            [
                "wallet", "recover", "--recovery-words", "--recovery-words-file", file,
                "--token", "pkcs11:token=carol-new?module-name=softhsm2",
            ] + world.wallet("carol").dropLast(2) + ["--pin-source", "file:toks/carol-new.pin"])
    }

    @Test func wordsRecoverOntoAFreshTokenThatPaysAndIsPaid() throws {
        let world = try World(wallets: ["alice"])
        try Self.makeCarol(world)
        let words = try Self.words(world)
        #expect(words.count == 24)
        let mode = try FileManager.default.attributesOfItem(atPath: world.directory + "/carol.words")[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)
        // The words never reach stdout or stderr: a second init shows none of them in its output.
        let shown = try world.run(["wallet", "show"] + world.wallet("carol"))
        #expect(!words.contains { shown.output.contains(" \($0) ") })
        try world.fund("carol", "20.00 EUR", trustedBy: ["alice", "carol"])
        // The unused words left no key on any token that the token did not make itself: the audit passes.
        let audit = try world.run(
            [
                "keys", "audit", "--backup-pin-source", "file:toks/carol-bk.pin",
                "--backup-token", "pkcs11:token=carol-bk?module-name=softhsm2",
            ] + world.wallet("carol"))
        #expect(audit.status == 0, "\(audit.output) \(audit.stderr)")

        // Three ways a mistyped word is caught, each with its own sentence, and nothing changes.
        var unknown = words
        unknown[6] = "zebrra"
        try unknown.joined(separator: " ").write(
            toFile: world.directory + "/unknown.words", atomically: true, encoding: .utf8)
        let notInList = try Self.recover(world, file: "unknown.words")
        #expect(notInList.status == 2 && notInList.stderr.contains("word 7"), "\(notInList.stderr)")
        var swapped = words
        if let index = swapped.indices.dropFirst().first(where: { swapped[$0] != swapped[0] }) {
            swapped.swapAt(0, index)
        }
        try swapped.joined(separator: " ").write(
            toFile: world.directory + "/swapped.words", atomically: true, encoding: .utf8)
        let checksum = try Self.recover(world, file: "swapped.words")
        #expect(checksum.status != 0, "\(checksum.stderr)")
        try (String(repeating: "abandon ", count: 23) + "art").write(
            toFile: world.directory + "/other.words", atomically: true, encoding: .utf8)
        let other = try Self.recover(world, file: "other.words")
        #expect(
            other.status == 2 && other.stderr.contains("not this wallet's") || other.stderr.contains("another wallet"),
            "\(other.stderr)")

        // Carol loses both tokens; the words recover her onto carol-new.
        let recovered = try Self.recover(world, file: "carol.words")
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(recovered.output.contains("recovered"))
        let carol = ["--wallet", "carol", "--pin-source", "file:toks/carol-new.pin"]
        #expect(recovered.output.contains("key event 1, signed with the recovery words"), "\(recovered.output)")
        #expect(try world.run(["balance"] + carol).output.contains("20.00 EUR"))

        // Carol pays alice, and alice pays carol back.
        let spend = try world.run(
            ["spend", "--to", "alice.card", "--amount", "5.00 EUR", "--category", "food", "--out", "t1"] + carol)
        #expect(spend.status == 0, "\(spend.stderr)")
        let accept = try world.run(["accept", "t1", "--no-proximity", "--receipt-out", "r1"] + world.wallet("alice"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["confirm", "r1"] + carol).status == 0)
        let back = try world.run(
            ["spend", "--to", "carol.card", "--amount", "2.00 EUR", "--category", "x", "--out", "t2"]
                + world.wallet("alice"))
        #expect(back.status == 0, "\(back.stderr)")
        let received = try world.run(["accept", "t2", "--no-proximity"] + carol)
        #expect(received.status == 0, "\(received.stderr)")
        #expect(try world.run(["balance"] + carol).output.contains("17.00 EUR"))
        let verify = try world.run(["ledger", "verify"] + carol)
        #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output) \(verify.stderr)")
        // The words were used once; a second recovery with them signs with the next sequence's key and works too.
        let again = try Self.recover(world, file: "carol.words")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.output.contains("key event 2"), "\(again.output)")
        // A new backup token, and an ordinary rotation moves the committed next key onto it; carol pays again.
        let made = try Run.program(
            Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", "carol-bk2"])
        #expect(made.status == 0, "\(made.stderr)")
        let rotate = try world.run(
            [
                "keys", "rotate", "--backup-token", "pkcs11:token=carol-bk2?module-name=softhsm2",
                "--backup-pin-source", "file:toks/carol-bk2.pin",
            ] + carol)
        #expect(rotate.status == 0, "\(rotate.stderr)")
        let third = try world.run(
            ["spend", "--to", "alice.card", "--amount", "1.00 EUR", "--category", "food", "--out", "t3"] + carol)
        #expect(third.status == 0, "\(third.stderr)")
        let acceptThird = try world.run(["accept", "t3", "--no-proximity"] + world.wallet("alice"))
        #expect(acceptThird.status == 0, "\(acceptThird.stderr)")
        #expect(try world.run(["ledger", "verify"] + carol).status == 0)
    }

    static var terminal: String { Run.projectRoot + "/scripts/oracles/recovery_words_terminal.py" }

    /// The interactive path on a pseudo-terminal (scripts/oracles/recovery_words_terminal.py plays the person):
    /// the words appear on the terminal and in neither stdout nor stderr; wrong answers make no wallet; the
    /// right ones make one whose words, typed back at `wallet recover`, recover it.
    @Test func theWordsAreShownOnTheTerminalOnlyAndTypedBack() throws {
        let world = try World(wallets: ["alice"])
        for label in ["dave", "dave-bk", "dave-new"] {
            let made = try Run.program(
                Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", label])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let initialize = [
            Run.secure, "wallet", "init", "--token", "pkcs11:token=dave?module-name=softhsm2",
            "--backup-token", "pkcs11:token=dave-bk?module-name=softhsm2", "--backup-pin-source",
            "file:toks/dave-bk.pin", "--recovery-words", "--wallet", "dave", "--pin-source", "file:toks/dave.pin",
        ]
        func play(_ mode: String, _ name: String, words: [String] = [], _ command: [String]) throws -> ProcessResult {
            try Run.program(
                RotationCLITests.python,
                [Self.terminal, mode, "--stdout", name + ".out", "--stderr", name + ".err"]
                    + (words.isEmpty ? [] : ["--words"] + words) + ["--"] + command,
                environment: world.environment, directory: world.directory)
        }
        let wrong = try play("init-wrong", "wrong", initialize)
        #expect(wrong.output.contains("exit 2"), "\(wrong.output)")
        let wrongError = try String(contentsOfFile: world.directory + "/wrong.err", encoding: .utf8)
        #expect(wrongError.contains("no wallet was made"), "\(wrongError)")
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/dave/wallet.json"))

        let made = try play("init", "made", initialize)
        #expect(made.output.contains("exit 0"), "\(made.output)")
        let line = try #require(made.output.split(separator: "\n").first { $0.hasPrefix("words: ") })
        let words = line.dropFirst(7).split(separator: " ").map(String.init)
        #expect(words.count == 24)
        for stream in ["made.out", "made.err"] {
            let text = try String(contentsOfFile: world.directory + "/" + stream, encoding: .utf8)
            let tokens = Set(text.split { !$0.isLetter }.map(String.init))
            #expect(tokens.isDisjoint(with: words), "\(stream) shows recovery words: \(text)")
        }
        let recovered = try play(
            "recover", "recovered", words: words,
            [
                Run.secure, "wallet", "recover", "--recovery-words", "--token",
                "pkcs11:token=dave-new?module-name=softhsm2", "--wallet", "dave", "--pin-source",
                "file:toks/dave-new.pin",
            ])
        #expect(recovered.output.contains("exit 0"), "\(recovered.output)")
        let output = try String(contentsOfFile: world.directory + "/recovered.out", encoding: .utf8)
        #expect(output.contains("recovered: key event 1"), "\(output)")
    }

    @Test func aWalletWithoutWordsRefusesRecoveryByWords() throws {
        let world = try World(wallets: ["carol"])
        try Run.program(Run.secure, ["token", "init-demo", "--dir", world.directory + "/toks", "--label", "carol-new"])
            .output.write(toFile: world.directory + "/made", atomically: true, encoding: .utf8)
        try (String(repeating: "abandon ", count: 23) + "art").write(
            toFile: world.directory + "/any.words", atomically: true, encoding: .utf8)
        let refused = try Self.recover(world, file: "any.words")
        #expect(refused.status != 0 && refused.stderr.contains("without --recovery-words"), "\(refused.stderr)")
    }
}
