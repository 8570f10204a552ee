import Foundation
import SecureTestSupport
import Testing

/// Issue 17's contact exchange through the built binary: two people's `secure contact add` on loopback (and,
/// in `ContactDiscoveryCLITests`, on two network namespaces), each answering the words question on its
/// standard input as a person would after hearing the other read them. What crossed the channel is checked
/// through SECURE_TEST_CHANNEL_RECORDS (every plaintext record, as the channel saw it), not the output.
@Suite("Contacts: secure contact add", .serialized)
struct ContactCLITests {
    typealias World = WalletCLITests.World

    /// One side of an exchange: a running `secure` whose output is read as it comes, and whose standard
    /// input takes the person's answer.
    final class Side: @unchecked Sendable {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let lock = NSLock()
        private var text = ""
        let records: String

        /// Runs `secure ARGUMENTS`, or `LAUNCHER… secure ARGUMENTS` (scripts/lan run DIR SIDE).
        init(_ world: World, _ arguments: [String], records: String, launcher: [String] = []) throws {
            self.records = records
            process.executableURL = URL(fileURLWithPath: launcher.first ?? Run.secure)
            process.arguments = launcher.isEmpty ? arguments : Array(launcher.dropFirst()) + [Run.secure] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
                .merging(["SECURE_TEST_CHANNEL_RECORDS": records]) { $1 }
            process.currentDirectoryURL = URL(fileURLWithPath: world.directory)
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let handle = output.fileHandleForReading
            Thread.detachNewThread { [self] in
                while true {
                    let data = handle.availableData
                    if data.isEmpty { return }
                    lock.withLock { text += String(decoding: data, as: UTF8.self) }
                }
            }
        }

        var seen: String { lock.withLock { text } }

