import Foundation
import Testing
import OpModel

/// Deterministic simulation: SIM_SEEDS=N runs seeds 1...N (default 50); SIM_SEED=K replays one seed;
/// SIM_MAX_OPS sets the largest graph (default 600; sizes are drawn from 10%...100% of it);
/// SIM_VALIDATE_EVERY=k runs the full validate() every k steps (default 1; the model's checks run always).
@Suite struct SimulationTests {
    @Test func testRandomDAGsUnderRandomFaults() {
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
                Issue.record("seed \(seed): \(v)")
                if failures >= 3 { break }
            }
        }
    }

    /// Crash mode (RecoverySimulation.swift, A5): seeded crashes replay the journal (a snapshot plus its
    /// tail) into a new core, which must hold every acknowledged op and outcome and take over; workers
    /// re-register with what they hold. SIM_SEEDS / SIM_SEED as above; run mode too (SIM_RUN_CRASH_SEEDS).
    @Test func testCrashesReplayTheJournalAndLoseNothing() {
        let env = ProcessInfo.processInfo.environment
        let seeds: [UInt64]
        if let one = env["SIM_SEED"].flatMap(UInt64.init) { seeds = [one] }
        else { seeds = Array(1...UInt64(env["SIM_SEEDS"].flatMap(Int.init) ?? 50)) }
        var crashes = 0, snapshots = 0, takenBack = 0, away = 0, dups = 0, failures = 0
        for seed in seeds {
            var sim = Simulation(seed: seed &+ 7_000, maxOps: 400, runs: seed % 3 == 0)   // (SIM_SEED replays run mode too)
            sim.crashes = true
            if let v = sim.run() {
                failures += 1
                print("CRASH SIMULATION FAILED seed \(seed) (replay: SIM_SEED=\(seed) swift test --filter testCrashes): \(v)")
                Issue.record("seed \(seed): \(v)")
                if failures >= 3 { break }
            }
            crashes += sim.crashCount; snapshots += sim.snapshotCount; takenBack += sim.takenBack
            away += sim.finishedAway; dups += sim.duplicatesAcked
        }
        print("crash simulation: \(seeds.count) seeds, \(crashes) crashes, \(snapshots) snapshots, \(takenBack) attempts held at a crash, \(away) finished while away, \(dups) retried batches acknowledged once")
        #expect(crashes > seeds.count, "too few crashes to mean anything")
    }

    /// Crash mode with q1's key rate slowed to 100/s, burst 1, so keyed ops wait across crashes and runs
    /// are evicted by age while their dependents wait. Seed 24 found that recovery's check counted a
    /// dependency on a run evicted by age at replay as lost (recovery was right: `durableOps()` lists
    /// retained dependencies only, live or recovered). Seeds 1...25.
    @Test func testCrashesWithASlowKeyRate() {
        if ProcessInfo.processInfo.environment["SIM_SEED"] != nil { return }
        for seed in UInt64(1)...25 {
            var sim = Simulation(seed: seed &+ 7_000, maxOps: 400, runs: seed % 3 == 0)
            sim.crashes = true
            sim.fairness["q1"]?.keyRate = RateLimit(perSecond: 100, burst: 1)
            if let v = sim.run() { Issue.record("seed \(seed): \(v)"); return }
        }
    }

    /// Thousands of ops per graph; full validate() every 20 steps (model checks every step).
    @Test func testLargeGraphs() {
        let env = ProcessInfo.processInfo.environment
        if env["SIM_SEED"] != nil { return }
        for seed in UInt64(1_000_001)...1_000_002 {
            var sim = Simulation(seed: seed, maxOps: 3000)
            sim.validateEvery = 20
            if let v = sim.run() {
                print("SIMULATION FAILED large seed \(seed): \(v)")
                Issue.record("large seed \(seed): \(v)")
            }
        }
    }

    /// Run mode (Simulation(runs: true)): the graph in consecutive runs of 5–25 ops with small
    /// retention, so runs are evicted and the op table compacted while other runs have parts in flight,
    /// retry delays, timeouts, barriers and lost workers. Seeds 1...30 by default (SIM_SEEDS, SIM_SEED,
    /// SIM_MAX_OPS default 400, SIM_VALIDATE_EVERY as above; SIM_VERBOSE prints per-seed counts, SIM_DEBUG
    /// every compaction).
    @Test func testRunsWithEvictionUnderRandomFaults() {
        let env = ProcessInfo.processInfo.environment
        let seeds: [UInt64]
        if let one = env["SIM_SEED"].flatMap(UInt64.init) { seeds = [one] }
        else { seeds = Array(1...UInt64(env["SIM_SEEDS"].flatMap(Int.init) ?? 30)) }
        var failures = 0
        var compactions = 0, inFlight = 0, retrying = 0, timed = 0, multiPart = 0, evicted = 0, rejected = 0, cross = 0, dropped = 0
        for seed in seeds {
            var sim = Simulation(seed: seed, maxOps: max(20, env["SIM_MAX_OPS"].flatMap(Int.init) ?? 400), runs: true)
            sim.validateEvery = env["SIM_VALIDATE_EVERY"].flatMap(Int.init) ?? 1
            if let v = sim.run() {
                failures += 1
                print("RUN SIMULATION FAILED seed \(seed) (replay: SIM_SEED=\(seed) swift test --filter testRunsWithEviction): \(v)")
                Issue.record("seed \(seed): \(v)")
                if failures >= 3 { break }
            }
            compactions += sim.compactionsSeen; inFlight += sim.compactionsInFlight; retrying += sim.compactionsRetrying
            timed += sim.compactionsTimed; multiPart += sim.compactionsMultiPart
            evicted += sim.evicted.count; rejected += sim.rejectedRuns; cross += sim.crossRunDeps; dropped += sim.droppedDeps
        }
        if env["SIM_VERBOSE"] != nil {
            print("runs: evicted \(evicted) compactions \(compactions) (in flight \(inFlight), retrying \(retrying), timeouts \(timed), multi-part \(multiPart)) rejected \(rejected) cross-run deps \(cross) dropped \(dropped)")
        }
        guard failures == 0, seeds.count >= 10 else { return }
        // What the seeds are for: eviction and compaction under load, and the submit paths around them.
        #expect(compactions > 0)
        #expect(inFlight > 0, "no compaction while parts were in flight")
        #expect(retrying > 0, "no compaction while a retry delay was pending")
        #expect(evicted > 0)
        #expect(rejected > 0)
        #expect(cross > 0, "no dependency on another run")
        #expect(dropped > 0, "no dependency on an evicted run")
    }

    /// Run mode with a few thousand ops; retention keeps the table small, so validate() still runs
    /// after every step.
    @Test func testRunsLargeGraphs() {
        if ProcessInfo.processInfo.environment["SIM_SEED"] != nil { return }
        for seed in UInt64(2_000_001)...2_000_002 {
            var sim = Simulation(seed: seed, maxOps: 3000, runs: true)
            if let v = sim.run() {
                print("RUN SIMULATION FAILED large seed \(seed): \(v)")
                Issue.record("large seed \(seed): \(v)")
            }
            #expect(sim.compactionsSeen > 0)
        }
    }
}
