import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// What status says is what happened (docs/SEMANTICS.md S1, S6, S8, A4), on real processes: executing
/// means a handler runs, one slot is one operation of any kind, per-op times from the worker, and worker
/// ids that survive a reconnect. (FIFO among equal priority, retries with a delay, timeouts as failed
/// attempts and warnings for operations no worker can run are the coordinator's alone: they are checked
/// in EmbeddedCoordinatorTests.)
@Suite(.serialized, .timeLimit(.minutes(3)))
struct TruthfulStatusTests {
    /// 2,000 operations through 2 workers × 2 slots with prefetch: at every sample the coordinator counts
    /// at most 4 executing, each worker at most its slots running, and prefetched ones as dispatched.
    @Test func executingNeverExceedsSlotsWhilePrefetchedOperationsAreDispatched() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2, prefetch: 2)
        try c.startWorker("b", slots: 2, prefetch: 2)
        let ops = (0..<2000).map { op("s\($0)", kind: "sleep", payload: "2", queue: "load") }
        #expect(try c.submit(ops).accepted)
        let conn = try c.connect()
        var samples = 0, sawDispatched = false, sawExecuting = false
        // Sampled back to back (the requests pace it) until all have finished.
        try c.waitUntil("all 2000 finished", timeout: 60, interval: .zero) {
            guard case .statusReply(let s)? = try? conn.request(.status(.with { $0.queue = "load" })),
                  case .workersReply(let w)? = try? conn.request(.workers),
                  let q = s.queues.first else { return false }
            samples += 1
            #expect(q.executing <= 4, "sample \(samples): \(q.executing) executing on 4 slots")
            for worker in w.workers {
                #expect(worker.running <= worker.slots, "\(worker.name): \(worker.running) running on \(worker.slots) slots")
                #expect(worker.inFlight <= worker.slots + 2, "\(worker.name): \(worker.inFlight) in flight")
            }
            if q.dispatched > 0 { sawDispatched = true }
            if q.executing > 0 { sawExecuting = true }
            return q.finished == 2000
        }
        #expect(samples > 10)
        #expect(sawDispatched && sawExecuting, "prefetched operations show as dispatched, running ones as executing")
        try c.wait(ops.map(\.id), timeout: 30)
    }

    /// `--slots 1` means one operation at a time whatever its kind (inline kinds included), and the times
    /// status shows are where the worker ran them: strictly increasing, non-overlapping, in running order.
    @Test func oneSlotRunsOneOperationAtATimeAndStatusShowsTheRealIntervals() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("solo", slots: 1, prefetch: 4)
        let kinds: [(String, String)] = [("sleep", "150"), ("echo", "x"), ("noop", ""), ("sleep", "30"),
                                         ("noop", ""), ("echo", "y"), ("fail", "on purpose"), ("noop", "")]
        var ops = kinds.enumerated().map { i, k in op("k\(i)", kind: k.0, payload: k.1, queue: "serial") }
        ops.append(shell("k8", "true", queue: "serial"))
        #expect(try c.submit(ops).accepted)
        try c.wait(ops.map(\.id))
        let st = try c.status(ops.map(\.id))
        let ran = ops.map { st[$0.id]! }.sorted { $0.startedUs < $1.startedUs }
        for (i, o) in ran.enumerated() {
            #expect(o.startedUs > 0 && o.finishedUs > o.startedUs, "\(o.id): started \(o.startedUs) finished \(o.finishedUs)")
            #expect(o.dispatchedUs > 0 && o.dispatchedUs <= o.startedUs, "\(o.id) started before it was dispatched")
            if i > 0 {
                let prev = ran[i - 1]
                #expect(o.startedUs >= prev.finishedUs, "\(o.id) started at \(o.startedUs) while \(prev.id) ran until \(prev.finishedUs)")
            }
        }
        // The 150 ms sleep held the only slot: nothing else ran inside it.
        let longest = st["k0"]!
        #expect(longest.finishedUs - longest.startedUs >= 140_000)
        #expect(Set(ran.map(\.startedUs)).count == ran.count, "every start has its own time")
    }

    /// A worker restarted under the same name keeps its id: old operations still point at the machine
    /// that ran them; the session number tells the connections apart.
    @Test func aWorkerRestartedUnderItsNameKeepsItsId() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("keeper", slots: 1)
        try c.startWorker("other", slots: 1)
        let first = try #require(try c.workerList().first { $0.name == "keeper" })
        #expect(first.session == 1)
        #expect(try c.submit([op("before", kind: "echo", payload: "1")]).accepted)
        try c.wait(["before"])
        let ranOn = try #require(try c.status(["before"])["before"]).workerID
        // Kill it hard and start it again at once, before the coordinator notices it is gone.
        c.signal("keeper", SIGKILL)
        c.workers["keeper"]?.waitUntilExit()
        try c.startWorker("keeper", slots: 1)
        try c.waitUntil("keeper registered again", timeout: 20) {
            try c.workerList().contains { $0.name == "keeper" && $0.session == 2 }
        }
        let list = try c.workerList()
        let again = try #require(list.first { $0.name == "keeper" })
        #expect(again.workerID == first.workerID)
        #expect(again.session == 2)
        #expect(list.filter { $0.name == "keeper" }.count == 1, "the old session was replaced, not kept beside it")
        #expect(try c.status(["before"])["before"]?.workerID == ranOn, "old operations keep pointing at the same worker")
    }
}
