import ClusterTestSupport
import Foundation
import Testing
import WireProtocol
import ZeroMQ

/// Issue 4's behaviours on real processes over real ZeroMQ sockets on loopback.
/// Serialized: each test starts its own coordinator and workers, and timings matter on 2 cores.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ClusterTests {
    @Test func dagAcrossTwoWorkersRunsDependentsAfterDependenciesWithTheirResults() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2)
        try c.startWorker("b", slots: 2)
        // Two sources, a layer of 6 that each depend on both, and a sink that reads every input file.
        var ops = [op("src1", kind: "echo", payload: "one"), op("src2", kind: "echo", payload: "two")]
        for i in 0..<6 { ops.append(shell("mid\(i)", "cat \"$OPQ_INPUT_SRC1\" \"$OPQ_INPUT_SRC2\"; sleep 0.05", after: ["src1", "src2"])) }
        ops.append(shell("sink", "cat \"$OPQ_INPUTS_DIR\"/* | wc -c", after: (0..<6).map { "mid\($0)" }))
        let reply = try c.submit(ops)
        #expect(reply.accepted, "\(reply.errors)")
        try c.wait(ops.map(\.id))
        let st = try c.status(ops.map(\.id), withResults: true)
        for o in ops {
            let s = try #require(st[o.id])
            #expect(s.isSucceeded, "\(o.id): \(s.error)")
            for dep in o.after {
                let d = try #require(st[dep])
                #expect(s.startedUs >= d.finishedUs, "\(o.id) started at \(s.startedUs) before \(dep) finished at \(d.finishedUs)")
            }
        }
        #expect(st["mid3"]?.succeededResult == "onetwo")
        #expect(st["sink"]?.succeededResult?.trimmingCharacters(in: .whitespacesAndNewlines) == "36")
        #expect(Set(st.values.compactMap { $0.workerID.isEmpty ? nil : $0.workerID }).count == 2, "both workers ran something")
    }

    @Test func cancellingRunningSleepAndShellEndsThemAndKillsTheProcesses() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 3)
        let pidDir = c.dir.appendingPathComponent("pids").path
        try FileManager.default.createDirectory(atPath: pidDir, withIntermediateDirectories: true)
        let ops = [op("nap", kind: "sleep", payload: "60000"),
                   shell("plain", "echo $$ > \(pidDir)/plain; exec sleep 60"),
                   shell("stubborn", "trap '' TERM; echo $$ > \(pidDir)/stubborn; while true; do sleep 0.05; done", grace: 0.5)]
        #expect(try c.submit(ops).accepted)
        try c.waitUntil("all three running", timeout: 20) {
            let st = try c.status(ops.map(\.id))
            return st.values.allSatisfy { $0.state == .executing && $0.startedUs > 0 }
                && FileManager.default.fileExists(atPath: pidDir + "/plain") && FileManager.default.fileExists(atPath: pidDir + "/stubborn")
        }
        let pids = try ["plain", "stubborn"].map { try #require(Int32(String(contentsOfFile: pidDir + "/" + $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))) }
        try c.ack(.cancelOps(.with { $0.opIds = ops.map(\.id); $0.reason = "shutting down" }))
        try c.wait(ops.map(\.id), timeout: 15)
        let st = try c.status(ops.map(\.id))
        for o in ops { #expect(st[o.id]!.outcome.cancelled == "shutting down", "\(o.id): \(st[o.id]!.outcome)") }
        for pid in pids {
            try c.waitUntil("process \(pid) gone", timeout: 5) { kill(pid, 0) != 0 && errno == ESRCH }
        }
    }

    @Test func killedWorkersOperationsAreRedispatchedAndAllFinish() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("victim", slots: 4, prefetch: 0)
        let ops = (0..<8).map { op("k\($0)", kind: "sleep", payload: "400") }
        #expect(try c.submit(ops).accepted)
        try c.waitUntil("victim running 4", timeout: 20) {
            try c.status(ops.map(\.id)).values.filter { $0.state == .executing }.count == 4
        }
        try c.startWorker("survivor", slots: 4, prefetch: 0)
        c.signal("victim", SIGKILL)
        try c.wait(ops.map(\.id), timeout: 30)
        let st = try c.status(ops.map(\.id))
        #expect(st.values.allSatisfy { $0.isSucceeded })
        #expect(st.values.filter { $0.attempts >= 2 }.count >= 4, "the 4 ops running on the victim ran again")
    }

    /// An idle worker hears HEARTBEATs from the coordinator, so neither side takes the other's silence
    /// for death: over many liveness periods with no work it keeps its session (same worker id).
    @Test func anIdleWorkerKeepsItsSessionPastManyLivenessPeriods() throws {
        let c = try LocalCluster(heartbeatMs: 100, liveness: 3)
        defer { c.stop() }
        try c.startWorker("idle", slots: 1)
        let first = try #require(try c.workerList().first { $0.name == "idle" })
        // Not a sleep: the coordinator's own record says when it last heard from this session. Once that
        // is 5 liveness periods (1.5 s) after the session began, the session lived through them; a new
        // session (a worker that gave up on a silent coordinator, or one declared lost) fails at once.
        try c.waitUntil("the coordinator hearing from the idle session 1.5 s after it began", timeout: 20) {
            let now = try c.workerList()
            guard now.map(\.workerID) == [first.workerID] else {
                throw ClusterError("the idle worker's session changed: \(first.workerID) → \(now.map(\.workerID))\n\(c.logs())")
            }
            return now[0].lastSeenUs - first.connectedUs >= 1_500_000
        }
        #expect(!c.logs().contains("coordinator silent"), "\(c.logs())")
    }

    @Test func aFrozenWorkerIsDeclaredLostItsWorkRunsElsewhereAndItComesBack() throws {
        let c = try LocalCluster(heartbeatMs: 100, liveness: 3)
        defer { c.stop() }
        try c.startWorker("frozen", slots: 2, prefetch: 0)
        let ops = (0..<2).map { op("f\($0)", kind: "sleep", payload: "300") }
        #expect(try c.submit(ops).accepted)
        try c.waitUntil("both running", timeout: 20) { try c.status(ops.map(\.id)).values.allSatisfy { $0.state == .executing } }
        c.signal("frozen", SIGSTOP)
        try c.waitUntil("frozen worker declared lost", timeout: 10) { try c.workerList().allSatisfy { $0.name != "frozen" } }
        try c.startWorker("fresh", slots: 2, prefetch: 0)
        c.signal("frozen", SIGCONT)
        try c.wait(ops.map(\.id), timeout: 30)
        let st = try c.status(ops.map(\.id))
        #expect(st.values.allSatisfy { $0.isSucceeded && $0.attempts == 2 },
                "\(st.values.map { "\($0.id) \($0.outcome) attempts \($0.attempts) on \($0.workerID)" })\n\(c.logs())")
        // The woken worker registers again as a new worker.
        try c.waitUntil("frozen worker back", timeout: 10) { try c.workerList().contains { $0.name == "frozen" } }
    }

    @Test func statusReportsTheCoordinatorsMemoryAndCpuUse() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("work", kind: "echo", payload: "x")]).accepted)
        try c.wait(["work"])
        let r = try c.statusReply()
        // A running Swift process holds megabytes resident and has used some CPU by now.
        #expect(r.coordinatorRssBytes > 1_000_000, "rss \(r.coordinatorRssBytes)")
        #expect(r.coordinatorRssBytes < 64 << 30, "rss \(r.coordinatorRssBytes) is a byte count, not garbage")
        #expect(r.coordinatorCpuUs > 0)
        #expect(r.coordinatorCpuUs < 600_000_000, "cpu \(r.coordinatorCpuUs) µs for a test-sized run")
    }

    @Test func workersReconnectAndRegisterWithARestartedCoordinator() throws {
        let c = try LocalCluster(heartbeatMs: 100, liveness: 3)
        defer { c.stop() }
        try c.startWorker("loyal", slots: 1)
        #expect(try c.restartCoordinator() == 0, "SIGTERM is a graceful stop")
        try c.waitUntil("worker registered with the new coordinator", timeout: 20) {
            (try? c.workerList().contains { $0.name == "loyal" }) ?? false
        }
        #expect(try c.submit([op("after-restart", kind: "echo", payload: "back")]).accepted)
        try c.wait(["after-restart"])
        #expect(try c.status(["after-restart"], withResults: true)["after-restart"]?.succeededResult == "back")
    }

    @Test func badInputGetsAClearErrorAndTheCoordinatorKeepsServing() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        // A cycle: rejected as a whole, naming its members.
        let cyclic = try c.submit([op("c1", after: ["c3"]), op("c2", after: ["c1"]), op("c3", after: ["c2"]), op("fine")])
        #expect(!cyclic.accepted)
        let cycle = try #require(cyclic.errors.first { $0.problem == .cycle })
        #expect(Set(cycle.related) == ["c1", "c2", "c3"])
        #expect(try c.status(["fine"]).isEmpty, "nothing of a rejected batch is accepted")
        // Unknown dependency and duplicate ids, all listed.
        let bad = try c.submit([op("d1", after: ["nope"]), op("d2"), op("d2")])
        #expect(!bad.accepted)
        #expect(bad.errors.contains { $0.problem == .unknownDependency && $0.related == ["nope"] })
        #expect(bad.errors.contains { $0.problem == .duplicateID })
        // Garbage frames on the raw socket: an ERROR reply naming the problem.
        let ctx = try Context()
        let raw = try Socket(ctx, type: .dealer)
        try raw.connect(c.endpoint)
        _ = try raw.sendMultipart([[0xde, 0xad, 0xbe, 0xef], [1, 2, 3]])
        let poller = Poller()
        _ = poller.add(raw)
        try poller.poll(timeout: .seconds(10))
        let frames = try #require(try raw.receiveMultipart(flags: .dontWait))
        guard case .success(let env) = WireCodec.decode(frames), case .error(let e) = env.message else {
            Issue.record("expected an ERROR reply")
            return
        }
        #expect(e.code == .malformed)
        // A HELLO of another protocol version: REJECT (so the worker stops), not a silent drop.
        _ = try raw.sendMultipart(WireCodec.encode(.hello(.with { $0.protocolVersion = 2; $0.name = "future"; $0.slots = 1; $0.kinds = ["noop"] })))
        try poller.poll(timeout: .seconds(10))
        let rejectFrames = try #require(try raw.receiveMultipart(flags: .dontWait))
        guard case .success(let rejectEnv) = WireCodec.decode(rejectFrames), case .reject(let r) = rejectEnv.message else {
            Issue.record("expected REJECT")
            return
        }
        #expect(r.code == .unsupportedVersion, "\(r)")
        // An oversized payload: refused with TOO_LARGE, not a dropped connection. (CoordinatorConnection
        // does not send it at all — ClientLimitsTests — so it goes over the raw socket.)
        let huge = op("huge", kind: "echo", payload: String(repeating: "x", count: WireLimits.maxPayloadSize + 1))
        _ = try raw.sendMultipart(WireCodec.encode(.submit(.with { $0.operations = [huge] }), requestID: 9))
        try poller.poll(timeout: .seconds(10))
        let tooLargeFrames = try #require(try raw.receiveMultipart(flags: .dontWait))
        guard case .success(let tooLargeEnv) = WireCodec.decode(tooLargeFrames), case .error(let tooLarge) = tooLargeEnv.message else {
            Issue.record("expected an ERROR reply")
            return
        }
        #expect(tooLarge.code == .tooLarge && tooLargeEnv.requestID == 9, "\(tooLarge)")
        raw.close()
        #expect(throws: (any Error).self) { try c.submit([huge]) }
        // Still serving.
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("after-bad-input", kind: "echo", payload: "ok")]).accepted)
        try c.wait(["after-bad-input"])
        #expect(c.coordinator.isRunning)
        #expect(c.stop() == 0, "SIGTERM stops the coordinator gracefully with status 0")
    }
}
