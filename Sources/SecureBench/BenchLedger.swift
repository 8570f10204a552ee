import CommandLineSupport
import Dispatch
import Foundation
import SecureCore
import SecureCrypto
import SecurePeer
@_spi(Benchmark) import SecureStore
import SecureToken
@_spi(Benchmark) import SecureWallet

// `secure-bench ledger`: the three comparisons of issue 4, each against a baseline measured in the same run.
//
// Where the fixtures come from: the append and open figures need real wallets on SoftHSM (the token's ECDH
// unwraps the database key, the token key signs the latest checkpoint), so they are built here, through
// `Wallet.create` and `Wallet.appendBatch`, which signs one checkpoint per batch on the token. The
// verification fixture needs a signed checkpoint after every one of 100,000 entries; on SoftHSM, with its
// per-signature login, that takes many minutes. The issue allows a test-support signer for it, so that
// fixture is made by `secure-bench fixtures verify` (the executable's `VerifyFixture`, with SecureTestSupport's
// software signer, which SecureBench itself does not link), run by this command in a process of its own
// when its cache lacks the fixture. All fixtures are cached in
// `--fixtures DIR` (default .local/bench-fixtures, ignored by git), together with the SoftHSM tokens of the
// wallets, so later runs only measure.

/// One benchmark run's settings and fixture folder.
struct LedgerBench {
    let fixtures: String
    let quick: Bool
    let json: Bool
    let appendCount: Int
    let rounds: Int
    var verifyCount: Int { quick ? 20_000 : 100_000 }
    var openSizes: [Int] { quick ? [10_000, 100_000] : [100_000, 1_000_000] }
    var cores: Int { ProcessInfo.processInfo.activeProcessorCount }
    var layout: DemoToken.Layout { DemoToken.Layout(directory: fixtures + "/softhsm") }

    /// Entries per `appendBatch` while building the open fixtures: one token signature and one commit each.
    static let fixtureBatchCount = 50_000

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
    static func milliseconds(since start: UInt64) -> Double { Double(now() - start) / 1e6 }
}

extension BenchCommands {
    static func ledger(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: ["fixtures", "count", "rounds", "only"], flags: ["json", "quick"])
        let sections = Set((arguments.value("only") ?? "append,verify,open").split(separator: ",").map(String.init))
        guard !sections.isEmpty, sections.isSubset(of: ["append", "verify", "open"]) else {
            throw UsageError("--only takes a comma-separated list of append, verify and open")
        }
        _ = try arguments.positionals(0, "no positional arguments")
        let quick = arguments.flag("quick")
        let bench = LedgerBench(
            fixtures: arguments.value("fixtures") ?? ".local/bench-fixtures", quick: quick,
            json: arguments.flag("json"),
            appendCount: try arguments.integer("count", default: quick ? 10 : 30, max: 10_000),
            rounds: try arguments.integer("rounds", default: quick ? 3 : 5, max: 100))
        warnIfDebug()
        try FileManager.default.createDirectory(
            atPath: bench.fixtures, withIntermediateDirectories: true, attributes: nil)
        let load = loadAverage()
        if !bench.json {
            print(
                "ledger benchmark: \(bench.cores) cores, load average \(load) at the start; fixtures in \(bench.fixtures)"
            )
        }

        // The verification fixture first: it is built by another process, which must not share this
        // process's SoftHSM (SoftHSM reads its configuration once per process).
        let verifyFixture = sections.contains("verify") ? try bench.verifyFixture() : nil
        let tokens = try BenchTokens(layout: bench.layout)
        defer { tokens.close() }
        var built = verifyFixture?.buildSeconds.map { ["verify-\(bench.verifyCount)": $0] } ?? [:]
        var openWallets: [(size: Int, paths: WalletPaths)] = []
        for size in bench.openSizes where sections.contains("open") {
            let (paths, seconds) = try bench.openFixture(size: size, tokens: tokens)
            openWallets.append((size, paths))
            if let seconds { built["open-\(size)"] = seconds }
        }
        for (name, seconds) in built.sorted(by: { $0.key < $1.key }) where !bench.json {
            print(String(format: "fixture %@ built in %.1f s (cached for later runs)", name, seconds))
        }

