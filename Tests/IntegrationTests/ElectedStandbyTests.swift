import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// `--ha` and the hot standby together (issue 29): a coordinator that does not lead follows the elected
/// leader's journal, so when the leader is killed the one elected next already holds every acknowledged
/// operation — no recovery, nothing lost, nothing run twice — and the worker reattaches what it runs.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ElectedStandbyTests {
    @Test func theNextLeaderHoldsEveryAcknowledgedOpAndRunsEachOnce() throws {
        let total = 300
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let first = try g.waitForLeader()
        let both = g.endpoints.joined(separator: ",")
        // The other coordinator follows the leader as a standby in sync.
        try waitUntil("the standby to be in sync", timeout: 30, logs: g.logs) {
            guard case .statusReply(let s)? = g.ask(first) else { return false }
            return s.standbys.first?.state == "sync"
        }
        let workerLog = g.dir.appendingPathComponent("w1.log")
        let worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "w1", "--slots", "4", "--prefetch", "2"], log: workerLog)
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let logs = { g.logs() + "\n--- worker:\n" + ((try? String(contentsOf: workerLog, encoding: .utf8)) ?? "") }
        let runs = g.dir.appendingPathComponent("runs.txt").path
        #expect(FileManager.default.createFile(atPath: runs, contents: nil))
        let graph = "operations:\n" + (0..<total).map { i in
            "  - {id: e\(i), command: \"echo $OPQ_OP_ID >> \(runs); sleep 0.02\"\(i >= 20 ? ", after: [e\(i - 20)]" : "")}\n"
        }.joined()
        let opctl = Binaries.path("opctl")
        let submit = try CommandLineTests.run(opctl, ["submit", try CommandLineTests.writeGraph(graph, in: g.dir), "--run", "ha"],
                                              env: ["OPCOORD": both], timeout: 60)
        try #require(submit.status == 0, "\(submit.stderr)\n\(logs())")
        let conn = try CoordinatorConnection(endpoint: both, timeout: .seconds(30))
        func finished() -> Int {
            guard case .statusReply(let r)? = try? conn.request(.status(WireStatus())) else { return 0 }
            return r.queues.first { $0.name == "default" }.map { Int($0.finished) } ?? 0
        }
        try waitUntil("a third of the run to finish", timeout: 60, logs: logs) { finished() >= total / 3 }
        let killed = ContinuousClock.now
        g.kill(first)
        let second = try g.waitForLeader(timeout: 20, except: first)
        let takeover = ContinuousClock.now - killed
        #expect(second != first)
        #expect(g.log(second).contains("promoted (elected leader"), "the new leader took over its followed state: \(g.log(second).suffix(2000))")
        var w = WireWait()
        w.run = "ha"
        w.timeoutUs = 120_000_000
        guard case .waitReply(let done) = try conn.request(.wait(w), timeout: .seconds(130)) else { Issue.record("no WAIT reply\n\(logs())"); return }
        #expect(done.finished && done.succeededCount == UInt32(total),
                "\(done.succeededCount) succeeded, \(done.failedCount) failed, \(done.cancelledCount) cancelled\n\(logs())")
        let lines = try String(contentsOfFile: runs, encoding: .utf8).split(separator: "\n")
        var count: [Substring: Int] = [:]
        for l in lines { count[l, default: 0] += 1 }
        #expect(count.count == total, "\(count.count) of \(total) ran")
        #expect(lines.count == count.count, "re-runs: \(count.filter { $0.value > 1 }.keys.sorted().prefix(10))\n\(logs())")
        print("elected standby: \(total) ops, SIGKILL → the next leader answers STATUS in \(takeover), re-runs \(lines.count - count.count)")
    }

    /// A leader that steps down reloads its state from its own journal, follows the next leader, and when
    /// elected again (the next one steps down too) is promoted with everything: no op lost or run twice.
    @Test func aLeaderThatStepsDownFollowsTheNextAndLeadsAgainWithEverything() throws {
        let total = 200
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let first = try g.waitForLeader()
        let both = g.endpoints.joined(separator: ",")
        func inSync(_ leader: Int) -> Bool {
            guard case .statusReply(let s)? = g.ask(leader) else { return false }
            return s.standbys.first?.state == "sync"
        }
        try waitUntil("the standby to be in sync", timeout: 30, logs: g.logs) { inSync(first) }
        let workerLog = g.dir.appendingPathComponent("w1.log")
        let worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "w1", "--slots", "4", "--prefetch", "2"], log: workerLog)
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let logs = { g.logs() + "\n--- worker:\n" + ((try? String(contentsOf: workerLog, encoding: .utf8)) ?? "") }
        let runs = g.dir.appendingPathComponent("runs.txt").path
        #expect(FileManager.default.createFile(atPath: runs, contents: nil))
        let graph = "operations:\n" + (0..<total).map { i in
            "  - {id: s\(i), command: \"echo $OPQ_OP_ID >> \(runs); sleep 0.03\"\(i >= 20 ? ", after: [s\(i - 20)]" : "")}\n"
        }.joined()
        let opctl = Binaries.path("opctl")
        let submit = try CommandLineTests.run(opctl, ["submit", try CommandLineTests.writeGraph(graph, in: g.dir), "--run", "down"],
                                              env: ["OPCOORD": both], timeout: 60)
        try #require(submit.status == 0, "\(submit.stderr)\n\(logs())")
        let conn = try CoordinatorConnection(endpoint: both, timeout: .seconds(30))
        func finished() -> Int {
            guard case .statusReply(let r)? = try? conn.request(.status(WireStatus())) else { return 0 }
            return r.queues.first { $0.name == "default" }.map { Int($0.finished) } ?? 0
        }
        try waitUntil("a quarter of the run to finish", timeout: 60, logs: logs) { finished() >= total / 4 }
        let down1 = try CommandLineTests.run(opctl, ["ha", "step-down"], env: ["OPCOORD": g.endpoints[first]], timeout: 30)
        try #require(down1.status == 0, "\(down1.stderr)\n\(logs())")
        let second = try g.waitForLeader(timeout: 20, except: first)
        // The old leader reloads from its journal and follows the new one, in sync again.
        try waitUntil("the old leader to follow the new one in sync", timeout: 30, logs: logs) { inSync(second) }
        #expect(g.log(first).contains("no longer the leader: state reloaded"), "\(g.log(first).suffix(2000))")
        try waitUntil("half of the run to finish", timeout: 60, logs: logs) { finished() >= total / 2 }
        let down2 = try CommandLineTests.run(opctl, ["ha", "step-down"], env: ["OPCOORD": g.endpoints[second]], timeout: 30)
        try #require(down2.status == 0, "\(down2.stderr)\n\(logs())")
        let third = try g.waitForLeader(timeout: 20, except: second)
        #expect(third == first)
        #expect(g.log(first).contains("promoted (elected leader"), "\(g.log(first).suffix(2000))")
        var w = WireWait()
        w.run = "down"
        w.timeoutUs = 120_000_000
        guard case .waitReply(let done) = try conn.request(.wait(w), timeout: .seconds(130)) else { Issue.record("no WAIT reply\n\(logs())"); return }
        #expect(done.finished && done.succeededCount == UInt32(total),
                "\(done.succeededCount) succeeded, \(done.failedCount) failed, \(done.cancelledCount) cancelled\n\(logs())")
        let lines = try String(contentsOfFile: runs, encoding: .utf8).split(separator: "\n")
        #expect(Set(lines).count == total, "\(Set(lines).count) of \(total) ran")
        #expect(lines.count == Set(lines).count, "re-runs: \(lines.count - Set(lines).count)\n\(logs())")
    }
}
