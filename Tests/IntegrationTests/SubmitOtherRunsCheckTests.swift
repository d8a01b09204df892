import ClusterTestSupport
import Foundation
import Testing

/// Issue 25 finding 6: a graph sent in several batches whose last operation depends on an operation of
/// a run that does not exist is refused before the first batch (it used to be half-submitted); one that
/// depends on an existing run's operation goes through.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SubmitOtherRunsCheckTests {
    private func opctl(_ args: [String], _ c: LocalCluster) throws -> CommandLineTests.Run {
        try CommandLineTests.run(Binaries.path("opctl"), args, env: ["OPCOORD": c.endpoint], timeout: 120)
    }

    /// 9,000 noops (two batches), the last one after `dependency`.
    private func graph(after dependency: String, in c: LocalCluster, name: String) throws -> String {
        var text = "operations:\n"
        for i in 0..<8_999 { text += "  - {id: o\(i), kind: noop}\n" }
        text += "  - {id: last, kind: noop, after: [\"\(dependency)\"]}\n"
        return try CommandLineTests.writeGraph(text, in: c.dir, name: name)
    }

    @Test func anUnknownOtherRunsOperationStopsAMultiBatchGraphBeforeAnythingIsSent() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("x", slots: 2)
        let bad = try opctl(["submit", try graph(after: "nope/missing", in: c, name: "bad.yaml"), "--run", "half"], c)
        #expect(bad.status == 2, "\(bad.stdout)\(bad.stderr)")
        #expect(bad.stderr.contains("nope/missing") && bad.stderr.contains("nothing was sent"), "\(bad.stderr)")
        let runs = try opctl(["runs", "--json"], c)
        #expect(!runs.stdout.contains("\"half\""), "a run was created: \(runs.stdout)")

        let base = try opctl(["submit", try CommandLineTests.writeGraph("operations:\n  - {id: seed, kind: noop}\n", in: c.dir, name: "seed.yaml"),
                              "--run", "base", "--wait", "--timeout", "30"], c)
        #expect(base.status == 0, "\(base.stderr)")
        let good = try opctl(["submit", try graph(after: "base/seed", in: c, name: "good.yaml"), "--run", "whole"], c)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("submitted 9000 operations"), "\(good.stdout)")
    }
}
