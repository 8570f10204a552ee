import Foundation
import SecureTestSupport
import Testing

/// The wallet commands end to end with the real binary: arguments in; stdout, stderr and exit code out.
@Suite("secure wallet commands", .serialized)
struct WalletCLITests {
    /// Two wallets (alice, bob), each with a main and backup SoftHSM token, and an issuer token, in one folder.
    final class World: @unchecked Sendable {
        let directory: String
        let environment: [String: String]
        /// The wallets of the world.
        let names: [String]

        /// The wallets `names`, each with a main and backup token, and the issuer token.
        init(wallets names: [String] = ["alice", "bob"]) throws {
            self.names = names
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("secure-wcli-\(UUID().uuidString)").path
            environment = [
                "SOFTHSM2_CONF": directory + "/toks/softhsm2.conf", "XDG_STATE_HOME": directory + "/state",
                "XDG_DATA_HOME": directory + "/data",
            ]
            for label in names.flatMap({ [$0, $0 + "-bk"] }) + ["issuer", "issuer-bk"] {
                let made = try Run.program(
                    Run.secure, ["token", "init-demo", "--dir", directory + "/toks", "--label", label])
                guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
            }
            for name in names {
                let made = try run(
                    [
                        "wallet", "init", "--token", "pkcs11:token=\(name)?module-name=softhsm2",
                        "--backup-token", "pkcs11:token=\(name)-bk?module-name=softhsm2",
                        "--backup-pin-source", "file:toks/\(name)-bk.pin",
                    ] + wallet(name))
                guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
                let card = try run(["wallet", "show", "--card"] + wallet(name))
                try card.output.write(toFile: directory + "/\(name).card", atomically: true, encoding: .utf8)
            }
        }

        func wallet(_ name: String) -> [String] { ["--wallet", name, "--pin-source", "file:toks/\(name).pin"] }

        /// The issuer's wallet ("issuer", on the issuer tokens), made on first use; its card is issuer.card.
        func makeIssuer() throws {
            guard !FileManager.default.fileExists(atPath: directory + "/issuer.card") else { return }
            let made = try run(
                [
                    "issuer", "init", "--token", "pkcs11:token=issuer?module-name=softhsm2",
                    "--backup-token", "pkcs11:token=issuer-bk?module-name=softhsm2",
                    "--backup-pin-source", "file:toks/issuer-bk.pin",
                ] + wallet("issuer"))
            guard made.status == 0 else { throw CLITests.CLIFailure(made.stderr) }
            let card = try run(["wallet", "show", "--card"] + wallet("issuer"))
            try card.output.write(toFile: directory + "/issuer.card", atomically: true, encoding: .utf8)
        }

        /// The issuer mints `amount` to `name` into `file`.
        func mint(_ amount: String, to name: String, file: String) throws {
            try makeIssuer()
            let minted = try run(
                ["mint", "--to", "\(name).card", "--amount", amount, "--out", file] + wallet("issuer"))
            guard minted.status == 0 else { throw CLITests.CLIFailure(minted.stderr) }
        }

        /// `name` trusts the issuer (and so takes its money).
        func trustIssuer(_ name: String) throws {
            try makeIssuer()
            let trust = try run(["issuer", "trust", "issuer.card"] + wallet(name))
            guard trust.status == 0 else { throw CLITests.CLIFailure(trust.stderr) }
        }

        /// `name` deposits a voucher of `amount` from the issuer, which every wallet of the world (or those
        /// named by `trustedBy`) trusts first.
        func fund(_ name: String, _ amount: String, trustedBy: [String]? = nil) throws {
            for other in trustedBy ?? names { try trustIssuer(other) }
            let file = "v-\(name)-\(UUID().uuidString.prefix(8))"
            try mint(amount, to: name, file: file)
            let deposit = try run(["deposit", file] + wallet(name))
            guard deposit.status == 0 else { throw CLITests.CLIFailure(deposit.stderr) }
        }

        func run(_ arguments: [String]) throws -> ProcessResult {
            try Run.program(Run.secure, arguments, environment: environment, directory: directory)
        }
    }

