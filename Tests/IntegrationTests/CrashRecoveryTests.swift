import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// A5 on real processes: opcoord killed with SIGKILL at seeded random moments during a layered run of
/// short shell ops and restarted on its state directory. Every op succeeds exactly once with its result,
/// and none runs twice: a finished op is not run again, and ops running at a crash are handed back by
/// their workers instead of being run again (each run appends a line to a file; no worker is lost, so
/// the count of re-runs must be 0). What STATUS says of every finished op is the same before and after
/// each restart (issue 25 finding 2: worker, session, times, attempts, outcome are journalled).
/// OPQ_CRASH_OPS (default 20,000), OPQ_CRASH_KILLS (10) and OPQ_CRASH_SEED size and replay it.
@Suite(.serialized) struct CrashRecoveryTests {
    @Test func aKilledCoordinatorLosesNothingAndRunsNothingTwice() throws {
        let env = ProcessInfo.processInfo.environment
        let total = Int(env["OPQ_CRASH_OPS"] ?? "") ?? 20_000
        let kills = Int(env["OPQ_CRASH_KILLS"] ?? "") ?? 10
        var seed = UInt64(env["OPQ_CRASH_SEED"] ?? "") ?? 1
        func random(_ n: Int) -> Int {   // SplitMix64
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        // A liveness bound (1 s) a loaded debug coordinator does not miss while it takes 4,096-op
        // SUBMITs: a worker declared lost has its attempts run again elsewhere (A3), which is not
        // what this test is about.
        let c = try LocalCluster(heartbeatMs: 200, liveness: 5)
        defer { c.stop() }
        try c.startWorker("crash-a", slots: 2, prefetch: 2)
        try c.startWorker("crash-b", slots: 2, prefetch: 2)
        let log = c.dir.appendingPathComponent("runs.txt").path
        #expect(FileManager.default.createFile(atPath: log, contents: nil))

        // Layers of `width` ops, each depending on two ops of the layer before.
        let width = min(200, total)
        let command = #"{"command": "echo $OPQ_OP_ID >> "# + log + #"; echo $OPQ_OP_ID"}"#
        let ops = (0..<total).map { i -> WireOperation in
            let layer = i / width
            let after = layer == 0 ? [] : Array(Set([(layer - 1) * width + random(width), (layer - 1) * width + random(width)])).map { "o\($0)" }
            return op("o\(i)", kind: "shell", payload: command, after: after, queue: "crash")
        }
        let conn = try c.connect(timeout: .seconds(20))
        for start in stride(from: 0, to: total, by: 4096) {
            var s = WireSubmit()
            s.operations = Array(ops[start..<min(total, start + 4096)])
            s.run = "crash"
            s.append = true
            let r = try conn.submit(.submit(s), until: .now + .seconds(60))
            try #require(r.accepted, "\(r.errors.prefix(3))")
        }

        // Every finished op's status (a STATUS reply is held until what it shows is on disk).
        func finishedStatuses() throws -> [String: WireOpStatus] {
            var out: [String: WireOpStatus] = [:]
            var after = ""
            let conn = try c.connect(timeout: .seconds(30))
            repeat {
                var s = WireStatus()
                s.run = "crash"
                s.states = [.finished]
                s.ops = true
                s.limit = 8192
                s.after = after
                guard case .statusReply(let r) = try conn.request(.status(s), timeout: .seconds(60)) else { throw ClusterError("no STATUS reply") }
                for o in r.ops { out[o.id] = o }
                after = r.nextAfter
            } while !after.isEmpty
            return out
        }

        // Kill at random moments while it runs, restart on the same state directory at once.
        var compared = 0
        for k in 0..<kills {
            usleep(UInt32(200_000 + random(1_300_000)))   // the moment is the point: not a synchronisation
            let before = try finishedStatuses()
            let status = try c.restartCoordinator(crash: true)
            #expect(status == SIGKILL, "kill \(k + 1): the coordinator was ended by SIGKILL (\(status))")
            let after = try finishedStatuses()
            let changed = before.filter { after[$0.key] != $0.value }.keys.sorted()
            compared += before.count
            let examples = changed.prefix(3).map { "\(String(describing: before[$0])) -> \(String(describing: after[$0]))" }
            #expect(changed.isEmpty, "kill \(k + 1): \(changed.count) of \(before.count) finished ops' status changed: \(examples)")
        }

        var w = WireWait()
        w.run = "crash"
        w.timeoutUs = 600_000_000
        let waited = try c.connect(timeout: .seconds(620)).request(.wait(w), timeout: .seconds(620))
        guard case .waitReply(let done) = waited else { Issue.record("no WAIT reply: \(waited)"); return }
        #expect(done.finished, "\(c.logs())")
        #expect(done.succeededCount == UInt32(total), "\(done.failedCount) failed, \(done.cancelledCount) cancelled\n\(c.logs())")

        // Results survive: each op's stdout is its own key.
        var wrong: [String] = []
        for start in stride(from: 0, to: total, by: 4096) {
            let range = start..<min(total, start + 4096)
            let st = try c.status(range.map { "crash/o\($0)" }, withResults: true)   // keyed by the bare id
            for i in range where st["o\(i)"]?.succeededResult != "crash/o\(i)\n" {
                wrong.append("crash/o\(i): \(String(describing: st["o\(i)"]?.succeededResult))")
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) ops without their result: \(wrong.prefix(5))")

        // Exactly one run per op.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        var runs: [Substring: Int] = [:]
        for l in lines { runs[l, default: 0] += 1 }
        let twice = runs.filter { $0.value > 1 }
        #expect(runs.count == total, "\(runs.count) of \(total) ops ran")
        // No worker is lost, so no op may run twice (OPQ_CRASH_MAX_RERUNS only for experiments). The
        // causes found so far are pinned by RecoveryTests and the lost-tail crash simulation.
        let allowed = Int(env["OPQ_CRASH_MAX_RERUNS"] ?? "") ?? 0
        #expect(lines.count - runs.count <= allowed, "\(twice.count) ops ran more than once (re-runs: \(lines.count - runs.count)): \(twice.keys.sorted().prefix(10))\n\(c.logs())")
        // The kills hit running work: workers re-registered holding parts, which were taken back.
        let workerLogs = ["crash-a", "crash-b"].map { (try? String(contentsOf: c.dir.appendingPathComponent("\($0).log"), encoding: .utf8)) ?? "" }
        let reRegistrations = workerLogs.joined().components(separatedBy: "still held").count - 1
        #expect(reRegistrations > 0, "no worker re-registered holding parts: the kills tested nothing")
        print("crash test: \(total) ops, \(kills) kills, \(reRegistrations) re-registrations holding parts, \(lines.count - runs.count) re-runs, \(compared) finished statuses compared across restarts")
    }
}
