import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureToken

/// `secure-bench ...`: benchmarks that print each comparison against a baseline measured in the same
/// run, as one line with both figures and `ratio N.NN`. Timing goals live here, never in tests. They run
/// from their own executable so that none of this code, nor the Python and SoftHSM labs it drives, is
/// in the `secure` binary people install.
public enum BenchCommands {
    static let help = """
        secure-bench: the benchmarks of the secure wallet, each against a baseline measured in the same run.

        Usage:
          secure-bench sign [--count N] [--rounds R] [--json]
              The token's own limit (a C loop of C_SignInit → C_Login(context) → C_Sign) against SecureToken's
              sign path (domain hash, the same three calls, low-s, DER, OpenSSL verify), on a fresh SoftHSM
              token in a temporary folder. Build with -c release.
          secure-bench kem [--json]
              ML-KEM and X-Wing against OpenSSL 4 through Python's cryptography.
          secure-bench channel [--json]
              The post-quantum channel's handshake against its primitives, record throughput against
              OpenSSL's AES-256-GCM, and the loopback TCP handshake's p50 and p99.
          secure-bench pay [--payments N] [--rounds R] [--per-payer K] [--trace] [--json]
              One peer payment over loopback TCP on SoftHSM (p50, p99) against its token operations, durable
              commits and handshake primitives measured raw; 8 payers at once into one wallet; the tampered
              transfer, lost receipt and withdrawn request run by the pure machines. Build with -c release.
          secure-bench ledger [--quick] [--only append,verify,open] [--count N] [--rounds R] [--fixtures DIR] [--json]
              The ledger (issue 4): a wallet append against its raw token operations plus a plain durable
              insert; full verification of 100,000 entries on all cores against OpenSSL's verify rate; open
              to balance at 100,000 and 1,000,000 entries. Fixtures are cached in DIR (.local/bench-fixtures);
              the first run builds them (the verification fixture with `secure-bench fixtures verify DIR COUNT`,
              which it runs itself in a process of its own).
          secure-bench till [--runs N] [--first-contact-runs M] [--quick] [--trace] [--json]
              A till's connect → amount on screen over loopback TCP on SoftHSM (a payer that follows the till's
              key-event log, and first contacts), against the handshake plus one round trip of the request's
              size; browse → amount through Avahi when a daemon answers. Build with -c release.

        Exit codes: 0 success, 1 failure, 2 usage error.
        """

    /// Runs one benchmark command line (the words after `secure-bench`) and returns the exit code.
    public static func run(_ words: [String]) -> Int32 {
        do {
            return try dispatch(words).rawValue
        } catch let error as UsageError {
            printError("secure-bench: \(error)")
            return ExitCode.usage.rawValue
        } catch {
            printError("secure-bench: error: \(error)")
            return ExitCode.failure.rawValue
        }
    }

    static func dispatch(_ words: [String]) throws -> ExitCode {
        guard let sub = words.first, sub != "help", sub != "-h", !words.contains("--help") else {
            print(help)
            return words.isEmpty ? .usage : .success
        }
        switch sub {
        case "sign": return try sign(Array(words.dropFirst()))
        case "ledger": return try ledger(Array(words.dropFirst()))
        case "channel", "kem":
            let arguments = try Arguments(Array(words.dropFirst()), options: [], flags: ["json"])
            _ = try arguments.positionals(0, "no positional arguments")
            warnIfDebug()
            let run = sub == "channel" ? runChannelBenchmark(json:) : runKEMBenchmark(json:)
            try run(arguments.flag("json"))
            return .success
        case "pay":
            let arguments = try Arguments(
                Array(words.dropFirst()), options: ["payments", "rounds", "per-payer"], flags: ["json", "trace"])
            _ = try arguments.positionals(0, "no positional arguments")
            try runPayBenchmark(arguments)
            return .success
        case "till":
            let arguments = try Arguments(
                Array(words.dropFirst()), options: ["runs", "first-contact-runs"], flags: ["json", "quick", "trace"])
            _ = try arguments.positionals(0, "no positional arguments")
            try runTillBenchmark(arguments)
            return .success
        default: throw UsageError("unknown benchmark \"\(sub)\"; `secure-bench --help` lists them")
        }
    }

