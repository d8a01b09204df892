import ClusterTestSupport
import Foundation
import Testing

/// Runs (docs/GRAPHS.md, "Runs") through real opcoord/opworker/opctl processes.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RunsTests {
    let opctl = Binaries.path("opctl")

    func run(_ args: [String], _ c: LocalCluster, env: [String: String] = [:], timeout: Double = 60) throws -> CommandLineTests.Run {
        try CommandLineTests.run(opctl, args, env: ["OPCOORD": c.endpoint].merging(env) { _, b in b }, timeout: timeout)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    /// The same file three times is three runs that all execute; wait --run exits by that run only.
    @Test func theSameGraphSubmittedThreeTimesRunsThreeTimes() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2)
        let good = try CommandLineTests.writeGraph("""
            operations:
              - {id: root, kind: echo, payload: hi}
              - {id: leaf, kind: echo, payload: there, after: [root]}
            """, in: c.dir, name: "good.yaml")
        var runs: [String] = []
        for _ in 0..<3 {
            let r = try run(["submit", good, "--wait", "--timeout", "30", "--json"], c)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let out = try run(["submit", good, "--json"], c)
            #expect(out.status == 0, "\(out.stderr)")
            runs.append(try json(out.stdout)["run"] as? String ?? "")
        }
        #expect(Set(runs).count == 3, "\(runs)")
        for r in runs {
            let w = try run(["wait", "--run", r, "--timeout", "30"], c)
            #expect(w.status == 0, "\(w.stdout)\(w.stderr)")
            #expect(w.stdout.contains("2 succeeded"), "\(w.stdout)")
        }
        // Six runs of two ops each, every one executed.
        let listed = try run(["runs", "--json"], c)
        #expect(listed.status == 0, "\(listed.stderr)")
        let all = try #require(try json(listed.stdout)["runs"] as? [[String: Any]])
        #expect(all.count == 6)
        #expect(all.allSatisfy { ($0["succeeded"] as? Int) == 2 && ($0["state"] as? String) == "succeeded" }, "\(all)")
        #expect(all.first?["run"] as? String == runs.last, "newest first")

        // A failing run does not change a succeeded run's wait; the failed one exits 1.
        let bad = try CommandLineTests.writeGraph("operations:\n  - {id: boom, kind: fail, payload: no}\n", in: c.dir, name: "bad.yaml")
        let failed = try run(["submit", bad, "--run", "broken", "--wait", "--timeout", "30"], c)
        #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
        #expect(try run(["wait", "--run", runs[0], "--timeout", "10"], c).status == 0)
        #expect(try run(["wait", "--run", "broken", "--timeout", "10"], c).status == 1)
        #expect(try run(["wait", "--timeout", "10"], c, env: ["OPQ_RUN": runs[1]]).status == 0)

        // Ops by RUN/OP anywhere; a bare id in a run scope; status lists the run.
        let st = try run(["status", "--json", "\(runs[0])/leaf"], c)
        let ops = try #require(try json(st.stdout)["operations"] as? [[String: Any]])
        #expect(ops.first?["run"] as? String == runs[0] && ops.first?["id"] as? String == "leaf", "\(st.stdout)")
        let scoped = try run(["status", "--json", "--run", runs[1]], c)
        let scopedOps = try #require(try json(scoped.stdout)["operations"] as? [[String: Any]])
        #expect(scopedOps.map { $0["id"] as? String } == ["root", "leaf"], "\(scoped.stdout)")
        #expect(scopedOps.allSatisfy { $0["run"] as? String == runs[1] })
    }

    /// Bad names: an existing run, an invalid name, a RUN/OP to an unknown run — each a clear error,
    /// nothing of the submission accepted.
    @Test func badRunNamesAndCrossRunDependencies() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 2)
        let base = try CommandLineTests.writeGraph("operations:\n  - {id: data, kind: echo, payload: x}\n", in: c.dir, name: "base.yaml")
        #expect(try run(["submit", base, "--run", "nightly-1", "--wait", "--timeout", "30"], c).status == 0)

        let again = try run(["submit", base, "--run", "nightly-1"], c)
        #expect(again.status == 2)
        #expect(again.stderr.contains("run nightly-1 exists"), "\(again.stderr)")
        let invalid = try run(["submit", base, "--run", "no/slash"], c)
        #expect(invalid.status == 2)
        #expect(invalid.stderr.contains("may hold only letters"), "\(invalid.stderr)")

        let cross = try CommandLineTests.writeGraph("""
            operations:
              - {id: use, command: cat "$OPQ_INPUT_NIGHTLY_1_DATA", after: [nightly-1/data]}
            """, in: c.dir, name: "cross.yaml")
        let ok = try run(["submit", cross, "--run", "report", "--wait", "--timeout", "30"], c)
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        let unknown = try CommandLineTests.writeGraph("operations:\n  - {id: use, kind: noop, after: [nope/data]}\n", in: c.dir, name: "unknown.yaml")
        let refused = try run(["submit", unknown], c)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("unknown run nope"), "\(refused.stderr)")
        let runs = try json(try run(["runs", "--json"], c).stdout)["runs"] as? [[String: Any]] ?? []
        #expect(runs.count == 2, "nothing of a refused submission is kept: \(runs)")
    }

    /// A short retention evicts finished runs: asking for one says it was evicted; a cross-run
    /// dependency on it is refused; the coordinator holds only the retained runs' operations.
    @Test func evictionAfterRetentionFreesTheRunAndSaysSo() throws {
        let c = try LocalCluster(coordinatorArgs: ["--retain", "1s", "--retain-runs", "2"])
        defer { c.stop() }
        try c.startWorker("a", slots: 2)
        let g = try CommandLineTests.writeGraph("operations:\n  - {id: a, kind: noop}\n  - {id: b, kind: noop, after: [a]}\n",
                                                in: c.dir, name: "g.yaml")
        for k in 1...4 {
            #expect(try run(["submit", g, "--run", "old-\(k)", "--wait", "--timeout", "30"], c).status == 0)
        }
        // Beyond --retain-runs 2: the two oldest are gone at once.
        let listed = try json(try run(["runs", "--json"], c).stdout)
        let names = (listed["runs"] as? [[String: Any]] ?? []).compactMap { $0["run"] as? String }
        #expect(names == ["old-4", "old-3"], "\(listed)")
        #expect(listed["evicted"] as? Int == 2)
        let gone = try run(["status", "old-1/a"], c)
        #expect(gone.status == 5)   // not found, apart from unreachable (3)
        #expect(gone.stderr.contains("run old-1 finished") && gone.stderr.contains("was evicted"), "\(gone.stderr)")
        let waitGone = try run(["wait", "--run", "old-2", "--timeout", "5"], c)
        #expect(waitGone.status == 5)
        #expect(waitGone.stderr.contains("run old-2 finished"), "\(waitGone.stderr)")
        let dep = try CommandLineTests.writeGraph("operations:\n  - {id: x, kind: noop, after: [old-1/b]}\n", in: c.dir, name: "dep.yaml")
        let refused = try run(["submit", dep], c)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("old-1/b") && refused.stderr.contains("was evicted"), "\(refused.stderr)")

        // After the 1 s retention every finished run goes (the coordinator's eviction deadline).
        try c.waitUntil("every finished run evicted after --retain 1s", timeout: 20) {
            (try json(try run(["runs", "--json"], c).stdout)["runs"] as? [Any])?.isEmpty == true
        }
        let st = try json(try run(["status", "--json", "--queues-only"], c).stdout)
        let queues = st["queues"] as? [[String: Any]] ?? []
        #expect(queues.allSatisfy { ($0["finished"] as? Int ?? -1) == 0 }, "evicted ops still counted: \(queues)")
    }

    /// cancel --run cancels that run only; watch --run --until-done exits by that run.
    @Test func cancelAndWatchAreScopedToARun() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let slow = try CommandLineTests.writeGraph("operations:\n  - {id: s, kind: sleep, payload: \"30000\"}\n  - {id: t, kind: noop, after: [s]}\n",
                                                   in: c.dir, name: "slow.yaml")
        #expect(try run(["submit", slow, "--run", "slow"], c).status == 0)
        let cancelled = try run(["cancel", "--run", "slow"], c)
        #expect(cancelled.status == 0, "\(cancelled.stderr)")
        #expect(try run(["wait", "--run", "slow", "--timeout", "20"], c).status == 1)
        let quick = try CommandLineTests.writeGraph("operations:\n  - {id: q, kind: noop}\n", in: c.dir, name: "quick.yaml")
        #expect(try run(["submit", quick, "--run", "quick"], c).status == 0)
        let watched = try run(["watch", "--run", "quick", "--until-done", "--timeout", "20"], c, timeout: 30)
        #expect(watched.status == 0, "\(watched.stdout)\(watched.stderr)")
        #expect(watched.stdout.contains("run quick: 1/1 done"), "\(watched.stdout)")
    }
}
