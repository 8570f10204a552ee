import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecurePeer
@_spi(Benchmark) import SecureStore
import SecureTestSupport
import SecureToken
import SecureWallet

/// `secure-bench pay [--payments N] [--rounds R] [--per-payer K] [--json]`: peer payments on SoftHSM tokens
/// made for the run in a temporary folder, all measured in this run (docs/PERFORMANCE.md, "Payments").
/// - one payment over loopback TCP (payer and payee in this process on two threads, each with its own
///   tokens, wallet and SQLCipher ledger), p50 and p99, against the sum of its irreducible parts measured
///   raw in the same rounds: the token operations it performed (counted on the wallets' tokens), plain
///   durable SQLCipher commits of the same sizes, and the handshake's primitives; goal ≤ 1.5×;
/// - one receiving wallet serving 8 payers at once, as `secure receive --count` does: payments per
///   second, then both sides' ledgers and pending payments checked for a lost payment;
/// - a tampered transfer, a lost receipt and a withdrawn request run by the pure machines with these
///   real wallets (the seed's suite ran them in under half a second).
/// Ranging is simulated (allowed explicitly for the run): there is no radio here.
func runPayBenchmark(_ arguments: Arguments) throws {
    BenchCommands.warnIfDebug()
    let payments = try arguments.integer("payments", default: 40, max: 10_000)
    let rounds = try arguments.integer("rounds", default: 10, max: 100)
    let perPayer = try arguments.integer("per-payer", default: 5, max: 1_000)
    guard payments >= rounds else { throw UsageError("--payments must be at least --rounds") }
    let load = BenchCommands.loadAverage()
    if !arguments.flag("json") { print("pay benchmark: load average \(load) at the start") }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-bench-pay-\(getpid())").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let lab = try PayBenchLab(directory: directory)
    let setupStart = ChannelBench.now()
    let shop = try lab.wallet("shop", funds: nil)
    let payers = try (0..<PayBench.payerCount).map { try lab.wallet("payer\($0)", funds: "1000.00 EUR") }
    let setupSeconds = Double(ChannelBench.now() - setupStart) / 1e9

    for person in [payers[0].person, shop.person] { person.tracing = arguments.flag("trace") }
    for token in [payers[0].token, shop.token] { token.tracing = arguments.flag("trace") }
    let single = try PayBench.singlePayments(
        lab: lab, payer: payers[0], payee: shop, payments: payments, rounds: rounds)
    for person in [payers[0].person, shop.person] { person.tracing = false }
    for token in [payers[0].token, shop.token] { token.tracing = false }
    let crowd = try PayBench.manyPayers(payee: shop, payers: payers, perPayer: perPayer)
    let scenarios = try PayBench.machineScenarios(payer: payers[1], payee: shop)
    PayBench.report(
        single: single, crowd: crowd, scenarios: scenarios, setupSeconds: setupSeconds, loadAverage: load,
        json: arguments.flag("json"))
}

// MARK: The wallets

/// A wallet's token, counting the operations the wallet asks of it. It forwards every call to the real
/// `TokenSession`, so the payment runs exactly the production path; the counts say which token operations
/// a payment costs, and the baseline measures those.
final class CountingToken: WalletToken, @unchecked Sendable {
    struct Counts: Equatable {
        var unlocks = 0, locks = 0, signatures = 0, sharedSecrets = 0, anchorWrites = 0, dataObjectReads = 0, other = 0
    }

    let session: TokenSession
    private let mutex = NSLock()
    private var counts = Counts()
    /// Nanoseconds spent inside the token's calls, by kind, for `--trace`.
    private var times: [String: UInt64] = [:]
    /// With `--trace`, each call as (kind, start, end).
    var tracing = false
    private var calls: [(kind: String, start: UInt64, end: UInt64)] = []

    /// The calls since the last call, then none.
    func takeCalls() -> [(kind: String, start: UInt64, end: UInt64)] {
        mutex.withLock {
            defer { calls = [] }
            return calls
        }
    }

    init(_ session: TokenSession) { self.session = session }

    /// The time spent in each kind of call since the last call, then none.
    func takeTimes() -> [String: UInt64] {
        mutex.withLock {
            defer { times = [:] }
            return times
        }
    }

    private func timed<Result>(_ kind: String, _ body: () throws -> Result) rethrows -> Result {
        let start = ChannelBench.now()
        defer {
            let end = ChannelBench.now()
            mutex.withLock {
                times[kind, default: 0] += end - start
                if tracing { calls.append((kind, start, end)) }
            }
        }
        return try body()
    }

    /// The counts since the last call, then zero.
    func take() -> Counts {
        mutex.withLock {
            defer { counts = Counts() }
            return counts
        }
    }
    private func add(_ change: (inout Counts) -> Void) { mutex.withLock { change(&counts) } }

    var label: String { session.label }
    var uri: PKCS11URI { session.uri }
    var isUnlocked: Bool { session.isUnlocked }

    func lock() {
        // Locking a locked token calls nothing on it.
        if session.isUnlocked { add { $0.locks += 1 } }
        timed("unlock+lock") { session.lock() }
    }

    func unlock(pin: PIN, confirmFinalTry: Bool) throws {
        add { $0.unlocks += 1 }
        try timed("unlock+lock") { try session.unlock(pin: pin, confirmFinalTry: confirmFinalTry) }
    }

