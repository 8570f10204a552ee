import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecureDiscovery
import SecurePeer
import SecureToken
import SecureWallet

/// `secure-bench till [--runs N] [--first-contact-runs M] [--quick] [--trace] [--json]`: issue 18's till benchmark
/// (docs/TILL.md §6; docs/PERFORMANCE.md, "Till"). Two in-process wallets on SoftHSM tokens made for the run
/// (`PayBenchLab`, as `secure-bench pay`), over loopback TCP. The till is a receiver in request mode
/// (`PeerDriver(role: .receive(request:))`) served by a `PeerServer`, as a till serves; the payer answers
/// requests (`.answerRequest`), and its person declines at the category prompt, which ends the session.
/// - **connect → amount on screen**: from the payer's `TCPTransport.connect` call to the moment its person
///   is handed the till's request (`chooseCategory`): handshake, both hellos, both lookups, `request`
///   delivered and checked;
/// - **baseline**, in the same runs against the same server: `SecureChannel.initiate` over a new connection
///   plus one record of the request message's size sent and echoed by the responder;
/// - both for a payer that already follows the till's key-event log (the first session between the pair
///   stores each side's log in the other's ledger; later sessions fetch nothing) and for a first contact (a
///   fresh payer wallet per run, made before the runs, so each side fetches the other's log); before each
///   known session, outside the span, each side deposits a voucher (`moveOn`), so both hellos carry new
///   checkpoints, as after a sale;
/// - **browse → amount through Avahi** when a daemon answers (a second till announced as
///   `_secure-till._tcp` on a multicast interface, browsed and resolved through the daemon), else one line
///   saying why it was skipped.
func runTillBenchmark(_ arguments: Arguments) throws {
    BenchCommands.warnIfDebug()
    let quick = arguments.flag("quick")
    let runs = try arguments.integer("runs", default: quick ? 5 : 50, max: 10_000)
    let firstContactRuns = try arguments.integer("first-contact-runs", default: quick ? 2 : 20, max: 1_000)
    let warmUps = quick ? 2 : 5
    let json = arguments.flag("json")
    let load = BenchCommands.loadAverage()
    if !json { print("till benchmark: load average \(load) at the start") }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-bench-till-\(getpid())").path
    defer { try? FileManager.default.removeItem(atPath: directory) }

    let setupStart = ChannelBench.now()
    let lab = try PayBenchLab(directory: directory)
    let till = try lab.wallet("till", funds: nil)
    let payer = try lab.wallet("payer", funds: nil)
    let strangers = try (0..<firstContactRuns).map { try lab.wallet("stranger\($0)", funds: nil) }
    let setupSeconds = Double(ChannelBench.now() - setupStart) / 1e9

    let server = try TillServer(till: till, host: "127.0.0.1")
    defer { server.stop() }
    server.person.tracing = arguments.flag("trace")
    var result = TillBench.Result(requestBytes: server.requestByteCount)
    for index in 0..<warmUps {
        try TillBench.moveOn(lab: lab, payer: payer, till: till)
        _ = try TillBench.connectToAmount(payer, server: server, host: "127.0.0.1", result: &result)
        _ = try TillBench.baseline(server: server, result: &result)
        if index == 0 { result.firstSessionFetches = result.takeFetches() }
    }
    _ = result.takeFetches()
    result.steps = [:]
    for run in 0..<runs {
        try TillBench.moveOn(lab: lab, payer: payer, till: till)
        // Alternate the order so that drift on a shared machine hits both sides alike.
        for isSession in run % 2 == 0 ? [true, false] : [false, true] {
            if isSession {
                _ = (payer.token.take(), till.token.take())
                let milliseconds = try TillBench.connectToAmount(payer, server: server, result: &result)
                result.known.append(milliseconds)
                // Nothing in these sessions asks for the PIN, so no token operation may be in the span.
                result.tokenOperations += [payer.token.take(), till.token.take()].reduce(0) {
                    $0 + $1.unlocks + $1.locks + $1.signatures + $1.sharedSecrets + $1.anchorWrites
                        + $1.dataObjectReads + $1.other
                }
            } else {
                let milliseconds = try TillBench.baseline(server: server, result: &result)
                result.baseline.append(milliseconds)
            }
        }
    }
    result.knownFetches = result.takeFetches()
    result.knownSteps = result.steps
    for stranger in strangers {
        try lab.deposit("0.01 EUR", to: till)
        let milliseconds = try TillBench.connectToAmount(stranger, server: server, result: &result)
        result.firstContact.append(milliseconds)
    }
    result.firstContactFetches = result.takeFetches()
    server.stop()
    result.serverFailures = server.failures
    result.avahi = TillBench.throughAvahi(payer: payer, till: till, runs: quick ? 2 : 10, result: &result)
    TillBench.report(result, runs: runs, warmUps: warmUps, setupSeconds: setupSeconds, load: load, json: json)
}