        /// Waits until the output holds `needle` or the process ended; whether it holds it.
        func wait(for needle: String, seconds: Double = 60) -> Bool {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while Date() < deadline {
                if seen.contains(needle) { return true }
                if !process.isRunning { return seen.contains(needle) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }

        /// The five words this side shows, once it shows them.
        var words: [String]? {
            let lines = seen.split(separator: "\n", omittingEmptySubsequences: true)
            guard let header = lines.firstIndex(where: { $0.hasPrefix("Contact words") }), header + 1 < lines.count
            else { return nil }
            let words = lines[header + 1].split(separator: " ").map(String.init)
            return words.count == 5 ? words : nil
        }

        func answer(_ line: String) {
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
        }

        /// Waits for the end (at most a minute) and returns the exit status and the whole output.
        func finish() -> (status: Int32, output: String) {
            let deadline = Date(timeIntervalSinceNow: 60)
            while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            Thread.sleep(forTimeInterval: 0.1)
            return (process.terminationStatus, seen)
        }

        /// The plaintext records this side's channel sent (">") and received ("<"): type and payload bytes.
        func channelRecords() throws -> [(sent: Bool, type: Int, payload: [UInt8])] {
            guard FileManager.default.fileExists(atPath: records) else { return [] }
            return try String(contentsOfFile: records, encoding: .utf8).split(separator: "\n").map { line in
                let parts = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                return (parts[0] == ">", Int(parts[1]) ?? -1, Array(Data(hexString: parts.count > 2 ? parts[2] : "")))
            }
        }
    }

    static func port() -> Int { Int.random(in: 20_000...40_000) }

    /// Bob listens, Alice connects; both with simulated ranging at the given distances.
    static func exchange(
        _ world: World, bob bobMillimetres: Int, alice aliceMillimetres: Int, bobExtra: [String] = [],
        aliceExtra: [String] = [], names: (bob: String, alice: String) = ("alice", "bob"), junkFirst: Bool = false
    ) throws -> (bob: Side, alice: Side) {
        let port = port()
        let address = "127.0.0.1:\(port)"
        let bob = try Side(
            world,
            ["contact", "add", "--listen", address, "--name", names.bob, "--near-seconds", "30"] + world.wallet("bob")
                + ["--allow-simulated-ranging", "--distance", "\(bobMillimetres)"] + bobExtra,
            records: world.directory + "/bob.records")
        #expect(bob.wait(for: "listening on", seconds: 30), "\(bob.seen)")
        if junkFirst {
            // Someone races alice to bob's port with garbage: bob logs it and keeps waiting for her.
            _ = try Run.program("/bin/bash", ["-c", "exec 3<>/dev/tcp/127.0.0.1/\(port); echo junk >&3; exec 3>&-"])
            #expect(bob.wait(for: "failed its handshake", seconds: 15), "\(bob.seen)")
        }
        let alice = try Side(
            world,
            ["contact", "add", "--to", address, "--name", names.alice] + world.wallet("alice")
                + (aliceExtra.contains("--ranging-file")
                    ? [] : ["--allow-simulated-ranging", "--distance", "\(aliceMillimetres)"]) + aliceExtra,
            records: world.directory + "/alice.records")
        return (bob, alice)
    }

    /// The bytes that name a wallet: its id, as its card gives it.
    static func walletID(_ world: World, _ name: String) throws -> [UInt8] {
        let card = try String(contentsOfFile: world.directory + "/\(name).card", encoding: .utf8)
        let line = try #require(card.split(separator: "\n").first { $0.hasPrefix("Wallet-ID: ") })
        return Array(Data(hexString: String(line.dropFirst("Wallet-ID: ".count))))
    }

    @Test func bothSidesShowTheSameWordsAndStoreTheContactAfterBothConfirm() throws {
        let world = try World()
        try world.fund("alice", "20.00 EUR")
        let (bob, alice) = try Self.exchange(world, bob: 150, alice: 160, junkFirst: true)
        #expect(alice.wait(for: "Did the other person read"), "\(alice.seen)")
        #expect(bob.wait(for: "Did the other person read"), "\(bob.seen)")
        let words = try #require(alice.words, "\(alice.seen)")
        #expect(bob.words == words, "alice \(words), bob \(bob.words ?? [])")
        #expect(Set(words).count == 5)
        alice.answer("y")
        bob.answer("y")
        let (aliceStatus, aliceOutput) = alice.finish()
        let (bobStatus, bobOutput) = bob.finish()
        #expect(aliceStatus == 0 && aliceOutput.contains("contact bob added, verified"), "\(aliceOutput)")
        #expect(bobStatus == 0 && bobOutput.contains("contact alice added, verified"), "\(bobOutput)")
        let bobID = try Self.walletID(world, "bob")
        #expect(aliceOutput.contains(Data(bobID).hexString), "the contact stored is bob's wallet")
        // After the gate, the identities did cross: bob's id is in a record alice received.
        let received = try alice.channelRecords().filter { !$0.sent }
        #expect(received.contains { Self.contains($0.payload, bobID) }, "bob's card reached alice")
        for name in ["alice", "bob"] {
            let list = try world.run(["contact", "list"] + world.wallet(name))
            #expect(list.output.contains(name == "alice" ? "bob" : "alice") && list.output.contains("verified"))
        }

        // A transfer file to a contact is sealed to it: no wallet id in the file, bob opens it, and a wallet
        // that is not the contact (alice herself, who holds the same key) cannot.
        let spend = try world.run(
            ["spend", "--to", "bob", "--amount", "2.00 EUR", "--category", "gift", "--out", "to-bob.bin"]
                + world.wallet("alice"))
        #expect(spend.status == 0, "\(spend.output)\(spend.stderr)")
        #expect(spend.output.contains("sealed to contact bob"), "\(spend.output)")
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: world.directory + "/to-bob.bin")))
        #expect(file.starts(with: Array("SECSEAL1".utf8)) && !Self.contains(file, bobID))
        let reflected = try world.run(["accept", "to-bob.bin", "--no-proximity"] + world.wallet("alice"))
        #expect(reflected.status != 0 && reflected.stderr.contains("sealed"), "\(reflected.stderr)")
        let accepted = try world.run(["accept", "to-bob.bin", "--no-proximity"] + world.wallet("bob"))
        #expect(accepted.status == 0, "\(accepted.output)\(accepted.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("2.00 EUR"))
        let history = try world.run(["history"] + world.wallet("bob"))
        #expect(history.output.contains("contact \"alice\""), "\(history.output)")

