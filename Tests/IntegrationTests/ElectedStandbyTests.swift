import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// `--ha` and the hot standby together (issue 29): a coordinator that does not lead follows the elected
/// leader's journal, so when the leader is killed the one elected next already holds every acknowledged
/// operation — no recovery, nothing lost, nothing run twice — and the worker reattaches what it runs;
/// with keys too (the standby follows as a peer with the `coordinator` role, as it must off loopback).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ElectedStandbyTests {
    /// Two `--ha` coordinators on one etcd, the standby in sync with the leader, one worker given both, and
    /// a layered run of `total` shell ops (each appends its id to `runs`) submitted as `run`.
    final class Cluster {
        let etcd: EtcdServer
        let g: HAGroup
        let first: Int
        let worker: Process
        let workerLog: URL
        let runs: String
        let conn: CoordinatorConnection
        let run: String
        let total: Int

        /// `keys`: the group runs with CURVE (its coordinator key has the `coordinator` role); the worker,
        /// the client and opctl use keys too.
        init(total: Int, run: String, keys: Bool = false) throws {
            self.total = total
            self.run = run
            etcd = try EtcdServer()
            g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"], keys: keys)
            first = try g.waitForLeader()
            let both = g.endpoints.joined(separator: ",")
            workerLog = g.dir.appendingPathComponent("w1.log")
            worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "w1", "--slots", "4", "--prefetch", "2"] + g.keyArguments("worker"),
                                             log: workerLog)
            runs = g.dir.appendingPathComponent("runs.txt").path
            conn = try CoordinatorConnection(endpoint: both, timeout: .seconds(30), curve: try g.clientKeys())
            try waitUntil("the standby to be in sync", timeout: 30, logs: g.logs) { inSync(first) }
            #expect(FileManager.default.createFile(atPath: runs, contents: nil))
            let graph = "operations:\n" + (0..<total).map { i in
                "  - {id: e\(i), command: \"echo $OPQ_OP_ID >> \(runs); sleep 0.02\"\(i >= 20 ? ", after: [e\(i - 20)]" : "")}\n"
            }.joined()
            let submit = try CommandLineTests.run(Binaries.path("opctl"), ["submit", try CommandLineTests.writeGraph(graph, in: g.dir), "--run", run]
                                                  + g.keyArguments("admin"), env: ["OPCOORD": both], timeout: 60)
            try #require(submit.status == 0, "\(submit.stderr)\n\(logs())")
        }

        deinit {
            kill(worker.processIdentifier, SIGKILL)
            worker.waitUntilExit()
            g.stop()
            etcd.stop()
        }

        func logs() -> String { g.logs() + "\n--- worker:\n" + ((try? String(contentsOf: workerLog, encoding: .utf8)) ?? "") }

        /// Whether coordinator `leader` has a standby in sync.
        func inSync(_ leader: Int) -> Bool {
            guard case .statusReply(let s)? = g.ask(leader) else { return false }
            return s.standbys.first?.state == "sync"
        }

        func finished() -> Int {
            guard case .statusReply(let r)? = try? conn.request(.status(WireStatus())) else { return 0 }
            return r.queues.first { $0.name == "default" }.map { Int($0.finished) } ?? 0
        }

        /// The run finishes with every op succeeded, each run exactly once; returns the re-runs.
        @discardableResult
        func expectEveryOpOnce() throws -> Int {
            var w = WireWait()
            w.run = run
            w.timeoutUs = 120_000_000
            guard case .waitReply(let done) = try conn.request(.wait(w), timeout: .seconds(130)) else { Issue.record("no WAIT reply\n\(logs())"); return -1 }
            #expect(done.finished && done.succeededCount == UInt32(total),
                    "\(done.succeededCount) succeeded, \(done.failedCount) failed, \(done.cancelledCount) cancelled\n\(logs())")
            let lines = try String(contentsOfFile: runs, encoding: .utf8).split(separator: "\n")
            let distinct = Set(lines).count
            #expect(distinct == total, "\(distinct) of \(total) ran")
            #expect(lines.count == distinct, "re-runs: \(lines.count - distinct)\n\(logs())")
            return lines.count - distinct
        }
    }

    @Test(arguments: [false, true])
    func theNextLeaderHoldsEveryAcknowledgedOpAndRunsEachOnce(keys: Bool) throws {
        let c = try Cluster(total: 300, run: keys ? "ha-keys" : "ha", keys: keys)
        try waitUntil("a third of the run to finish", timeout: 60, logs: c.logs) { c.finished() >= c.total / 3 }
        let killed = ContinuousClock.now
        c.g.kill(c.first)
        let second = try c.g.waitForLeader(timeout: 20, except: c.first)
        let takeover = ContinuousClock.now - killed
        #expect(c.g.log(second).contains("promoted (elected leader"), "the new leader took over its followed state: \(c.g.log(second).suffix(2000))")
        let reruns = try c.expectEveryOpOnce()
        print("elected standby\(keys ? " with keys" : ""): \(c.total) ops, SIGKILL → the next leader answers STATUS in \(takeover), re-runs \(reruns)")
    }

    /// A leader that steps down reloads its state from its own journal, follows the next leader, and when
    /// elected again (the next one steps down too) is promoted with everything: no op lost or run twice.
    @Test func aLeaderThatStepsDownFollowsTheNextAndLeadsAgainWithEverything() throws {
        let c = try Cluster(total: 200, run: "down")
        let opctl = Binaries.path("opctl")
        try waitUntil("a quarter of the run to finish", timeout: 60, logs: c.logs) { c.finished() >= c.total / 4 }
        let down1 = try CommandLineTests.run(opctl, ["ha", "step-down"], env: ["OPCOORD": c.g.endpoints[c.first]], timeout: 30)
        try #require(down1.status == 0, "\(down1.stderr)\n\(c.logs())")
        let second = try c.g.waitForLeader(timeout: 20, except: c.first)
        // The old leader reloads from its journal and follows the new one, in sync again.
        try waitUntil("the old leader to follow the new one in sync", timeout: 30, logs: c.logs) { c.inSync(second) }
        #expect(c.g.log(c.first).contains("no longer the leader: state reloaded"), "\(c.g.log(c.first).suffix(2000))")
        try waitUntil("half of the run to finish", timeout: 60, logs: c.logs) { c.finished() >= c.total / 2 }
        let down2 = try CommandLineTests.run(opctl, ["ha", "step-down"], env: ["OPCOORD": c.g.endpoints[second]], timeout: 30)
        try #require(down2.status == 0, "\(down2.stderr)\n\(c.logs())")
        #expect(try c.g.waitForLeader(timeout: 20, except: second) == c.first)
        #expect(c.g.log(c.first).contains("promoted (elected leader"), "\(c.g.log(c.first).suffix(2000))")
        try c.expectEveryOpOnce()
    }
}