    func generateKey(label: String, usage: KeyUsage) throws -> TokenKey {
        add { $0.other += 1 }
        return try session.generateKey(label: label, usage: usage)
    }

    func key(_ uri: PKCS11URI) throws -> TokenKey {
        add { $0.other += 1 }
        return try session.key(uri)
    }

    func keys() throws -> [TokenKey] {
        add { $0.other += 1 }
        return try session.keys()
    }

    func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8] {
        add { $0.sharedSecrets += 1 }
        return try session.deriveSharedSecret(key: key, peer: peer)
    }

    func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature {
        add { $0.signatures += 1 }
        return try timed("signature") { try session.sign(digest: digest, key: key) }
    }

    func dataObjects(application: String) throws -> [(label: String, value: [UInt8])] {
        add { $0.dataObjectReads += 1 }
        return try session.dataObjects(application: application)
    }

    func replaceDataObject(application: String, label: String, value: [UInt8]) throws {
        add { $0.anchorWrites += 1 }
        try timed("anchor write") {
            try session.replaceDataObject(application: application, label: label, value: value)
        }
    }

    func destroyDataObjects(application: String, label: String) throws {
        add { $0.other += 1 }
        try session.destroyDataObjects(application: application, label: label)
    }
}

/// The person at each wallet: approves at once, reads the PIN from the token's PIN file each time (as
/// `--yes --pin-source file:` does), shows nothing.
/// With `--trace`, it keeps when each step of a session happened, for finding where a payment's time goes.
final class BenchPerson: PeerInterface, @unchecked Sendable {
    let pinPath: String
    private let mutex = NSLock()
    private var recorded: [(name: String, nanoseconds: UInt64)] = []
    var tracing = false

    init(pinPath: String) { self.pinPath = pinPath }
    func decide(_ approval: Approval) -> PeerDecision {
        note("approval")
        return .approve(overridingBudget: false)
    }
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice { .category("bench") }
    func readPIN() throws -> PIN {
        defer { note("PIN read") }
        return try PINSource.file(pinPath).read()
    }
    func event(_ name: String, _ fields: [String: String], _ text: String) { note(name) }

    private func note(_ name: String) {
        guard tracing else { return }
        let now = ChannelBench.now()
        mutex.withLock { if !recorded.contains(where: { $0.name == name }) { recorded.append((name, now)) } }
    }

    /// The steps so far.
    var steps: [(name: String, nanoseconds: UInt64)] { mutex.withLock { recorded } }

    /// The steps since the last call, each the first of its name, then none.
    func takeSteps() -> [(name: String, nanoseconds: UInt64)] {
        mutex.withLock {
            defer { recorded = [] }
            return recorded
        }
    }
}

/// One wallet of the run, on its own SoftHSM token and backup token.
struct BenchWallet {
    let name: String
    let wallet: Wallet
    let token: CountingToken
    let person: BenchPerson
    /// The wallet's signing key on its token, for the machine scenarios that sign outside the driver.
    let signer: TokenSigner
}

/// The run's folder: SoftHSM tokens, an issuer, wallets, and a raw token for the baselines.
final class PayBenchLab {
    let directory: String
    let layout: DemoToken.Layout
    private let issuerSession: TokenSession
    /// The run's issuer: a token key with an issuer's one-event log (`TestIssuer`).
    private var issuer: TestIssuer
    /// A token with the objects a wallet token has (a signing key, a key-agreement key, an anchor): the
    /// raw token operations are measured on it.
    let raw: TokenSession
    let rawKey: TokenKey
    let rawPINPath: String

    init(directory: String) throws {
        self.directory = directory
        layout = DemoToken.Layout(directory: directory + "/tokens")
        let issuerToken = try DemoToken.create(layout, label: "issuer")
        issuerSession = try TokenSession(
            token: try TokenLibrary.shared.token(issuerToken.uri),
            pin: try PINSource.file(issuerToken.pinPath).read())
        issuer = try TestIssuer(
            signer: try TokenSigner(
                session: issuerSession, keyURI: try issuerSession.generateKey(label: "issuer", usage: .sign).uri))
        let rawToken = try DemoToken.create(layout, label: "raw")
        rawPINPath = rawToken.pinPath
        raw = try TokenSession(
            token: try TokenLibrary.shared.token(rawToken.uri), pin: try PINSource.file(rawToken.pinPath).read())
        rawKey = try raw.generateKey(label: "raw-sign", usage: .sign)
        _ = try raw.generateKey(label: "raw-agreement", usage: .derive)
    }

    deinit {
        raw.close()
        issuerSession.close()
    }

