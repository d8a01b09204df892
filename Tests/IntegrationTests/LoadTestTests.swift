import ClusterTestSupport
import Foundation
import Testing

/// oploadtest against real coordinators: simulated workers, the workloads' own checks, its reports,
/// its refusals; and the plot script on the fixture reports.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LoadTestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    private func report(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func tempFile(_ name: String) -> String {
        NSTemporaryDirectory() + "opq-lt-\(UUID().uuidString.prefix(8))-\(name)"
    }

    /// 200 workers from one process register, share a layered graph, and every op finishes exactly once.
    @Test func simulatedWorkersRunALayeredGraphExactlyOnce() throws {
        let cluster = try LocalCluster()
        defer { cluster.stop() }
        let ready = tempFile("ready"), json = tempFile("layered.json")
        let sim = try LocalCluster.launch("oploadtest", ["simworkers", "--connect", cluster.endpoint, "--count", "200",
                                                         "--ready-file", ready, "--time-limit", "120"],
                                          log: cluster.dir.appendingPathComponent("sim.log"))
        defer { kill(sim.processIdentifier, SIGTERM); sim.waitUntilExit() }
        try cluster.waitUntil("200 simulated workers registered", timeout: 60) { FileManager.default.fileExists(atPath: ready) }
        #expect(try cluster.workerList().count == 200)

        let run = try CommandLineTests.run(Binaries.path("oploadtest"), [
            "run", "--coordinator", cluster.endpoint, "--workload", "layered", "--ops", "3000", "--width", "100",
            "--min-workers", "200", "--json", json], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let r = try report(json)
        #expect(r["ops"] as? Int == 3000)
        #expect((r["outcomes"] as? [String: Int])?["succeeded"] == 3000)
        #expect((r["exactly_once"] as? [String: Any])?["ok"] as? Bool == true)
        #expect(r["workers"] as? Int == 200)
        #expect(((r["worker_utilisation"] as? [Any])?.count ?? 0) > 100, "the work was spread over many workers")
        let dispatch = try #require((r["latencies_us"] as? [String: Any])?["dispatch"] as? [String: Any])
        #expect(dispatch["count"] as? Int == 3000)
        #expect(((dispatch["cdf"] as? [[Double]])?.count ?? 0) >= 1)
        #expect(((r["coordinator_figures"] as? [String: Any])?["rss_bytes_end"] as? Int ?? 0) > 0)
    }

    /// veryHigh probes behind a mixed-priority backlog on a real worker wait for running ops, not the backlog.
    @Test func priorityProbesOvertakeTheBacklog() throws {
        let cluster = try LocalCluster()
        defer { cluster.stop() }
        try cluster.startWorker("w1", slots: 2, prefetch: 2)
        let json = tempFile("priority.json")
        let run = try CommandLineTests.run(Binaries.path("oploadtest"), [
            "run", "--coordinator", cluster.endpoint, "--workload", "priority", "--ops", "300", "--probes", "5",
            "--op-ms", "30", "--json", json], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("check ok   veryHigh waits are bounded"), "\(run.stdout)")
        let wait = try #require((try report(json)["latencies_us"] as? [String: Any])?["priority_wait"] as? [String: Any])
        #expect(wait["count"] as? Int == 5)
        #expect((wait["max"] as? Int ?? .max) <= 2 * 30_000 + 50_000)
    }

    /// Random cancels of sleeping ops: each ends cancelled, once, and the latency is recorded.
    @Test func cancelWorkloadRecordsCancelLatency() throws {
        let cluster = try LocalCluster()
        defer { cluster.stop() }
        try cluster.startWorker("w1", slots: 4)
        let json = tempFile("cancel.json")
        let run = try CommandLineTests.run(Binaries.path("oploadtest"), [
            "run", "--coordinator", cluster.endpoint, "--workload", "cancel", "--ops", "80", "--op-ms", "40",
            "--cancel-fraction", "0.5", "--json", json], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let r = try report(json)
        let cancelled = (r["outcomes"] as? [String: Int])?["cancelled"] ?? 0
        let cancel = (r["latencies_us"] as? [String: Any])?["cancel"] as? [String: Any]
        #expect(cancelled > 0 && cancel?["count"] as? Int == cancelled, "\(run.stdout)")
        #expect((r["exactly_once"] as? [String: Any])?["ok"] as? Bool == true, "\(run.stdout)")
    }

    @Test func badArgumentsAndAnAbsentCoordinatorGetClearErrors() throws {
        let bad = try CommandLineTests.run(Binaries.path("oploadtest"), ["run", "--workload", "nope"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("unknown workload 'nope'"), "\(bad.stderr)")
        let chain = try CommandLineTests.run(Binaries.path("oploadtest"), ["run", "--workload", "chain", "--ops", "1"])
        #expect(chain.status == 64 && chain.stderr.contains("--ops ≥ 2"), "\(chain.stderr)")
        let absent = try CommandLineTests.run(Binaries.path("oploadtest"), [
            "run", "--coordinator", "tcp://127.0.0.1:9", "--workload", "independent", "--request-timeout", "0.5"], timeout: 30)
        #expect(absent.status == 3)
        #expect(absent.stderr.contains("no reply"), "\(absent.stderr)")
        let sim = try CommandLineTests.run(Binaries.path("oploadtest"), ["simworkers", "--connect", "tcp://127.0.0.1:9", "--count", "0"])
        #expect(sim.status == 64 && sim.stderr.contains("--count must be in 1…100,000"), "\(sim.stderr)")
    }

    /// The plot script draws its three SVGs from the fixture reports (where matplotlib is installed).
    @Test func plotScriptDrawsTheThreePlots() throws {
        let probe = try CommandLineTests.run("/usr/bin/python3", ["-c", "import matplotlib"])
        guard probe.status == 0 else {
            print("skipped: python3-matplotlib is not installed (scripts/loadtest --plots installs it)")
            return
        }
        let out = tempFile("plots")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try CommandLineTests.run("/usr/bin/python3", [Self.root + "/scripts/loadtest-plot.py",
                                                                 Self.root + "/Tests/Fixtures/loadtest", out], timeout: 120)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        for f in ["throughput_vs_workers.svg", "latency_cdf.svg", "gantt.svg"] {
            let svg = (try? String(contentsOfFile: out + "/" + f, encoding: .utf8)) ?? ""
            #expect(svg.contains("<svg"), "\(f) missing")
        }
    }
}
