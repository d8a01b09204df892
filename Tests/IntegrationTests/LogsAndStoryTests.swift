import ClusterTestSupport
import Foundation
import Testing

/// `opctl logs` and `opctl story` against a real coordinator and worker (protocol 1.5, issue 15).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LogsAndStoryTests {
    static func run(_ args: [String], _ c: LocalCluster, timeout: Double = 60) throws -> CommandLineTests.Run {
        try CommandLineTests.run(Binaries.path("opctl"), args, env: ["OPCOORD": c.endpoint], timeout: timeout)
    }

    @Test func logsShowEveryAttemptsStdoutAndStderrAndTheBytesDropped() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2, extraArgs: ["--log-tail-bytes", "1000"])
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - id: flaky
                command: 'echo "out of attempt $OPQ_ATTEMPT"; echo "err of attempt $OPQ_ATTEMPT" >&2; [ "$OPQ_ATTEMPT" -ge 3 ]'
                retries: 2
                retryDelay: 0.05
              - id: warns
                command: 'echo fine; echo "a warning on stderr" >&2'
              - id: chatty
                command: 'head -c 5000 /dev/zero | tr "\\\\0" x; echo; echo tail-marker'
              - id: broken
                command: 'echo "stdout of a failure"; echo "why it broke" >&2; exit 3'
            """, in: c.dir)
        let submitted = try Self.run(["submit", graph, "--run", "lg", "--wait", "--timeout", "60"], c)
        #expect(submitted.status == 1, "broken fails: \(submitted.stdout)\(submitted.stderr)")

        // Every attempt of the retried op, oldest first, each with its stdout and stderr.
        let all = try Self.run(["logs", "lg/flaky"], c)
        #expect(all.status == 0, "\(all.stderr)")
        let text = all.stdout
        var last = text.startIndex
        for n in 1...3 {
            let outcome = n < 3 ? "failed" : "succeeded"
            guard let header = text.range(of: "=== attempt \(n) on w", range: last..<text.endIndex) else {
                Issue.record("no attempt \(n) after the previous one in:\n\(text)")
                return
            }
            let line = text[header.lowerBound...].prefix { $0 != "\n" }
            #expect(line.contains(": \(outcome)"), "\(line)")
            let rest = text[header.upperBound...]
            let next = rest.range(of: "=== attempt")?.lowerBound ?? rest.endIndex
            let block = rest[..<next]
            #expect(block.contains("out of attempt \(n)\n"), "\(block)")
            #expect(block.contains("err of attempt \(n)\n"), "\(block)")
            #expect(block.range(of: "--- stdout")!.lowerBound < block.range(of: "--- stderr")!.lowerBound, "stdout first")
            last = header.upperBound
        }

        let one = try Self.run(["logs", "flaky", "--run", "lg", "--attempt", "1"], c)
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout.contains("out of attempt 1") && one.stdout.contains("err of attempt 1"), "\(one.stdout)")
        #expect(!one.stdout.contains("attempt 2") && !one.stdout.contains("attempt 3"), "\(one.stdout)")

        // A succeeded op's stderr is kept; a failed op's stdout too, and its error text is as before.
        let warns = try Self.run(["logs", "lg/warns"], c)
        #expect(warns.stdout.contains("succeeded") && warns.stdout.contains("a warning on stderr"), "\(warns.stdout)")
        let broken = try Self.run(["logs", "lg/broken"], c)
        #expect(broken.stdout.contains("stdout of a failure") && broken.stdout.contains("why it broke"), "\(broken.stdout)")
        let status = try Self.run(["status", "--json", "lg/broken"], c)
        #expect(status.stdout.contains("exit code 3: why it broke"), "\(status.stdout)")

        // A bounded tail: the last 1000 bytes, and how many came before (5000 x, newline, tail-marker newline).
        let chatty = try Self.run(["logs", "lg/chatty"], c)
        #expect(chatty.stdout.contains("tail-marker"), "\(chatty.stdout)")
        #expect(chatty.stdout.contains("(… \(5013 - 1000) bytes dropped before)"), "\(chatty.stdout)")
        let json = try Self.run(["logs", "lg/chatty", "--json"], c)
        let reply = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        let attempts = try #require(reply["attempts"] as? [[String: Any]])
        #expect(attempts.count == 1)
        #expect(attempts.first?["stdout_dropped"] as? String == "4013", "\(attempts)")
        let tail = Data(base64Encoded: attempts.first?["stdout"] as? String ?? "") ?? Data()
        #expect(tail.count == 1000 && String(decoding: tail, as: UTF8.self).hasSuffix("tail-marker\n"))

        // --follow on a finished op prints what there is and returns.
        let follow = try Self.run(["logs", "lg/flaky", "--follow", "--timeout", "20"], c, timeout: 30)
        #expect(follow.status == 0 && follow.stdout.contains("out of attempt 3"), "\(follow.stdout)\(follow.stderr)")

        let unknown = try Self.run(["logs", "lg/nope"], c)
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("nope"), "\(unknown.stderr)")
    }

    @Test func logsFollowWaitsForTheOperationToFinish() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let gate = c.dir.appendingPathComponent("gate").path
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - id: slow
                command: 'echo "attempt $OPQ_ATTEMPT"; i=0; while [ ! -e \(gate) ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; [ "$OPQ_ATTEMPT" -ge 2 ]'
                retries: 1
                retryDelay: 0
            """, in: c.dir)
        let submitted = try Self.run(["submit", graph, "--run", "fw"], c)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let follow = try Spawned(Binaries.path("opctl"), ["logs", "fw/slow", "--follow", "--timeout", "60", "--interval", "0.1"],
                                 env: ["OPCOORD": c.endpoint])
        // The op is running: the follower has nothing to print yet and keeps polling.
        try c.waitUntil("slow executing", timeout: 20) { try c.status(["fw/slow"]).values.first?.state == .executing }
        #expect(follow.process.isRunning)
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        let done = follow.finish(timeout: 60)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(done.stdout.contains("=== attempt 1") && done.stdout.contains("=== attempt 2"), "\(done.stdout)")
        #expect(done.stdout.range(of: "=== attempt 1")!.lowerBound < done.stdout.range(of: "=== attempt 2")!.lowerBound)
    }

    @Test func outputOfAnAttemptThatFinishedWhileTheCoordinatorWasDownIsKept() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let gate = c.dir.appendingPathComponent("gate").path, done = c.dir.appendingPathComponent("done").path
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - id: away
                command: 'i=0; while [ ! -e \(gate) ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo "finished while away"; echo "and said so" >&2; touch \(done)'
            """, in: c.dir)
        let submitted = try Self.run(["submit", graph, "--run", "aw"], c)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        try c.waitUntil("away executing", timeout: 20) { try c.status(["aw/away"]).values.first?.state == .executing }
        try c.restartCoordinator(crash: true) {
            _ = FileManager.default.createFile(atPath: gate, contents: nil)
            try waitUntil("the op finished on the worker", timeout: 30) { FileManager.default.fileExists(atPath: done) }
        }
        // The worker hands the finished attempt back in its HELLO, tails included.
        let wait = try Self.run(["wait", "aw/away", "--timeout", "30"], c, timeout: 40)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")
        let logs = try Self.run(["logs", "aw/away"], c)
        #expect(logs.stdout.contains("finished while away") && logs.stdout.contains("and said so"), "\(logs.stdout)\(logs.stderr)")
    }

    @Test func storyShowsTheTransitionsInOrderWithStimulusIDs() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let graph = try CommandLineTests.writeGraph("operations:\n  - {id: hello, kind: echo, payload: hi}\n", in: c.dir)
        let submitted = try Self.run(["submit", graph, "--run", "st", "--wait", "--timeout", "30"], c)
        #expect(submitted.status == 0, "\(submitted.stderr)")

        let story = try Self.run(["story", "st/hello"], c)
        #expect(story.status == 0, "\(story.stderr)")
        let lines = story.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "st/hello", "\(story.stdout)")
        var at = 0
        for event in ["submitted", "ready", "dispatched", "started", "finished"] {
            guard let i = lines[at...].firstIndex(where: { $0.contains(" \(event)") }) else {
                Issue.record("no \(event) after line \(at) in:\n\(story.stdout)")
                return
            }
            #expect(lines[i].range(of: #"#\d+ "#, options: .regularExpression) != nil, "stimulus id: \(lines[i])")
            #expect(lines[i].range(of: #"[+-]\d+\.\dms"#, options: .regularExpression) != nil, "+ms: \(lines[i])")
            at = i + 1
        }
        #expect(story.stdout.contains("dispatched worker w1"), "\(story.stdout)")
        #expect(story.stdout.contains("finished succeeded"), "\(story.stdout)")

        let json = try Self.run(["story", "hello", "--run", "st", "--json"], c)
        let reply = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(reply["run"] as? String == "st" && reply["op_id"] as? String == "hello")
        let entries = try #require(reply["entries"] as? [[String: Any]])
        let events = entries.compactMap { $0["event"] as? String }
        #expect(events.filter { ["submitted", "ready", "dispatched", "started", "finished"].contains($0) }
                == ["submitted", "ready", "dispatched", "started", "finished"], "\(events)")
        let stimuli = entries.compactMap { ($0["stimulus"] as? String).flatMap { UInt64($0) } }
        #expect(stimuli.count == entries.count && stimuli == stimuli.sorted(), "\(stimuli)")

        let unknown = try Self.run(["story", "st/nope"], c)
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("nope"), "\(unknown.stderr)")
        let noRun = try Self.run(["story", "nosuchrun/hello"], c)
        #expect(noRun.status != 0 && !noRun.stderr.isEmpty)
    }
}