    /// A new wallet on two new tokens, funded by a voucher of the run's issuer, its token locked as the CLI
    /// leaves it between approvals.
    func wallet(_ name: String, funds: String?) throws -> BenchWallet {
        let main = try DemoToken.create(layout, label: name)
        let backup = try DemoToken.create(layout, label: name + "-bk")
        let token = CountingToken(
            try TokenSession(
                token: try TokenLibrary.shared.token(main.uri), pin: try PINSource.file(main.pinPath).read()))
        let backupSession = try TokenSession(
            token: try TokenLibrary.shared.token(backup.uri), pin: try PINSource.file(backup.pinPath).read())
        defer { backupSession.close() }
        let wallet = try Wallet.create(
            paths: WalletPaths(directory: directory + "/wallets/" + name), token: token,
            options: Wallet.InitOptions(
                tokenURI: main.uri, backup: (backupSession, backup.uri),
                allowFileAnchor: false, label: name))
        try wallet.trust(issuer: issuer.card)
        if let funds {
            let voucher = try issuer.voucher(try MoneyText.parse(funds), to: wallet.walletID)
            guard case .recorded = try wallet.deposit(voucher) else {
                throw WalletError(.refused, "the bench voucher was not deposited")
            }
        }
        var keyURI = token.uri
        keyURI.id = Hex.decode(wallet.metadata.signingKeyID)
        let signer = TokenSigner(token: token, key: try token.key(keyURI))
        token.lock()
        _ = token.take()
        return BenchWallet(
            name: name, wallet: wallet, token: token, person: BenchPerson(pinPath: main.pinPath), signer: signer)
    }
}

extension PayBenchLab {
    /// Moves `bench`'s ledger on by one deposit of `funds` (a new voucher of the run's issuer), its token unlocked
    /// for it and locked again: its next hello carries a checkpoint no one has verified yet, as after a sale.
    func deposit(_ funds: String, to bench: BenchWallet) throws {
        let voucher = try issuer.voucher(try MoneyText.parse(funds), to: bench.wallet.walletID)
        try bench.token.unlock(pin: try PINSource.file(bench.person.pinPath).read(), confirmFinalTry: false)
        defer { bench.token.lock() }
        guard case .recorded = try bench.wallet.deposit(voucher) else {
            throw WalletError(.refused, "the bench voucher was not deposited")
        }
    }
}

// MARK: The measurements

enum PayBench {
    static let payerCount = 8
    static let amount = "1.00 EUR"
    static let policy = RangingPolicy(allowsSimulated: true)
    /// A pay flow's messages: two hellos, offer, reply, two measurements, ready, transfer, receipt.
    static let messagesPerPayment = 9

    static func intent(_ payer: BenchWallet) throws -> PaymentIntent {
        PaymentIntent(
            offerID: .random(), amount: try payer.wallet.asset(for: try MoneyText.parse(amount), issuer: nil),
            category: "bench", note: "bench")
    }

    /// The payer's side of one payment over TCP: connect, handshake, run the payer machine to its end.
    static func pay(_ payer: BenchWallet, port: UInt16, intent: PaymentIntent, seed: UInt64) throws -> PeerOutcome {
        let channel = try SecureChannel.initiate(over: try TCPTransport.connect(port: port))
        return try PeerDriver(
            wallet: payer.wallet, channel: channel, role: .pay(intent), interface: payer.person,
            ranging: .simulated(seed: seed, distanceMillimetres: 400), policy: policy,
            displayName: payer.name
        ).run()
    }

    /// The payee's side of one session on an accepted connection, as `secure receive` runs each one.
    static func receive(
        _ payee: BenchWallet, transport: TCPTransport, walletLock: NSLock, seed: UInt64
    ) throws -> PeerOutcome {
        let channel = try SecureChannel.respond(over: transport)
        return try PeerDriver(
            wallet: payee.wallet, channel: channel, role: .receive(request: nil), interface: payee.person,
            ranging: .simulated(seed: seed, distanceMillimetres: 450), policy: policy, displayName: payee.name,
            walletLock: walletLock
        ).run()
    }

    // MARK: One payment against its parts

    struct Parts {
        var signatureMicroseconds = 0.0, unlockLockMicroseconds = 0.0, anchorWriteMicroseconds = 0.0
        var sharedSecretMicroseconds = 0.0, commitsMicroseconds = 0.0, handshakeMicroseconds = 0.0
        /// The first signature after a login finds the key's handle again (C_FindObjects, C_GetAttributeValue):
        /// the first signature's time minus the second's.
        var keyLookupMicroseconds = 0.0
        /// Not a part: one message's trip between the two threads over the loopback channel (half a round trip).
        var messageTripMicroseconds = 0.0
    }

    struct SingleResult {
        var milliseconds: [Double] = []
        var payerCounts = CountingToken.Counts(), payeeCounts = CountingToken.Counts()
        var commitSizes: [[Int]] = []
        var parts: [Parts] = []
        var sums: [Double] = []
        /// Per round: the median payment over the parts measured in the same round.
        var roundRatios: [Double] = []
        var outcomesOK = true
        /// With `--trace`: each side's steps, in milliseconds from the connect, per payment.
        var steps: [(side: String, name: String, milliseconds: Double)] = []
        /// With `--trace`: milliseconds inside each kind of token call, both sides, per payment.
        var tokenTimes: [String: [Double]] = [:]
        /// With `--trace`: the timeline of each payment (ms from the connect, side, what), and its duration.
        var timelines: [(milliseconds: Double, lines: [String])] = []
    }

