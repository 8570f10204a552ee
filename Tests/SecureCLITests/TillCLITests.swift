import Foundation
import SecureTestSupport
import Testing

/// Issue 18's till through the built binary, two real processes over loopback TCP (`--no-announce`; the
/// announcement is tried in `TillDiscoveryCLITests`): `secure till` and `secure pay --till`, each ending
/// checked on both sides in their `--json` events (docs/TILL.md §2), and money conserved after every one.
@Suite("Till: secure till and pay --till over TCP", .serialized)
struct TillCLITests {
    typealias World = WalletCLITests.World
    typealias Side = ContactCLITests.Side
    static let ranging = ["--allow-simulated-ranging", "--distance", "400"]

    /// Alice pays; Bob is the till; Carol is an impostor till. Alice starts with 20.00 EUR.
    static let fixture = Result { () throws -> World in
        let world = try World(wallets: ["alice", "bob", "carol"])
        try world.fund("alice", "20.00 EUR")
        try world.fund("carol", "10.00 EUR", trustedBy: [])
        let wrong = world.directory + "/wrong.pin"
        try Data("999999\n".utf8).write(to: URL(fileURLWithPath: wrong))
        chmod(wrong, 0o600)
        return world
    }

    /// A running till, once it counts down; its port.
    static func till(
        _ world: World, _ name: String = "bob", amount: String = "4.50 EUR", extra: [String] = [],
        environment: [String: String] = [:]
    ) throws -> (Side, String) {
        let side = try Side(
            world,
            ["till", "--amount", amount, "--listen", "127.0.0.1:0", "--no-announce", "--json"] + ranging + extra
                + world.wallet(name),
            records: world.directory + "/records-\(UUID().uuidString)")
        #expect(side.wait(for: "countingDown", seconds: 30), "\(side.seen)")
        let listening = events(side.seen).first { $0["event"] as? String == "listening" }
        let address = listening?["address"] as? String ?? ""
        return (side, String(address.split(separator: ":").last ?? ""))
    }

    static func pay(
        _ world: World, port: String, _ extra: [String], wallet: String = "alice", ranging: [String] = ranging,
        maxAmount: String = "10.00 EUR"
    ) throws -> ProcessResult {
        try world.run(
            ["pay", "--till", "--to", "127.0.0.1:" + port, "--yes", "--max-amount", maxAmount, "--json"] + ranging
                + extra + world.wallet(wallet))
    }

    static func events(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The side's ending: its last `till` event in state `ended`, as (outcome, settled).
    static func ending(_ output: String) -> (String, String)? {
        guard
            let last = events(output).last(where: {
                $0["event"] as? String == "till" && $0["state"] as? String == "ended"
            })
        else { return nil }
        return (last["outcome"] as? String ?? "", last["settled"] as? String ?? "")
    }

    static func finish(_ side: Side, seconds: Double = 30) -> Int32 {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while side.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if side.process.isRunning { side.process.terminate() }
        side.process.waitUntilExit()
        return side.process.terminationStatus
    }

    static func balance(_ world: World, _ name: String) throws -> Int {
        let shown = try world.run(["balance", "--json"] + world.wallet(name))
        let object = try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any]
        let balances = object?["balances"] as? [[String: Any]] ?? []
        return balances.compactMap { $0["minorUnits"] as? Int }.reduce(0, +)
    }