        var report: [String: Any] = [
            "benchmark": "ledger", "cores": bench.cores, "loadAverage": load, "quick": quick,
            "fixtureBuildSeconds": built,
        ]
        if sections.contains("append") { report["append"] = try bench.measureAppend(tokens: tokens) }
        if let verifyFixture { report["verify"] = try bench.measureVerify(verifyFixture.directory) }
        if sections.contains("open") { report["open"] = try bench.measureOpen(openWallets, tokens: tokens) }
        if bench.json { printJSON(report) }
        return .success
    }
}

/// The two SoftHSM tokens every bench wallet lives on (a wallet's keys are found by id, its anchor by
/// its wallet id, so several wallets share them), kept in the fixture folder with their PIN files.
final class BenchTokens {
    let main: (token: Token, uri: PKCS11URI, pinPath: String)
    let backup: (token: Token, uri: PKCS11URI, pinPath: String)
    /// The backup token's session, open for the whole run: it signs the fixtures' vouchers.
    let backupSession: TokenSession
    /// The issuer key on the backup token that signs the fixtures' vouchers.
    let issuer: TokenSigner

    init(layout: DemoToken.Layout) throws {
        try DemoToken.prepare(layout)
        func token(_ label: String) throws -> (Token, PKCS11URI, String) {
            var uri = PKCS11URI()
            uri.token = label
            uri.moduleName = DemoToken.moduleName
            if FileManager.default.fileExists(atPath: layout.pinPath(label: label)),
                let token = try? TokenLibrary.shared.token(uri)
            {
                return (token, uri, layout.pinPath(label: label))
            }
            let created = try DemoToken.create(layout, label: label)
            return (try TokenLibrary.shared.token(created.uri), created.uri, created.pinPath)
        }
        main = try token("bench-main")
        backup = try token("bench-backup")
        backupSession = try TokenSession(token: backup.token, pin: try PINSource.file(backup.pinPath).read())
        let existing = try backupSession.keys().first { $0.label == "bench-issuer" }
        let issuerKey = try existing ?? backupSession.generateKey(label: "bench-issuer", usage: .sign)
        issuer = try TokenSigner(session: backupSession, keyURI: issuerKey.uri)
    }

    /// A new session on the main token, logged in.
    func mainSession() throws -> TokenSession {
        try TokenSession(token: main.token, pin: try PINSource.file(main.pinPath).read())
    }

    func close() { backupSession.close() }
}

extension LedgerBench {
    // MARK: Fixtures

    /// The wallet of `size` entries for the open measurement, built when the cache lacks it. A folder
    /// without its `complete` mark is a build that stopped, and is made again.
    func openFixture(size: Int, tokens: BenchTokens) throws -> (WalletPaths, buildSeconds: Double?) {
        let paths = WalletPaths(directory: fixtures + "/open-\(size)")
        let mark = paths.directory + "/complete"
        if FileManager.default.fileExists(atPath: mark) { return (paths, nil) }
        try? FileManager.default.removeItem(atPath: paths.directory)
        let start = Self.now()
        if !json {
            print(
                "building fixture open-\(size): a wallet on SoftHSM, \(size) entries in batches of \(Self.fixtureBatchCount)…"
            )
        }
        let (wallet, session) = try createWallet(paths: paths, label: "bench-open-\(size)", tokens: tokens)
        var history = SyntheticHistory(walletID: wallet.walletID, payerKey: wallet.signingKey, issuer: tokens.issuer)
        while wallet.size < UInt64(size) {
            let count = min(Self.fixtureBatchCount, size - Int(wallet.size))
            try wallet.appendBatch(try history.drafts(from: wallet.size, count: count))
        }
        session.close()
        try DurableFile.write(Array("\(size)\n".utf8), to: mark)
        return (paths, Self.milliseconds(since: start) / 1000)
    }