        // Meeting again under other names changes nothing on either side: a link that dropped after one
        // confirm would otherwise leave the two with different secrets. Both must remove the contact first.
        let (bobAgain, aliceAgain) = try Self.exchange(world, bob: 150, alice: 150, names: ("alice2", "bob2"))
        let (againStatus, againOutput) = aliceAgain.finish()
        #expect(againStatus == 11 && againOutput.contains("already your contact"), "\(againOutput)")
        #expect(bobAgain.finish().status == 11, "\(bobAgain.seen)")
        let lists = try ["alice", "bob"].map { try world.run(["contact", "list"] + world.wallet($0)).output }
        #expect(lists[0].contains("bob") && !lists[0].contains("bob2") && lists[0].contains("verified"), "\(lists[0])")
        #expect(lists[1].contains("alice") && !lists[1].contains("alice2"), "\(lists[1])")
    }

    @Test(arguments: [(300, 150), (150, 300), (100, 240)])
    func aClosedGateLetsNoIdentityCross(bobMillimetres: Int, aliceMillimetres: Int) throws {
        let world = try World()
        let (bob, alice) = try Self.exchange(world, bob: bobMillimetres, alice: aliceMillimetres)
        let (aliceStatus, aliceOutput) = alice.finish()
        let (bobStatus, bobOutput) = bob.finish()
        #expect(aliceStatus == 11 && aliceOutput.contains("no contact added"), "\(aliceOutput)")
        #expect(bobStatus == 11 && bobOutput.contains("no contact added"), "\(bobOutput)")
        #expect(!aliceOutput.contains("Contact words") && !bobOutput.contains("Contact words"))
        try Self.expectNoIdentityCrossed(world, [alice, bob])
    }

    @Test func simulatedRangingOnOneSideOnlyKeepsTheGateClosed() throws {
        let world = try World()
        // Alice ranges from a file (as a UWB board would give), without allowing simulated ranging; bob's is
        // simulated, so alice's gate stays closed, and so, told so, does bob's.
        let readings = world.directory + "/readings.txt"
        try (Array(repeating: "150", count: 20).joined(separator: "\n") + "\n").write(
            toFile: readings, atomically: true, encoding: .utf8)
        let (bob, alice) = try Self.exchange(world, bob: 150, alice: 150, aliceExtra: ["--ranging-file", readings])
        let (aliceStatus, aliceOutput) = alice.finish()
        let (bobStatus, bobOutput) = bob.finish()
        #expect(aliceStatus == 11 && aliceOutput.contains("simulated ranging is not allowed"), "\(aliceOutput)")
        #expect(bobStatus == 11, "\(bobOutput)")
        try Self.expectNoIdentityCrossed(world, [alice, bob])
    }

    @Test func aDeclineOnEitherSideStoresNothing() throws {
        let world = try World()
        let (bob, alice) = try Self.exchange(world, bob: 150, alice: 150)
        #expect(alice.wait(for: "Did the other person read") && bob.wait(for: "Did the other person read"))
        bob.answer("n")
        alice.answer("y")
        let (aliceStatus, aliceOutput) = alice.finish()
        let (bobStatus, bobOutput) = bob.finish()
        #expect(bobStatus == 11 && bobOutput.contains("declined"), "\(bobOutput)")
        #expect(aliceStatus == 11 && aliceOutput.contains("did not confirm the words"), "\(aliceOutput)")
        for name in ["alice", "bob"] {
            let list = try world.run(["contact", "list"] + world.wallet(name))
            #expect(list.status == 0 && !list.output.contains(name == "alice" ? "bob" : "alice"), "\(list.output)")
        }
    }

    /// Only gate and failure messages crossed, and no record holds either wallet's id.
    static func expectNoIdentityCrossed(_ world: World, _ sides: [Side]) throws {
        let ids = try ["alice", "bob"].map { try walletID(world, $0) }
        for side in sides {
            for record in try side.channelRecords() {
                #expect(record.type == 3, "only contact records: \(record.type)")
                #expect(record.payload.count >= 2 && [1, 6].contains(record.payload[1]), "gate or failure only")
                for id in ids { #expect(!contains(record.payload, id), "a wallet id crossed before the gate") }
            }
        }
        #expect(try sides.allSatisfy { try $0.channelRecords().contains { $0.sent } }, "the gates were sent")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
    }
}

/// The whole journey in two network namespaces with their own Avahi daemons (scripts/lan): two people add
/// each other with `contact add --near`, then one pays the other with `pay --to NAME`, found by its tag; a
/// third wallet that replays that announcement gets a probe it cannot answer, and nothing else.
@Suite("Contacts: add near, pay by name, refuse a replayed tag", .serialized)
struct ContactDiscoveryCLITests {
    typealias World = WalletCLITests.World
    typealias Side = ContactCLITests.Side