/// The person at either side: the payer notes when the request reaches it and declines; neither side is
/// ever asked to approve or for its PIN in these sessions. It counts the key-event logs its wallet follows.
final class TillBenchPerson: PeerInterface, @unchecked Sendable {
    private let mutex = NSLock()
    private var shownAt: UInt64?
    private var shownAmount: AssetAmount?
    private var followed = 0
    /// With `--trace`, the first time of each step's name in the current session.
    var tracing = false
    private var steps: [(name: String, nanoseconds: UInt64)] = []

    func decide(_ approval: Approval) -> PeerDecision { .decline }

    /// Today's signature: nil declines. When `chooseCategory` returns `CategoryChoice` (issue 18), this
    /// returns `.decline`.
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        let now = ChannelBench.now()
        mutex.withLock {
            if shownAt == nil {
                shownAt = now
                shownAmount = request.amount
            }
        }
        note("amount shown")
        return .decline
    }

    func readPIN() throws -> PIN { throw WalletError(.refused, "the till benchmark never approves") }

    func event(_ name: String, _ fields: [String: String], _ text: String) {
        if name == "keyEvents", fields["outcome"] == "followed" { mutex.withLock { followed += 1 } }
        note(name)
    }

    /// Notes a step of the session, with `--trace`.
    func note(_ name: String) {
        guard tracing else { return }
        let now = ChannelBench.now()
        mutex.withLock { if !steps.contains(where: { $0.name == name }) { steps.append((name, now)) } }
    }

    /// The steps since the last call, then none.
    func takeSteps() -> [(name: String, nanoseconds: UInt64)] {
        mutex.withLock {
            defer { steps = [] }
            return steps
        }
    }

    /// When the request reached the person and its amount, then none.
    func takeShown() -> (nanoseconds: UInt64, amount: AssetAmount)? {
        mutex.withLock {
            defer { (shownAt, shownAmount) = (nil, nil) }
            guard let shownAt, let shownAmount else { return nil }
            return (shownAt, shownAmount)
        }
    }

    /// The key-event logs followed since the last call, then zero.
    func takeFollowed() -> Int {
        mutex.withLock {
            defer { followed = 0 }
            return followed
        }
    }
}

/// The till's side: a `PeerServer` on its own thread whose sessions run the till's request-mode driver, or,
/// for the baseline, echo one record. One session at a time: each run waits for `awaitSession`.
final class TillServer: @unchecked Sendable {
    enum Mode { case till(PaymentRequest), echo }

    let port: UInt16
    let requestByteCount: Int
    let person = TillBenchPerson()
    private let till: BenchWallet
    private let server: PeerServer
    private let served = DispatchSemaphore(value: 0)
    private let sessionDone = DispatchSemaphore(value: 0)
    private let mutex = NSLock()
    private var mode = Mode.echo
    private var outcome: PeerOutcome?
    private let logged = ServerLog()
    private var stopped = false

    init(till: BenchWallet, host: String) throws {
        self.till = till
        let listener = try TCPListener(host: host)
        port = listener.port
        // The request message's encoded size sets the baseline's record: the same bytes on the wire.
        requestByteCount = PeerMessage.request(try Self.request(till)).encoded.count
        let log = logged
        server = PeerServer(listener: listener) { _, _, text in log.append(text) }
        Thread { [self] in
            server.serve { [self] channel, watch in session(channel, watch) }
            served.signal()
        }.start()
    }

    /// A sale's request, made before the payer connects, as a till has it when it announces.
    static func request(_ till: BenchWallet) throws -> PaymentRequest {
        try PaymentRequest(
            requestID: .random(),
            amount: try till.wallet.requestAsset(for: try MoneyText.parse("4.50 EUR"), issuer: nil),
            note: "Coffee")
    }

    /// A fresh request of the till's.
    func newRequest() throws -> PaymentRequest { try Self.request(till) }

    /// The connections the server logged as failed, refused or dropped.
    var failures: [String] { logged.lines }

    func next(_ mode: Mode) { mutex.withLock { self.mode = mode } }