    /// A wallet on the bench tokens with the history's budget (entry 1), ready for `SyntheticHistory`.
    func createWallet(paths: WalletPaths, label: String, tokens: BenchTokens) throws -> (Wallet, TokenSession) {
        let options = Wallet.InitOptions(
            tokenURI: tokens.main.uri, backup: (tokens.backupSession, tokens.backup.uri),
            allowFileAnchor: false, label: label)
        let session = try tokens.mainSession()
        let wallet = try Wallet.create(paths: paths, token: session, options: options)
        try wallet.appendBatch([try SyntheticHistory.budgetDraft()])
        return (wallet, session)
    }

    /// The verification fixture's folder, built by `secure-bench fixtures verify` when missing.
    func verifyFixture() throws -> (directory: String, buildSeconds: Double?) {
        let directory = fixtures + "/verify-\(verifyCount)"
        let mark = directory + "/complete"
        if FileManager.default.fileExists(atPath: mark) { return (directory, nil) }
        try? FileManager.default.removeItem(atPath: directory)
        // This executable again, in a process of its own (see the top of this file).
        let builder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        if !json {
            print(
                "building fixture verify-\(verifyCount) with `secure-bench fixtures verify` (software-signed checkpoints)…"
            )
        }
        let start = Self.now()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builder)
        process.arguments = ["fixtures", "verify", directory, String(verifyCount)]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw UsageError(
                "`secure-bench fixtures verify` failed (exit \(process.terminationStatus)); see its message above")
        }
        try DurableFile.write(Array("\(verifyCount)\n".utf8), to: mark)
        return (directory, Self.milliseconds(since: start) / 1000)
    }
}

extension LedgerBench {
    // MARK: Append

