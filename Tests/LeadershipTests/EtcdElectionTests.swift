import ClusterTestSupport
import Foundation
import Leadership
import Synchronization
import Testing

/// Two campaigners against a real etcd on loopback (EtcdServer; scripts/setup installs etcd-server).
@Suite(.serialized) struct EtcdElectionTests {
    /// Records every role a driver publishes, with the time it saw it.
    final class Roles: Sendable {
        let seen = Mutex<[(at: Int64, role: LeaderElection.Role)]>([])
        func add(_ r: LeaderElection.Role) { seen.withLock { $0.append((MonotonicClock.nowMicros(), r)) } }
        var current: LeaderElection.Role? { seen.withLock { $0.last?.role } }
        var epoch: Int64? { if case .leader(let e, _)? = current { e } else { nil } }
        /// Leading now: the role says so and its deadline has not passed.
        var leading: Bool {
            if case .leader(_, let until)? = current { MonotonicClock.nowMicros() < until } else { false }
        }
    }

    static let config = LeaderElection.Config(ttlSeconds: 2, pollIntervalMicros: 50_000, retryMicros: 50_000)

    func campaigner(_ etcd: EtcdServer, _ name: String, group: String, store: LeaseStore? = nil) -> (ElectionDriver, Roles) {
        let roles = Roles()
        let store = store ?? EtcdGateway(endpoints: [etcd.clientURL], group: group, advertise: "tcp://\(name):7600")
        let d = ElectionDriver(store: store, endpoint: "tcp://\(name):7600", config: Self.config) { roles.add($0) }
        d.start()
        return (d, roles)
    }

    func group() -> String { "g\(UInt32.random(in: 0...UInt32.max))" }

