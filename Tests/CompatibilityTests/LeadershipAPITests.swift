import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import OpClient
import Testing

/// (issue 29) The Swift API given the coordinators of one `--ha` group: it reaches the leader through a
/// standby's NOT_LEADER, and the new leader after the old one is killed.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LeadershipAPITests {
    @Test func aRemoteQueueFollowsTheLeaderThroughAFailover() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let leader = try g.waitForLeader()
        // The standby first: the first request is refused with NOT_LEADER and goes to the leader.
        let both = [g.endpoints[1 - leader], g.endpoints[leader]].joined(separator: ",")
        let worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "api-w", "--slots", "2"],
                                             log: g.dir.appendingPathComponent("api-w.log"))
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let coordinator = try RemoteCoordinator(endpoint: both, timeout: .seconds(10))
        let q = RemoteOperationQueue(name: "ha", coordinator: coordinator)
        try q.addOperation(kind: "noop")
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(30)), "\(g.logs())")
        g.kill(leader)
        _ = try g.waitForLeader(timeout: 20, except: leader)
        // The new leader knows nothing of the first run (no replication yet): a new operation runs there.
        let after = RemoteOperationQueue(name: "ha-after", coordinator: coordinator)
        var added = false
        try waitUntil("the API to reach the new leader", timeout: 30, logs: g.logs) {
            if !added { added = (try? after.addOperation(kind: "noop")) != nil }
            return added
        }
        #expect(after.waitUntilAllOperationsAreFinished(timeout: .seconds(30)), "\(g.logs())")
    }

    /// A wait that began at the leader ends at the next one: the leader is killed (and stays dead) while
    /// its operation runs; the standby, which followed its journal, is elected and finishes it with the
    /// worker's report, and the API's connection moves on to it by itself instead of waiting for the
    /// dead endpoint to come back.
    @Test func aWaitBegunAtAKilledLeaderEndsAtTheNext() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let leader = try g.waitForLeader()
        let both = [g.endpoints[leader], g.endpoints[1 - leader]].joined(separator: ",")
        let worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "api-w", "--slots", "2"],
                                             log: g.dir.appendingPathComponent("api-w.log"))
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        try waitUntil("the standby in sync", timeout: 30, logs: g.logs) {
            guard case .statusReply(let s)? = g.ask(leader) else { return false }
            return s.standbys.first?.state == "sync"
        }
        let coordinator = try RemoteCoordinator(endpoint: both, timeout: .seconds(10))
        let q = RemoteOperationQueue(name: "wait-over", coordinator: coordinator)
        let marker = g.dir.appendingPathComponent("started").path
        let op = TypedRemoteOperation(ShellOperation("touch \(marker); sleep 3"))
        try q.addOperation(op)
        try waitUntil("the operation to start", timeout: 30, logs: g.logs) { FileManager.default.fileExists(atPath: marker) }
        // `opctl watch` too, watching at the leader when it dies.
        let watchLog = g.dir.appendingPathComponent("watch.log")
        let watch = try LocalCluster.launch("opctl", ["watch", "--queue", "wait-over", "--until-done", "--interval", "0.2", "--timeout", "60"],
                                            log: watchLog, env: ["OPCOORD": both])
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) }; watch.waitUntilExit() }
        let watchText = { (try? String(contentsOf: watchLog, encoding: .utf8)) ?? "" }
        try waitUntil("opctl watch to show the queue", timeout: 20, logs: watchText) { watchText().contains("wait-over") }
        g.kill(leader)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(40)), "the wait stayed at the dead leader\n\(g.logs())")
        try waitUntil("opctl watch --until-done to end", timeout: 30, logs: { watchText() + g.logs() }) { !watch.isRunning }
        #expect(watch.terminationStatus == 0, "\(watchText())")
        guard case .succeeded? = op.outcome else { Issue.record("\(String(describing: op.outcome))\n\(g.logs())"); return }
    }
}
