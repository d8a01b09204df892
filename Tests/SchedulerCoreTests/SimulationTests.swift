import Foundation
import XCTest

/// Deterministic simulation: SIM_SEEDS=N runs seeds 1...N (default 50); SIM_SEED=K replays one seed;
/// SIM_MAX_OPS sets the largest graph (default 600; sizes are drawn from 10%...100% of it);
/// SIM_VALIDATE_EVERY=k runs the full validate() every k steps (default 1; the model's checks run always).
final class SimulationTests: XCTestCase {
    func testRandomDAGsUnderRandomFaults() {
        let env = ProcessInfo.processInfo.environment
        let seeds: [UInt64]
        if let one = env["SIM_SEED"].flatMap(UInt64.init) { seeds = [one] }
        else { seeds = Array(1...UInt64(env["SIM_SEEDS"].flatMap(Int.init) ?? 50)) }
        var failures = 0
        for seed in seeds {
            var sim = Simulation(seed: seed, maxOps: max(20, env["SIM_MAX_OPS"].flatMap(Int.init) ?? 600))
            sim.validateEvery = env["SIM_VALIDATE_EVERY"].flatMap(Int.init) ?? 1
            if let v = sim.run() {
                failures += 1
                print("SIMULATION FAILED seed \(seed) (replay: SIM_SEED=\(seed) swift test --filter SimulationTests): \(v)")
                XCTFail("seed \(seed): \(v)")
                if failures >= 3 { break }
            }
        }
    }

    /// Thousands of ops per graph; full validate() every 20 steps (model checks every step).
    func testLargeGraphs() {
        let env = ProcessInfo.processInfo.environment
        if env["SIM_SEED"] != nil { return }
        for seed in UInt64(1_000_001)...1_000_002 {
            var sim = Simulation(seed: seed, maxOps: 3000)
            sim.validateEvery = 20
            if let v = sim.run() {
                print("SIMULATION FAILED large seed \(seed): \(v)")
                XCTFail("large seed \(seed): \(v)")
            }
        }
    }
}
