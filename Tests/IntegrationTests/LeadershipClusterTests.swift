import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// Two opcoords with `--ha` on one real etcd (issue 29): one serves, the other refuses with NOT_LEADER
/// naming it; workers and opctl given both endpoints reach the leader, and the standby after a kill -9.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct LeadershipClusterTests {
    @Test func theStandbyRefusesEverythingNamingTheLeaderAndEpochsAreStamped() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd)
        defer { g.stop() }
        let leader = try g.waitForLeader()
        let standby = 1 - leader
        // The standby learns the holder within a poll.
        try waitUntil("the standby to name the leader", timeout: 5, logs: g.logs) {
            guard case .error(let e)? = g.ask(standby) else { return false }
            #expect(e.code == .notLeader)
            return e.message == NotLeader.text(leader: g.endpoints[leader])
        }
        guard case .statusReply(let s)? = g.ask(leader) else { Issue.record("the leader did not answer STATUS"); return }
        #expect(s.epoch > 0)
        // A worker HELLO to the standby is refused the same way (not REJECT: it may register elsewhere).
        var hello = WireHello()
        hello.protocolVersion = UInt32(WireVersion.current)
        hello.name = "h"
        hello.slots = 1
        hello.kinds = ["noop"]
        guard case .error(let refusal)? = g.ask(standby, .hello(hello)) else { Issue.record("HELLO to the standby was not refused"); return }
        #expect(refusal.code == .notLeader)
        #expect(refusal.message == NotLeader.text(leader: g.endpoints[leader]))
        #expect(refusal.epoch == 0)
        let opctl = Binaries.path("opctl")
        let viaStandby = try CommandLineTests.run(opctl, ["status"], env: ["OPCOORD": g.endpoints[standby]], timeout: 30)
        // opctl follows the redirect: one more round trip, and the leader answers.
        #expect(viaStandby.status == 0, "\(viaStandby.stderr)\n\(g.logs())")
    }

    @Test func workersAndOpctlFindTheNewLeaderAfterAKillAndStaleEpochsAreFenced() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let first = try g.waitForLeader()
        let both = g.endpoints.joined(separator: ",")
        let worker = try LocalCluster.launch("opworker", ["--connect", both, "--name", "w1", "--slots", "2"],
                                             log: g.dir.appendingPathComponent("w1.log"))
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let conn = try CoordinatorConnection(endpoint: both, timeout: .seconds(10))
        func workers() throws -> [WireWorkerInfo] {
            guard case .workersReply(let r) = try conn.request(.workers) else { throw ClusterError("no WORKERS-REPLY") }
            return r.workers
        }
        try waitUntil("w1 to register with the leader", timeout: 20, logs: { g.logs() + (try! String(contentsOf: g.dir.appendingPathComponent("w1.log"), encoding: .utf8)) }) {
            try workers().contains { $0.name == "w1" }
        }
        let epochBefore = conn.fence.highest
        #expect(epochBefore > 0)
        g.kill(first)
        let second = try g.waitForLeader(timeout: 20, except: first)
        #expect(second != first)
        // The same connection (told both endpoints) reaches the new leader, and so does the worker.
        try waitUntil("w1 to register with the new leader", timeout: 20, logs: { g.logs() + ((try? String(contentsOf: g.dir.appendingPathComponent("w1.log"), encoding: .utf8)) ?? "") }) {
            (try? workers().contains { $0.name == "w1" }) == true
        }
        #expect(conn.fence.highest > epochBefore)
        #expect(conn.endpoint == g.endpoints[second])
        // A noop submitted through opctl with both endpoints runs on the new leader's worker.
        let opctl = Binaries.path("opctl")
        let graph = try CommandLineTests.writeGraph("operations:\n  - id: after-failover\n    kind: noop\n", in: g.dir)
        let run = try CommandLineTests.run(opctl, ["submit", graph, "--wait"], env: ["OPCOORD": both], timeout: 60)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)\n\(g.logs())")
    }

    /// `opctl wait` given the standby first: its WAIT is refused NOT_LEADER like any request, and it
    /// waits at the leader the standby names (it used to exit 3 with the refusal; found by failover.sh).
    @Test func opctlWaitGivenTheStandbyFirstWaitsAtTheLeader() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd)
        defer { g.stop() }
        let leader = try g.waitForLeader()
        let standbyFirst = [g.endpoints[1 - leader], g.endpoints[leader]].joined(separator: ",")
        let worker = try LocalCluster.launch("opworker", ["--connect", standbyFirst, "--name", "w1", "--slots", "2"],
                                             log: g.dir.appendingPathComponent("w1.log"))
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let opctl = Binaries.path("opctl")
        let graph = try CommandLineTests.writeGraph("operations:\n  - {id: a, kind: noop}\n  - {id: b, kind: noop, after: [a]}\n", in: g.dir)
        let submit = try CommandLineTests.run(opctl, ["submit", graph, "--run", "w"], env: ["OPCOORD": standbyFirst], timeout: 30)
        try #require(submit.status == 0, "\(submit.stderr)\n\(g.logs())")
        let wait = try CommandLineTests.run(opctl, ["wait", "--run", "w", "--timeout", "30"], env: ["OPCOORD": standbyFirst], timeout: 60)
        #expect(wait.status == 0, "\(wait.stdout)\n\(wait.stderr)\n\(g.logs())")
        #expect(wait.stdout.contains("finished: 2 succeeded"), "\(wait.stdout)")
    }

    /// `opctl wait` given both endpoints, waiting at a leader that goes silent (frozen: as good as cut off;
    /// its connection does not close): once ZMTP's heartbeat says the link is lost it goes on at the other
    /// endpoint, elected meanwhile, and sees the run finish there (it used to wait for the silent one).
    @Test func opctlWaitMovesOnFromASilentLeaderToTheNextOne() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, leaseTTL: 1, coordinatorArgs: ["--heartbeat-ms", "200"])
        defer { g.stop() }
        let first = try g.waitForLeader()
        let leaderFirst = [g.endpoints[first], g.endpoints[1 - first]].joined(separator: ",")
        try waitUntil("the standby to be in sync", timeout: 30, logs: g.logs) {
            guard case .statusReply(let s)? = g.ask(first) else { return false }
            return s.standbys.first?.state == "sync"
        }
        let opctl = Binaries.path("opctl")
        let graph = try CommandLineTests.writeGraph("operations:\n  - {id: a, kind: noop}\n", in: g.dir)
        let submit = try CommandLineTests.run(opctl, ["submit", graph, "--run", "s"], env: ["OPCOORD": leaderFirst], timeout: 30)
        try #require(submit.status == 0, "\(submit.stderr)\n\(g.logs())")
        // No worker yet: the WAIT stays open at the leader.
        let waitOut = g.dir.appendingPathComponent("wait.out")
        let waiter = try LocalCluster.launch("opctl", ["wait", "--run", "s", "--timeout", "60"], log: waitOut, env: ["OPCOORD": leaderFirst])
        defer { if waiter.isRunning { kill(waiter.processIdentifier, SIGKILL) }; waiter.waitUntilExit() }
        // Connected to the leader (its WAIT follows the handshake at once) before the leader goes silent.
        let port = g.endpoints[first].split(separator: ":").last.map(String.init) ?? ""
        try waitUntil("opctl wait to connect to the leader", timeout: 10, logs: g.logs) {
            let ss = try CommandLineTests.run("/usr/bin/ss", ["-tnpH", "state", "established", "dport", "= :\(port)"], timeout: 5)
            return ss.stdout.contains("pid=\(waiter.processIdentifier),")
        }
        let pid = g.processes[first]!.processIdentifier
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        let second = try g.waitForLeader(timeout: 20, except: first)
        let worker = try LocalCluster.launch("opworker", ["--connect", g.endpoints[second], "--name", "w1", "--slots", "1"],
                                             log: g.dir.appendingPathComponent("w1.log"))
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        try waitUntil("opctl wait to finish at the new leader", timeout: 30, logs: { g.logs() + ((try? String(contentsOf: waitOut, encoding: .utf8)) ?? "") }) {
            !waiter.isRunning
        }
        let out = (try? String(contentsOf: waitOut, encoding: .utf8)) ?? ""
        #expect(waiter.terminationStatus == 0, "\(out)")
        #expect(out.contains("finished: 1 succeeded"), "\(out)")
    }

    @Test func haStatusListsEveryCoordinatorAndStepDownHandsLeadershipOver() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, coordinatorArgs: ["--http", "127.0.0.1:0"])
        defer { g.stop() }
        let first = try g.waitForLeader()
        let opctl = Binaries.path("opctl")
        let both = g.endpoints.joined(separator: ",")
        // The other follows the leader's journal (a hot standby): `ha status` lists it under the leader.
        try waitUntil("the standby in sync", timeout: 30, logs: g.logs) {
            guard case .statusReply(let s)? = g.ask(first) else { return false }
            return s.standbys.first?.state == "sync"
        }
        var status = try CommandLineTests.run(opctl, ["ha", "status"], env: ["OPCOORD": both], timeout: 30)
        #expect(status.status == 0, "\(status.stderr)")
        let tables = status.stdout.components(separatedBy: "\n\n")
        let lines = tables[0].split(separator: "\n")
        #expect(lines.count == 3, "\(status.stdout)")
        let standbys = tables.count == 2 ? tables[1].split(separator: "\n") : []
        #expect(standbys.count == 2 && standbys[1].hasPrefix(g.endpoints[first]) && standbys[1].contains(g.endpoints[1 - first])
                && standbys[1].contains("sync (sync)"), "the standby and its lag under the leader: \(status.stdout)")
        #expect(lines.contains { $0.hasPrefix(g.endpoints[first]) && $0.contains(" leader ") }, "\(status.stdout)")
        #expect(lines.contains { $0.hasPrefix(g.endpoints[1 - first]) && $0.contains(" standby ") && $0.contains(g.endpoints[first]) },
                "\(status.stdout)")
        // /metrics of the leader says it leads.
        let base = try httpBase(g, first)
        var m: [String: Double] = [:]
        // Published once a second: the first may be from before it led.
        try waitUntil("/metrics to show the leader", timeout: 5) {
            m = try HTTPSideTests.metrics(base)
            return m["opqueue_ha_leader"] == 1
        }
        #expect((m["opqueue_ha_epoch"] ?? 0) > 0)
        #expect(m["opqueue_ha_elections_won_total"] == 1)
        let epoch = UInt64(m["opqueue_ha_epoch"] ?? 0)
        // The standby's dashboard JSON says it is a standby and names the leader (it does not proxy).
        let standbyBase = try httpBase(g, 1 - first)
        let (code, body) = try HTTPSideTests.get(standbyBase + "/api/summary")
        #expect(code == 503, "\(body)")
        #expect(body.contains("NOT_LEADER") && body.contains(g.endpoints[first]), "\(body)")
        // Step down through the standby (it names the leader): the other leads within a second, higher epoch.
        let down = try CommandLineTests.run(opctl, ["ha", "step-down"], env: ["OPCOORD": g.endpoints[1 - first]], timeout: 30)
        #expect(down.status == 0, "\(down.stderr)\n\(g.logs())")
        #expect(down.stdout.contains("\(g.endpoints[first]) stepped down"), "\(down.stdout)")
        let second = try g.waitForLeader(timeout: 5, except: first)
        #expect(second != first)
        guard case .statusReply(let s)? = g.ask(second) else { Issue.record("no STATUS-REPLY"); return }
        #expect(s.epoch > epoch)
        try waitUntil("the old leader to refuse as a standby", timeout: 5, logs: g.logs) {
            if case .error(let e)? = g.ask(first) { return e.code == .notLeader } else { return false }
        }
        status = try CommandLineTests.run(opctl, ["ha", "status", "--json"], env: ["OPCOORD": both], timeout: 30)
        #expect(status.stdout.split(separator: "\n").count == 2, "\(status.stdout)")
    }

    /// The HTTP side's base URL of coordinator `i`, from its log.
    func httpBase(_ g: HAGroup, _ i: Int) throws -> String {
        var found: String?
        try waitUntil("coordinator \(i)'s HTTP side", timeout: 20) {
            let log = g.log(i)
            guard let range = log.range(of: "dashboard and /metrics on http://", options: .backwards) else { return false }
            found = "http://" + log[range.upperBound...].prefix { $0 != "/" && !$0.isWhitespace }
            return true
        }
        return found!
    }

    @Test func aLeaderCutOffFromEtcdStopsAnsweringBeforeItsLeaseCouldExpire() throws {
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, count: 1)
        defer { g.stop() }
        _ = try g.waitForLeader()
        let killed = ContinuousClock.now
        etcd.kill()
        // Its last renewal was sent at most TTL/3 before: it refuses within TTL − margin (1.75 s) of it.
        try waitUntil("the leader to stop serving without etcd", timeout: 3, interval: .milliseconds(10), logs: g.logs) {
            if case .error(let e)? = g.ask(0, timeout: .milliseconds(100)) { return e.code == .notLeader } else { return false }
        }
        let took = ContinuousClock.now - killed
        #expect(took < .milliseconds(1900), "stopped \(took) after etcd died")
        #expect(g.log(0).contains("stopped serving"))
    }

    /// SIGKILL of the leader → first STATUS accepted by the new one (through a client given both
    /// endpoints), over a few failovers with the killed one restarted as a standby each time.
    /// OPQ_HA_TAKEOVER_RUNS and OPQ_HA_TAKEOVER_TTL change the count (4) and the lease (2 s) for a measurement.
    @Test func takeoverTime() throws {
        let env = ProcessInfo.processInfo.environment
        let runs = env["OPQ_HA_TAKEOVER_RUNS"].flatMap { Int($0) } ?? 4
        let ttl = env["OPQ_HA_TAKEOVER_TTL"].flatMap { Int($0) } ?? 2
        let etcd = try EtcdServer()
        defer { etcd.stop() }
        let g = try HAGroup(etcd: etcd, leaseTTL: ttl)
        defer { g.stop() }
        var leader = try g.waitForLeader()
        let both = g.endpoints.joined(separator: ",")
        var times: [Double] = []
        for _ in 0..<runs {
            let killed = ContinuousClock.now
            g.kill(leader)
            let conn = try CoordinatorConnection(endpoint: both, timeout: .seconds(10))
            var accepted = false
            while !accepted, ContinuousClock.now - killed < .seconds(15) {
                if case .statusReply? = try? conn.request(.status(WireStatus()), timeout: .seconds(10)) { accepted = true }
            }
            #expect(accepted, "\(g.logs())")
            let took = ContinuousClock.now - killed
            times.append(Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
            conn.close()
            let next = try g.waitForLeader(timeout: 5, except: leader)
            try g.start(leader)   // back as a standby
            leader = next
        }
        let sorted = times.sorted()
        print("takeover (SIGKILL → first request accepted, lease TTL \(ttl) s, \(runs) runs): p50 \(String(format: "%.2f", sorted[sorted.count / 2])) s, max \(String(format: "%.2f", sorted.last ?? 0)) s; all: \(times.map { String(format: "%.2f", $0) }.joined(separator: ", "))")
        #expect(times.allSatisfy { $0 < Double(ttl) + 2 })
    }
}

