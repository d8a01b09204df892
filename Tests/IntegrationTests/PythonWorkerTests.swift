import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// The interop proof: a worker written in Python from docs/PROTOCOL.md alone (examples/python/worker.py)
/// registers with the real coordinator, runs dispatched operations, and their results reach a client.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PythonWorkerTests {
    /// Starts examples/python/worker.py against `c`; the caller kills it with `stopPythonWorker`.
    private func launchPythonWorker(_ c: LocalCluster, name: String, slots: Int) throws -> Process {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("examples/python/worker.py").path
        return try LocalCluster.launch(executable: "/usr/bin/python3",
                                       [script, c.endpoint, "--name", name, "--slots", "\(slots)", "--seconds", "60"],
                                       log: c.dir.appendingPathComponent("\(name).log"))
    }

    private func stopPythonWorker(_ p: Process) {
        kill(p.processIdentifier, SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while p.isRunning && Date() < deadline { usleep(10_000) }
    }

    @Test func pythonWorkerRunsOperationsFromTheSwiftCoordinator() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let p = try launchPythonWorker(c, name: "py-worker", slots: 2)
        defer { stopPythonWorker(p) }
        try c.waitUntil("python worker registered", timeout: 20) { try c.workerList().contains { $0.name == "py-worker" } }

        let ops = (0..<50).map { op("py\($0)", kind: "echo", payload: "value-\($0)") } + [op("py-noop", after: ["py0", "py49"])]
        #expect(try c.submit(ops).accepted)
        try c.wait(ops.map(\.id), timeout: 30)
        let st = try c.status(ops.map(\.id), withResults: true)
        for i in 0..<50 { #expect(st["py\(i)"]?.succeededResult == "value-\(i)") }
        #expect(st["py-noop"]?.isSucceeded == true)
        #expect(Set(st.values.map(\.workerID)).count == 1, "all ran on the Python worker")
    }

    /// A part that runs longer than the liveness bound (3 × 1 s, the defaults) must not get the Python
    /// worker declared lost: its socket thread keeps heartbeating while the part runs on a pool thread.
    /// A worker that ran parts on its socket thread went silent, was declared lost after 3 s, and the op
    /// was re-dispatched (attempts > 1) while its late FINISHED was fenced.
    @Test func pythonWorkerHeartbeatsThroughAPartLongerThanTheLivenessBound() throws {
        let c = try LocalCluster(heartbeatMs: 1000, liveness: 3)
        defer { c.stop() }
        let p = try launchPythonWorker(c, name: "py-slow", slots: 1)
        defer { stopPythonWorker(p) }
        try c.waitUntil("python worker registered", timeout: 20) { try c.workerList().contains { $0.name == "py-slow" } }
        let workerID = try #require(try c.workerList().first(where: { $0.name == "py-slow" })).workerID

        #expect(try c.submit([op("slow", kind: "sleep", payload: "6000")]).accepted)
        try c.wait(["slow"], timeout: 30)
        let st = try #require(try c.status(["slow"])["slow"])
        #expect(st.isSucceeded, "\(st.outcome) \(st.error)\n\(c.logs())")
        #expect(st.attempts == 1, "re-dispatched: the worker was declared lost\n\(c.logs())")
        #expect(st.workerID == workerID)
        #expect(st.finishedUs - st.startedUs >= 5_900_000, "the part really ran for 6 s")
        // Never declared lost: attempts == 1 above (a loss re-dispatches), no late report of it was fenced,
        // and it is still registered once, under the id it started with.
        #expect(try c.workerList().filter { $0.name == "py-slow" }.map(\.workerID) == [workerID])
        #expect(try c.statusReply().fenced == 0)
    }
}
