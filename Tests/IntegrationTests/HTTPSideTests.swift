import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// The coordinator's HTTP side (docs/HTTP.md): /metrics read by the Prometheus client's own parser and
/// checked against a known run, the JSON against STATUS, and who may read it.
@Suite(.serialized) struct HTTPSideTests {
    /// GET through Python's urllib (no HTTP client in the test's Foundation on every platform):
    /// status code and body.
    static func get(_ url: String, token: String? = nil, method: String = "GET") throws -> (status: Int, body: String) {
        let script = """
            import sys, urllib.request, urllib.error
            req = urllib.request.Request(sys.argv[1], method=sys.argv[2])
            if len(sys.argv) > 3: req.add_header("Authorization", "Bearer " + sys.argv[3])
            try:
                with urllib.request.urlopen(req, timeout=10) as r: code, body = r.status, r.read()
            except urllib.error.HTTPError as e: code, body = e.code, e.read()
            sys.stdout.write(str(code) + "\\n" + body.decode())
            """
        let r = try CommandLineTests.run("/usr/bin/python3", ["-c", script, url, method] + (token.map { [$0] } ?? []), timeout: 30)
        guard r.status == 0, let nl = r.stdout.firstIndex(of: "\n"), let code = Int(r.stdout[..<nl]) else {
            throw ClusterError("GET \(url) failed: \(r.stdout) \(r.stderr)")
        }
        return (code, String(r.stdout[r.stdout.index(after: nl)...]))
    }

    /// /metrics parsed by prometheus_client's parser (it throws on malformed exposition): every sample
    /// as "name{k=v,…}" → value, labels sorted.
    static func metrics(_ base: String) throws -> [String: Double] {
        let script = """
            import sys, json, urllib.request
            from prometheus_client.parser import text_string_to_metric_families
            text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=10).read().decode()
            out = {}
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                    out[s.name + ("{" + labels + "}" if labels else "")] = s.value
            print(json.dumps(out))
            """
        let r = try CommandLineTests.run("/usr/bin/python3", ["-c", script, base], timeout: 30)
        guard r.status == 0, let data = r.stdout.data(using: .utf8),
              let parsed = try JSONSerialization.jsonObject(with: data) as? [String: Double] else {
            throw ClusterError("/metrics did not parse: \(r.stderr)\(r.stdout.prefix(2000))")
        }
        return parsed
    }

    /// Every family /metrics serves as parsed by prometheus_client: name → (type, HELP text).
    static func families(_ base: String) throws -> [String: (type: String, help: String)] {
        let script = """
            import sys, json, urllib.request
            from prometheus_client.parser import text_string_to_metric_families
            text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=10).read().decode()
            print(json.dumps({f.name: [f.type, f.documentation] for f in text_string_to_metric_families(text)}))
            """
        let r = try CommandLineTests.run("/usr/bin/python3", ["-c", script, base], timeout: 30)
        guard r.status == 0, let data = r.stdout.data(using: .utf8),
              let parsed = try JSONSerialization.jsonObject(with: data) as? [String: [String]] else {
            throw ClusterError("/metrics did not parse: \(r.stderr)\(r.stdout.prefix(2000))")
        }
        return parsed.mapValues { ($0[0], $0[1]) }
    }

    static var havePrometheusClient: Bool {
        (try? CommandLineTests.run("/usr/bin/python3", ["-c", "import prometheus_client"], timeout: 30).status) == 0
    }