    /// One payment, timed from connect to both sides' ends.
    static func timedPayment(
        payer: BenchWallet, payee: BenchWallet, listener: TCPListener, seed: UInt64,
        intent: PaymentIntent
    ) throws -> (Double, PeerOutcome, PeerOutcome) {
        let payeeOutcome = Handoff<PeerOutcome>()
        nonisolated(unsafe) let unsafePayee = payee
        let start = ChannelBench.now()
        payer.person.event("connect", [:], "")
        payee.person.event("connect", [:], "")
        let thread = Thread {
            payeeOutcome.set(
                Result {
                    try receive(
                        unsafePayee, transport: try listener.accept(timeoutSeconds: 10), walletLock: NSLock(),
                        seed: seed)
                })
        }
        thread.start()
        let payerOutcome = try pay(payer, port: listener.port, intent: intent, seed: seed)
        let received = try payeeOutcome.wait()
        return (Double(ChannelBench.now() - start) / 1e6, payerOutcome, received)
    }

    static func singlePayments(
        lab: PayBenchLab, payer: BenchWallet, payee: BenchWallet, payments: Int,
        rounds: Int
    ) throws -> SingleResult {
        let listener = try TCPListener()
        defer { listener.close() }
        var result = SingleResult()
        // A warm-up payment: the counts of token operations, and the sizes of the commits it made.
        let warmUp = try intent(payer)
        let (_, paid, received) = try timedPayment(
            payer: payer, payee: payee, listener: listener, seed: 1, intent: warmUp)
        guard case .paid = paid, case .received = received else {
            throw WalletError(.refused, "the warm-up payment did not complete: payer \(paid), payee \(received)")
        }
        result.payerCounts = payer.token.take()
        result.payeeCounts = payee.token.take()
        _ = (
            payer.token.takeTimes(), payee.token.takeTimes(), payer.person.takeSteps(), payee.person.takeSteps(),
            payer.token.takeCalls(), payee.token.takeCalls()
        )
        result.commitSizes = try commitSizes(payer: payer.wallet, payee: payee.wallet, offerID: warmUp.offerID)
        let anchorBytes = try payer.wallet.ledger.latestCheckpoint()?.encoded.count ?? 0
        let perRound = payments / rounds
        for round in 0..<rounds {
            // Alternate the order so that drift on a shared machine hits both sides alike.
            let paymentsFirst = round % 2 == 0
            if !paymentsFirst {
                result.parts.append(
                    try measureParts(lab: lab, commitSizes: result.commitSizes, anchorBytes: anchorBytes))
            }
            for index in 0..<perRound {
                let (milliseconds, paid, received) = try timedPayment(
                    payer: payer, payee: payee, listener: listener,
                    seed: UInt64(2 + round * perRound + index), intent: try intent(payer))
                if case .paid = paid, case .received = received {} else { result.outcomesOK = false }
                result.milliseconds.append(milliseconds)
                collectTrace(&result, payer: payer, payee: payee, milliseconds: milliseconds)
                let counts = (payer.token.take(), payee.token.take())
                if counts.0 != result.payerCounts || counts.1 != result.payeeCounts { result.outcomesOK = false }
            }
            if paymentsFirst {
                result.parts.append(
                    try measureParts(lab: lab, commitSizes: result.commitSizes, anchorBytes: anchorBytes))
            }
        }
        let payerCounts = result.payerCounts
        let payeeCounts = result.payeeCounts
        result.sums = result.parts.map { parts in
            let signatures = Double(payerCounts.signatures + payeeCounts.signatures) * parts.signatureMicroseconds
            let logins = Double(payerCounts.unlocks + payeeCounts.unlocks) * parts.unlockLockMicroseconds
            let anchors = Double(payerCounts.anchorWrites + payeeCounts.anchorWrites) * parts.anchorWriteMicroseconds
            let secrets = Double(payerCounts.sharedSecrets + payeeCounts.sharedSecrets) * parts.sharedSecretMicroseconds
            // Each side signs after its one login, so each login costs one key lookup.
            let lookups = Double(payerCounts.unlocks + payeeCounts.unlocks) * parts.keyLookupMicroseconds
            return
                (signatures + logins + lookups + anchors + secrets + parts.commitsMicroseconds
                + parts.handshakeMicroseconds) / 1000
        }
        // Each round's payments against the parts measured beside them: the disk's fsync latency swings by
        // 10× within a minute on a shared machine, and both sides of a ratio must see the same disk.
        result.roundRatios = result.sums.indices.map { round in
            BenchCommands.median(Array(result.milliseconds[round * perRound..<(round + 1) * perRound]))
                / result.sums[round]
        }
        return result
    }

    /// With `--trace`, the payment's steps and token calls on both sides; without, it only empties them.
    static func collectTrace(_ result: inout SingleResult, payer: BenchWallet, payee: BenchWallet, milliseconds: Double)
    {
        if payer.person.tracing {
            var events: [(UInt64, String)] = []
            for (side, wallet) in [("payer", payer), ("payee", payee)] {
                for call in wallet.token.takeCalls() {
                    events.append(
                        (
                            call.start,
                            String(format: "%@ %@ (%.2f ms)", side, call.kind, Double(call.end - call.start) / 1e6)
                        ))
                    events.append((call.end, "\(side) end of \(call.kind)"))
                }
                for step in wallet.person.steps { events.append((step.nanoseconds, "\(side) \(step.name)")) }
            }
            let origin = events.map(\.0).min() ?? 0
            result.timelines.append(
                (
                    milliseconds,
                    events.sorted { $0.0 < $1.0 }
                        .map { String(format: "%7.2f %@", Double($0.0 - origin) / 1e6, $0.1) }
                ))
        }
        let times = payer.token.takeTimes().merging(payee.token.takeTimes(), uniquingKeysWith: +)
        for (kind, nanoseconds) in times { result.tokenTimes[kind, default: []].append(Double(nanoseconds) / 1e6) }
        for (side, person) in [("payer", payer.person), ("payee", payee.person)] {
            let steps = person.takeSteps()
            guard let first = steps.first?.nanoseconds else { continue }
            // Both sides note "connect" at the same instant, so their offsets share an origin.
            result.steps += steps.map { (side, $0.name, Double($0.nanoseconds - first) / 1e6) }
        }
    }

