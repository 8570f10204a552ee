import Foundation
import SecureTestSupport
import Testing

/// Issue 13, case 1: a peer's note and name are data. A hostile receiver (`secure-hostile-peer`, which sends
/// what the stock binary refuses to send) requests 32.00 EUR with a note that returns the cursor, erases the
/// line and writes a fake "Pay 3.20 EUR …" prompt, and a name with a right-to-left override. The real `secure
/// pay` runs on a pseudo-terminal whose output goes through a VT100 emulator (pyte, in the oracle venv): the
/// screen a person sees must show the true amount on the question line, the note's escapes visibly, and no
/// fake prompt.
@Suite("Hostile peer text on a real terminal", .serialized)
struct HostilePeerTextTests {
    typealias World = WalletCLITests.World

    static var hostilePeer: String { Run.productsDirectory + "/secure-hostile-peer" }
    static var screen: String { Run.projectRoot + "/scripts/oracles/terminal_screen.py" }

    /// The corpus: cursor movement and erasure, a fake prompt, C1 CSI, bidi overrides and isolates, zero
    /// width characters, a line separator and a bell.
    static let notes: [String] = [
        "\r\u{1B}[2KPay 3.20 EUR to CD11…88DA (receiver) for \"Coffee",
        "Coffee\u{1B}[1A\u{1B}[2K\rPay 3.20 EUR? [y/N] ",
        "\u{9B}2K\u{202E}RUE 02.3 yaP\u{202C}\u{2066}x\u{2069}",
        "a\u{200B}b\u{2028}Pay 3.20 EUR\u{2029}\u{7}\u{8}\u{8}\u{8}",
    ]

    @Test(arguments: 0..<notes.count)
    func aHostileNoteCannotRewriteThePrompt(index: Int) throws {
        let world = try World()
        try world.fund("alice", "50.00 EUR")
        let port = String(Int.random(in: 20_000..<40_000))
        let note = Self.notes[index]
        let name = "\u{202E}reviecer\u{202C}"
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: Self.hostilePeer)
        peer.arguments = [
            "--wallet", "bob", "--pin-source", "file:toks/bob.pin", "--listen", port, "--request", "32.00 EUR",
            "--note-hex", Data(note.utf8).map { String(format: "%02x", $0) }.joined(),
            "--name-hex", Data(name.utf8).map { String(format: "%02x", $0) }.joined(),
        ]
        peer.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
        peer.currentDirectoryURL = URL(fileURLWithPath: world.directory)
        let peerOutput = Pipe()
        peer.standardOutput = peerOutput
        peer.standardError = peerOutput
        try peer.run()
        defer { if peer.isRunning { peer.terminate() } }
        Thread.sleep(forTimeInterval: 1.0)
        let result = try Run.program(
            RotationCLITests.python,
            [
                Self.screen, "--until", "[y/N]", "--answer", "n", "--timeout", "60", "--", Run.secure, "pay", "--to",
                "127.0.0.1:" + port, "--category", "food", "--allow-simulated-ranging", "--distance", "400",
            ] + world.wallet("alice"),
            environment: world.environment, directory: world.directory)
        peer.waitUntilExit()
        let screen = result.output
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines.contains("answered True"), "no prompt was shown:\n\(screen)")
        // The question is the last line that asks (a hostile note may hold "[y/N]" too, escaped, above it).
        let question = try #require(lines.last { $0.contains("[y/N]") }, "\(screen)")
        #expect(question.hasPrefix("Pay 32.00 EUR"), "the question line is \(question)\n\(screen)")
        #expect(!lines.contains { $0.hasPrefix("Pay 3.20") }, "a fake prompt is on the screen:\n\(screen)")
        #expect(lines.contains { $0.contains("note:") && $0.contains("\\u{") }, "the note is not escaped:\n\(screen)")
        #expect(lines.contains { $0.contains("calls itself \"\\u{202E}reviecer\\u{202C}\"") }, "\(screen)")
        #expect(
            try world.run(["balance"] + world.wallet("alice")).output.contains("50.00 EUR"),
            "the payer declined, so nothing moved")
    }

    /// Our own encoder refuses such text: a note or name with a control or format character is a usage error.
    @Test func theStockBinaryRefusesToSendControlCharacters() throws {
        let world = try World()
        for (option, value) in [("--note", "a\u{1B}[2Kb"), ("--name", "x\u{202E}y"), ("--note", "zero\u{200B}width")] {
            let result = try world.run(
                ["receive", "--request", "1.00 EUR", option, value, "--allow-simulated-ranging"] + world.wallet("bob"))
            #expect(result.status == 2 && result.stderr.contains("control or format character"), "\(result.stderr)")
        }
    }

    /// Issue 13, case 3: on a terminal the distance is one line redrawn in place, not one line per reading.
    @Test func theDistanceIsOneLiveLineOnATerminal() throws {
        let world = try PeerCLITests.funded()
        let readings = (0..<20).map { "\(400 + $0 * 3)\n" }.joined()
        try readings.write(toFile: world.directory + "/uwb.txt", atomically: true, encoding: .utf8)
        let port = String(Int.random(in: 20_000..<40_000))
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Run.secure)
        receiver.arguments =
            [
                "receive", "--listen", "127.0.0.1:" + port, "--yes", "--count", "1", "--sessions", "1",
                "--ranging-file", "uwb.txt",
            ] + world.wallet("bob")
        receiver.environment = ProcessInfo.processInfo.environment.merging(world.environment) { $1 }
        receiver.currentDirectoryURL = URL(fileURLWithPath: world.directory)
        receiver.standardOutput = FileHandle.nullDevice
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer { if receiver.isRunning { receiver.terminate() } }
        Thread.sleep(forTimeInterval: 1.0)
        let result = try Run.program(
            RotationCLITests.python,
            [
                Self.screen, "--until", "[y/N]", "--answer", "y", "--timeout", "60", "--", Run.secure, "pay", "--to",
                "127.0.0.1:" + port, "--amount", "2.00 EUR", "--category", "food", "--ranging-file", "uwb.txt",
            ] + world.wallet("alice"),
            environment: world.environment, directory: world.directory)
        receiver.waitUntilExit()
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("exit 0"), "\(result.output)")
        let distanceLines = lines.filter { $0.hasPrefix("distance ") }
        #expect(distanceLines == ["distance 0.46 m"], "one line, showing the last reading:\n\(result.output)")
        #expect(lines.contains { $0.hasPrefix("measured ") }, "\(result.output)")
    }

    /// Ctrl-C at the PIN prompt ends the command with the terminal's echo back on (found by the attack on
    /// issue 13: the terminal was left without echo).
    @Test func ctrlCAtThePINPromptGivesTheEchoBack() throws {
        let world = try World()
        let result = try Run.program(
            RotationCLITests.python,
            [Run.projectRoot + "/scripts/oracles/sigint_pin.py", Run.secure, "alice"],
            environment: world.environment, directory: world.directory)
        #expect(result.output.contains("prompt echo-during False echo-after True signaled True"), "\(result.output)")
    }
}
