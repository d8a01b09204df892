import ClusterTestSupport
import Foundation
import Testing

/// Issue 25 finding 2 on real processes: what `opctl status --json` shows of finished ops (worker, its
/// key and session, times, attempts and their errors, outcome) is the same after opcoord is killed with
/// SIGKILL and restarted on its state directory; `story` says the restart instead of "overwritten".
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HistoryRestartTests {
    private func opctl(_ args: [String], _ c: LocalCluster) throws -> CommandLineTests.Run {
        try CommandLineTests.run(Binaries.path("opctl"), args + c.keyArguments("admin"), env: ["OPCOORD": c.endpoint])
    }

    private func finishedOps(_ c: LocalCluster) throws -> [String: [String: AnyHashable]] {
        let r = try opctl(["status", "--run", "h", "--json"], c)
        #expect(r.status == 0, "\(r.stderr)")
        let reply = try #require(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
        let ops = try #require(reply["operations"] as? [[String: Any]], "\(r.stdout)")
        var out: [String: [String: AnyHashable]] = [:]
        for o in ops { out[o["id"] as? String ?? "?"] = o.compactMapValues { $0 as? AnyHashable } }
        return out
    }

    @Test func finishedOpsStatusIsTheSameAfterAKill9() throws {
        let c = try LocalCluster(keys: true)
        defer { c.stop() }
        try c.startWorker("hist", slots: 2)
        let mark = c.dir.appendingPathComponent("tried").path
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - id: first
                command: 'echo one'
              - id: flaky
                after: [first]
                command: 'if [ -e \(mark) ]; then echo two; else touch \(mark); echo "first try fails" >&2; exit 2; fi'
                retries: 1
                retryDelay: 0.05
              - id: broken
                command: 'exit 3'
              - id: skipped
                after: [broken]
                policy: succeeded
                command: 'echo never'
            """, in: c.dir)
        let submitted = try opctl(["submit", graph, "--run", "h", "--wait", "--timeout", "60"], c)
        #expect(submitted.status == 1, "broken fails: \(submitted.stdout)\(submitted.stderr)")
        let before = try finishedOps(c)
        #expect(before.count == 4)
        #expect(before["flaky"]?["attempts"] == AnyHashable(2), "\(String(describing: before["flaky"]))")
        #expect(before["flaky"]?["worker"] == AnyHashable("w1"))
        #expect(before["flaky"]?["worker_key"] == AnyHashable("worker"))

        let status = try c.restartCoordinator(crash: true)
        #expect(status == SIGKILL)
        try c.waitUntil("the worker is back", timeout: 20) { try c.workerList().contains { $0.name == "hist" } }
        let after = try finishedOps(c)
        for (id, fields) in before.sorted(by: { $0.key < $1.key }) {
            let differing = fields.keys.filter { fields[$0] != after[id]?[$0] }.sorted()
            #expect(differing.isEmpty, "\(id): \(differing.map { "\($0): \(String(describing: fields[$0])) -> \(String(describing: after[id]?[$0]))" })")
        }

        let story = try opctl(["story", "h/flaky"], c)
        #expect(story.status == 0, "\(story.stderr)")
        #expect(!story.stdout.contains("overwritten") && !story.stdout.contains("no transitions recorded"), "\(story.stdout)")
        for event in ["submitted", "dispatched attempt", "started attempt 2", "finished succeeded", "restarted"] {
            #expect(story.stdout.contains(event) || story.stdout.contains(event.replacingOccurrences(of: " attempt", with: "")),
                    "no \(event) in:\n\(story.stdout)")
        }
        #expect(story.stdout.contains("worker w1"), "\(story.stdout)")
    }

    /// Issue 25 finding 5: `--name w3` is w3; after a kill -9 and restart the ids name the same workers
    /// whatever comes back first (here only w3: on the old numbering it became w1), and a new worker
    /// gets a number no journalled worker holds.
    @Test func workerIDsNameTheSameWorkersAfterARestart() throws {
        let c = try LocalCluster(keys: true)
        defer { c.stop() }
        try c.startWorker("alpha", slots: 1)
        try c.startWorker("w3", slots: 1)
        func ids() throws -> [String: String] {
            Dictionary(try c.workerList().map { ($0.name, $0.workerID) }, uniquingKeysWith: { a, _ in a })
        }
        #expect(try ids() == ["alpha": "w1", "w3": "w3"])
        let status = try c.restartCoordinator(crash: true) { c.signal("alpha", SIGKILL) }
        #expect(status == SIGKILL)
        try c.waitUntil("w3 is back", timeout: 20) { try c.workerList().contains { $0.name == "w3" } }
        #expect(try ids()["w3"] == "w3")
        try c.startWorker("beta", slots: 1)
        let now = try ids()
        #expect(now["beta"] == "w4", "\(now)")
    }
}