    /// The durable commits of the warm-up payment, each as the byte counts of the rows it wrote (entry rows
    /// carry their id, link and leaf; a statement index row; a Merkle node; the tree's peaks).
    static func commitSizes(payer: Wallet, payee: Wallet, offerID: OfferID) throws -> [[Int]] {
        func appendRows(_ wallet: Wallet) throws -> [Int] {
            let entry = try wallet.ledger.entry(at: wallet.size - 1)?.encoded.count ?? 0
            let checkpoint = try wallet.ledger.latestCheckpoint()?.encoded.count ?? 0
            return [entry + 16 + 32 + 32, 65 + 16 + 32 + 16, checkpoint, 32 + 16, 32 * wallet.size.nonzeroBitCount]
        }
        guard let debit = try payer.ledger.entries(kind: .paymentOut).last,
            let order = try TransferOrder.decode(debit.payload),
            let sent = try payer.ledger.outgoing(transferID: order.transferID)
        else {
            throw WalletError(.notFound, "the warm-up payment left no transfer")
        }
        let message = try payer.ledger.outgoingMessage(transferID: order.transferID)?.count ?? 0
        let ready = try payee.ledger.readyRecord(offerID: offerID, payer: payer.walletID)?.record.count ?? 0
        let peerCheckpoint = try payee.ledger.latestPeerCheckpoint(wallet: payer.walletID)?.encoded.count ?? 0
        return [
            [ready], // payee: the ready record, before `ready`
            try appendRows(payer) + [sent.signed.count + message + 32], // payer: the debit with the transfer to send
            try appendRows(payee), // payee: the credit
            [peerCheckpoint], // payee: the payer's checkpoint it keeps
            [sent.receipt?.count ?? 0], // payer: the receipt, confirming the payment
        ]
    }

    /// The irreducible parts, each measured raw: the token's operations on the raw token (the C sign loop
    /// of `secure-bench sign`, unlock and lock, the anchor's replacement), plain SQLCipher commits of the
    /// payment's sizes, and the handshake's primitives.
    static func measureParts(lab: PayBenchLab, commitSizes: [[Int]], anchorBytes: Int) throws -> Parts {
        var parts = Parts()
        let signatures = 6
        let digest = SHA256.hash(Array("bench pay".utf8))
        parts.signatureMicroseconds =
            Double(try lab.raw.rawSignLoop(key: lab.rawKey, digest: digest, count: signatures))
            / Double(signatures) / 1000
        let logins = 4
        var loginNanoseconds: UInt64 = 0
        var lookups: [Double] = []
        for _ in 0..<logins {
            let start = ChannelBench.now()
            lab.raw.lock()
            // Read each time, as the payment's approval reads its PIN source: a lock wipes the PIN.
            try lab.raw.unlock(pin: try PINSource.file(lab.rawPINPath).read())
            loginNanoseconds += ChannelBench.now() - start
            let first = ChannelBench.now()
            _ = try lab.raw.sign(digest: digest, key: lab.rawKey)
            let second = ChannelBench.now()
            _ = try lab.raw.sign(digest: digest, key: lab.rawKey)
            let end = ChannelBench.now()
            lookups.append(max(0, Double(second - first) - Double(end - second)) / 1000)
        }
        parts.unlockLockMicroseconds = Double(loginNanoseconds) / Double(logins) / 1000
        parts.keyLookupMicroseconds = BenchCommands.median(lookups)
        parts.messageTripMicroseconds = try messageTripMicroseconds(count: 100)
        var start = ChannelBench.now()
        let anchor = SystemRandom.bytes(anchorBytes)
        start = ChannelBench.now()
        for _ in 0..<logins {
            try lab.raw.replaceDataObject(application: "secure-bench", label: "anchor", value: anchor)
        }
        parts.anchorWriteMicroseconds = Double(ChannelBench.now() - start) / Double(logins) / 1000
        parts.commitsMicroseconds = try DurableCommitBaseline.microseconds(
            path: lab.directory + "/commits.db", commits: commitSizes,
            rounds: 4)
        parts.handshakeMicroseconds = try ChannelBench.primitivesMicroseconds(count: 20)
        return parts
    }