    /// Both ledgers verify, nothing is pending, and the two balances add up to `total` minor units.
    static func conserved(_ world: World, _ names: [String], total: Int) throws {
        for name in names { #expect(try world.run(["ledger", "verify"] + world.wallet(name)).status == 0) }
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
        #expect(try names.map { try balance(world, $0) }.reduce(0, +) == total)
    }

    @Test func paidAndTheImpostorTillRefused() throws {
        let world = try Self.fixture.get()
        let before = try Self.balance(world, "alice") + Self.balance(world, "bob")
        let carol = try Self.balance(world, "carol")
        let (till, port) = try Self.till(world)
        let payer = try Self.pay(world, port: port, ["--expect-payee", "bob.card"])
        let tillStatus = Self.finish(till)
        #expect(payer.status == 0, "\(payer.output) \(payer.stderr)")
        #expect(tillStatus == 0, "\(till.seen)")
        #expect(Self.ending(payer.output) ?? ("", "") == ("paid", "final"))
        #expect(Self.ending(till.seen) ?? ("", "") == ("received", "final"))
        #expect(payer.output.contains("PAID 4.50 EUR"))
        let request = Self.events(payer.output).first { $0["event"] as? String == "request" }
        #expect((request?["amount"] as? [String: Any])?["minorUnits"] as? Int == 450)
        try Self.conserved(world, ["alice", "bob"], total: before)
        #expect(try Self.balance(world, "bob") >= 450)

        // Carol's till answers where Alice expects Bob: refused before the amount is shown; nothing moves.
        let (impostor, impostorPort) = try Self.till(world, "carol")
        let refused = try Self.pay(world, port: impostorPort, ["--expect-payee", "bob.card"])
        let impostorStatus = Self.finish(impostor)
        #expect(refused.status == 11, "\(refused.output)")
        #expect(refused.output.contains("NOT THE EXPECTED TILL"))
        #expect(!refused.output.contains("\"event\":\"request\""), "the amount is never shown to the wrong till")
        #expect(Self.ending(refused.output) ?? ("", "") == ("failed:refusedByPayerWallet", "final"))
        #expect(Self.ending(impostor.seen) ?? ("", "") == ("failed:refusedByPayerWallet", "final"), "\(impostor.seen)")
        #expect(impostorStatus == 11)
        // Without --expect-payee, the same till is shown as unverified, with its own fingerprint.
        let (shown, shownPort) = try Self.till(world, "carol")
        let unverified = try Self.pay(world, port: shownPort, [], maxAmount: "1.00 EUR")
        _ = Self.finish(shown)
        #expect(unverified.output.contains("unverified till"), "\(unverified.output) \(unverified.stderr)")
        #expect(Self.ending(unverified.output) ?? ("", "") == ("failed:refusedByPayerWallet", "final"))
        try Self.conserved(world, ["alice", "bob", "carol"], total: before + carol)
    }

    @Test func refusalsByThePayersWalletDistanceAndPIN() throws {
        let world = try Self.fixture.get()
        let before = try Self.balance(world, "alice") + Self.balance(world, "bob")
        // Over --max-amount: the till learns only that the payer's wallet refused.
        var (till, port) = try Self.till(world, amount: "12.00 EUR")
        let overMax = try Self.pay(world, port: port, [])
        #expect(overMax.status == 11, "\(overMax.output) \(overMax.stderr)")
        #expect(Self.finish(till) == 11)
        #expect(
            Self.ending(overMax.output) ?? ("", "") == ("failed:refusedByPayerWallet", "final"), "\(overMax.output)")
        #expect(Self.ending(till.seen) ?? ("", "") == ("failed:refusedByPayerWallet", "final"), "\(till.seen)")
        #expect(!till.seen.contains("over-max-amount"))
        // Too far: the spatial proof refuses before ready.
        (till, port) = try Self.till(world)
        let far = try Self.pay(
            world, port: port, [], ranging: ["--allow-simulated-ranging", "--distance", "1400"])
        #expect(Self.finish(till) == 11)
        #expect(far.status == 11 && Self.ending(far.output)?.1 == "final", "\(far.output)")
        #expect(Self.ending(till.seen)?.1 == "final", "\(till.seen)")
        // The payer's token refuses the PIN typed at the approval (the one that opened the wallet was right):
        // failure 14, nothing moved.
        (till, port) = try Self.till(world)
        let pin = try String(contentsOfFile: world.directory + "/toks/alice.pin", encoding: .utf8)
        let wrong = try Side(
            world,
            ["pay", "--till", "--to", "127.0.0.1:" + port, "--yes", "--max-amount", "10.00 EUR", "--json"]
                + Self.ranging + ["--wallet", "alice", "--pin-source", "fd:0"],
            records: world.directory + "/records-\(UUID().uuidString)")
        wrong.answer(pin.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(wrong.wait(for: "\"event\":\"approval\""), "\(wrong.seen)")
        wrong.answer("999999")
        #expect(Self.finish(wrong) == 11)
        #expect(Self.finish(till) == 11)
        #expect(Self.ending(wrong.seen) ?? ("", "") == ("failed:localFailure", "final"), "\(wrong.seen)")
        #expect(Self.ending(till.seen) ?? ("", "") == ("failed:localFailure", "final"), "\(till.seen)")
        try Self.conserved(world, ["alice", "bob"], total: before)
        // The till's own PIN refused at lock-in (the one that opened the wallet was right): nothing is
        // announced or offered.
        let bobPIN = try String(contentsOfFile: world.directory + "/toks/bob.pin", encoding: .utf8)
        let lockIn = try Side(
            world,
            ["till", "--amount", "1.00 EUR", "--listen", "127.0.0.1:0", "--no-announce", "--json"] + Self.ranging
                + ["--wallet", "bob", "--pin-source", "fd:0"],
            records: world.directory + "/records-\(UUID().uuidString)")
        lockIn.answer(bobPIN.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(lockIn.wait(for: "\"state\":\"locking\""), "\(lockIn.seen)")
        lockIn.answer("999999")
        #expect(Self.finish(lockIn) == 3)
        #expect(lockIn.seen.contains("PIN REFUSED"), "\(lockIn.seen)")
        #expect(!lockIn.seen.contains("countingDown"))
    }

    @Test func busyCancelledAndExpired() throws {
        let world = try Self.fixture.get()
        let before = try Self.balance(world, "alice") + Self.balance(world, "bob")
        // The first payer's ranging is a FIFO nobody writes yet: its session holds the till.
        let fifo = world.directory + "/uwb-\(UUID().uuidString.prefix(6))"
        #expect(mkfifo(fifo, 0o600) == 0)
        let (till, port) = try Self.till(world)
        let first = try Side(
            world,
            [
                "pay", "--till", "--to", "127.0.0.1:" + port, "--yes", "--max-amount", "10.00 EUR", "--json",
                "--allow-simulated-ranging", "--ranging-file", fifo,
            ] + world.wallet("alice"),
            records: world.directory + "/records-\(UUID().uuidString)")
        #expect(first.wait(for: "\"event\":\"approval\""), "\(first.seen)")
        let busy = try Self.pay(world, port: port, [], wallet: "carol")
        #expect(busy.status == 11, "\(busy.output) \(busy.stderr)")
        #expect(Self.ending(busy.output) ?? ("", "") == ("failed:tillBusy", "final"), "\(busy.output)")
        #expect(busy.output.contains("TILL BUSY"))
        // The operator cancels while the first payer ranges: its session is withdrawn before ready.
        kill(till.process.processIdentifier, SIGINT)
        #expect(till.wait(for: "\"state\":\"ended\""), "\(till.seen)")
        let writer = open(fifo, O_WRONLY)
        for _ in 0..<20 { _ = "410\n".withCString { write(writer, $0, 4) } }
        close(writer)
        #expect(Self.finish(first) == 11)
        #expect(Self.ending(first.seen) ?? ("", "") == ("failed:withdrawn", "final"), "\(first.seen)")
        #expect(first.seen.contains("CANCELLED by the till"))
        #expect(Self.finish(till) == 11)
        #expect(Self.ending(till.seen) ?? ("", "") == ("failed:withdrawn", "final"), "\(till.seen)")
        // Cancelled while counting down; and a countdown that runs out.
        let (idle, _) = try Self.till(world)
        kill(idle.process.processIdentifier, SIGINT)
        #expect(Self.finish(idle) == 11)
        #expect(Self.ending(idle.seen) ?? ("", "") == ("cancelled", "final"), "\(idle.seen)")
        let (short, _) = try Self.till(world, extra: ["--countdown", "5"])
        #expect(Self.finish(short, seconds: 20) == 11)
        #expect(Self.ending(short.seen) ?? ("", "") == ("expired", "final"), "\(short.seen)")
        try Self.conserved(world, ["alice", "bob"], total: before)
    }

    @Test func declinedAndLinkLostBeforeTheDebit() throws {
        let world = try Self.fixture.get()
        let before = try Self.balance(world, "alice") + Self.balance(world, "bob")
        // A person who does not answer y: here no one can (setsid leaves no terminal), so the prompt declines.
        var (till, port) = try Self.till(world)
        let declined = try Run.program(
            "/usr/bin/setsid",
            ["-w", Run.secure, "pay", "--till", "--to", "127.0.0.1:" + port, "--json"] + Self.ranging
                + world.wallet("alice"), environment: world.environment, directory: world.directory)
        #expect(Self.finish(till) == 11)
        #expect(Self.ending(declined.output) ?? ("", "") == ("failed:declined", "final"), "\(declined.output)")
        #expect(Self.ending(till.seen) ?? ("", "") == ("failed:declined", "final"), "\(till.seen)")
        // The payer's process dies while it ranges (after both approvals, before ready): nothing moved.
        let fifo = world.directory + "/uwb-\(UUID().uuidString.prefix(6))"
        #expect(mkfifo(fifo, 0o600) == 0)
        (till, port) = try Self.till(world)
        let payer = try Side(
            world,
            [
                "pay", "--till", "--to", "127.0.0.1:" + port, "--yes", "--max-amount", "10.00 EUR", "--json",
                "--allow-simulated-ranging", "--ranging-file", fifo,
            ] + world.wallet("alice"),
            records: world.directory + "/records-\(UUID().uuidString)")
        #expect(payer.wait(for: "\"event\":\"approval\""), "\(payer.seen)")
        Thread.sleep(forTimeInterval: 0.3)
        kill(payer.process.processIdentifier, SIGKILL)
        payer.process.waitUntilExit()
        #expect(Self.finish(till) == 11)
        #expect(Self.ending(till.seen) ?? ("", "") == ("failed:localFailure", "final"), "\(till.seen)")
        try Self.conserved(world, ["alice", "bob"], total: before)
    }

    @Test func linkLostAfterTheDebitIsSettledByRetryAtTheTill() throws {
        let world = try Self.fixture.get()
        let before = try Self.balance(world, "alice") + Self.balance(world, "bob")
        let (till, port) = try Self.till(world, extra: ["--repeat"])
        let payer = try Side(
            world,
            ["pay", "--till", "--to", "127.0.0.1:" + port, "--yes", "--max-amount", "10.00 EUR", "--json"]
                + Self.ranging + world.wallet("alice"),
            records: world.directory + "/records-\(UUID().uuidString)")
        // The payer dies right after its durable debit. Whether its transfer left first is a race this test
        // does not control (the rehearsals play both cases exactly): either the till credited it and the payer
        // only lacks the receipt, or the till is unresolved; the payment is pending on the payer's side unless
        // the receipt was kept before the kill.
        #expect(payer.wait(for: "\"event\":\"debit\""), "\(payer.seen)")
        kill(payer.process.processIdentifier, SIGKILL)
        payer.process.waitUntilExit()
        // The till ends that amount and locks the next (--repeat).
        #expect(till.wait(for: "\"state\":\"ended\""), "\(till.seen)")
        if try world.run(["pending"] + world.wallet("alice")).output.contains("4.50 EUR") {
            let retry = try world.run(
                ["retry", "--till", "--to", "127.0.0.1:" + port, "--json"] + Self.ranging + world.wallet("alice"))
            #expect(retry.status == 0, "\(retry.output) \(retry.stderr)")
            #expect(Self.ending(retry.output)?.0 == "paid", "\(retry.output)")
            // The till never shows a retry as this sale: it says so, and counts down on.
            #expect(till.wait(for: "NOT this sale"), "\(till.seen)")
        }
        kill(till.process.processIdentifier, SIGTERM)
        _ = Self.finish(till)
        try Self.conserved(world, ["alice", "bob"], total: before)
    }
}

/// Issue 18's "done when", on two network namespaces with their own Avahi daemons (scripts/lan): a till with
/// a 60 s countdown announced as MIZAN-XXXX is found by `secure pay --till --label MIZAN` and paid; an
/// impostor announcing the same label is refused with `--expect-payee`, and shown as an unverified till
/// with its own fingerprint without it.
@Suite("Till: found by DNS-SD, impostor refused", .serialized)
struct TillDiscoveryCLITests {
    typealias World = WalletCLITests.World
    typealias Side = ContactCLITests.Side
    static let ranging = ["--allow-simulated-ranging", "--distance", "400"]

    static func till(_ world: World, _ lan: DiscoveryCLITests.LAN, _ name: String) throws -> Side {
        let side = try Side(
            world,
            ["till", "--amount", "4.50 EUR", "--label", "mizan", "--countdown", "60", "--json"] + Self.ranging
                + world.wallet(name),
            records: world.directory + "/\(name)-till.records",
            launcher: [Run.projectRoot + "/scripts/lan", "run", lan.directory, "a"])
        #expect(side.wait(for: "countingDown"), "\(side.seen)")
        return side
    }

    @Test func foundPaidAndTheImpostorRefused() throws {
        let lan = try DiscoveryCLITests.LAN()
        let world = try World(wallets: ["alice", "bob", "carol"])
        try world.fund("alice", "20.00 EUR")
        let bob = try Self.till(world, lan, "bob")
        let announced = TillCLITests.events(bob.seen).first { $0["event"] as? String == "announced" }
        let instance = try #require(announced?["instance"] as? String, "\(bob.seen)")
        #expect(instance.hasPrefix("MIZAN-") && instance.count == 10, "\(instance)")
        let paid = try lan.run(
            "b",
            [
                Run.secure, "pay", "--till", "--label", "MIZAN", "--yes", "--max-amount", "10.00 EUR",
                "--expect-payee", "bob.card", "--json",
            ] + Self.ranging + world.wallet("alice"), world: world)
        #expect(paid.status == 0, "\(paid.output)\n\(paid.stderr)")
        #expect(TillCLITests.ending(paid.output) ?? ("", "") == ("paid", "final"), "\(paid.output)")
        #expect(paid.output.contains(instance), "the payer shows the name it picked")
        #expect(TillCLITests.finish(bob) == 0, "\(bob.seen)")
        #expect(TillCLITests.ending(bob.seen) ?? ("", "") == ("received", "final"))

        // Carol announces a till with the same label. With --expect-payee: refused before the amount.
        let carol = try Self.till(world, lan, "carol")
        let refused = try lan.run(
            "b",
            [
                Run.secure, "pay", "--till", "--label", "MIZAN", "--yes", "--max-amount", "10.00 EUR",
                "--expect-payee", "bob.card", "--json",
            ] + Self.ranging + world.wallet("alice"), world: world)
        #expect(refused.status == 11, "\(refused.output)\n\(refused.stderr)")
        #expect(refused.output.contains("NOT THE EXPECTED TILL"), "\(refused.output)")
        #expect(TillCLITests.ending(refused.output) ?? ("", "") == ("failed:refusedByPayerWallet", "final"))
        #expect(TillCLITests.finish(carol) == 11, "\(carol.seen)")
        // Without it, a person sees the impostor as an unverified till with Carol's fingerprint (here no one
        // answers the prompt: setsid leaves no terminal, so it is declined).
        let again = try Self.till(world, lan, "carol")
        let shown = try lan.run(
            "b",
            ["setsid", "-w", Run.secure, "pay", "--till", "--label", "MIZAN", "--json"] + Self.ranging
                + world.wallet("alice"), world: world)
        #expect(shown.output.contains("unverified till"), "\(shown.output)\n\(shown.stderr)")
        let card = try SoundMoneyCLITests.card(world, "carol")
        let events = TillCLITests.events(shown.output)
        let peer = events.first { $0["event"] as? String == "peer" }
        let request = events.first { $0["event"] as? String == "request" }
        #expect(peer?["walletID"] as? String == card.walletID.hex, "\(shown.output)")
        let full = (peer?["fingerprint"] as? String ?? "").uppercased()
        #expect(
            (request?["fingerprint"] as? String).map { !full.isEmpty && $0.hasPrefix(String(full.prefix(4))) } == true,
            "the till screen shows the impostor's own fingerprint: \(shown.output)")
        #expect(TillCLITests.ending(shown.output) ?? ("", "") == ("failed:declined", "final"), "\(shown.output)")
        _ = TillCLITests.finish(again)
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("15.50 EUR"))
    }
}