/// `opcoord --ha …` refuses what cannot work, naming the option.
@Suite struct LeadershipOptionTests {
    func refusal(_ args: [String]) throws -> String {
        let r = try CommandLineTests.run(Binaries.path("opcoord"), ["--ephemeral", "--http", "off"] + args, timeout: 30)
        #expect(r.status != 0)
        return r.stderr
    }

    @Test func haStatusOfACoordinatorWithoutHA() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let r = try CommandLineTests.run(Binaries.path("opctl"), ["ha", "status"], env: ["OPCOORD": c.endpoint], timeout: 30)
        #expect(r.status == 0)
        #expect(r.stdout.contains("single (no --ha)"), "\(r.stdout)")
        let down = try CommandLineTests.run(Binaries.path("opctl"), ["ha", "step-down"], env: ["OPCOORD": c.endpoint], timeout: 30)
        #expect(down.status == 3)
        #expect(down.stderr.contains("runs without --ha"), "\(down.stderr)")
    }

    @Test func badHAOptionsAreRefusedWithTheReason() throws {
        #expect(try refusal(["--ha", "zookeeper=http://a:1", "--ha-group", "g", "--advertise", "tcp://a:1"]).contains("names no store"))
        #expect(try refusal(["--ha", "etcd=", "--ha-group", "g", "--advertise", "tcp://a:1"]).contains("at least one etcd URL"))
        #expect(try refusal(["--ha", "etcd=http://a", "--ha-group", "g", "--advertise", "tcp://a:1"]).contains("is not an etcd client URL"))
        #expect(try refusal(["--ha", "etcd=https://a:2379", "--ha-group", "g", "--advertise", "tcp://a:1"]).contains("https is not supported"))
        #expect(try refusal(["--ha", "etcd=http://a:2379", "--advertise", "tcp://a:1"]).contains("--ha needs --ha-group"))
        #expect(try refusal(["--ha", "etcd=http://a:2379", "--ha-group", "a/b", "--advertise", "tcp://a:1"]).contains("--ha-group 'a/b'"))
        #expect(try refusal(["--ha", "etcd=http://a:2379", "--ha-group", "g"]).contains("--ha needs --advertise"))
        #expect(try refusal(["--ha", "etcd=http://a:2379", "--ha-group", "g", "--advertise", "tcp://0.0.0.0:7600"]).contains("wildcard"))
        #expect(try refusal(["--ha", "etcd=http://a:2379", "--ha-group", "g", "--advertise", "tcp://a:*"]).contains("port"))
        #expect(try refusal(["--ha-group", "g"]).contains("needs --ha"))
        #expect(try refusal(["--advertise", "tcp://a:1"]).contains("needs --ha"))
    }
}
