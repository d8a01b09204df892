import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// A coordinator whose loop is held by one input (`--test-stall-submit-ms`, standing in for a huge
/// SUBMIT on a starved machine) loses no worker, and no worker leaves it: liveness counts only the time
/// the coordinator listened, and a worker waits for a coordinator whose connection still answers
/// (docs/ARCHITECTURE.md, "A loop with a bound").
@Suite(.serialized) struct LoopStallTests {
    @Test func aCoordinatorHeldForFiveLivenessBoundsLosesNoWorkerAndNoWorkerLeavesIt() throws {
        // Liveness 300 ms both ways; the loop holds 1.5 s after a SUBMIT to a run named stall*.
        let c = try LocalCluster(heartbeatMs: 100, liveness: 3, coordinatorArgs: ["--test-stall-submit-ms", "1500"])
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        try c.startWorker("b", slots: 1)
        try c.waitUntil("both workers registered", timeout: 20) { try c.workerList().count == 2 }
        // Each worker holds a running op across the stall.
        #expect(try c.submit([op("long1", kind: "sleep", payload: "2500"), op("long2", kind: "sleep", payload: "2500")]).accepted)
        try c.waitUntil("both long ops executing", timeout: 20) {
            try c.status(["long1", "long2"]).values.filter { $0.state == .executing }.count == 2
        }
        func sessions() throws -> [String] { try c.workerList().map { "\($0.workerID)#\($0.session)" }.sorted() }
        let before = try sessions()
        #expect(try c.submit([op("after")], run: "stall-1").accepted)   // the loop holds 1.5 s here
        try c.wait(["long1", "long2"], timeout: 30)
        let st = try c.status(["long1", "long2"])
        #expect(st.values.allSatisfy { $0.isSucceeded && $0.attempts == 1 }, "nothing ran twice: \(st)\n\(c.logs())")
        #expect(try sessions() == before, "the same sessions (none re-registered): \(c.logs())")
        let logs = c.logs()
        #expect(logs.contains("loop held"), "the pass over budget is logged: \(logs)")
        #expect(!logs.contains(" lost: "), "no worker declared lost: \(logs)")
        #expect(!logs.contains("session ended"), "no worker left the coordinator: \(logs)")
    }
}
