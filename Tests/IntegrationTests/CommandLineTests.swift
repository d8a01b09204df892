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
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-run-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout"), errURL = dir.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let p = Process()
        // Through env(1) with default signal actions: the test runner may ignore signals, and a shell
        // cannot trap a signal that was ignored when it started (the scripts' cleanup relies on traps).
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["--default-signal=TERM,INT,HUP,PIPE", path] + args
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        p.standardOutput = try FileHandle(forWritingTo: outURL)
        p.standardError = try FileHandle(forWritingTo: errURL)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning {
            kill(p.processIdentifier, SIGTERM)
            let grace = Date().addingTimeInterval(3)
            while p.isRunning && Date() < grace { usleep(20_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        }
        p.waitUntilExit()
        return Run(status: p.terminationStatus,
                   stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                   stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
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
}
