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
}
