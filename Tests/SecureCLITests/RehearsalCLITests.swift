import Foundation
import SecureCore
import SecureCrypto
import SecureRehearsal
import SecureTestSupport
import SecureToken
import SecureWallet
import Testing

/// `secure rehearse` with the real binary (docs/TILL.md §4): every shipped rehearsal plays to its ending, a bad
/// file is a usage error, a rehearsal leaves a real wallet folder byte-identical and calls no socket (under
/// strace), and what a rehearsal signs is refused by a real wallet.
@Suite("secure rehearse", .serialized)
struct RehearsalCLITests {
    typealias World = WalletCLITests.World

    static var rehearsals: String { Run.projectRoot + "/rehearsals" }

    /// No config file is looked for in the home folder (glibc's passwd lookup probes nscd's socket): the
    /// socket check then sees every socket call the rehearsal itself makes.
    static let environment = ["XDG_CONFIG_HOME": "/nonexistent-secure-config"]

    static func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: rehearsals).filter { $0.hasSuffix(".txt") }.sorted()
    }

    @Test func everyShippedRehearsalReachesItsEnding() throws {
        let files = try Self.files()
        #expect(files.count == 23)
        for name in files {
            let path = Self.rehearsals + "/" + name
            let file = try RehearsalFile.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))), name: name)
            let expected = file.ending.rawValue
            // Played by the issue's names: a file that plays the payer rehearses this side's till, and the other
            // way round.
            let command = file.plays == .payer ? ["till", "--rehearse", path] : ["pay", "--till", "--rehearse", path]
            let run = try Run.program(Run.secure, command + ["--yes", "--json"], environment: Self.environment)
            let lines = run.output.split(separator: "\n").map(String.init)
            let objects = lines.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(objects.count == lines.count && !lines.isEmpty, "\(name): every line is one JSON object")
            for object in objects {
                #expect(object["format"] as? String == "secure-rehearsal-event-v1", "\(name)")
                #expect(object["rehearsal"] as? Bool == true, "\(name)")
            }
            let result = objects.last
            #expect(result?["event"] as? String == "result", "\(name)")
            #expect(
                run.status == 0 && result?["reached"] as? String == expected,
                "\(name): expected \(expected), got \(result?["reached"] ?? "nothing") (exit \(run.status))\n\(run.stderr)"
            )
            #expect(result?["conserved"] as? Bool == true, "\(name): money conserved")
        }
    }

    @Test func textLinesAllSayRehearsal() throws {
        let run = try Run.program(
            Run.secure, ["rehearse", Self.rehearsals + "/link-lost-after-debit.txt", "--yes"],
            environment: Self.environment)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.output.split(separator: "\n")
        #expect(lines.count > 10)
        #expect(lines.allSatisfy { $0.hasPrefix("REHEARSAL ") }, "\(run.output)")
        #expect(lines.last == "REHEARSAL reached unconfirmed")
        #expect(run.output.contains("money conserved"))
    }

    @Test func theAliasesTakeOnlyFilesOfTheOtherSideAndNoPaymentOptions() throws {
        let tillFile = Self.rehearsals + "/too-far.txt" // plays the till
        let wrongSide = try Run.program(
            Run.secure, ["till", "--rehearse", tillFile, "--yes"], environment: Self.environment)
        #expect(wrongSide.status == 2 && wrongSide.stderr.contains("pay --till --rehearse"), "\(wrongSide.stderr)")
        let withAmount = try Run.program(
            Run.secure, ["pay", "--till", "--rehearse", tillFile, "--yes", "--max-amount", "1.00 EUR"],
            environment: Self.environment)
        #expect(withAmount.status == 2 && withAmount.stderr.contains("--max-amount"), "\(withAmount.stderr)")
        let played = try Run.program(
            Run.secure, ["pay", "--till", "--rehearse", tillFile, "--yes"], environment: Self.environment)
        #expect(played.status == 0 && played.output.hasSuffix("REHEARSAL reached too-far\n"), "\(played.output)")
    }

    /// A rehearsal file with this text, in the temporary folder.
    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rehearse-\(UUID().uuidString).txt")
            .path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aFileThatMissesItsEndingExitsOne() throws {
        let path = try Self.write("rehearsal 1\nplays payer\nending declined\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try Run.program(Run.secure, ["rehearse", path, "--yes"], environment: Self.environment)
        #expect(run.status == 1)
        #expect(run.output.hasSuffix("REHEARSAL expected declined, reached paid\n"), "\(run.output)")
    }

    @Test func aBadFileIsAUsageErrorNamingItsLine() throws {
        let path = try Self.write("rehearsal 1\nplays payer\nending paid\nwobble 3\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try Run.program(Run.secure, ["rehearse", path, "--yes"], environment: Self.environment)
        #expect(run.status == 2)
        #expect(run.stderr.contains(path + ":4: "), "\(run.stderr)")
        #expect(run.output.isEmpty)
    }

    /// SHA-256 of every file in a folder, by name.
    static func digests(_ folder: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name)))
            result[name] = Hex.encode(SHA256.hash(bytes))
        }
        return result
    }

    @Test func aRehearsalLeavesTheRealWalletUntouchedAndCallsNoSocket() throws {
        let world = try World(wallets: ["alice"])
        let folder = world.directory + "/alice"
        let before = try Self.digests(folder)
        #expect(before["ledger.db"] != nil && before["wallet.json"] != nil)
        let strace = "/usr/bin/strace"
        let log = world.directory + "/strace.log"
        var environment = world.environment.merging(Self.environment) { $1 }
        environment["SECURE_WALLET"] = "alice"
        let traced = FileManager.default.isExecutableFile(atPath: strace)
        let arguments = ["rehearse", Self.rehearsals + "/paid.txt", "--yes"] + world.wallet("alice")
        let run =
            traced
            ? try Run.program(
                strace,
                ["-f", "-qq", "-e", "trace=socket,connect,socketpair,open,openat", "-o", log, Run.secure]
                    + arguments,
                environment: environment, directory: world.directory)
            : try Run.program(Run.secure, arguments, environment: environment, directory: world.directory)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output.hasSuffix("REHEARSAL reached paid\n"))
        // The same files, byte for byte: no -wal, -shm or lock file was made, nothing was written.
        #expect(try Self.digests(folder) == before)
        if traced {
            let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            let calls = lines.filter { $0.contains("socket(") || $0.contains("connect(") || $0.contains("socketpair(") }
            #expect(calls.isEmpty, "socket calls: \(calls)")
            // Nothing in the real wallet's folder is opened, and no PKCS#11 module (SoftHSM here) is loaded.
            let opened = lines.filter { $0.contains("open") }
            #expect(opened.count > 10, "strace saw the opens")
            let touched = opened.filter {
                $0.contains(folder) || $0.contains("softhsm") || $0.contains("p11-kit/modules")
            }
            #expect(touched.isEmpty, "opened: \(touched)")
        }
    }

    /// A wallet made with the given token on a fresh folder, as an issuer.
    static func issuer(_ token: WalletToken, backup: WalletToken, in folder: String) throws -> Wallet {
        try token.unlock(pin: try PIN(RehearsalToken.pin), confirmFinalTry: false)
        try backup.unlock(pin: try PIN(RehearsalToken.pin), confirmFinalTry: false)
        let options = Wallet.InitOptions(
            tokenURI: token.uri, backup: (backup, backup.uri), allowFileAnchor: false, label: "issuer",
            isIssuer: true)
        return try Wallet.create(paths: WalletPaths(directory: folder), token: token, options: options)
    }

    @Test func aRealWalletRefusesWhatARehearsalSigned() throws {
        let world = try World(wallets: ["alice"])
        let alice = try WalletCard.parse(
            try String(contentsOfFile: world.directory + "/alice.card", encoding: .utf8))
        // Control: an issuer card signed outside the rehearsal domain (a test software key) is trusted.
        let plain = try Self.issuer(
            SimulatedToken(label: "plain"), backup: SimulatedToken(label: "plain-bk"),
            in: world.directory + "/plain-issuer")
        try WalletCard(log: plain.keyLog).text.write(
            toFile: world.directory + "/plain.card", atomically: true, encoding: .utf8)
        let trusted = try world.run(["issuer", "trust", "plain.card"] + world.wallet("alice"))
        #expect(trusted.status == 0, "\(trusted.stderr)")
        // The rehearsal's issuer card and a transfer its payer signs to alice, all inside the rehearsal domain.
        let transfer = try SignatureDomain.rehearsal { () throws -> Envelope in
            let rehearsal = try RehearsalWorld(
                file: try RehearsalFile.parse(Array("rehearsal 1\nplays till\nending paid\n".utf8), name: "test"))
            defer { rehearsal.remove() }
            try WalletCard(log: rehearsal.issuer.wallet.keyLog).text.write(
                toFile: world.directory + "/rehearsal.card", atomically: true, encoding: .utf8)
            rehearsal.payer.token.resetPINEntries()
            try rehearsal.payer.token.unlock(pin: try PIN(RehearsalToken.pin), confirmFinalTry: false)
            let signed = try rehearsal.payer.wallet.spend(
                to: alice.walletID,
                amount: AssetAmount(issuer: rehearsal.asset.issuer, money: try Money(minorUnits: 100, currency: .eur)),
                category: "test")
            return Envelope(signed, payerLog: rehearsal.payer.wallet.keyLog)
        }
        try Data(transfer.encoded).write(to: URL(fileURLWithPath: world.directory + "/rehearsal.transfer"))
        let ledger = try Self.digests(world.directory + "/alice")["ledger.db"]
        let trust = try world.run(["issuer", "trust", "rehearsal.card"] + world.wallet("alice"))
        #expect(trust.status != 0, "a rehearsal issuer's card was trusted: \(trust.output)")
        let accept = try world.run(["accept", "rehearsal.transfer"] + world.wallet("alice"))
        #expect(accept.status != 0, "a rehearsal transfer was accepted: \(accept.output)")
        #expect((accept.stderr + accept.output).contains("signature"), "\(accept.stderr) \(accept.output)")
        #expect(try Self.digests(world.directory + "/alice")["ledger.db"] == ledger)
    }
}