    @Test func addNearThenPayByNameAndRefuseAReplayedTag() throws {
        let lan = try DiscoveryCLITests.LAN()
        let world = try World(wallets: ["alice", "bob", "carol"])
        try world.fund("alice", "20.00 EUR")
        let ranging = ["--allow-simulated-ranging", "--distance", "150"]
        let bob = try Side(
            world, ["contact", "add", "--near", "--name", "alice"] + world.wallet("bob") + ranging,
            records: world.directory + "/bob.records",
            launcher: [Run.projectRoot + "/scripts/lan", "run", lan.directory, "a"])
        let alice = try Side(
            world, ["contact", "add", "--near", "--name", "bob"] + world.wallet("alice") + ranging,
            records: world.directory + "/alice.records",
            launcher: [Run.projectRoot + "/scripts/lan", "run", lan.directory, "b"])
        #expect(alice.wait(for: "Did the other person read"), "\(alice.seen)")
        #expect(bob.wait(for: "Did the other person read"), "\(bob.seen)")
        #expect(alice.words != nil && alice.words == bob.words, "\(alice.seen)\n\(bob.seen)")
        alice.answer("y")
        bob.answer("y")
        #expect(alice.finish().status == 0, "\(alice.seen)")
        #expect(bob.finish().status == 0, "\(bob.seen)")
        // Exactly one side connected (the smaller nonce), and the other waited.
        #expect(alice.seen.contains("connecting to") != bob.seen.contains("connecting to"), "\(alice.seen)\(bob.seen)")

        // Bob receives, announced; Alice pays "bob" by name: found by its tag, proven on the channel.
        let receiver = try Side(
            world,
            ["receive", "--announce", "--count", "1", "--for", "60", "--yes"] + world.wallet("bob")
                + ["--allow-simulated-ranging", "--distance", "120"],
            records: world.directory + "/bob-receive.records",
            launcher: [Run.projectRoot + "/scripts/lan", "run", lan.directory, "a"])
        #expect(receiver.wait(for: "announced on the local network"), "\(receiver.seen)")
        let browse = try lan.run("b", ["avahi-browse", "-rtp", "_secure-pay._tcp"], world: world)
        let resolved = try #require(
            browse.output.split(separator: "\n").first { $0.hasPrefix("=") }, "\(browse.output)")
        let txt = String(resolved.split(separator: ";", omittingEmptySubsequences: false).last ?? "")
        let entries = txt.split(separator: "\"").filter { $0.contains("=") }.map(String.init)
        #expect(entries.count == 10, "\(txt)")
        let pay = try lan.run(
            "b",
            [
                Run.secure, "pay", "--to", "bob", "--amount", "5.00 EUR", "--category", "food", "--yes",
                "--allow-simulated-ranging", "--distance", "120",
            ] + world.wallet("alice"), world: world)
        #expect(pay.status == 0, "\(pay.output)\n\(pay.stderr)")
        #expect(pay.output.contains("contact bob (proof pending)"), "\(pay.output)")
        #expect(pay.output.contains("contact bob verified"), "\(pay.output)")
        #expect(receiver.finish().status == 0, "\(receiver.seen)")
        #expect(receiver.seen.contains("contact alice verified"), "\(receiver.seen)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("5.00 EUR"))

        // Carol replays bob's announcement, tags and all, at her own receiver. Alice's `pay --to bob` finds
        // the tag, connects, sends the probe, gets no answer, and sends nothing more: no hello, no debit.
        let carol = try Side(
            world,
            ["receive", "--listen", "0.0.0.0:7470", "--count", "1", "--for", "40", "--yes"] + world.wallet("carol")
                + ["--allow-simulated-ranging", "--distance", "120"],
            records: world.directory + "/carol.records",
            launcher: [Run.projectRoot + "/scripts/lan", "run", lan.directory, "a"])
        #expect(carol.wait(for: "listening on"), "\(carol.seen)")
        let replay = Process()
        replay.executableURL = URL(fileURLWithPath: Run.projectRoot + "/scripts/lan")
        replay.arguments = lan.on(
            "a", ["avahi-publish", "-s", "secure-0123456789ab", "_secure-pay._tcp", "7470"] + entries)
        replay.standardOutput = FileHandle.nullDevice
        replay.standardError = FileHandle.nullDevice
        try replay.run()
        defer { if replay.isRunning { replay.terminate() } }
        Thread.sleep(forTimeInterval: 2)
        let fooled = try lan.run(
            "b",
            [
                Run.secure, "pay", "--to", "bob", "--amount", "5.00 EUR", "--category", "food", "--yes",
                "--allow-simulated-ranging", "--distance", "120",
            ] + world.wallet("alice"), world: world)
        #expect(fooled.status == 1, "\(fooled.output)\n\(fooled.stderr)")
        #expect(fooled.output.contains("could not prove it is bob"), "\(fooled.output)")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("15.00 EUR"))
        carol.process.terminate()
        _ = carol.finish()
        let carolSaw = try carol.channelRecords()
        #expect(carolSaw.contains { !$0.sent && $0.type == 5 }, "the probe reached carol")
        #expect(!carolSaw.contains { !$0.sent && ($0.type == 1 || $0.type == 2) }, "no hello or message of alice's")
        #expect(carolSaw.allSatisfy { !$0.sent ? true : $0.type == 6 && $0.payload.isEmpty }, "carol sent only a no")
    }
}

extension Data {
    /// Bytes from lowercase or uppercase hex (test helper; invalid pairs are skipped).
    init(hexString: String) {
        var bytes: [UInt8] = []
        var index = hexString.startIndex
        while index < hexString.endIndex, let next = hexString.index(index, offsetBy: 2, limitedBy: hexString.endIndex)
        {
            if let byte = UInt8(hexString[index..<next], radix: 16) { bytes.append(byte) }
            index = next
        }
        self.init(bytes)
    }

    /// Lowercase hex.
    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}
