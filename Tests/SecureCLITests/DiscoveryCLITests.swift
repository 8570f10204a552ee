import Foundation
import SecureTestSupport
import Testing

/// Issue 17's discovery, on a real two-host network: scripts/lan makes two network namespaces on a veth pair,
/// each with its own D-Bus system bus and Avahi daemon. Bob's wallet announces in one; Alice's finds it in the
/// other, and so does avahi-browse, a client that is not ours.
@Suite("Discovery: receive --announce and pay --near over Avahi", .serialized)
struct DiscoveryCLITests {
    typealias World = WalletCLITests.World

    /// A two-host network for one test, stopped (daemons by pid, then the namespaces) when it goes.
    final class LAN {
        let directory: String
        init() throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("secure-lan-\(UUID().uuidString)")
                .path
            let up = try Run.program(Run.projectRoot + "/scripts/lan", ["up", directory])
            guard up.status == 0 else { throw CLITests.CLIFailure("scripts/lan up: \(up.stderr)") }
        }
        deinit {
            _ = try? Run.program(Run.projectRoot + "/scripts/lan", ["down", directory])
            try? FileManager.default.removeItem(atPath: directory)
        }
        /// The words that run a command on one side.
        func on(_ side: String, _ command: [String]) -> [String] { ["run", directory, side] + command }
        func run(_ side: String, _ command: [String], world: World) throws -> ProcessResult {
            try Run.program(
                Run.projectRoot + "/scripts/lan", on(side, command), environment: world.environment,
                directory: world.directory)
        }
    }

    /// Starts bob's receiver on side a, announcing; returns it with its output pipe, once it has announced.
    static func announcingReceiver(_ world: World, _ lan: LAN, extra: [String] = []) throws -> (Process, Pipe, String) {
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Run.projectRoot + "/scripts/lan")
        receiver.arguments = lan.on(
            "a",
            [
                Run.secure, "receive", "--announce", "--count", "1", "--for", "60", "--yes", "--json",
                "--allow-simulated-ranging", "--distance", "120",
            ] + world.wallet("bob") + extra)
        receiver.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
        receiver.currentDirectoryURL = URL(fileURLWithPath: world.directory)
        let output = Pipe()
        receiver.standardOutput = output
        receiver.standardError = output
        try receiver.run()
        var seen = ""
        let deadline = Date(timeIntervalSinceNow: 30)
        while !seen.contains("\"event\":\"announced\""), Date() < deadline, receiver.isRunning {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        return (receiver, output, seen)
    }

    @Test func aPayerFindsAnAnnouncedReceiverAndAStockClientSeesNoIdentity() throws {
        let lan = try LAN()
        let world = try World()
        try world.fund("alice", "20.00 EUR")
        let bobID = try String(contentsOfFile: world.directory + "/bob.card", encoding: .utf8)
        let (receiver, output, announced) = try Self.announcingReceiver(world, lan)
        defer { if receiver.isRunning { receiver.terminate() } }
        #expect(announced.contains("\"event\":\"announced\""), "\(announced)")

        // avahi-browse, in the other namespace, lists it; the records hold no wallet identity: a random
        // instance and host name, and a TXT record of version and nonce only.
        let browse = try lan.run("b", ["avahi-browse", "-rtp", "_secure-pay._tcp"], world: world)
        let resolved = browse.output.split(separator: "\n").filter { $0.hasPrefix("=") }
        #expect(resolved.count == 1, "avahi-browse: \(browse.output) \(browse.stderr)")
        let fields = resolved.first.map { $0.split(separator: ";", omittingEmptySubsequences: false).map(String.init) }
        let record = try #require(fields, "\(browse.output)")
        #expect(record.count >= 10, "\(record)")
        #expect(record[3].hasPrefix("secure-") && record[3].count == 19, "instance \(record[3])")
        #expect(record[6].hasPrefix("w") && record[6].hasSuffix(".local") && !record[6].contains("secure-lan"))
        #expect(record[7] == "10.77.0.1", "\(record)")
        let txt = record[9]
        #expect(txt.contains("\"v=1\"") && txt.contains("\"n="), "\(txt)")
        let entries = txt.split(separator: "\"").filter { $0.contains("=") }.map(String.init)
        #expect(entries.count == 10, "v, n and eight tag slots only: \(txt)")
        #expect(Set(entries.map { $0.split(separator: "=")[0] }) == Set(["v", "n"] + (0..<8).map { "t\($0)" }))
        for line in resolved { #expect(!line.lowercased().contains(String(bobID.prefix(16)).lowercased())) }

        // Alice, on side b, finds it with --near and pays it.
        let pay = try lan.run(
            "b",
            [
                Run.secure, "pay", "--near", "--pick", "1", "--amount", "5.00 EUR", "--category", "food", "--yes",
                "--expect-payee", "bob.card", "--allow-simulated-ranging", "--distance", "120", "--json",
            ] + world.wallet("alice"), world: world)
        #expect(pay.status == 0, "\(pay.output)\n\(pay.stderr)")
        #expect(
            pay.output.contains("\"event\":\"found\"") && pay.output.contains("\"address\":\"10.77.0.1\""),
            "\(pay.output)")
        receiver.waitUntilExit()
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(receiver.terminationStatus == 0, "\(announced)\(rest)")
        // Both sides' event lines, the discovery events included, match the peer-event schema.
        let lines = (announced + rest + pay.output).split(separator: "\n").filter { $0.hasPrefix("{") }
        let validated = try Run.program(
            RotationCLITests.python,
            [
                "-c",
                """
                import json, sys
                from jsonschema import Draft202012Validator
                schema = json.load(open(sys.argv[1]))
                errors = [f"{line[:80]}: {e.message}" for line in sys.stdin.read().splitlines()
                          for e in Draft202012Validator(schema).iter_errors(json.loads(line))]
                print("\\n".join(errors) or "valid")
                sys.exit(1 if errors else 0)
                """, Run.projectRoot + "/docs/schemas/peer-event.v4.schema.json",
            ], input: Array(lines.joined(separator: "\n").utf8))
        #expect(validated.status == 0, "\(validated.output)\(validated.stderr)")
        #expect(lines.contains { $0.contains("\"event\":\"announced\"") })
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("5.00 EUR"))
        // Once the receiver is gone, so is its announcement (withdrawn with goodbye packets; the other
        // side's daemon drops it from its cache within a second or so).
        var after = try lan.run("b", ["avahi-browse", "-rtp", "_secure-pay._tcp"], world: world)
        for _ in 0..<10 where after.output.contains("=;") {
            Thread.sleep(forTimeInterval: 1)
            after = try lan.run("b", ["avahi-browse", "-rtp", "_secure-pay._tcp"], world: world)
        }
        #expect(!after.output.contains("=;"), "\(after.output)")
    }

    @Test func withoutADaemonOrAnEndItSaysSo() throws {
        let world = try World()
        try world.fund("alice", "20.00 EUR")
        let noDaemon = try Run.program(
            Run.secure,
            ["pay", "--near", "--pick", "1", "--amount", "1.00 EUR", "--category", "x", "--allow-simulated-ranging"]
                + world.wallet("alice"),
            environment: world.environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"]) { $1 },
            directory: world.directory)
        #expect(noDaemon.status == 1 && noDaemon.stderr.contains("no Avahi daemon"), "\(noDaemon.stderr)")
        #expect(noDaemon.stderr.contains("--to HOST:PORT"), "\(noDaemon.stderr)")
        let endless = try world.run(["receive", "--announce", "--allow-simulated-ranging"] + world.wallet("bob"))
        #expect(endless.status == 2 && endless.stderr.contains("--count N or --for SECONDS"), "\(endless.stderr)")
        let both = try world.run(
            [
                "pay", "--near", "--to", "127.0.0.1:9", "--amount", "1.00 EUR", "--category", "x",
                "--allow-simulated-ranging",
            ] + world.wallet("alice"))
        #expect(both.status == 2 && both.stderr.contains("pick one"), "\(both.stderr)")
    }

    @Test func nothingAnnouncedMeansNothingPaidAndAStrangersRecordIsNotPickable() throws {
        let lan = try LAN()
        let world = try World()
        try world.fund("alice", "20.00 EUR")
        // A stranger announces the service type with a TXT record that is not a wallet's.
        let stranger = Process()
        stranger.executableURL = URL(fileURLWithPath: Run.projectRoot + "/scripts/lan")
        stranger.arguments = lan.on(
            "a", ["avahi-publish", "-s", "Pay me \u{202E}gnp.exe", "_secure-pay._tcp", "7464", "v=9", "n=zz"])
        stranger.standardOutput = FileHandle.nullDevice
        stranger.standardError = FileHandle.nullDevice
        try stranger.run()
        defer { if stranger.isRunning { stranger.terminate() } }
        // And one with a wallet's TXT record under a name chosen to sort first: not a wallet's name.
        let first = Process()
        first.executableURL = URL(fileURLWithPath: Run.projectRoot + "/scripts/lan")
        first.arguments = lan.on(
            "a",
            [
                "avahi-publish", "-s", " secure-000000000000", "_secure-pay._tcp", "7465", "v=1",
                "n=" + String(repeating: "00", count: 16),
            ])
        first.standardOutput = FileHandle.nullDevice
        first.standardError = FileHandle.nullDevice
        try first.run()
        defer { if first.isRunning { first.terminate() } }
        Thread.sleep(forTimeInterval: 2)
        // A script that pays what it finds must name whom it means to pay.
        let blind = try lan.run(
            "b",
            [
                Run.secure, "pay", "--near", "--pick", "1", "--amount", "5.00 EUR", "--category", "food", "--yes",
                "--allow-simulated-ranging",
            ] + world.wallet("alice"), world: world)
        #expect(blind.status == 2 && blind.stderr.contains("--expect-payee"), "\(blind.stderr)")
        let pay = try lan.run(
            "b",
            [
                Run.secure, "pay", "--near", "--pick", "1", "--amount", "5.00 EUR", "--category", "food", "--yes",
                "--expect-payee", "bob.card", "--allow-simulated-ranging",
            ] + world.wallet("alice"), world: world)
        #expect(pay.status == 1 && pay.stderr.contains("no wallet announced"), "\(pay.output)\n\(pay.stderr)")
        #expect(pay.output.contains("its name is not a wallet's"), "\(pay.output)")
        #expect(pay.output.contains("not a wallet this build can pay"), "\(pay.output)")
        #expect(pay.output.contains("\\u{202E}") && !pay.output.contains("\u{202E}"), "escaped: \(pay.output)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("20.00 EUR"))
    }
}