    private func session(_ channel: SecureChannel, _ watch: (PeerInterface) -> PeerInterface) {
        let mode = mutex.withLock { self.mode }
        var ended: PeerOutcome?
        switch mode {
        case .till(let request):
            person.note("handshake done")
            let driver = try? PeerDriver(
                wallet: till.wallet, channel: channel, role: .receive(request: request), interface: watch(person),
                ranging: .simulated(seed: 1, distanceMillimetres: 450), policy: PayBench.policy,
                displayName: "Till 1")
            person.note("driver made")
            ended = driver?.run()
        case .echo:
            if let record = try? channel.receive(timeoutSeconds: 10) {
                try? channel.send(type: record.type, payload: record.payload)
                // Until the initiator closes: the next run starts with this session over.
                _ = try? channel.receive(timeoutSeconds: 10)
            }
            channel.close()
        }
        mutex.withLock { outcome = ended }
        sessionDone.signal()
    }

    /// Waits for the current session's end; its outcome (nil for an echo or a driver that did not start).
    func awaitSession() throws -> PeerOutcome? {
        guard sessionDone.wait(timeout: .now() + 30) == .success else {
            throw WalletError(.refused, "the till's session did not end within 30 s")
        }
        return mutex.withLock { outcome }
    }

    func stop() {
        guard
            mutex.withLock({ () -> Bool in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        server.stop()
        served.wait()
    }
}

/// What a `PeerServer` logs: every refused, failed or dropped connection.
final class ServerLog: @unchecked Sendable {
    private let mutex = NSLock()
    private var kept: [String] = []

    func append(_ line: String) { mutex.withLock { kept.append(line) } }
    var lines: [String] { mutex.withLock { kept } }
}

enum TillBench {
    /// The issue's goal for the known payer's ratio.
    static let goalMax = 1.3
    /// The till's DNS-SD service type (docs/TILL.md §3).
    static let serviceType = "_secure-till._tcp"

    struct Result {
        let requestBytes: Int
        var known: [Double] = [], firstContact: [Double] = [], baseline: [Double] = []
        var allAsExpected = true
        var unexpected: [String] = []
        /// Key-event logs followed (payer, till) in the first warm-up, the known runs, the first contacts.
        var firstSessionFetches = (payer: 0, till: 0), knownFetches = (payer: 0, till: 0)
        var firstContactFetches = (payer: 0, till: 0)
        var fetchesSoFar = (payer: 0, till: 0)
        /// With `--trace`: each side's steps in milliseconds from the connect call, over every session.
        var steps: [String: [Double]] = [:], knownSteps: [String: [Double]] = [:]
        /// Token operations on both sides during the known runs.
        var tokenOperations = 0
        var serverFailures: [String] = []
        var avahi = Avahi.skipped("not run")

        mutating func takeFetches() -> (payer: Int, till: Int) {
            defer { fetchesSoFar = (0, 0) }
            return fetchesSoFar
        }
    }

    enum Avahi {
        case skipped(String)
        case measured(browse: [Double], total: [Double], missed: Int)
    }

    /// One session from the payer's connect to the request on its person's screen, in milliseconds; then
    /// both sides' ends, checked.
    static func connectToAmount(
        _ payer: BenchWallet, server: TillServer, host: String = "127.0.0.1", port: UInt16? = nil,
        startedAt: UInt64? = nil, result: inout Result
    ) throws -> Double {
        let request = try server.newRequest()
        server.next(.till(request))
        let person = TillBenchPerson()
        person.tracing = server.person.tracing
        let start = startedAt ?? ChannelBench.now()
        let transport = try TCPTransport.connect(host: host, port: port ?? server.port)
        person.note("connected")
        let channel = try SecureChannel.initiate(over: transport)
        person.note("handshake done")
        let driver = try PeerDriver(
            wallet: payer.wallet, channel: channel, role: .answerRequest, interface: person,
            ranging: .simulated(seed: 2, distanceMillimetres: 400), policy: PayBench.policy, displayName: payer.name)
        person.note("driver made")
        let paid = driver.run()
        let received = try server.awaitSession()
        for (side, steps) in [("payer", person.takeSteps()), ("till", server.person.takeSteps())] {
            for step in steps where step.nanoseconds >= start {
                result.steps["\(side) \(step.name)", default: []].append(milliseconds(step.nanoseconds - start))
            }
        }
        result.fetchesSoFar.payer += person.takeFollowed()
        result.fetchesSoFar.till += server.person.takeFollowed()
        let shown = person.takeShown()
        if shown?.amount != request.amount {
            result.allAsExpected = false
            result.unexpected.append("the payer was not shown the till's amount")
        }
        if case .failed(.declined, byPeer: false) = paid, case .failed(.declined, byPeer: true)? = received {
        } else {
            result.allAsExpected = false
            result.unexpected.append(
                "payer \(PeerDriver.name(of: paid)), till \(received.map { PeerDriver.name(of: $0) } ?? "none")")
        }
        return Double((shown?.nanoseconds ?? ChannelBench.now()) - start) / 1e6
    }

    /// The channel's own floor for the same span: connect, handshake, one record of the request's size sent
    /// and echoed, in milliseconds.
    static func baseline(server: TillServer, result: inout Result) throws -> Double {
        server.next(.echo)
        let payload = [UInt8](repeating: 0x5a, count: server.requestByteCount)
        let start = ChannelBench.now()
        let channel = try SecureChannel.initiate(over: try TCPTransport.connect(port: server.port))
        try channel.send(type: 1, payload: payload)
        let echoed = try channel.receive(timeoutSeconds: 10)
        let elapsed = Double(ChannelBench.now() - start) / 1e6
        channel.close()
        _ = try server.awaitSession()
        if echoed?.payload != payload {
            result.allAsExpected = false
            result.unexpected.append("the baseline's record did not come back")
        }
        return elapsed
    }
}

// MARK: Avahi and the report

extension TillBench {
    static func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

    /// Before each known session, outside the span: a deposit on each side, so both hellos carry a checkpoint
    /// that SecureCrypto's process-wide set of verified signatures has not seen, as after a real sale (in
    /// one process, both wallets share that set, and a declined session changes no ledger).
    static func moveOn(lab: PayBenchLab, payer: BenchWallet, till: BenchWallet) throws {
        try lab.deposit("0.01 EUR", to: payer)
        try lab.deposit("0.01 EUR", to: till)
    }

    /// Browse → resolve → connect → amount through the Avahi daemon this process's D-Bus system bus leads to:
    /// a second `PeerServer` for the till on the first multicast interface's address, announced as
    /// `_secure-till._tcp`; each run browses with no minimum wait (it returns once the daemon says all its
    /// answers are in and the resolution finished), picks the till's instance and runs the known payer's
    /// session to the amount. One warm-up run. Skipped, with the reason, when no daemon or interface answers.
    static func throughAvahi(payer: BenchWallet, till: BenchWallet, runs: Int, result: inout Result) -> Avahi {
        guard let address = NetworkInterfaces.multicastIPv4().first else {
            return .skipped("no network interface that is up and carries multicast has an IPv4 address")
        }
        do {
            let server = try TillServer(till: till, host: address.address)
            defer { server.stop() }
            let announcer: Announcer
            do {
                announcer = try Announcer(
                    type: serviceType, port: server.port, txt: DiscoveryRecord.fresh().txt, addresses: [address],
                    instanceName: DiscoveryRecord.randomInstanceName(), hostLabel: DiscoveryRecord.randomHostLabel())
            } catch let error as DiscoveryError where error.code == .noDaemon {
                return .skipped("\(error)")
            }
            defer { announcer.stop() }
            var browse: [Double] = [], total: [Double] = []
            var missed = 0
            for run in 0...runs {
                let start = ChannelBench.now()
                let found = try Browser.browse(type: serviceType, seconds: 5, minimumSeconds: 0)
                guard let service = found.first(where: { $0.instanceName == announcer.instanceName }) else {
                    missed += 1
                    continue
                }
                let browsed = ChannelBench.now()
                let amount = try connectToAmount(
                    payer, server: server, host: service.address, port: service.port, startedAt: start,
                    result: &result)
                if run > 0 {
                    browse.append(milliseconds(browsed - start))
                    total.append(amount)
                }
            }
            result.serverFailures += server.failures
            return total.isEmpty
                ? .skipped("the daemon answered, but no browse found the till's announcement (\(missed) tries)")
                : .measured(browse: browse, total: total, missed: missed)
        } catch {
            return .skipped("announcing or browsing failed: \(error)")
        }
    }

    static func figures(_ values: [Double]) -> [String: Double] {
        ["medianMilliseconds": BenchCommands.median(values), "p90Milliseconds": ChannelBench.percentile(values, 0.9)]
    }

    static func report(_ result: Result, runs: Int, warmUps: Int, setupSeconds: Double, load: String, json: Bool) {
        let baseline = BenchCommands.median(result.baseline)
        let known = BenchCommands.median(result.known), first = BenchCommands.median(result.firstContact)
        let expected = result.allAsExpected && result.serverFailures.isEmpty
        func fetches(_ pair: (payer: Int, till: Int)) -> [String: Int] { ["payer": pair.payer, "till": pair.till] }
        if json {
            var avahi: [String: Any]
            switch result.avahi {
            case .skipped(let reason): avahi = ["skipped": true, "reason": reason]
            case .measured(let browse, let total, let missed):
                avahi = [
                    "skipped": false, "serviceType": serviceType, "runs": total.count, "missedBrowses": missed,
                    "browseAndResolve": figures(browse), "browseToAmount": figures(total),
                ]
            }
            printJSON([
                "benchmark": "till", "loadAverage": load, "runs": runs, "warmUps": warmUps,
                "requestRecordBytes": result.requestBytes, "setupSeconds": setupSeconds,
                "baseline": figures(result.baseline),
                "knownPayer": [
                    "connectToAmount": figures(result.known), "ratio": known / baseline, "goalMax": goalMax,
                    "keyEventLogsFollowed": fetches(result.knownFetches),
                    "tokenOperations": result.tokenOperations,
                ] as [String: Any],
                "firstSessionKeyEventLogsFollowed": fetches(result.firstSessionFetches),
                "firstContact": [
                    "runs": result.firstContact.count, "connectToAmount": figures(result.firstContact),
                    "ratio": first / baseline, "keyEventLogsFollowed": fetches(result.firstContactFetches),
                ] as [String: Any],
                "avahi": avahi, "allAsExpected": expected,
                "unexpected": Array((result.unexpected + result.serverFailures).prefix(10)),
                "seedBLEMilliseconds": [1100, 1300],
            ])
            return
        }
        let baselineText = String(
            format: "handshake + one %d B record's round trip median %.2f ms, p90 %.2f ms", result.requestBytes,
            baseline, ChannelBench.percentile(result.baseline, 0.9))
        print(
            String(
                format:
                    "connect → amount on screen, payer following the till's key-event log (loopback TCP, SoftHSM, "
                    + "%d runs): median %.2f ms, p90 %.2f ms vs %@, ratio %.2f (goal ≤ %.2f)",
                result.known.count, known, ChannelBench.percentile(result.known, 0.9), baselineText, known / baseline,
                goalMax))
        print(
            String(
                format:
                    "connect → amount on screen, first contact (%d fresh payer wallets): median %.2f ms, p90 %.2f ms "
                    + "vs the same baseline median %.2f ms, ratio %.2f (no goal)",
                result.firstContact.count, first, ChannelBench.percentile(result.firstContact, 0.9), baseline,
                first / baseline))
        print(
            "  token operations in the known runs: \(result.tokenOperations); "
                + "key-event logs followed (payer, till): the pair's first session \(result.firstSessionFetches.payer), "
                + "\(result.firstSessionFetches.till); the known runs \(result.knownFetches.payer), "
                + "\(result.knownFetches.till); the first contacts \(result.firstContactFetches.payer), "
                + "\(result.firstContactFetches.till)")
        switch result.avahi {
        case .skipped(let reason): print("browse → amount through Avahi: skipped: \(reason)")
        case .measured(let browse, let total, let missed):
            print(
                String(
                    format:
                        "browse → amount through Avahi (%@, one daemon, %d runs, payer following the till's log): "
                        + "median %.1f ms, p90 %.1f ms, of which browse and resolve median %.1f ms (no goal)%@",
                    serviceType, total.count, BenchCommands.median(total), ChannelBench.percentile(total, 0.9),
                    BenchCommands.median(browse), missed > 0 ? "; \(missed) browses missed the till" : ""))
        }
        if !result.knownSteps.isEmpty {
            print(
                "  the known payer's steps (median ms from the connect call): "
                    + result.knownSteps.map { ($0.key, BenchCommands.median($0.value)) }.sorted { $0.1 < $1.1 }
                    .map { String(format: "%@ %.2f", $0.0, $0.1) }.joined(separator: ", "))
        }
        if !expected {
            print(
                "UNEXPECTED: "
                    + (result.unexpected + result.serverFailures).prefix(5).joined(separator: "; "))
        }
        print(
            String(
                format:
                    "(setup: %d wallets in %.1f s, not measured; the seed's BLE till took 1.1–1.3 s connect → amount)",
                2 + result.firstContact.count, setupSeconds))
    }
}
