import ClusterTestSupport
import Foundation
import Testing

/// `opctl` and `scripts/demo` as a person runs them.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandLineTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a program with a bounded wait (SIGTERM, then SIGKILL, after `timeout` seconds). Output goes
    /// to files, not pipes, so a grandchild that keeps a descriptor open cannot make the wait hang.
    static func run(_ path: String, _ args: [String], env: [String: String] = [:], timeout: Double = 60) throws -> Run {
        try Spawned(path, args, env: env).finish(timeout: timeout)
    }

    static func writeGraph(_ text: String, in dir: URL, name: String = "graph.yaml") throws -> String {
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func submitWaitStatusAndACyclicGraphThroughOpctl() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2)
        let opctl = Binaries.path("opctl")
        let env = ["OPCOORD": c.endpoint]

        let good = try Self.writeGraph("""
            operations:
              - id: hello
                kind: echo
                payload: hi
              - id: shout
                command: tr a-z A-Z < "$OPQ_INPUT_HELLO"
                after: [hello]
            """, in: c.dir)
        let submitted = try Self.run(opctl, ["submit", good, "--wait", "--timeout", "30"], env: env)
        #expect(submitted.status == 0, "\(submitted.stdout)\(submitted.stderr)")
        #expect(submitted.stdout.contains("2 succeeded"))

        let status = try Self.run(opctl, ["status", "--json", "--results", "shout"], env: env)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("\"result\":\"HI\""), "\(status.stdout)")
        #expect(status.stdout.contains("\"coordinator_rss_bytes\":"), "\(status.stdout)")
        #expect(status.stdout.contains("\"coordinator_cpu_us\":"), "\(status.stdout)")
        let text = try Self.run(opctl, ["status", "--queues-only"], env: env)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("coordinator: RSS "), "\(text.stdout)")
        #expect(text.stdout.contains(" MiB, CPU "), "\(text.stdout)")

        let cyclic = try Self.writeGraph("""
            operations:
              - {id: a, kind: noop, after: [c]}
              - {id: b, kind: noop, after: [a]}
              - {id: c, kind: noop, after: [b]}
              - {id: d, kind: noop, after: [missing]}
            """, in: c.dir, name: "cyclic.yaml")
        let rejected = try Self.run(opctl, ["submit", cyclic], env: env)
        #expect(rejected.status == 2)
        #expect(rejected.stderr.contains("cycle"), "\(rejected.stderr)")
        #expect(rejected.stderr.contains("missing"), "\(rejected.stderr)")

        let unknownKind = try Self.writeGraph("operations:\n  - {id: k, kind: teleport}\n", in: c.dir, name: "kind.yaml")
        let refused = try Self.run(opctl, ["submit", unknownKind], env: env)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("teleport"), "\(refused.stderr)")

        let badArgs = try Self.run(opctl, ["limit", "q", "--", "-5"], env: env)
        #expect(badArgs.status != 0)
        #expect(badArgs.stderr.contains("-1 or"), "\(badArgs.stderr)")

        let why = try Self.run(opctl, ["why", "shout"], env: env)
        #expect(why.stdout.contains("finished"), "\(why.stdout)")
    }

    /// More operations than one protocol batch (8,192): `submit --wait` waits for all of them, `status
    /// --limit` pages through all of them, and JSON says when a listing was cut and where to go on.
    @Test func largeGraphsAreWaitedForAndListedInPages() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 4, prefetch: 64)
        let opctl = Binaries.path("opctl")
        let env = ["OPCOORD": c.endpoint]
        let big = try Self.writeGraph("operations:\n" + (0..<9000).map { "  - {id: n\($0), kind: noop}" }.joined(separator: "\n") + "\n",
                                      in: c.dir, name: "big.yaml")
        let submitted = try Self.run(opctl, ["submit", big, "--wait", "--timeout", "60"], env: env, timeout: 90)
        #expect(submitted.status == 0, "\(submitted.stdout)\(submitted.stderr)")
        #expect(submitted.stdout.contains("9000 succeeded"), "\(submitted.stdout)")

        func listing(_ args: [String]) throws -> [String: Any] {
            let r = try Self.run(opctl, ["status", "--json"] + args, env: env)
            #expect(r.status == 0, "\(r.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        }
        let all = try listing(["--limit", "20000"])
        #expect((all["operations"] as? [Any])?.count == 9000)
        #expect(all["truncated"] as? Bool == false)
        let first = try listing(["--limit", "5000"])
        #expect((first["operations"] as? [Any])?.count == 5000)
        #expect(first["truncated"] as? Bool == true)
        let cursor = try #require(first["next_after"] as? String)
        let rest = try listing(["--limit", "5000", "--after", cursor])
        #expect((rest["operations"] as? [[String: Any]])?.first?["id"] as? String == "n5000")
        #expect((rest["operations"] as? [Any])?.count == 4000)
        #expect(rest["truncated"] as? Bool == false)
    }

    /// What status, submit and watch say about retries, prefetched operations and operations no worker can run.
    @Test func statusWatchAndSubmitSayWhatHappened() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1, prefetch: 2)
        let opctl = Binaries.path("opctl")
        let env = ["OPCOORD": c.endpoint]
        let graph = try Self.writeGraph("""
            operations:
              - {id: flaky, kind: fail, payload: broken, retries: 1, retryDelay: 0.05}
              - {id: tpu, kind: noop, requires: [tpu]}
              - {id: s1, kind: sleep, payload: "300"}
              - {id: s2, kind: sleep, payload: "300"}
              - {id: s3, kind: sleep, payload: "300"}
            """, in: c.dir)
        let submitted = try Self.run(opctl, ["submit", graph], env: env)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        #expect(submitted.stderr.contains("warning: 1 operation (tpu) requires tag tpu"), "\(submitted.stderr)")
        let watch = try Self.run(opctl, ["watch", "--timeout", "3"], env: env, timeout: 20)
        #expect(watch.status == 4, "gave up at its timeout: \(watch.stderr)")
        let workerLines = watch.stdout.split(separator: "\n").filter { $0.contains("workers: w1 a: ") }
        #expect(!workerLines.isEmpty, "\(watch.stdout)")
        for line in workerLines {
            #expect(line.contains("a: 0/1") || line.contains("a: 1/1"), "never more running than slots: \(line)")
        }
        // Across runs, ops are named RUN/OP (this is the coordinator's first run).
        #expect(watch.stdout.contains("waiting for a worker: 1 operation (r-1/tpu) requires tag tpu"), "\(watch.stdout)")
        let status = try Self.run(opctl, ["status", "flaky"], env: env)
        #expect(status.stdout.contains("failed after 2 attempts: broken"), "\(status.stdout)")
        #expect(status.stdout.contains("attempt 1: broken") && status.stdout.contains("attempt 2: broken"), "\(status.stdout)")
    }

    @Test func demoRunsToCompletionAndLeavesNoProcessBehind() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let demo = root.appendingPathComponent("scripts/demo").path
        // OPQ_BIN_DIR: use the binaries this test run built instead of a release build.
        let run = try Self.run("/bin/bash", [demo], env: ["OPQ_BIN_DIR": Binaries.directory], timeout: 150)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("== results"), "\(run.stdout)")
        #expect(run.stdout.contains("cancelled"), "\(run.stdout)")
        let leftovers = try Self.run("/usr/bin/pgrep", ["-f", "opq-demo|demo-worker-"]).stdout
        #expect(leftovers.isEmpty, "processes left behind: \(leftovers)")
    }

    /// The edges a person meets first: a wrong port is said at once (not after the 10 s request
    /// timeout), `HOST:PORT` works without `tcp://`, cancelling a finished operation says so.
    @Test func aWrongPortIsSaidAtOnceHostPortWorksAndAFinishedOpIsNotCancelled() throws {
        let opctl = Binaries.path("opctl")
        let started = ContinuousClock.now
        let refused = try Self.run(opctl, ["status", "--coordinator", "tcp://127.0.0.1:1"], timeout: 30)
        let took = ContinuousClock.now - started
        #expect(refused.status == 3 && refused.stderr.contains("connection refused"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("STATUS"), "no internal command names: \(refused.stderr)")
        #expect(took < .seconds(5), "took \(took)")
        // So does `wait` (and `submit --wait`), which waits for the first connection itself.
        let waitStarted = ContinuousClock.now
        let waited = try Self.run(opctl, ["wait", "x", "--coordinator", "tcp://127.0.0.1:1", "--timeout", "30"], timeout: 40)
        let waitTook = ContinuousClock.now - waitStarted
        #expect(waited.status == 3 && waited.stderr.contains("connection refused"), "\(waited.status) \(waited.stderr)")
        #expect(waitTook < .seconds(5), "wait took \(waitTook)")

        let c = try LocalCluster(journal: false)
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("done")], run: "r").accepted)
        try c.wait(["r/done"])
        let hostPort = String(c.endpoint.dropFirst("tcp://".count))
        let cancel = try Self.run(opctl, ["cancel", "done", "--run", "r", "--coordinator", hostPort], timeout: 30)
        #expect(cancel.status == 0, "\(cancel.stdout)\(cancel.stderr)")
        #expect(cancel.stdout.contains("done had already finished (succeeded): nothing to cancel"), "\(cancel.stdout)")
        #expect(try c.status(["r/done"])["done"]?.isSucceeded == true)
    }
}