    /// The wallet step of a payment (budget and balance check, then `appendDraft`: state, one checkpoint
    /// signature with its per-signature login, the durable commit, the anchor replaced on the token)
    /// against the same token operations in the C loop plus a durable insert of the same bytes into a
    /// plain table. Rounds alternate which side goes first.
    func measureAppend(tokens: BenchTokens) throws -> [String: Any] {
        let paths = WalletPaths(directory: fixtures + "/append")
        let wallet: Wallet, session: TokenSession
        if FileManager.default.fileExists(atPath: paths.directory + "/complete") {
            session = try tokens.mainSession()
            wallet = try Wallet.open(paths: paths, token: session)
            // The fixture is kept between runs, which may be months apart: its clock jumps are expected.
            wallet.acceptsClockJump = true
        } else {
            try? FileManager.default.removeItem(atPath: paths.directory)
            (wallet, session) = try createWallet(paths: paths, label: "bench-append", tokens: tokens)
            try DurableFile.write(Array("append\n".utf8), to: paths.directory + "/complete")
        }
        defer { session.close() }
        let amount = try Money(minorUnits: 450, currency: .eur)
        if wallet.state.minorUnitsHeld(.eur) < 1_000_000 { // a deposit from a fresh history covers 10,000 more runs
            var history = SyntheticHistory(
                walletID: wallet.walletID, payerKey: wallet.signingKey, issuer: tokens.issuer)
            try wallet.appendBatch(try history.drafts(from: SyntheticHistory.firstPosition, count: 1))
        }
        let payee = WalletID(bytes: SHA256.hash(Array("bench-payee".utf8)))! // a SHA-256 output is 32 bytes
        var lastEntry: LedgerEntry?
        func step() throws {
            let amount = try wallet.asset(for: amount, issuer: nil)
            _ = try wallet.checkSpend(amount: amount, category: "food", overrideBudget: false)
            let order = try TransferOrder(
                transferID: .random(), payerWalletID: wallet.walletID,
                payerKey: wallet.signingKey, payeeWalletID: payee, amount: amount,
                proximity: .none, channelBinding: [])
            lastEntry = try wallet.appendDraft(order.debitDraft(category: "food", note: "bench"))
        }
        // Warm up both sides (key handles cached, the baseline's anchor object exists), and count the
        // PKCS#11 calls one append makes.
        let before = session.moduleCallCount
        try step()
        let tokenCalls = session.moduleCallCount - before
        var signingURI = tokens.main.uri
        signingURI.id = Hex.decode(wallet.metadata.signingKeyID)
        let key = try session.key(signingURI)
        let anchorBytes = wallet.latest!.encoded
        let rowBytes = lastEntry!.encoded + anchorBytes
        let digest = SHA256.hash(anchorBytes)
        let application = "secure-wallet-bench", label = "baseline-anchor"
        _ = try session.rawAppendLoop(
            key: key, digest: digest, application: application, label: label,
            value: anchorBytes, count: 1)
        var baselineCalls: UInt64 = 0
        let scratch = fixtures + "/append-baseline-\(getpid()).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch + suffix) } }
        let table = try DurableInsertBaseline(path: scratch)
        try table.insert(rowBytes)

        var ours: [Double] = [], token: [Double] = [], insert: [Double] = []
        for round in 0..<rounds {
            let measureOurs = {
                let start = Self.now()
                for _ in 0..<appendCount { try step() }
                ours.append(Self.milliseconds(since: start) / Double(appendCount))
            }
            let measureBaseline = {
                let raw = try session.rawAppendLoop(
                    key: key, digest: digest, application: application, label: label,
                    value: anchorBytes, count: appendCount)
                token.append(Double(raw.nanoseconds) / 1e6 / Double(appendCount))
                baselineCalls = raw.calls / UInt64(appendCount)
                let start = Self.now()
                for _ in 0..<appendCount { try table.insert(rowBytes) }
                insert.append(Self.milliseconds(since: start) / Double(appendCount))
            }
            if round % 2 == 0 {
                try measureOurs(); try measureBaseline()
            } else {
                try measureBaseline(); try measureOurs()
            }
        }
        try session.destroyDataObjects(application: application, label: label)
        let oursMedian = BenchCommands.median(ours), tokenMedian = BenchCommands.median(token)
        let insertMedian = BenchCommands.median(insert)
        // Medians per round of the sums: the sum of two medians would mix rounds.
        let baselineMedian = BenchCommands.median(zip(token, insert).map { $0 + $1 })
        let ratio = oursMedian / baselineMedian
        if !json {
            print(
                String(
                    format: "append (SoftHSM, %d×%d payments, medians): baseline raw token operations + plain "
                        + "durable insert %.2f ms (parts' own medians: token %.2f, insert %.2f), secure wallet step %.2f ms, "
                        + "ratio %.2f (goal ≤ 1.25)",
                    rounds, appendCount, baselineMedian, tokenMedian, insertMedian, oursMedian, ratio))
            print(
                "  token operations per append: \(tokenCalls) PKCS#11 calls (baseline loop: \(baselineCalls)): one signature "
                    + "(C_SignInit, C_Login context, C_Sign) and the anchor's replacement (C_FindObjectsInit, C_FindObjects ×2, "
                    + "C_FindObjectsFinal, C_CreateObject, C_DestroyObject); \(rowBytes.count) bytes committed per append"
            )
        }
        return [
            "rounds": rounds, "appendsPerRound": appendCount, "secureMilliseconds": oursMedian,
            "baselineMilliseconds": baselineMedian, "baselineTokenMilliseconds": tokenMedian,
            "baselineInsertMilliseconds": insertMedian, "ratio": ratio, "tokenCallsPerAppend": tokenCalls,
            "baselineTokenCallsPerAppend": baselineCalls, "signaturesPerAppend": 1, "bytesPerAppend": rowBytes.count,
        ]
    }

    // MARK: Verification