    @Test(.enabled(if: havePrometheusClient, "needs python3-prometheus-client (scripts/setup installs it)"))
    func metricsParseAndCountAKnownRun() throws {
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:0"])
        let base = try c.httpBase()
        let w = try c.startWorker("w", slots: 2)
        defer { w.terminate() }
        try c.waitUntil("the worker registers", timeout: 20) { try c.workerList().count == 1 }
        // 12 noop ops in chains of three (8 with a dependency), 3 that fail, 1 cancelled before it ran.
        var ops: [WireOperation] = []
        for i in 0..<12 { ops.append(op("n\(i)", after: i % 3 == 0 ? [] : ["n\(i - 1)"])) }
        for i in 0..<3 { ops.append(op("f\(i)", kind: "fail", payload: "boom")) }
        ops.append(op("held", queue: "parked"))
        _ = try c.submit(ops, queues: [queueSettings("parked", suspended: true)])
        _ = try c.ack(.cancelOps({ var m = WireCancelOps(); m.opIds = ["test/held"]; return m }()))
        let done = try c.wait(ops.map { "test/\($0.id)" })
        #expect(done.finished)

        var m: [String: Double] = [:]
        try c.waitUntil("/metrics shows the finished run", timeout: 20) {
            m = try Self.metrics(base)
            return m["opqueue_operations_finished_total{outcome=succeeded}"] == 12
        }
        #expect(m["opqueue_operations_submitted_total"] == 16)
        #expect(m["opqueue_operations_finished_total{outcome=failed}"] == 3)
        #expect(m["opqueue_operations_finished_total{outcome=cancelled}"] == 1)
        #expect(m["opqueue_dispatches_total"] == 15)
        #expect(m["opqueue_queue_wait_seconds_count"] == 15)
        #expect(m["opqueue_dependency_hop_seconds_count"] == 8)
        #expect((m["opqueue_dependency_hop_seconds_sum"] ?? -1) > 0)
        #expect(m["opqueue_operations{queue=default,state=succeeded}"] == 12)
        #expect(m["opqueue_operations{queue=parked,state=cancelled}"] == 1)
        #expect(m["opqueue_queue_suspended{queue=parked}"] == 1)
        #expect(m["opqueue_workers_connected"] == 1)
        #expect(m["opqueue_worker_slots{name=w,worker=w1}"] == 2)
        #expect((m["process_resident_memory_bytes"] ?? 0) > 1_000_000)
        #expect((m["process_cpu_seconds_total"] ?? 0) > 0)
        // The conventions: build info, start time, counters named _total.
        #expect(m["opqueue_build_info{protocol_version=\(WireVersion.current),version=0.1.0-dev}"] == 1)
        let start = m["process_start_time_seconds"] ?? 0
        #expect(start > Date().timeIntervalSince1970 - 600 && start <= Date().timeIntervalSince1970)
        #expect(m["opqueue_latency_samples_dropped_total"] == 0)
        #expect(m["opqueue_latency_samples_dropped"] == nil)

        // Every family has a HELP line, and prometheus_client reads it with the right type.
        let families = try Self.families(base)
        #expect(families.count >= 30)
        for (name, f) in families where f.help.isEmpty { Issue.record("/metrics family \(name) has no # HELP line") }
        #expect(families["opqueue_latency_samples_dropped"]?.type == "counter")  // the parser drops _total
        #expect(families["opqueue_build_info"]?.type == "gauge")

        // Every series docs/METRICS.md, the Grafana dashboard and the alert rules name is served.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var served = Set(m.keys.map { String($0.prefix { $0 != "{" }) })
        for name in served {   // a histogram is named without its _bucket, _sum, _count series too
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { served.insert(String(name.dropLast(suffix.count))) }
        }
        for doc in ["docs/METRICS.md", "docs/monitoring/grafana-dashboard.json", "docs/monitoring/alerts.yml"] {
            let text = try String(contentsOf: root.appendingPathComponent(doc), encoding: .utf8)
            let names = Set(text.matches(of: /(opqueue|process)_[a-z_]+/).map { String($0.output.0) })
            #expect(!names.isEmpty)
            for name in names where !served.contains(name) {
                Issue.record("\(doc) names \(name), which /metrics does not serve")
            }
        }

        // The JSON says what STATUS says.
        let summary = try Self.get(base + "/api/summary")
        #expect(summary.status == 200)
        let json = try JSONSerialization.jsonObject(with: Data(summary.body.utf8)) as? [String: Any]
        let status = json?["status"] as? [String: Any]
        #expect(status?["total_operations"] as? String == "\(try c.statusReply().totalOperations)")
        let ops1 = try Self.get(base + "/api/ops?run=test&spec=1&limit=2")
        #expect(ops1.body.contains(#""after":["n0"]"#) || ops1.body.contains(#""id":"n0""#))
        let page = try Self.get(base + "/api/op?id=test/n1").body
        #expect(page.contains(#""after":["n0"]"#))
        #expect(page.contains(#""story":{"#) && page.contains(#""event":"dispatched""#))
        #expect(try Self.get(base + "/api/story?id=test/f0").body.contains(#""event":"finished""#))
        #expect(try Self.get(base + "/api/logs?id=test/nope").status == 404)
        #expect(try Self.get(base + "/api/op?id=test/nope").status == 404)
        #expect(try Self.get(base + "/api/ops?state=bogus").status == 400)
        #expect(try Self.get(base + "/api/ops", method: "POST").status == 405)
    }

    @Test func offLoopbackNeedsATokenAndTheTokenIsChecked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-http-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = Binaries.path("opcoord")
        let refused = try CommandLineTests.run(bin, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "0.0.0.0:0"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--http-token-file"))
        let bad = try CommandLineTests.run(bin, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "127.0.0.1"])
        #expect(bad.status == 64 && bad.stderr.contains("not HOST:PORT"))

        let token = dir.appendingPathComponent("token").path
        try "s3cret-token-0123456789\n".write(toFile: token, atomically: true, encoding: .utf8)
        // A token others may read, or none at all, stops opcoord (with or without an explicit --http).
        chmod(token, 0o644)
        for args in [["--http-token-file", token], ["--http", "0.0.0.0:0", "--http-token-file", token + ".missing"]] {
            let r = try CommandLineTests.run(bin, ["--bind", "tcp://127.0.0.1:*", "--ephemeral"] + args, timeout: 30)
            #expect(r.status != 0)
            #expect(r.stderr.contains("--http-token-file"))
        }
        chmod(token, 0o600)
        let c = try LocalCluster(coordinatorArgs: ["--http", "0.0.0.0:0", "--http-token-file", token], keys: true)
        let base = try c.httpBase().replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        #expect(try Self.get(base + "/api/summary").status == 401)
        #expect(try Self.get(base + "/api/summary", token: "wrong-token-0123456789").status == 401)
        let ok = try Self.get(base + "/api/summary", token: "s3cret-token-0123456789")
        // With CURVE on, the HTTP side reads through its in-process connection (the view role).
        #expect(ok.status == 200)
        #expect(ok.body.contains(#""security":"curve""#))
        #expect(try Self.get(base + "/metrics", token: "s3cret-token-0123456789").status == 200)
    }

    @Test func anExplicitAddressThatIsTakenStopsTheCoordinator() throws {
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:0"])
        let taken = try c.httpBase().replacingOccurrences(of: "http://", with: "")
        let second = try CommandLineTests.run(Binaries.path("opcoord"),
                                              ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", taken], timeout: 30)
        #expect(second.status != 0)
        #expect(second.stderr.contains("cannot start the HTTP side on \(taken)"))
    }
}