    /// Messages of `messageBytes` sent back and forth over the loopback TCP channel between two threads:
    /// half the median round trip.
    static func messageTripMicroseconds(count: Int, messageBytes: Int = 600) throws -> Double {
        let listener = try TCPListener()
        defer { listener.close() }
        let finished = DispatchSemaphore(value: 0)
        defer { finished.wait() }
        Thread {
            defer { finished.signal() }
            guard let channel = try? SecureChannel.respond(over: try listener.accept(timeoutSeconds: 10)) else {
                return
            }
            defer { channel.close() }
            while let record = try? channel.receive(timeoutSeconds: 10) {
                guard (try? channel.send(type: record.type, payload: record.payload)) != nil else { return }
            }
        }.start()
        let channel = try SecureChannel.initiate(over: try TCPTransport.connect(port: listener.port))
        defer { channel.close() }
        let payload = [UInt8](repeating: 0x5a, count: messageBytes)
        var trips: [Double] = []
        for _ in 0..<count {
            let start = ChannelBench.now()
            try channel.send(type: 1, payload: payload)
            guard try channel.receive(timeoutSeconds: 10) != nil else {
                throw ChannelError(.transport, "the echo thread stopped")
            }
            trips.append(Double(ChannelBench.now() - start) / 2000)
        }
        return BenchCommands.median(trips)
    }

    // MARK: Eight payers at once

    struct CrowdResult {
        var seconds = 0.0
        var paid = 0, unconfirmed = 0, failed = 0, received = 0, errors = 0
        var debits = 0, credits = 0, pending = 0, lost = 0, pendingCredited = 0
        var conserved = false, ledgersVerify = false
        var failures: [String: Int] = [:]
    }

