import ClusterTestSupport
import Foundation
import Testing
import WireProtocol
import ZeroMQ

/// The interop proof: the `opqueue` Python package (python/, written from docs/PROTOCOL.md) — its example
/// worker (python/examples/worker.py) registers with the real coordinator, runs dispatched operations, and
/// their results reach a client; its example client submits to a Swift worker. Run with the venv
/// scripts/setup makes (`PythonPackage.python`). The package's own suite is python/tests (pytest).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PythonWorkerTests {
    private func pythonScript(_ name: String) -> String { PythonPackage.example(name) }

    /// Starts python/examples/worker.py against `c` (`extra`: more options, e.g. keys); the caller kills it
    /// with `stopPythonWorker`.
    private func launchPythonWorker(_ c: LocalCluster, name: String, slots: Int, extra: [String] = []) throws -> Process {
        try PythonPackage.requireInterpreter()
        return try LocalCluster.launch(executable: PythonPackage.python,
                                [pythonScript("worker.py"), c.endpoint, "--name", name, "--slots", "\(slots)", "--seconds", "60"] + extra,
                                log: c.dir.appendingPathComponent("\(name).log"))
    }

    /// Runs python/examples/`script` to its end (bounded by `timeout` s); its exit status, its output
    /// (stdout and stderr) and how long it took.
    private func runPython(_ c: LocalCluster, _ script: String, _ args: [String], log: String,
                           env: [String: String] = [:], timeout: Double = 60) throws -> (status: Int32, output: String, seconds: Double) {
        let logURL = c.dir.appendingPathComponent("\(log).log")
        let start = ContinuousClock.now
        try PythonPackage.requireInterpreter()
        let p = try LocalCluster.launch(executable: PythonPackage.python, [pythonScript(script)] + args, log: logURL, env: env)
        defer { if p.isRunning { stopPythonWorker(p) } }
        try c.waitUntil("\(script) \(args.joined(separator: " ")) to end", timeout: timeout) { !p.isRunning }
        p.waitUntilExit()
        let took = ContinuousClock.now - start
        let output = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return (p.terminationStatus, output, Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
    }

    /// `addKey` on a running coordinator: its ZAP thread notices the changed allow file within 250 ms;
    /// waits until it logged the reload with `count` keys, so the new key's first handshake is admitted.
    private func waitForAllowFile(_ c: LocalCluster, keys count: Int) throws {
        try c.waitUntil("the allow file reloaded with \(count) keys", timeout: 10) {
            let log = (try? String(contentsOf: c.dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? ""
            return log.contains("allow file reloaded") && log.contains("\(count) key(s)")
        }
    }

    private func stopPythonWorker(_ p: Process) {
        kill(p.processIdentifier, SIGKILL)
        try? waitUntil("the Python worker gone", timeout: 5, interval: .milliseconds(10)) { !p.isRunning }
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

    // MARK: keys (CURVE): the Python side loads the same key files and speaks CURVE with the coordinator

    // The key-file rules and handshake refusals of opqueue.keys are python/tests/test_keys.py (pytest).

    @Test func pythonWorkerWithAWorkerKeyRunsOperationsOnACurveCoordinator() throws {
        let c = try LocalCluster(keys: true)
        defer { c.stop() }
        try c.addKey("pyworker", roles: "worker")
        try waitForAllowFile(c, keys: 3)
        let p = try launchPythonWorker(c, name: "py-keyed", slots: 2, extra: c.keyArguments("pyworker"))
        defer { stopPythonWorker(p) }
        try c.waitUntil("keyed python worker registered", timeout: 20) { try c.workerList().contains { $0.name == "py-keyed" } }

        let ops = (0..<20).map { op("k\($0)", kind: "echo", payload: "secret-\($0)") }
        #expect(try c.submit(ops).accepted)
        try c.wait(ops.map(\.id), timeout: 30)
        let st = try c.status(ops.map(\.id), withResults: true)
        for i in 0..<20 { #expect(st["k\(i)"]?.succeededResult == "secret-\(i)") }
        #expect(Set(st.values.map(\.workerKey)) == ["pyworker"], "results produced under the Python worker's key")
        #expect(try c.statusReply().security == "curve")
    }

    @Test func pythonClientWithASubmitKeySubmitsToAKeyedSwiftWorkerAndWaits() throws {
        let c = try LocalCluster(keys: true)
        defer { c.stop() }
        try c.addKey("pysubmit", roles: "submit", scopes: ["py-*"])
        try waitForAllowFile(c, keys: 3)
        try c.startWorker("swift-worker", slots: 2)

        let ids = (0..<10).map { "s\($0)=payload-\($0)" }
        let r = try runPython(c, "client.py", [c.endpoint] + c.keyArguments("pysubmit")
                                  + ["submit", "--queue", "py-jobs", "--kind", "echo", "--wait", "30"] + ids, log: "py-submit")
        #expect(r.status == 0, "\(r.output)\n\(c.logs())")
        #expect(r.output.contains("accepted 10 run "), "\(r.output)")
        for i in 0..<10 { #expect(r.output.contains("s\(i) succeeded payload-\(i)\n"), "\(r.output)") }
        // The Swift side sees the same ops, run by the Swift worker under its key.
        let st = try c.status(withResults: true).values.filter { $0.queue == "py-jobs" }
        #expect(st.count == 10)
        #expect(st.allSatisfy { $0.isSucceeded && $0.workerKey == "worker" })

        // Its scope is py-*: another queue is refused, said as such.
        let out = try runPython(c, "client.py", [c.endpoint] + c.keyArguments("pysubmit") + ["submit", "--queue", "other", "x=1"],
                                log: "py-out-of-scope")
        #expect(out.status == 1)
        #expect(out.output.contains("outside the scope of key 'pysubmit'"), "\(out.output)")
    }

    @Test func pythonClientWithAnUnknownKeyOrALooseKeyFileIsRefused() throws {
        let c = try LocalCluster(keys: true)
        defer { c.stop() }
        // A secret key others may read: refused before connecting (no handshake reached the coordinator),
        // with the chmod advice.
        try c.addKey("loose", roles: "view")
        let loose = try #require(c.keyPath("loose"))
        #expect(chmod(loose, 0o644) == 0)
        let l = try runPython(c, "client.py", [c.endpoint] + c.keyArguments("loose") + ["status", "a"], log: "py-loose")
        #expect(l.status == 2, "\(l.output)")
        #expect(l.output.contains("permissions 644 for key file '\(loose)' are too open"), "\(l.output)")
        #expect(l.output.contains("chmod 600 '\(loose)'"), "\(l.output)")
        #expect(!l.output.contains("authentication failed"), "\(l.output)")
        #expect(try c.statusReply().authFailures == 0, "the loose key file never reached a handshake")

        // A key pair the allow file does not list: refused by the coordinator's ZAP handler, said at once
        // (the reply timeout is 30 s; the handshake fails in milliseconds).
        let stranger = c.dir.appendingPathComponent("stranger.key").path
        try KeyFile.create(at: stranger)
        let pub = try #require(c.coordinatorPublicKey)
        let r = try runPython(c, "client.py", [c.endpoint, "--key", stranger, "--coordinator-key", pub, "--timeout", "30", "status", "a"],
                              log: "py-stranger")
        #expect(r.status == 1, "\(r.output)")
        #expect(r.output.contains("authentication failed: the coordinator does not allow this client's key"), "\(r.output)")
        #expect(r.seconds < 10, "said at once, not after the 30 s reply timeout: \(r.seconds) s")
        // The same key through the environment, for a worker: it ends with the reason instead of retrying.
        let w = try runPython(c, "worker.py", [c.endpoint, "--name", "py-stranger", "--seconds", "30"], log: "py-stranger-worker",
                              env: ["OPQ_KEY": stranger, "OPQ_COORDINATOR_KEY": pub])
        #expect(w.status == 2, "\(w.output)")
        #expect(w.output.contains("authentication failed: the coordinator does not allow this worker's key"), "\(w.output)")
        #expect(w.seconds < 10, "\(w.seconds) s")
        #expect(try c.statusReply().authFailures >= 2)
    }
}