    @Test func issueDepositSpendAcceptAndVerify() throws {
        let world = try World()
        try world.makeIssuer()
        try world.mint("50.00 EUR", to: "alice", file: "v1")
        let show = try world.run(["issuer", "show"] + world.wallet("issuer"))
        #expect(show.status == 0 && show.output.contains("outstanding 50.00 EUR"), "\(show.output)")
        let untrusted = try world.run(["deposit", "v1"] + world.wallet("alice"))
        #expect(untrusted.status == 11)
        #expect(untrusted.stderr.contains("not trusted"))
        #expect(try world.run(["issuer", "trust", "issuer.card"] + world.wallet("alice")).status == 0)
        try world.trustIssuer("bob")
        let deposit = try world.run(["deposit", "v1"] + world.wallet("alice"))
        #expect(deposit.status == 0 && deposit.output.contains("50.00 EUR"))
        let again = try world.run(["deposit", "v1"] + world.wallet("alice"))
        #expect(again.status == 0 && again.output.contains("already recorded"))

        #expect(
            try world.run(
                ["budget", "set", "food", "10.00 EUR", "--time-zone", "Europe/Berlin"] + world.wallet("alice")
            ).status == 0)
        let over = try world.run(
            ["spend", "--to", "bob.card", "--amount", "12.00 EUR", "--category", "food", "--out", "t0"]
                + world.wallet("alice"))
        #expect(over.status == 11)
        #expect(over.stderr.contains("--override-budget"))
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/t0"))
        let spend = try world.run(
            [
                "spend", "--to", "bob.card", "--amount", "4.50 EUR", "--category", "food", "--note", "Kaffee",
                "--out", "t1",
            ] + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.stderr)")
        let noProximity = try world.run(["accept", "t1"] + world.wallet("bob"))
        #expect(noProximity.status == 11 && noProximity.stderr.contains("--no-proximity"))
        let accept = try world.run(["accept", "t1", "--no-proximity", "--receipt-out", "r1"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        let twice = try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob"))
        #expect(twice.status == 0 && twice.output.contains("already recorded"))
        #expect(try world.run(["confirm", "r1"] + world.wallet("alice")).status == 0)
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))

        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("45.50 EUR"))
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("4.50 EUR"))
        let history = try world.run(["history", "--json"] + world.wallet("alice"))
        let listing = try JSONSerialization.jsonObject(with: Data(history.stdout)) as? [String: Any]
        let rows = listing?["entries"] as? [[String: Any]]
        let paid = rows?.first { $0["kind"] as? String == "payment out" && $0["note"] as? String == "Kaffee" }
        #expect((paid?["amount"] as? [String: Any])?["minorUnits"] as? Int == -450, "\(history.output)")
        for name in ["alice", "bob"] {
            let verify = try world.run(["ledger", "verify"] + world.wallet(name))
            #expect(verify.status == 0 && verify.output.contains("ledger OK"), "\(verify.output)")
        }
        let budget = try world.run(["budget", "show"] + world.wallet("alice"))
        #expect(budget.output.contains("4.50 EUR of 10.00 EUR (45%)"))
    }

    @Test func failureCases() throws {
        let world = try World()
        let bad = try world.run(["budget", "set", "food", "1.234 EUR"] + world.wallet("alice"))
        #expect(bad.status == 2 && bad.stderr.contains("at most 2 decimals"))
        for amount in ["-1 EUR", "1e3 EUR", "NaN EUR", "4.50 XYZ", "99999999999999999999 EUR"] {
            let result = try world.run(["budget", "set", "food", amount] + world.wallet("alice"))
            #expect(result.status == 2, "\(amount): \(result.stderr)")
        }
        let missing = try world.run(["balance", "--wallet", "nowhere", "--pin-source", "file:toks/alice.pin"])
        #expect(missing.status == 8 && missing.stderr.contains("no wallet"))
        let wrongPIN = try world.run(["balance", "--wallet", "alice", "--pin-source", "file:toks/bob.pin"])
        #expect(wrongPIN.status == 3)
        let again = try world.run(
            [
                "wallet", "init", "--token", "pkcs11:token=alice?module-name=softhsm2",
                "--backup-token", "pkcs11:token=alice-bk?module-name=softhsm2",
                "--backup-pin-source", "file:toks/alice-bk.pin",
            ] + world.wallet("alice"))
        #expect(again.status == 8 && again.stderr.contains("never overwritten"))
        let noBackup = try world.run([
            "wallet", "init", "--token", "pkcs11:token=issuer?module-name=softhsm2",
            "--wallet", "x", "--pin-source", "file:toks/issuer.pin",
        ])
        #expect(noBackup.status == 2 && noBackup.stderr.contains("--backup-token"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: world.directory + "/junk"))
        let junk = try world.run(["accept", "junk", "--no-proximity"] + world.wallet("bob"))
        #expect(junk.status == 7 && junk.stderr.contains("not a transfer"))
        let junkVoucher = try world.run(["deposit", "junk"] + world.wallet("bob"))
        #expect(junkVoucher.status == 7)
        let noMoney = try world.run(
            ["spend", "--to", "bob.card", "--amount", "1.00 EUR", "--category", "x", "--out", "t"]
                + world.wallet("alice"))
        #expect(noMoney.status == 11 && noMoney.stderr.contains("balance"))
        let junkEvidence = try world.run(["evidence", "verify", "junk"])
        #expect(junkEvidence.status == 7)
    }

    @Test func restoredDatabaseLocksAndVerifySaysWhatToRestore() throws {
        let world = try World()
        #expect(try world.run(["budget", "set", "a", "1.00 EUR"] + world.wallet("alice")).status == 0)
        let folder = world.directory + "/alice"
        try FileManager.default.copyItem(atPath: folder + "/ledger.db", toPath: world.directory + "/old.db")
        #expect(try world.run(["budget", "set", "b", "2.00 EUR"] + world.wallet("alice")).status == 0)
        try FileManager.default.removeItem(atPath: folder + "/ledger.db")
        try? FileManager.default.removeItem(atPath: folder + "/ledger.db-wal")
        try? FileManager.default.removeItem(atPath: folder + "/ledger.db-shm")
        try FileManager.default.copyItem(atPath: world.directory + "/old.db", toPath: folder + "/ledger.db")
        let verify = try world.run(["ledger", "verify"] + world.wallet("alice"))
        #expect(verify.status == 10)
        #expect(verify.output.contains("older copy"))
        let spend = try world.run(["budget", "set", "c", "3.00 EUR"] + world.wallet("alice"))
        #expect(spend.status == 10 && spend.stderr.contains("locked"))
        let accept = try world.run(["ledger", "verify", "--accept-rollback"] + world.wallet("alice"))
        #expect(accept.stderr.contains("accepted the rollback"))
        #expect(try world.run(["ledger", "verify"] + world.wallet("alice")).status == 0)
    }
}

