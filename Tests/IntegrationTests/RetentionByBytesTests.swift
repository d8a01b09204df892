import ClusterTestSupport
import Foundation
import Testing

/// Issue 25 finding 3 on real processes: `opcoord --retain-bytes` bounds what finished runs hold; the
/// oldest runs lose their results first and `opctl runs` and `opctl status` say so, after a kill -9 too.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RetentionByBytesTests {
    private func opctl(_ args: [String], _ c: LocalCluster) throws -> CommandLineTests.Run {
        try CommandLineTests.run(Binaries.path("opctl"), args, env: ["OPCOORD": c.endpoint])
    }

    private func json(_ args: [String], _ c: LocalCluster) throws -> [String: Any] {
        let r = try opctl(args + ["--json"], c)
        #expect(r.status == 0, "\(r.stderr)")
        return try #require(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
    }

    @Test func theOldestRunsLoseTheirResultsFirstAndTheViewsSaySo() throws {
        let c = try LocalCluster(coordinatorArgs: ["--retain-bytes", "1MiB"])
        defer { c.stop() }
        try c.startWorker("rb", slots: 2)
        let big = String(repeating: "x", count: 200_000)
        for k in 1...6 {
            let r = try c.submit([op("a", kind: "echo", payload: big), op("b", kind: "echo", payload: big)], run: "r\(k)")
            #expect(r.accepted, "\(r.errors)")
            try c.wait(["r\(k)/a", "r\(k)/b"])
        }
        func check() throws {
            let runs = try json(["runs"], c)
            let list = try #require(runs["runs"] as? [[String: Any]])
            let evicted = Dictionary(uniqueKeysWithValues: list.map { ($0["run"] as? String ?? "?", $0["results_evicted"] as? Bool ?? false) })
            #expect(evicted["r1"] == true && evicted["r6"] == false, "\(evicted)")
            #expect((runs["retained_bytes"] as? Int ?? .max) <= 1 << 20, "\(runs)")
            #expect(runs["retain_bytes"] as? Int == 1 << 20)
            let status = try json(["status", "--run", "r1"], c)
            let a = try #require((status["operations"] as? [[String: Any]])?.first { $0["id"] as? String == "a" })
            #expect(a["result_evicted"] as? Bool == true && a["outcome"] as? String == "succeeded", "\(a)")
            #expect(a["worker"] as? String == "w1", "history stays: \(a)")
            let text = try opctl(["runs"], c)
            #expect(text.stdout.contains("evicted") && text.stdout.contains("--retain-bytes"), "\(text.stdout)")
        }
        try check()
        #expect(try c.restartCoordinator(crash: true) == SIGKILL)
        try check()
    }
}