    /// `LedgerVerifier.verify` of the fixture on all cores against OpenSSL's P-256 verify rate on one core
    /// times the cores: the higher of `openssl speed ecdsap256` and the EVP_PKEY_verify SecureCrypto calls,
    /// over the fixture's own checkpoints, both measured in each round.
    func measureVerify(_ directory: String) throws -> [String: Any] {
        let key = SecretBytes(
            Hex.decode(
                try String(contentsOfFile: directory + "/database-key", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? [])
        guard
            let walletID = WalletID(
                hex: try String(contentsOfFile: directory + "/wallet-id", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw UsageError(
                "the verification fixture's wallet-id is not a wallet id; delete \(directory) to rebuild it")
        }
        let path = directory + "/ledger.db"
        let store = try LedgerStore.open(
            path: path, key: key, expectedSalt: try LedgerStore.fileSalt(path), walletID: walletID)
        // The baseline's inputs: the first checkpoints' digests and signatures, parsed beforehand.
        let sampleCount = quick ? 1_000 : 3_000
        var samples: [(ECDSASignature, [UInt8])] = []
        var walletKey: P256.PublicKey?
        for size in 1...UInt64(sampleCount) {
            guard let bytes = try store.checkpoint(size: size), let signed = try SignedCheckpoint.decode(bytes) else {
                throw UsageError("the verification fixture lacks checkpoint \(size); delete \(directory) to rebuild it")
            }
            walletKey = signed.checkpoint.walletKey
            samples.append((signed.signature, Checkpoint.signatureLabel.digest(of: signed.checkpoint.encoded)))
        }
        let publicKey = walletKey!
        let inputs = samples
        var ours: [Double] = [], single: [Double] = [], parallel: [Double] = [], speed: [Double] = []
        let openssl = Self.opensslSpeedCommand()
        var checkpoints = 0
        for round in 0..<rounds {
            let measureOurs = {
                let start = Self.now()
                let report = try LedgerVerifier.verify(store, walletID: walletID, cores: cores)
                ours.append(Self.milliseconds(since: start) / 1000)
                guard report.isValid, report.entries == UInt64(verifyCount) else {
                    throw UsageError("the verification fixture does not verify: \(report.problems.prefix(3))")
                }
                checkpoints = report.checkpoints
            }
            let measureBaseline = {
                var start = Self.now()
                for (signature, digest) in samples {
                    precondition(publicKey.isValidSignature(signature, digest: digest))
                }
                single.append(Double(samples.count) / (Self.milliseconds(since: start) / 1000))
                // The same on every core at once, for how much the other engineers' load takes away.
                start = Self.now()
                DispatchQueue.concurrentPerform(iterations: cores) { _ in
                    for (signature, digest) in inputs {
                        precondition(publicKey.isValidSignature(signature, digest: digest))
                    }
                }
                parallel.append(Double(samples.count * cores) / (Self.milliseconds(since: start) / 1000))
                if let openssl, let rate = try Self.opensslSpeedVerifyRate(openssl) { speed.append(rate) }
            }
            if round % 2 == 0 {
                try measureOurs(); try measureBaseline()
            } else {
                try measureBaseline(); try measureOurs()
            }
        }
        let seconds = BenchCommands.median(ours)
        let oursRate = Double(checkpoints) / seconds
        let evpRate = BenchCommands.median(single), parallelRate = BenchCommands.median(parallel)
        let speedRate = speed.isEmpty ? nil : BenchCommands.median(speed)
        // The stricter of the two one-core figures: `openssl speed` skips the EVP context set-up per call.
        let singleRate = max(evpRate, speedRate ?? 0)
        let ratio = oursRate / (singleRate * Double(cores))
        if !json {
            print(
                String(
                    format: "verify (%d entries and checkpoints on %d cores, %d rounds, medians): OpenSSL P-256 verify "
                        + "%.0f/s on one core × %d = %.0f/s, secure %.2f s = %.0f checkpoints/s, ratio %.2f (goal ≥ 0.8)",
                    verifyCount, cores, rounds, singleRate, cores, singleRate * Double(cores), seconds, oursRate, ratio)
            )
            print(
                String(
                    format: "  one core: `openssl speed -elapsed ecdsap256` %@, "
                        + "EVP_PKEY_verify as SecureCrypto calls it %.0f/s; "
                        + "that loop on all %d cores at once: %.0f/s (ratio against it %.2f)",
                    speedRate.map { String(format: "%.0f/s", $0) } ?? "not run (no openssl command)", evpRate, cores,
                    parallelRate, oursRate / parallelRate))
        }
        return [
            "entries": verifyCount, "checkpoints": checkpoints, "cores": cores, "rounds": rounds,
            "secureSeconds": seconds,
            "secureCheckpointsPerSecond": oursRate, "opensslVerifiesPerSecondOneCore": singleRate,
            "opensslSpeedVerifiesPerSecond": speedRate ?? NSNull(), "evpVerifiesPerSecondOneCore": evpRate,
            "evpVerifiesPerSecondAllCores": parallelRate, "ratio": ratio,
        ]
    }

    /// The `openssl` command on PATH, if any.
    static func opensslSpeedCommand() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/openssl" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// OpenSSL's own figure: `openssl speed -elapsed -seconds 1 ecdsap256` (one core), its verify/s column.
    /// `-elapsed` divides by wall time like every other figure here; by default `openssl speed` divides by
    /// its CPU time, which on a loaded machine reports more than it delivers.
    static func opensslSpeedVerifyRate(_ command: String) throws -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = ["speed", "-elapsed", "-seconds", "1", "ecdsap256"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // The result line: " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  51149.5  16858.0"
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last { $0.contains("ecdsa (nistp256)") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    // MARK: Open

    /// From a logged-in token session to the balance: `Wallet.open` (ECDH unwrap on the token, database
    /// open, latest checkpoint and its signature, anchor check) and reading the balance. The token login
    /// is timed separately. Sizes alternate order per round.
    func measureOpen(_ wallets: [(size: Int, paths: WalletPaths)], tokens: BenchTokens) throws -> [String: Any] {
        let openRounds = max(rounds, 7)
        var open: [Int: [Double]] = [:], login: [Int: [Double]] = [:]
        var balances: [Int: String] = [:]
        for round in 0..<openRounds {
            for (size, paths) in round % 2 == 0 ? wallets : wallets.reversed() {
                var start = Self.now()
                let session = try tokens.mainSession()
                login[size, default: []].append(Self.milliseconds(since: start))
                start = Self.now()
                let wallet = try Wallet.open(paths: paths, token: session)
                let balance = wallet.state.minorUnitsHeld(.eur)
                open[size, default: []].append(Self.milliseconds(since: start))
                guard wallet.lockReason == nil, wallet.size == UInt64(size) else {
                    throw UsageError(
                        "the fixture \(paths.directory) opened locked or with \(wallet.size) entries; "
                            + "delete it to rebuild")
                }
                balances[size] = MoneyText.format(try Money(minorUnits: balance, currency: .eur))
                session.close()
            }
        }
        let small = wallets[0].size, large = wallets[wallets.count - 1].size
        let smallMedian = BenchCommands.median(open[small]!), largeMedian = BenchCommands.median(open[large]!)
        let ratio = largeMedian / smallMedian
        if !json {
            print(
                String(
                    format: "open → balance (%d rounds, medians): %d entries %.1f ms, %d entries %.1f ms, ratio %.2f "
                        + "(goal < 100 ms, flat in n)", openRounds, small, smallMedian, large, largeMedian, ratio))
            print(
                String(
                    format: "  before it, the token login (C_OpenSession, C_Login): %.1f ms",
                    BenchCommands.median(login[small]! + login[large]!)))
        }
        var result: [String: Any] = [
            "rounds": openRounds, "ratio": ratio,
            "loginMilliseconds": BenchCommands.median(login[small]! + login[large]!),
        ]
        for (size, _) in wallets {
            result["\(size)"] = ["milliseconds": BenchCommands.median(open[size]!), "balance": balances[size]!]
        }
        return result
    }
}