/// Two real `secure` processes paying each other over loopback TCP.
@Suite("secure pay and receive", .serialized)
struct PeerCLITests {
    static func funded() throws -> WalletCLITests.World {
        let world = try WalletCLITests.World()
        try world.fund("alice", "20.00 EUR")
        try world.trustIssuer("bob")
        return world
    }

    /// Runs a receiver in the background and a payer in the foreground; returns both results. The receiver
    /// serves until stopped, so it is given `--count 1` (it ends after one payment received) and `--sessions 1`
    /// (it also ends after one session that failed, with that session's exit code).
    static func session(
        _ world: WalletCLITests.World, receiver: [String], payer: [String], payerName: String = "alice",
        payeeName: String = "bob"
    ) throws -> (ProcessResult, ProcessResult) {
        let port = String(Int.random(in: 20_000..<40_000))
        final class Box: @unchecked Sendable { var result: ProcessResult? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let receiveArguments =
            ["receive", "--listen", "127.0.0.1:" + port, "--yes", "--count", "1", "--sessions", "1"] + receiver
            + world.wallet(payeeName)
        Thread.detachNewThread {
            box.result = try? world.run(receiveArguments)
            done.signal()
        }
        var payerResult: ProcessResult?
        for _ in 0..<50 {
            Thread.sleep(forTimeInterval: 0.1)
            payerResult = try world.run(
                ["pay", "--to", "127.0.0.1:" + port, "--yes"] + payer + world.wallet(payerName))
            if !(payerResult!.stderr.contains("refused") && payerResult!.stderr.contains("connect")) { break }
        }
        done.wait()
        return (box.result!, payerResult!)
    }

    @Test func paymentBetweenTwoProcesses() throws {
        let world = try Self.funded()
        let (receiver, payer) = try Self.session(
            world, receiver: ["--allow-simulated-ranging", "--distance", "420", "--json"],
            payer: [
                "--amount", "4.50 EUR", "--category", "food", "--note", "Coffee",
                "--allow-simulated-ranging", "--distance", "400",
            ])
        #expect(payer.status == 0, "\(payer.output) \(payer.stderr)")
        #expect(receiver.status == 0, "\(receiver.output) \(receiver.stderr)")
        #expect(payer.output.contains("SIMULATED RANGING"))
        #expect(payer.output.contains("Pay 4.50 EUR (issuer "))
        #expect(payer.output.contains("balance now 15.50 EUR"), "a payment ends with the new balance")
        let finished = receiver.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "finished" }
        #expect(
            (finished?["balance"] as? [String: Any])?["minorUnits"] as? Int == 450,
            "a payment ends with the new balance")
        #expect(receiver.output.contains("\"event\":\"credit\""))
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("15.50 EUR"))
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("4.50 EUR"))
        for name in ["alice", "bob"] { #expect(try world.run(["ledger", "verify"] + world.wallet(name)).status == 0) }
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
    }

    @Test func simulatedRangingIsRefusedByDefaultAndNothingMoves() throws {
        let world = try Self.funded()
        try String(repeating: "410\n", count: 20).write(
            toFile: world.directory + "/uwb.txt", atomically: true, encoding: .utf8)
        let (receiver, payer) = try Self.session(
            world, receiver: ["--ranging-file", "uwb.txt"],
            payer: ["--amount", "1.00 EUR", "--category", "food", "--allow-simulated-ranging"])
        #expect(payer.status == 11, "\(payer.output)")
        #expect(receiver.status == 11, "\(receiver.output)")
        #expect(receiver.output.contains("simulatedRangingRefused"), "\(receiver.output)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("20.00 EUR"))
        let noSource = try world.run(["receive", "--listen", "127.0.0.1:1"] + world.wallet("bob"))
        #expect(noSource.status == 2 && noSource.stderr.contains("--allow-simulated-ranging"))
    }

    /// Reading commands take no lock: `balance`, `history`, `pending` and `budget show` run while `secure
    /// receive` is in a session on the same wallet, and each shows the ledger before or after the credit.
    /// The payee is paced by its ranging FIFO: it has approved and is measuring, with the wallet open for
    /// appending (its lock held), until the test writes the remaining readings. Meanwhile an appending
    /// command still gets "wallet busy" (exit 9), and only after its PIN was checked.
    @Test func readersRunWhileReceiveIsInASession() throws {
        let world = try Self.funded()
        #expect(try world.run(["budget", "set", "food", "10.00 EUR"] + world.wallet("bob")).status == 0)
        let entriesBefore = try Self.historyCount(world)
        try String(repeating: "410\n", count: 20).write(
            toFile: world.directory + "/alice-uwb.txt", atomically: true, encoding: .utf8)
        let fifo = world.directory + "/bob-uwb"
        #expect(mkfifo(fifo, 0o600) == 0)
        let port = String(Int.random(in: 20_000..<40_000))
        final class Box: @unchecked Sendable { var result: ProcessResult? }
        let receiver = Box(), payer = Box()
        let receiverDone = DispatchSemaphore(value: 0), payerDone = DispatchSemaphore(value: 0)
        let receiveArguments =
            [
                "receive", "--listen", "127.0.0.1:" + port, "--yes", "--json", "--ranging-file", "bob-uwb",
                "--sessions",
                "1",
            ]
            + world.wallet("bob")
        Thread.detachNewThread {
            receiver.result = try? world.run(receiveArguments)
            receiverDone.signal()
        }
        Thread.detachNewThread {
            for _ in 0..<50 {
                Thread.sleep(forTimeInterval: 0.2)
                payer.result = try? world.run(
                    [
                        "pay", "--to", "127.0.0.1:" + port, "--yes", "--amount", "4.50 EUR",
                        "--category", "food", "--ranging-file", "alice-uwb.txt",
                    ] + world.wallet("alice"))
                if let result = payer.result, !(result.stderr.contains("refused") && result.stderr.contains("connect"))
                {
                    break
                }
            }
            payerDone.signal()
        }
        // Opening the FIFO for writing succeeds once the payee opens it to measure: it is then in the session.
        var writer: Int32 = -1
        let deadline = Date(timeIntervalSinceNow: 60)
        while writer < 0 && Date() < deadline {
            writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(writer >= 0, "the payee never started measuring")
        func send(_ count: Int) { for _ in 0..<count { _ = "410\n".withCString { write(writer, $0, 4) } } }
        send(3)

        // The readers, then two appending attempts, while the payee waits for more readings. One after the
        // other: SoftHSM's file store answers CKR_GENERAL_ERROR to a process that reads the token while another
        // rewrites it (a failed login does), which is SoftHSM's limit, not the wallet's.
        let commands: [[String]] = [
            ["balance", "--json"], ["history", "--json"], ["pending", "--json"],
            ["budget", "show", "--json"], ["budget", "set", "rent", "1.00 EUR"],
        ]
        var results = try commands.map { try world.run($0 + world.wallet("bob")) }
        results.append(
            try world.run([
                "budget", "set", "rent", "1.00 EUR", "--wallet", "bob", "--pin-source", "file:toks/alice.pin",
            ]))
        // The ranging reader reads in chunks until a chunk is full or the stream ends: end it.
        send(17)
        close(writer)
        receiverDone.wait()
        payerDone.wait()
        let (balance, history, pending, budget, busy, wrongPIN) = (
            results[0], results[1], results[2], results[3],
            results[4], results[5]
        )
        let received = try #require(receiver.result)
        let paid = try #require(payer.result)
        #expect(received.status == 0, "\(received.output) \(received.stderr)")
        #expect(paid.status == 0, "\(paid.output) \(paid.stderr)")
        #expect(received.output.contains("\"event\":\"credit\""))

        for reader in [balance, history, pending, budget] {
            #expect(reader.status == 0, "\(reader.stderr)")
            #expect(!reader.stderr.contains("busy"), "\(reader.stderr)")
        }
        let balances = try JSONSerialization.jsonObject(with: Data(balance.stdout)) as? [String: Any]
        let shown = (balances?["balances"] as? [[String: Any]])?.map { $0["minorUnits"] as? Int }
        #expect(shown == [] || shown == [450], "before or after the credit: \(balance.output)")
        let listing = try JSONSerialization.jsonObject(with: Data(history.stdout)) as? [String: Any]
        let rows = listing?["entries"] as? [[String: Any]]
        #expect(rows?.count == entriesBefore || rows?.count == entriesBefore + 1, "\(history.output)")
        let unconfirmed = try JSONSerialization.jsonObject(with: Data(pending.stdout)) as? [String: Any]
        #expect((unconfirmed?["payments"] as? [Any])?.isEmpty == true)
        let budgets = (try JSONSerialization.jsonObject(with: Data(budget.stdout)) as? [String: Any])?["budgets"]
        let food = (budgets as? [[String: Any]])?.first
        #expect(
            food?["category"] as? String == "food" && (food?["spent"] as? [String: Any])?["minorUnits"] as? Int == 0,
            "\(budget.output)")
        // Two appending commands exclude each other; the lock is taken after the PIN is read and checked.
        #expect(busy.status == 9 && busy.stderr.contains("busy"), "\(busy.status) \(busy.stderr)")
        #expect(wrongPIN.status == 3, "a wrong PIN is reported before the lock is tried: \(wrongPIN.stderr)")

        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("4.50 EUR"))
        #expect(try Self.historyCount(world) == entriesBefore + 1)
        #expect(
            try world.run(["budget", "set", "rent", "1.00 EUR"] + world.wallet("bob")).status == 0,
            "the lock is free once receive ends")
    }

    /// The payee after `ready` and before the credit: the payer is stopped (SIGSTOP) once it has sent its
    /// measurement, so the payee persists its ready record, sends `ready` and waits for the transfer while the
    /// readers run. They see the state before the credit; the payment then completes.
    @Test func readersRunBetweenReadyAndTheCredit() throws {
        let world = try Self.funded()
        let port = String(Int.random(in: 20_000..<40_000))
        final class Box: @unchecked Sendable { var result: ProcessResult? }
        let receiver = Box()
        let receiverDone = DispatchSemaphore(value: 0)
        let receiveArguments =
            [
                "receive", "--listen", "127.0.0.1:" + port, "--yes", "--json", "--allow-simulated-ranging",
                "--distance", "420", "--sessions", "1",
            ] + world.wallet("bob")
        Thread.detachNewThread {
            receiver.result = try? world.run(receiveArguments)
            receiverDone.signal()
        }
        var payer: Process?
        var lines: [String] = []
        for _ in 0..<50 where !lines.contains(where: { $0.contains("\"event\":\"measured\"") }) {
            Thread.sleep(forTimeInterval: 0.2)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Run.secure)
            process.arguments =
                [
                    "pay", "--to", "127.0.0.1:" + port, "--yes", "--json", "--amount", "4.50 EUR", "--category", "food",
                    "--allow-simulated-ranging", "--distance", "400",
                ] + world.wallet("alice")
            process.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
            process.currentDirectoryURL = URL(fileURLWithPath: world.directory)
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            payer = process
            var pending = Data()
            lines = []
            // Read events line by line until the payer has signed and sent its measurement.
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending += chunk
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
                if lines.contains(where: { $0.contains("\"event\":\"measured\"") }) {
                    kill(process.processIdentifier, SIGSTOP)
                    break
                }
            }
            if !lines.contains(where: { $0.contains("\"event\":\"measured\"") }) { process.waitUntilExit() }
        }
        let stopped = try #require(payer, "the payer never ran")
        try #require(lines.contains { $0.contains("\"event\":\"measured\"") }, "the payer never measured: \(lines)")
        // The payee measures, persists its ready record and sends `ready` at machine speed.
        Thread.sleep(forTimeInterval: 2)
        let readers = try [["balance", "--json"], ["history", "--json"], ["pending", "--json"], ["budget", "show"]]
            .map { try world.run($0 + world.wallet("bob")) }
        kill(stopped.processIdentifier, SIGCONT)
        // Drain the payer's output so it never blocks on a full pipe, then wait for both sides.
        if let output = stopped.standardOutput as? Pipe { _ = output.fileHandleForReading.readDataToEndOfFile() }
        stopped.waitUntilExit()
        receiverDone.wait()
        for reader in readers { #expect(reader.status == 0 && !reader.stderr.contains("busy"), "\(reader.stderr)") }
        let balances = try JSONSerialization.jsonObject(with: Data(readers[0].stdout)) as? [String: Any]
        #expect((balances?["balances"] as? [Any])?.isEmpty == true, "before the credit: \(readers[0].output)")
        #expect(stopped.terminationStatus == 0, "the payment completes after the pause")
        #expect(receiver.result?.status == 0, "\(receiver.result?.output ?? "") \(receiver.result?.stderr ?? "")")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("4.50 EUR"))
    }

    static func historyCount(_ world: WalletCLITests.World) throws -> Int {
        let history = try world.run(["history", "--json"] + world.wallet("bob"))
        let listing = try JSONSerialization.jsonObject(with: Data(history.stdout)) as? [String: Any]
        return (listing?["entries"] as? [Any])?.count ?? -1
    }
}
