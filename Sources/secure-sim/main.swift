// secure-sim: runs the deterministic simulator (issue 7) over seeds. See docs/SIMULATION.md.
//   secure-sim --seed S [--steps N] [--wallets W] [--no-faults] [--no-adversaries]   replay one seed
//   secure-sim --seeds N [--first S] [--budget SECONDS] [--until-steps T] [--steps N] [--jobs J]
//       run seeds S, S+1, ... until N seeds ran, the budget is spent, or T steps are done (checked between seeds)
// Seeds run on `--jobs` threads (default: one per core). Each seed is its own Simulator with its own files and
// its own seeded random source, so a seed replays to the same trace whichever thread ran it and beside what.
import Foundation
import SecureSimulation

let arguments = Array(CommandLine.arguments.dropFirst())
func value(_ name: String) -> String? {
    guard let at = arguments.firstIndex(of: name), at + 1 < arguments.count else { return nil }
    return arguments[at + 1]
}

let steps = value("--steps").flatMap(Int.init) ?? 3_000
let walletCount = value("--wallets").flatMap(Int.init) ?? 4
let faults = !arguments.contains("--no-faults")
let adversaries = !arguments.contains("--no-adversaries")
let budget = value("--budget").flatMap(Double.init)
let stepsWanted = value("--until-steps").flatMap(Int.init)
let seeds: [UInt64]
if let seed = value("--seed").flatMap(UInt64.init) {
    seeds = [seed]
} else {
    let first = value("--first").flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
    let count = value("--seeds").flatMap(UInt64.init) ?? 10
    seeds = (0..<count).map { first &+ $0 }
}
/// More threads than cores only adds contention; SQLCipher and the signatures keep each thread busy.
let jobs = max(1, min(value("--jobs").flatMap(Int.init) ?? ProcessInfo.processInfo.activeProcessorCount, 64))
let verbose = seeds.count == 1 || arguments.contains("--verbose")

/// What the threads share: the next seed to run and the tallies, behind one lock.
final class Batch: @unchecked Sendable {
    private let mutex = NSLock()
    private var next = 0
    let started = Date()
    var totalSteps = 0
    var seedsRun = 0
    var failedSeeds: [UInt64] = []
    var paid: [Int] = []
    var restores: [Int] = []
    /// The dishonest actors' attempts, summed: forged transfers, forged refusals, restorers' second payments.
    var forged = 0
    var forgedRefusals = 0
    var selfIssued = 0
    var restorerAttempts = 0
    /// What they got: credits, reversals, credits of a restorer's second payment (each must stay 0).
    var adversaryGains = 0
    var evidence = 0
    var evidenceDue = 0
    var broken = false

    /// The next seed, or nil when all ran, the budget is spent or the simulator itself failed.
    func take() -> UInt64? {
        mutex.withLock {
            guard !broken, next < seeds.count else { return nil }
            if let budget, Date().timeIntervalSince(started) > budget { return nil }
            if let stepsWanted, totalSteps >= stepsWanted { return nil }
            defer { next += 1 }
            return seeds[next]
        }
    }

    func record(_ body: (Batch) -> Void) { mutex.withLock { body(self) } }
}

let batch = Batch()

func runSeeds() {
    while let seed = batch.take() {
        var config = SimulationConfig(seed: seed, steps: steps, walletCount: walletCount, faults: faults)
        config.adversaries = adversaries
        // One seed replays exactly what CI ran; in a batch the payment floor is the batch's (below).
        config.paymentRequired = seeds.count == 1
        do {
            let stats = try Simulator(config).run()
            batch.record { batch in
                batch.totalSteps += stats.steps
                batch.seedsRun += 1
                batch.paid.append(max(stats.outcomes["paid"] ?? 0, stats.outcomes["received"] ?? 0))
                batch.restores.append(stats.restores)
                batch.forged += stats.forgedTransfers
                batch.selfIssued += stats.selfIssued
                batch.forgedRefusals += stats.forgedRefusals
                batch.restorerAttempts += stats.restorerAttempts
                batch.adversaryGains +=
                    stats.forgedCredited + stats.forgedReversed + stats.restorerCredited
                    + stats.selfIssuedCredited
                batch.evidence += stats.restorerEvidence
                batch.evidenceDue += stats.restorerEvidenceDue
                if verbose { print("seed \(seed): \(stats)") }
            }
        } catch let failure as SimulationFailure {
            // Every failing seed is reported; the run goes on so one batch shows them all.
            batch.record { batch in
                FileHandle.standardError.write(Data((failure.description + "\n").utf8))
                batch.failedSeeds.append(seed)
                batch.seedsRun += 1
                batch.totalSteps += failure.step
            }
        } catch {
            batch.record { batch in
                FileHandle.standardError.write(
                    Data("seed \(seed): the simulator itself failed: \(error)\n".utf8)
                        + Data(
                            "replay: scripts/simulate --seed \(seed) --steps \(steps) --wallets \(walletCount)\(faults ? "" : " --no-faults")\n"
                                .utf8))
                batch.broken = true
            }
        }
    }
}

let threadCount = min(jobs, seeds.count)
let finished = DispatchGroup()
for _ in 0..<threadCount {
    finished.enter()
    let thread = Thread {
        runSeeds()
        finished.leave()
    }
    thread.stackSize = 8 << 20
    thread.start()
}
finished.wait()
if batch.broken { exit(2) }

let seconds = Date().timeIntervalSince(batch.started)
let verdict =
    batch.failedSeeds.isEmpty
    ? "all invariants held" : "FAILED seeds: " + batch.failedSeeds.sorted().map(String.init).joined(separator: " ")
let workload =
    batch.paid.isEmpty
    ? ""
    : String(
        format: "; paid %d (at least %d a seed), restores %d (at least %d a seed)",
        batch.paid.reduce(0, +), batch.paid.min() ?? 0,
        batch.restores.reduce(0, +), batch.restores.min() ?? 0)
        + String(
            format:
                "; forged transfers %d, forged refusals %d, restorer payments %d, self-issued payments %d "
                + "(gained %d, evidence %d of %d due)",
            batch.forged, batch.forgedRefusals, batch.restorerAttempts, batch.selfIssued, batch.adversaryGains,
            batch.evidence, batch.evidenceDue)
print(
    String(
        format: "secure-sim: %d seeds from %llu on %d threads, %d steps in %.1f s (%.0f steps/s)%@, %@", batch.seedsRun,
        seeds.first ?? 0, threadCount, batch.totalSteps, seconds, Double(batch.totalSteps) / max(seconds, 0.001),
        workload, verdict))
if let stepsWanted, batch.totalSteps < stepsWanted {
    print("secure-sim: the budget ran out after \(batch.totalSteps) of the \(stepsWanted) steps wanted")
}
// The batch's workload floor: on average at least one payment credited in a session per seed, so a batch
// that moved no money cannot pass, while a single seed whose faults piled up does not fail CI.
let creditedPayments = batch.paid.reduce(0, +)
if seeds.count > 1, creditedPayments < batch.paid.count {
    print(
        "secure-sim: workload: \(creditedPayments) payments credited in \(batch.paid.count) seeds; at least one a seed")
    exit(1)
}
if seeds.count > 1, let idle = Optional(batch.paid.filter { $0 == 0 }.count), idle > 0 {
    print("secure-sim: \(idle) of \(batch.paid.count) seeds credited no payment in a session (their faults piled up)")
}
if !batch.failedSeeds.isEmpty { exit(1) }