    /// `perPayer` payments from each of the payers, all at once, into one receiving wallet served as
    /// `secure receive --count` serves it: one thread per connection, the wallet shared behind one lock.
    static func manyPayers(payee: BenchWallet, payers: [BenchWallet], perPayer: Int) throws -> CrowdResult {
        let listener = try TCPListener()
        defer { listener.close() }
        let total = payers.count * perPayer
        let eur = Currency(code: "EUR")!
        let before = Before(
            payerBalances: payers.map { $0.wallet.state.minorUnitsHeld(eur) },
            payeeBalance: payee.wallet.state.minorUnitsHeld(eur),
            payerDebits: try payers.map { try $0.wallet.ledger.entries(kind: .paymentOut).count },
            payeeCredits: try payee.wallet.ledger.entries(kind: .paymentIn).count)

        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var result = CrowdResult()
            func add(_ outcome: Result<PeerOutcome, Error>) {
                lock.withLock {
                    switch outcome {
                    case .success(.paid): result.paid += 1
                    case .success(.received): result.received += 1
                    case .success(.unconfirmed): result.unconfirmed += 1
                    case .success(let other):
                        result.failed += 1
                        result.failures[PeerDriver.name(of: other), default: 0] += 1
                    case .failure(let error):
                        result.errors += 1
                        result.failures["\(error)", default: 0] += 1
                    }
                }
            }
        }
        let tally = Tally()
        nonisolated(unsafe) let unsafePayee = payee
        nonisolated(unsafe) let unsafePayers = payers
        let sessions = DispatchGroup()
        let walletLock = NSLock()
        let start = ChannelBench.now()
        let server = Thread {
            for index in 0..<total {
                guard let transport = try? listener.accept(timeoutSeconds: 60) else { return }
                DispatchQueue.global().async(group: sessions) {
                    tally.add(
                        Result {
                            try receive(
                                unsafePayee, transport: transport, walletLock: walletLock, seed: UInt64(1000 + index))
                        })
                }
            }
        }
        sessions.enter()
        server.start()
        let payerThreads = DispatchGroup()
        for number in unsafePayers.indices {
            payerThreads.enter()
            Thread {
                for index in 0..<perPayer {
                    tally.add(
                        Result {
                            try pay(
                                unsafePayers[number], port: listener.port, intent: try intent(unsafePayers[number]),
                                seed: UInt64(number * 100 + index))
                        })
                }
                payerThreads.leave()
            }.start()
        }
        payerThreads.wait()
        sessions.leave()
        sessions.wait()
        var result = tally.result
        result.seconds = Double(ChannelBench.now() - start) / 1e9
        try checkLedgers(&result, payee: payee, payers: payers, before: before)
        return result
    }

    /// What the ledgers held before the crowd paid.
    struct Before {
        let payerBalances: [Int64], payeeBalance: Int64, payerDebits: [Int], payeeCredits: Int
    }

    /// Both sides' ledgers and pending payments: every debit must be credited once or still be pending, and
    /// the money that left the payers is the money that arrived or is pending.
    static func checkLedgers(
        _ result: inout CrowdResult, payee: BenchWallet, payers: [BenchWallet], before: Before
    ) throws {
        let eur = Currency(code: "EUR")!
        let debitsBefore = before.payerDebits
        for (index, payer) in payers.enumerated() {
            let debits = try payer.wallet.ledger.entries(kind: .paymentOut)
            result.debits += debits.count - debitsBefore[index]
            for (transfer, _) in try payer.wallet.pendingTransfers() {
                result.pending += 1
                if try payee.wallet.ledger.statementExists(
                    kind: .paymentIn, id: StatementID(transfer.payload.order.transferID))
                {
                    result.pendingCredited += 1
                }
            }
            for debit in debits.dropFirst(debitsBefore[index]) {
                guard let order = try TransferOrder.decode(debit.payload) else { continue }
                let credited = try payee.wallet.ledger.statementExists(
                    kind: .paymentIn, id: StatementID(order.transferID))
                let pending = try payer.wallet.pendingTransfers().contains {
                    $0.transfer.payload.order.transferID == order.transferID
                }
                if !credited && !pending { result.lost += 1 }
            }
        }
        result.credits = try payee.wallet.ledger.entries(kind: .paymentIn).count - before.payeeCredits
        let paidOut = zip(payers, before.payerBalances).reduce(Int64(0)) {
            $0 + $1.1 - $1.0.wallet.state.minorUnitsHeld(eur)
        }
        let paidIn = payee.wallet.state.minorUnitsHeld(eur) - before.payeeBalance
        let unreceived = Int64(result.pending - result.pendingCredited) * 100
        result.conserved = paidOut == paidIn + unreceived
        result.ledgersVerify = try (payers + [payee]).allSatisfy {
            try LedgerVerifier.verify($0.wallet.ledger, walletID: $0.wallet.walletID).isValid
        }
    }

    // MARK: Report

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        ChannelBench.percentile(values, fraction)
    }

    static func describe(_ counts: CountingToken.Counts) -> String {
        var parts = [
            "\(counts.unlocks) unlock (C_OpenSession + C_Login) and \(counts.locks) lock (C_Logout + C_CloseSession)",
            "\(counts.signatures) signatures (each C_SignInit + C_Login(context) + C_Sign)",
            "\(counts.anchorWrites) anchor write",
        ]
        if counts.sharedSecrets > 0 { parts.append("\(counts.sharedSecrets) ECDH") }
        if counts.dataObjectReads > 0 { parts.append("\(counts.dataObjectReads) data-object reads") }
        if counts.other > 0 { parts.append("\(counts.other) other") }
        return parts.joined(separator: ", ")
    }

    /// The figures every report line needs.
    struct Summary {
        let p50: Double, p99: Double, sum: Double, ratio: Double, rate: Double
        let medianPart: (KeyPath<Parts, Double>) -> Double

        init(_ single: SingleResult, _ crowd: CrowdResult) {
            p50 = percentile(single.milliseconds, 0.50)
            p99 = percentile(single.milliseconds, 0.99)
            sum = BenchCommands.median(single.sums)
            ratio = BenchCommands.median(single.roundRatios)
            rate = Double(crowd.paid) / crowd.seconds
            let parts = single.parts
            medianPart = { key in BenchCommands.median(parts.map { $0[keyPath: key] }) }
        }
    }

    static func report(
        single: SingleResult, crowd: CrowdResult, scenarios: ScenarioResult, setupSeconds: Double, loadAverage: String,
        json: Bool
    ) {
        let summary = Summary(single, crowd)
        if json {
            reportJSON(
                single: single, crowd: crowd, scenarios: scenarios, setupSeconds: setupSeconds,
                loadAverage: loadAverage, summary)
        } else {
            reportText(single: single, crowd: crowd, scenarios: scenarios, setupSeconds: setupSeconds, summary)
        }
    }

    static func reportJSON(
        single: SingleResult, crowd: CrowdResult, scenarios: ScenarioResult, setupSeconds: Double, loadAverage: String,
        _ summary: Summary
    ) {
        let (p50, p99, sum, ratio, rate, medianPart) = (
            summary.p50, summary.p99, summary.sum, summary.ratio, summary.rate, summary.medianPart
        )
        func counts(_ counts: CountingToken.Counts) -> [String: Int] {
            [
                "unlocks": counts.unlocks, "locks": counts.locks, "signatures": counts.signatures,
                "anchorWrites": counts.anchorWrites,
                "sharedSecrets": counts.sharedSecrets, "dataObjectReads": counts.dataObjectReads, "other": counts.other,
            ]
        }
        printJSON([
            "benchmark": "pay", "loadAverage": loadAverage, "setupSeconds": setupSeconds,
            "payment": [
                "payments": single.milliseconds.count, "rounds": single.sums.count, "p50Milliseconds": p50,
                "p99Milliseconds": p99, "partsMilliseconds": sum, "ratio": ratio, "goalMax": 1.5,
                "roundRatios": single.roundRatios,
                "allCompleted": single.outcomesOK,
                "payerTokenOperations": counts(single.payerCounts), "payeeTokenOperations": counts(single.payeeCounts),
                "commitRowBytes": single.commitSizes,
                "partsMicroseconds": [
                    "signature": medianPart(\.signatureMicroseconds),
                    "unlockAndLock": medianPart(\.unlockLockMicroseconds),
                    "keyLookupAfterLogin": medianPart(\.keyLookupMicroseconds),
                    "anchorWrite": medianPart(\.anchorWriteMicroseconds),
                    "commits": medianPart(\.commitsMicroseconds),
                    "handshakePrimitives": medianPart(\.handshakeMicroseconds),
                ],
                "messagesPerPayment": messagesPerPayment,
                "messageTripMicrosecondsNotInParts": medianPart(\.messageTripMicroseconds),
            ] as [String: Any],
            "eightPayers": [
                "payers": payerCount, "payments": crowd.paid + crowd.unconfirmed + crowd.failed + crowd.errors,
                "seconds": crowd.seconds, "paymentsPerSecond": rate, "paid": crowd.paid,
                "unconfirmed": crowd.unconfirmed,
                "failed": crowd.failed, "errors": crowd.errors, "received": crowd.received, "debits": crowd.debits,
                "credits": crowd.credits, "pending": crowd.pending, "pendingCredited": crowd.pendingCredited,
                "lost": crowd.lost, "conserved": crowd.conserved, "ledgersVerify": crowd.ledgersVerify,
                "failures": crowd.failures,
            ] as [String: Any],
            "machineScenarios": [
                "milliseconds": scenarios.milliseconds, "asExpected": scenarios.asExpected,
                "signatures": scenarios.signatures, "seedMilliseconds": 500, "detail": scenarios.detail,
            ] as [String: Any],
        ])
    }

    static func reportText(
        single: SingleResult, crowd: CrowdResult, scenarios: ScenarioResult, setupSeconds: Double, _ summary: Summary
    ) {
        let (p50, p99, sum, ratio, rate, medianPart) = (
            summary.p50, summary.p99, summary.sum, summary.ratio, summary.rate, summary.medianPart
        )
        print(
            String(
                format:
                    "payment over loopback TCP (SoftHSM, %d payments, payer and payee in one process on two threads): "
                    + "p50 %.1f ms, p99 %.1f ms vs its irreducible parts %.1f ms, ratio %.2f (goal ≤ 1.50)%@",
                single.milliseconds.count, p50, p99, sum, ratio,
                single.outcomesOK ? "" : " SOME PAYMENTS DID NOT COMPLETE"))
        print(
            "  the ratio is the median of the rounds' ratios "
                + "(each round's median payment over the parts measured beside it): "
                + single.roundRatios.map { String(format: "%.2f", $0) }.joined(separator: " "))
        print(
            "  token operations per payment: payer: \(describe(single.payerCounts)); "
                + "payee: \(describe(single.payeeCounts))")
        print(
            String(
                format:
                    "  parts (medians of %d rounds): signature %.0f µs (C loop), unlock+lock %.0f µs, "
                    + "key lookup after login %.0f µs, anchor write %.0f µs, "
                    + "%d durable commits %.0f µs (plain SQLCipher, WAL, synchronous=FULL), "
                    + "handshake primitives %.0f µs", single.sums.count, medianPart(\.signatureMicroseconds),
                medianPart(\.unlockLockMicroseconds),
                medianPart(\.keyLookupMicroseconds), medianPart(\.anchorWriteMicroseconds), single.commitSizes.count,
                medianPart(\.commitsMicroseconds), medianPart(\.handshakeMicroseconds)))
        print(
            String(
                format:
                    "  not in the parts: the payment's %d messages cross between the threads, "
                    + "%.0f µs each over the loopback channel (half a round trip), %.1f ms in all", messagesPerPayment,
                medianPart(\.messageTripMicroseconds),
                Double(messagesPerPayment) * medianPart(\.messageTripMicroseconds) / 1000))
        if !single.steps.isEmpty {
            print(
                "  steps (median ms from the connect): "
                    + Dictionary(grouping: single.steps) { "\($0.side) \($0.name)" }
                    .map { ($0.key, BenchCommands.median($0.value.map(\.milliseconds))) }.sorted { $0.1 < $1.1 }
                    .map { String(format: "%@ %.1f", $0.0, $0.1) }.joined(separator: ", "))
            if let median = single.timelines.sorted(by: { $0.milliseconds < $1.milliseconds }).dropFirst(
                single.timelines.count / 2
            ).first {
                print(String(format: "  the median payment (%.1f ms), step by step:", median.milliseconds))
                for line in median.lines { print("    " + line) }
            }
            print(
                "  inside the token calls of a payment, both sides (median ms): "
                    + single.tokenTimes
                    .map { String(format: "%@ %.1f", $0.key, BenchCommands.median($0.value)) }.sorted().joined(
                        separator: ", "))
        }
        print(
            String(
                format: "8 payers at once into one receiving wallet: %d payments in %.2f s, %.1f payments/s; "
                    + "paid %d, unconfirmed %d, failed %d, errors %d",
                crowd.paid + crowd.unconfirmed + crowd.failed + crowd.errors,
                crowd.seconds, rate, crowd.paid, crowd.unconfirmed, crowd.failed, crowd.errors))
        print(
            "  ledgers afterwards: \(crowd.debits) debits, \(crowd.credits) credits, \(crowd.pending) pending "
                + "(\(crowd.pendingCredited) of them credited: receipt lost), \(crowd.lost) lost; money "
                + (crowd.conserved ? "conserved" : "NOT CONSERVED") + "; every ledger "
                + (crowd.ledgersVerify ? "verifies" : "FAILS VERIFY")
                + (crowd.failures.isEmpty
                    ? ""
                    : "; failures: \(crowd.failures.map { "\($0.key) ×\($0.value)" }.sorted().joined(separator: ", "))")
        )
        print(
            String(
                format:
                    "tampered transfer, lost receipt, withdrawn request "
                    + "(pure machines, real SoftHSM wallets, %d token signatures): "
                    + "%.0f ms vs the seed's < 500 ms, ratio %.2f%@", scenarios.signatures, scenarios.milliseconds,
                scenarios.milliseconds / 500, scenarios.asExpected ? "" : "; UNEXPECTED: \(scenarios.detail)"))
        print(
            String(
                format: "(setup: %d wallets on %d SoftHSM tokens in %.1f s, not measured)", payerCount + 1,
                2 * (payerCount + 1) + 2,
                setupSeconds))
    }
}
