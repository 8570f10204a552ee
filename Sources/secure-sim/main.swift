// secure-sim: runs the deterministic simulator (issue 7) over seeds. See docs/SIMULATION.md.
//   secure-sim --seed S [--steps N] [--wallets W] [--no-faults]     replay one seed
//   secure-sim --seeds N [--first S] [--budget SECONDS] [--steps N]  run seeds S, S+1, ... until N or the budget
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
let budget = value("--budget").flatMap(Double.init)
let seeds: [UInt64]
if let seed = value("--seed").flatMap(UInt64.init) {
    seeds = [seed]
} else {
    let first = value("--first").flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
    let count = value("--seeds").flatMap(UInt64.init) ?? 10
    seeds = (0..<count).map { first &+ $0 }
}

let started = Date()
var totalSteps = 0
var seedsRun = 0
for seed in seeds {
    if let budget, Date().timeIntervalSince(started) > budget { break }
    let config = SimulationConfig(seed: seed, steps: steps, walletCount: walletCount, faults: faults)
    do {
        let simulator = try Simulator(config)
        let stats = try simulator.run()
        totalSteps += stats.steps
        seedsRun += 1
        if seeds.count == 1 || arguments.contains("--verbose") { print("seed \(seed): \(stats)") }
    } catch let failure as SimulationFailure {
        FileHandle.standardError.write(Data((failure.description + "\n").utf8))
        exit(1)
    } catch {
        FileHandle.standardError.write(Data("seed \(seed): the simulator itself failed: \(error)\n".utf8)
            + Data("replay: scripts/simulate --seed \(seed) --steps \(steps) --wallets \(walletCount)\(faults ? "" : " --no-faults")\n".utf8))
        exit(2)
    }
}
let seconds = Date().timeIntervalSince(started)
print(String(format: "secure-sim: %d seeds, %d steps in %.1f s (%.0f steps/s), all invariants held", seedsRun, totalSteps, seconds,
             Double(totalSteps) / max(seconds, 0.001)))