    @Test func oneOfTwoIsElectedAndRenewalKeepsIt() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = group()
        let (a, ra) = campaigner(etcd, "a", group: g)
        let (b, rb) = campaigner(etcd, "b", group: g)
        try waitUntil("one of two campaigners to lead", timeout: 10, logs: { etcd.log }) { ra.leading != rb.leading }
        let (leader, follower) = ra.leading ? (ra, rb) : (rb, ra)
        // Three lease lengths later the same one still leads (renewals), the other names it.
        let until = MonotonicClock.nowMicros() + 6_000_000
        while MonotonicClock.nowMicros() < until {
            #expect(leader.leading)
            #expect(!follower.leading)
            try await Task.sleep(for: .milliseconds(100))
        }
        guard case .follower(let holder?)? = follower.current else { Issue.record("follower does not know the leader"); return }
        #expect(holder.epoch == leader.epoch)
        #expect(holder.endpoint == (leader === ra ? "tcp://a:7600" : "tcp://b:7600"))
        await a.stop()
        await b.stop()
    }

    @Test func steppingDownHandsItToTheOtherWithAHigherEpoch() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = group()
        let (a, ra) = campaigner(etcd, "a", group: g)
        try waitUntil("a to lead", timeout: 10, logs: { etcd.log }) { ra.leading }
        let (b, rb) = campaigner(etcd, "b", group: g)
        try waitUntil("b to follow a", timeout: 10) { if case .follower(_?)? = rb.current { true } else { false } }
        let first = try #require(ra.epoch)
        let asked = MonotonicClock.nowMicros()
        a.stepDown()
        try waitUntil("b to lead after a stepped down", timeout: 5, logs: { etcd.log }) { rb.leading }
        #expect(!ra.leading)
        let second = try #require(rb.epoch)
        #expect(second > first)
        // The revoke deleted the key: b took over within a poll or two, not a lease's length.
        #expect(MonotonicClock.nowMicros() - asked < 1_500_000)
        // a saw itself stop leading before b started.
        let aStopped = ra.seen.withLock { $0.first { if case .follower = $0.role { $0.at >= asked } else { false } }?.at }
        let bStarted = rb.seen.withLock { $0.first { if case .leader = $0.role { true } else { false } }?.at }
        #expect(try #require(aStopped) <= (try #require(bStarted)))
        await a.stop()
        await b.stop()
    }

    @Test func aLeaderCutOffFromEtcdStopsServingBeforeItsLeaseCouldExpire() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let (a, ra) = campaigner(etcd, "a", group: group())
        try waitUntil("a to lead", timeout: 10, logs: { etcd.log }) { ra.leading }
        guard case .leader(_, let until)? = ra.current else { Issue.record("not leading"); return }
        let killed = MonotonicClock.nowMicros()
        etcd.kill()
        // Its last renewal was sent at most ttl/3 before the kill, so it stops within ttl − margin of it.
        try waitUntil("a to stop leading without etcd", timeout: 3) { !ra.leading }
        let stopped = MonotonicClock.nowMicros()
        guard case .leader(_, let last)? = ra.seen.withLock({ $0.last { if case .leader = $0.role { true } else { false } } })?.role
        else { Issue.record("no leader role seen"); return }
        #expect(last >= until)
        #expect(last <= killed + 2_000_000 - LeaderElection.Config.defaultMargin(ttlMicros: 2_000_000))
        #expect(stopped - killed < 2_000_000)
        await a.stop()
    }

    @Test func aLeaderWhoseLeaseIsRevokedBehindItsBackStopsAndEpochsGrow() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = group()
        let (a, ra) = campaigner(etcd, "a", group: g)
        try waitUntil("a to lead", timeout: 10, logs: { etcd.log }) { ra.leading }
        let first = try #require(ra.epoch)
        // Someone else (an operator, a partition healed late) revokes a's lease.
        let lease = try #require(a.snapshot.leaseExpiresAt != nil ? leaseOf(a) : nil)
        let other = EtcdGateway(endpoints: [etcd.clientURL], group: g, advertise: "x")
        #expect(await other.perform(.revoke(lease: lease), timeout: .seconds(2)) == .revoked)
        await other.shutdown()
        // Its next renewal (due within ttl/3) hears the lease is gone: it stops, then wins again with a
        // higher epoch. The follower spell between can last a few ms (grant and campaign on loopback), too
        // short to catch by polling, so the recorded roles are checked instead.
        let revoked = MonotonicClock.nowMicros()
        try waitUntil("a to notice its lease is gone and lead again", timeout: 10, logs: { etcd.log }) { (ra.epoch ?? 0) > first }
        let roles = ra.seen.withLock { $0.filter { $0.at >= revoked } }
        let newTerm = roles.firstIndex { if case .leader(let e, _) = $0.role { e > first } else { false } }
        #expect(newTerm.map { roles[..<$0].contains { if case .follower = $0.role { true } else { false } } } == true,
                "it stopped leading before it led again: \(roles.map(\.role))")
        #expect(roles.first.map { $0.at - revoked < 2_000_000 } ?? false, "noticed within the lease")
        #expect(try #require(ra.epoch) > first)
        await a.stop()
    }

    @Test func anUnreachableEtcdURLIsSkippedForTheNext() async throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = group()
        let dead = "http://127.0.0.1:\(try freeLoopbackPort())"
        let store = EtcdGateway(endpoints: [dead, etcd.clientURL], group: g, advertise: "tcp://a:7600")
        let (a, ra) = campaigner(etcd, "a", group: g, store: store)
        try waitUntil("a to lead through the second URL", timeout: 10, logs: { etcd.log }) { ra.leading }
        let reader = EtcdGateway(endpoints: [etcd.clientURL], group: g, advertise: "x")
        let holder = try? await reader.holder(timeout: .seconds(2))
        #expect(holder == LeaderElection.Holder(endpoint: "tcp://a:7600", epoch: try #require(ra.epoch)))
        await a.stop()
    }

    func leaseOf(_ d: ElectionDriver) -> Int64? { d.leaseID }
}