    /// Warns when the figures come from a debug build, which is 60 to 130 times slower on tight loops.
    static func warnIfDebug() {
        #if DEBUG
            printError(
                "secure-bench: warning: this is a debug build; benchmark figures are only meaningful with -c release")
        #endif
    }

    /// The load average (1, 5 and 15 minutes) from /proc/loadavg, or "?": every benchmark prints it at its
    /// start, because on a shared machine it says how much the figures can be trusted.
    static func loadAverage() -> String {
        let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)
        return text?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func sign(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(words, options: ["count", "rounds"], flags: ["json"])
        _ = try arguments.positionals(0, "no positional arguments")
        let count = try arguments.integer("count", default: 300, max: 100_000)
        let rounds = try arguments.integer("rounds", default: 5, max: 100)
        warnIfDebug()
        let load = loadAverage()
        if !arguments.flag("json") { print("sign benchmark: load average \(load) at the start") }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-bench-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = try DemoToken.create(DemoToken.Layout(directory: directory), label: "bench")
        let token = try TokenLibrary.shared.token(created.uri)
        let session = try TokenSession(token: token, pin: try PINSource.file(created.pinPath).read())
        defer { session.close() }
        let key = try session.generateKey(label: "bench-sign", usage: .sign)
        let signer = try TokenSigner(session: session, keyURI: key.uri)
        let payload = Array("bench payment statement 4.50 EUR".utf8)
        let digest = SignatureLabel.file.digest(of: payload)

        var baseline: [Double] = [], ours: [Double] = [], verify: [Double] = []
        let sample = try signer.sign(payload, label: .file)
        for round in 0..<rounds {
            // Alternate the order so that drift on a noisy machine hits both sides alike.
            let measureBaseline = {
                baseline.append(
                    Double(try session.rawSignLoop(key: key, digest: digest, count: count)) / Double(count) / 1000)
            }
            let measureOurs = {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<count { _ = try signer.sign(payload, label: .file) }
                ours.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count) / 1000)
            }
            if round % 2 == 0 {
                try measureBaseline(); try measureOurs()
            } else {
                try measureOurs(); try measureBaseline()
            }
            // The OpenSSL verify that the sign path must do before returning, measured on its own.
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<count { precondition(key.publicKey.isValidSignature(sample, digest: digest)) }
            verify.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count) / 1000)
        }
        let verifyMicroseconds = median(verify)
        let baselineMicroseconds = median(baseline), oursMicroseconds = median(ours)
        let ratio = oursMicroseconds / baselineMicroseconds
        let overhead = oursMicroseconds - baselineMicroseconds
        if arguments.flag("json") {
            printJSON([
                "benchmark": "sign", "loadAverage": load, "token": "SoftHSM \(token.model)",
                "signaturesPerRound": count, "rounds": rounds,
                "baselineMicrosecondsPerSignature": baselineMicroseconds,
                "secureMicrosecondsPerSignature": oursMicroseconds,
                "ratio": ratio, "overheadMicrosecondsPerSignature": overhead,
                "opensslVerifyMicroseconds": verifyMicroseconds,
                "overheadExcludingVerifyMicroseconds": overhead - verifyMicroseconds,
            ])
        } else {
            print(
                "sign (SoftHSM, \(rounds)×\(count) signatures, medians): baseline C loop "
                    + String(
                        format: "%.1f µs/sig, secure %.1f µs/sig, ratio %.2f, overhead %.1f µs/sig",
                        baselineMicroseconds, oursMicroseconds, ratio, overhead))
            print(
                String(
                    format:
                        "  of which the OpenSSL verify of each signature: %.1f µs; the rest of the overhead: %.1f µs/sig",
                    verifyMicroseconds, overhead - verifyMicroseconds))
        }
        return .success
    }
}
