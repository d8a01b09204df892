import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol
import ZeroMQ

/// Keys, roles and scopes with real processes over CURVE on loopback (PROTOCOL.md §12). The same
/// checks across network namespaces, with a capture of the traffic, are in cluster/netns/security.sh.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AccessControlTests {
    let opctl = Binaries.path("opctl")

    func graph(_ c: LocalCluster, _ yaml: String) throws -> String {
        try CommandLineTests.writeGraph(yaml, in: c.dir, name: "g-\(UUID().uuidString.prefix(6)).yaml")
    }

    /// A stranger — no key, or a key the allow file does not list — cannot submit, read, cancel or
    /// register; each is told "authentication failed" at once, the coordinator logs it, nothing runs.
    @Test func strangersAreRefusedQuicklyAndNothingTheySendRuns() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.startWorker("w1")
        let marker = c.dir.appendingPathComponent("stranger-was-here").path
        let g = try graph(c, "operations:\n  - {id: evil, command: \"touch \(marker)\"}\n")
        let unknown = c.dir.appendingPathComponent("unknown.key").path
        try KeyFile.create(at: unknown)
        let env = ["OPCOORD": c.endpoint, "OPQ_KEY": "", "OPQ_COORDINATOR_KEY": ""]
        for (who, keyArgs) in [("no key", [String]()), ("unknown key", ["--key", unknown, "--coordinator-key", c.coordinatorPublicKey!])] {
            for args in [["submit", g, "--wait"], ["status"], ["cancel", "evil"], ["workers"]] {
                let started = ContinuousClock.now
                let r = try CommandLineTests.run(opctl, args + keyArgs, env: env, timeout: 30)
                let took = ContinuousClock.now - started
                #expect(r.status == 3 && r.stderr.contains("authentication failed"), "\(who) \(args): \(r.status) \(r.stderr)")
                #expect(took < .seconds(5), "\(who) \(args) took \(took)")
            }
            // A worker it starts is refused and stops with the reason, never registered.
            let name = "stranger-\(keyArgs.isEmpty ? "nokey" : "unknown")"
            let w = try CommandLineTests.run(Binaries.path("opworker"), ["--connect", c.endpoint, "--name", name] + keyArgs,
                                             env: env, timeout: 30)
            #expect(w.status != 0 && w.stderr.contains("authentication failed"), "\(who): \(w.status) \(w.stderr)")
        }
        // Work of a key holder still runs, after everything the strangers sent.
        let ok = try CommandLineTests.run(opctl, ["submit", try graph(c, "operations:\n  - {id: fine, command: \"echo ok\"}\n"), "--wait"]
                                          + c.keyArguments("admin"), env: env, timeout: 60)
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "a stranger's operation ran")
        #expect(try c.workerList().map(\.name) == ["w1"])
        let log = try String(contentsOf: c.dir.appendingPathComponent("opcoord.log"), encoding: .utf8)
        #expect(log.contains("authentication failed: unknown key"), "\(log)")
        let status = try c.statusReply()
        #expect(status.security == "curve")
        #expect(status.authFailures >= 2, "\(status.authFailures)")
    }

    /// Each key does what its roles and queue scopes allow, and no more; the audit names the key.
    @Test func rolesAndScopesDecideWhatEachKeyMayDo() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("team-a", roles: "submit", scopes: ["team-a/*"])
        try c.addKey("team-b", roles: "submit", scopes: ["team-b/*"])
        try c.addKey("viewer", roles: "view")
        try c.startWorker("w1", slots: 4)
        func unauthorized(_ key: String, _ m: WireProtocol.Message, _ expected: String) throws {
            #expect(throws: Never.self) {
                do {
                    _ = try c.connect(as: key).request(m)
                    Issue.record("\(key) \(m.command) was allowed")
                } catch ClientError.server(let code, let text) {
                    #expect(code == .unauthorized && text.contains(expected), "\(key) \(m.command): \(code) \(text)")
                }
            }
        }
        func submit(_ key: String, _ o: WireOperation, run: String) throws -> WireProtocol.Message {
            var s = WireSubmit()
            s.operations = [o]
            s.run = run
            return try c.connect(as: key).request(.submit(s))
        }
        guard case .submitReply(let b)? = try? submit("team-b", shell("b1", "sleep 30", queue: "team-b/x"), run: "rb"), b.accepted else {
            Issue.record("team-b could not submit into its own queue")
            return
        }
        try c.waitUntil("b1 running", timeout: 20) { try c.status(["rb/b1"])["b1"]?.state == .executing }

        var cancelB1 = WireCancelOps()
        cancelB1.opIds = ["b1"]
        cancelB1.run = "rb"
        try unauthorized("team-a", .cancelOps(cancelB1), "operation 'b1' is in queue 'team-b/x', outside the scope of key 'team-a'")
        var prio = WireSetPriority()
        prio.opIds = ["rb/b1"]
        prio.priority = 8
        try unauthorized("team-a", .setPriority(prio), "outside the scope of key 'team-a'")
        var intoB = WireSubmit()
        intoB.operations = [op("a-in-b", queue: "team-b/y")]
        try unauthorized("team-a", .submit(intoB), "queue 'team-b/y', outside the scope")
        try unauthorized("viewer", .cancelOps(cancelB1), "may not cancel")
        try unauthorized("worker", .submit(intoB), "may not submit")
        // opctl says the same (its check of the workers' kinds does not get in the way).
        let g = try graph(c, "operations:\n  - {id: w, kind: noop}\n")
        let viaOpctl = try CommandLineTests.run(opctl, ["submit", g, "--coordinator", c.endpoint] + c.keyArguments("worker"), timeout: 30)
        #expect(viaOpctl.status == 3 && viaOpctl.stderr.contains("may not submit"), "\(viaOpctl.stderr)")
        var q = WireQueueControl()
        q.settings.name = "team-a/x"
        q.settings.suspended = true
        try unauthorized("team-a", .queue(q), "needs the 'admin' role")
        // What a key may do, it can.
        guard case .statusReply(let seen) = try c.connect(as: "viewer").request(.status(WireStatus())) else {
            Issue.record("no status for viewer")
            return
        }
        #expect(seen.queues.contains { $0.name == "team-b/x" })
        guard case .submitReply(let a)? = try? submit("team-a", op("a1", queue: "team-a/etl"), run: "ra"), a.accepted else {
            Issue.record("team-a could not submit into its own queue")
            return
        }
        guard case .ack = try c.connect(as: "team-b").request(.cancelOps(cancelB1)) else {
            Issue.record("team-b could not cancel its own operation")
            return
        }
        _ = try c.wait(["rb/b1", "ra/a1"])
        // The audit: who submitted each run, who cancelled, which key's worker produced the result.
        var runs = WireRuns()
        runs.runs = ["ra", "rb"]
        guard case .runsReply(let r) = try c.connect().request(.runs(runs)) else { Issue.record("no RUNS reply"); return }
        #expect(Dictionary(r.runs.map { ($0.id, $0.submitter) }, uniquingKeysWith: { a, _ in a }) == ["ra": "team-a", "rb": "team-b"])
        let b1 = try #require(try c.status(["rb/b1"])["b1"])
        #expect(b1.error.contains("cancelled by team-b"), "\(b1.error)")
        #expect(try c.status(["ra/a1"])["a1"]?.workerKey == "worker")
        let workers = try c.workerList()
        #expect(workers.first?.keyName == "worker" && workers.first?.tags.contains("key:worker") == true)
    }

    /// A submitter pins operations to the workers of one key with `requires: [key:NAME]`.
    @Test func operationsPinnedToAKeyRunOnlyOnItsWorkers() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("trusted", roles: "worker")
        try c.startWorker("plain", slots: 4)
        try c.startWorker("trusted-1", slots: 1, key: "trusted")
        var ops: [WireOperation] = []
        for i in 0..<6 {
            var o = op("p\(i)")
            o.requires = ["key:trusted"]
            ops.append(o)
        }
        #expect(try c.submit(ops, run: "pinned").accepted)
        _ = try c.wait(ops.map { "pinned/\($0.id)" })
        for (_, s) in try c.status(ops.map { "pinned/\($0.id)" }) { #expect(s.workerKey == "trusted", "\(s.id) ran on \(s.workerID)") }
        // A worker cannot claim another key's tag.
        let forged = try CommandLineTests.run(Binaries.path("opworker"), ["--connect", c.endpoint, "--name", "forger", "--tags", "key:trusted"]
                                              + c.keyArguments("worker"), env: [:], timeout: 30)
        #expect(forged.status != 0 && forged.stderr.contains("reserved"), "\(forged.stderr)")
    }

    /// Revoking a key (editing the allow file) drops its worker within a heartbeat interval.
    @Test func aRevokedWorkerKeyIsDroppedWithinAHeartbeatInterval() throws {
        let c = try LocalCluster(heartbeatMs: 1000, journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("temp", roles: "worker")
        let w = try c.startWorker("w-temp", key: "temp")
        try c.startWorker("w-stays")
        let started = ContinuousClock.now
        try c.revokeKey("temp")
        try c.waitUntil("w-temp dropped and stopped", timeout: 10) {
            let listed = try c.workerList().contains { $0.name == "w-temp" }
            return !w.isRunning && !listed
        }
        let took = ContinuousClock.now - started
        print("revoked worker key: dropped and its worker stopped after \(took)")
        #expect(took < .milliseconds(1000 + 500), "heartbeat interval 1 s; took \(took)")
        #expect(try c.workerList().map(\.name) == ["w-stays"])
        let log = (try? String(contentsOf: c.dir.appendingPathComponent("w-temp.log"), encoding: .utf8)) ?? ""
        #expect(log.contains("revoked"), "\(log)")
    }

    /// Off loopback, opcoord wants keys or an explicit --insecure, which it then admits everywhere.
    @Test func offLoopbackWithoutKeysIsRefusedUnlessInsecureIsExplicit() throws {
        let opcoord = Binaries.path("opcoord")
        let refused = try CommandLineTests.run(opcoord, ["--bind", "tcp://0.0.0.0:*", "--ephemeral"], timeout: 30)
        #expect(refused.status == 64, "\(refused.status)")
        #expect(refused.stderr.contains("refusing to listen on tcp://0.0.0.0:* without keys") && refused.stderr.contains("--insecure")
                && refused.stderr.contains("opctl keys new"), "\(refused.stderr)")
        let halfKeys = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--key", "/nonexistent.key"], timeout: 30)
        #expect(halfKeys.status == 64 && halfKeys.stderr.contains("--key and --allow go together"), "\(halfKeys.stderr)")

        let dir = NSTemporaryDirectory() + "opq-insecure-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let endpointFile = dir + "/endpoint"
        let p = try LocalCluster.launch("opcoord", ["--bind", "tcp://0.0.0.0:*", "--ephemeral", "--insecure", "--endpoint-file", endpointFile],
                                        log: URL(fileURLWithPath: dir + "/opcoord.log"))
        defer { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() }
        var port = ""
        try waitUntil("the insecure coordinator listening", timeout: 20) {
            guard let e = try? String(contentsOfFile: endpointFile, encoding: .utf8) else { return false }
            port = String(e.split(separator: ":").last ?? "")
            return !port.isEmpty
        }
        let conn = try CoordinatorConnection(endpoint: "tcp://127.0.0.1:\(port)")
        guard case .statusReply(let s) = try conn.request(.status(WireStatus())),
              case .workersReply(let w) = try conn.request(.workers) else { Issue.record("no replies"); return }
        #expect(s.security == "insecure" && w.security == "insecure")
        let log = try String(contentsOfFile: dir + "/opcoord.log", encoding: .utf8)
        #expect(log.contains("--insecure: listening on tcp://0.0.0.0:* without keys"), "\(log)")
        let text = try CommandLineTests.run(opctl, ["workers", "--coordinator", "tcp://127.0.0.1:\(port)"], timeout: 30)
        #expect(text.stdout.contains("insecure") || text.stderr.contains("insecure"), "\(text.stdout)\(text.stderr)")
    }
}
