import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// The interop proof: a worker written in Python from docs/PROTOCOL.md alone (examples/python/worker.py)
/// registers with the real coordinator, runs dispatched operations, and their results reach a client.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PythonWorkerTests {
    @Test func pythonWorkerRunsOperationsFromTheSwiftCoordinator() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("examples/python/worker.py").path
        let c = try LocalCluster()
        defer { c.stop() }
        let p = try LocalCluster.launch(executable: "/usr/bin/python3",
                                        [script, c.endpoint, "--name", "py-worker", "--slots", "2", "--seconds", "60"],
                                        log: c.dir.appendingPathComponent("py-worker.log"))
        defer {
            kill(p.processIdentifier, SIGKILL)
            let deadline = Date().addingTimeInterval(5)
            while p.isRunning && Date() < deadline { usleep(10_000) }
        }
        try c.waitUntil("python worker registered", timeout: 20) { try c.workerList().contains { $0.name == "py-worker" } }

        let ops = (0..<50).map { op("py\($0)", kind: "echo", payload: "value-\($0)") } + [op("py-noop", after: ["py0", "py49"])]
        #expect(try c.submit(ops).accepted)
        try c.wait(ops.map(\.id), timeout: 30)
        let st = try c.status(ops.map(\.id), withResults: true)
        for i in 0..<50 { #expect(st["py\(i)"]?.succeededResult == "value-\(i)") }
        #expect(st["py-noop"]?.isSucceeded == true)
        #expect(Set(st.values.map(\.workerID)).count == 1, "all ran on the Python worker")
    }
}
