import ClusterTestSupport
import Foundation
import Testing

/// Fair share, concurrency keys and rate limits over real processes (A11, issue 28's "must show"): times
/// are the ones `opctl status --json` reports — submitted and dispatched on the coordinator's clock,
/// started and finished as the workers said them.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct FairShareClusterTests {
    let opctl = Binaries.path("opctl")

    struct Op {
        let id: String
        let submitted, dispatched, started, finished: Int64
    }

    /// Every op of `run`, with its times.
    func ops(_ c: LocalCluster, run: String) throws -> [Op] {
        let r = try CommandLineTests.run(opctl, ["status", "--json", "--run", run, "--limit", "100000"], env: ["OPCOORD": c.endpoint])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let list = try #require(json["operations"] as? [[String: Any]])
        func int(_ d: [String: Any], _ k: String) -> Int64 { (d[k] as? NSNumber)?.int64Value ?? 0 }
        return list.map { Op(id: $0["id"] as? String ?? "", submitted: int($0, "submitted_us"), dispatched: int($0, "dispatched_us"),
                             started: int($0, "started_us"), finished: int($0, "finished_us")) }
    }

    func graph(_ c: LocalCluster, name: String, queues: String = "", _ ops: [String]) throws -> String {
        try CommandLineTests.writeGraph((queues.isEmpty ? "" : "queues:\n\(queues)\n") + "operations:\n" + ops.joined(separator: "\n") + "\n",
                                        in: c.dir, name: name)
    }

    func submit(_ c: LocalCluster, _ file: String, run: String, as user: String, wait: Bool = false) throws {
        let r = try CommandLineTests.run(opctl, ["submit", file, "--run", run] + (wait ? ["--wait", "--timeout", "120"] : []),
                                         env: ["OPCOORD": c.endpoint, "USER": user], timeout: 150)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
    }

    func waitRun(_ c: LocalCluster, _ run: String) throws {
        let r = try CommandLineTests.run(opctl, ["wait", "--run", run, "--timeout", "120"], env: ["OPCOORD": c.endpoint], timeout: 150)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
    }

    /// Submitter A queues 5,000 ops of 10 ms on 2 workers × 2 slots; B then submits 20 at the same
    /// priority: all of B's start within 1 s (behind A's backlog they would wait ≈ 12 s).
    @Test func aSecondSubmitterStartsWithinASecondBesideAFiveThousandOpBacklog() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let a = try graph(c, name: "a.yaml", (0..<5_000).map { "  - {id: a\($0), kind: sleep, payload: 10}" })
        try submit(c, a, run: "alice-run", as: "alice")
        // A's backlog is running before B comes.
        try c.waitUntil("alice's ops to be under way") {
            try ops(c, run: "alice-run").filter { $0.finished > 0 }.count >= 20
        }
        let b = try graph(c, name: "b.yaml", (0..<20).map { "  - {id: b\($0), kind: sleep, payload: 10}" })
        try submit(c, b, run: "bob-run", as: "bob")
        try waitRun(c, "bob-run")
        let bobs = try ops(c, run: "bob-run")
        #expect(bobs.count == 20)
        let latest = bobs.map { $0.started - $0.submitted }.max() ?? .max
        print("fair share: bob's 20 ops all started within \(latest / 1_000) ms of his submit, beside alice's backlog")
        #expect(latest <= 1_000_000, "bob's last op started \(latest) µs after its submit")
        // B did not wait behind A's backlog: of A's ops not yet started when B submitted, only a few turns'
        // worth (and what workers had prefetched) started before B's last op; in FIFO order all of them
        // would. Counted from the coordinator's times, so the machine's speed does not matter (how far A
        // got before B submitted does: it only has to leave a backlog worth the name).
        let bobSubmitted = bobs.map(\.submitted).min() ?? 0, bobsLast = bobs.map(\.started).max() ?? 0
        let alice = try ops(c, run: "alice-run")
        let backlog = alice.filter { $0.started == 0 || $0.started > bobSubmitted }.count
        let passedBob = alice.filter { $0.started > bobSubmitted && $0.started <= bobsLast }.count
        print("fair share: alice had \(backlog) ops not started at bob's submit; \(passedBob) of them started before bob's last")
        #expect(backlog > 1_000, "alice had only \(backlog) ops not started when bob submitted")
        #expect(passedBob < 200, "\(passedBob) of alice's ops started between bob's submit and his last op's start: B waited behind A")
    }

    /// With `share: fifo` the order before fair share returns: B's ops wait for all of A's.
    @Test func aFifoQueueKeepsTheOrderOfArrival() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let a = try graph(c, name: "a.yaml", queues: "  - {name: default, share: fifo}",
                          (0..<200).map { "  - {id: a\($0), kind: sleep, payload: 5}" })
        try submit(c, a, run: "alice-run", as: "alice")
        let b = try graph(c, name: "b.yaml", (0..<20).map { "  - {id: b\($0), kind: sleep, payload: 5}" })
        try submit(c, b, run: "bob-run", as: "bob")
        try waitRun(c, "bob-run")
        try waitRun(c, "alice-run")
        let lastA = try ops(c, run: "alice-run").map(\.dispatched).max() ?? 0
        let firstB = try ops(c, run: "bob-run").map(\.dispatched).min() ?? 0
        #expect(firstB >= lastA, "bob's first op was dispatched before alice's last (FIFO across submitters)")
    }

    /// A `keyLimit: 2` key never has more than 2 ops executing at once, from the workers' own start and
    /// finish times; ops without the key run beside them.
    @Test func aKeyLimitOfTwoIsNeverExceeded() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let g = try graph(c, name: "k.yaml", queues: "  - {name: keyed, keyLimit: 2}",
                          (0..<16).map { "  - {id: k\($0), kind: sleep, payload: 40, queue: keyed, concurrencyKey: customer-42}" }
                          + (0..<8).map { "  - {id: f\($0), kind: sleep, payload: 40, queue: keyed}" })
        try submit(c, g, run: "keys", as: "alice", wait: true)
        let all = try ops(c, run: "keys")
        let keyed = all.filter { $0.id.hasPrefix("k") }
        #expect(keyed.count == 16 && keyed.allSatisfy { $0.started > 0 && $0.finished >= $0.started })
        // The most keyed ops running at any instant: sweep their start (+1) and finish (−1) times.
        // (A finish sorts before a start at the same instant: the place was free.)
        var events: [(at: Int64, change: Int)] = []
        for op in keyed { events.append((op.started, 1)); events.append((op.finished, -1)) }
        events.sort { a, b in a.at != b.at ? a.at < b.at : a.change < b.change }
        var running = 0, most = 0
        for e in events { running += e.change; most = max(most, running) }
        #expect(most == 2, "at most \(most) ops of key customer-42 ran at once (limit 2)")
        // Ops without a key were not held behind it: the last free op finished before the keyed ones did.
        let freeDone = all.filter { $0.id.hasPrefix("f") }.map(\.finished).max() ?? .max
        #expect(freeDone < keyed.map(\.finished).max() ?? 0)
    }

    /// `rate: 50/s` dispatches within ± 5 % over 10 s.
    @Test func aRateOfFiftyASecondHoldsOverTenSeconds() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let g = try graph(c, name: "r.yaml", queues: "  - {name: rated, rate: 50/s}",
                          (0..<560).map { "  - {id: r\($0), kind: noop, queue: rated}" })
        try submit(c, g, run: "rated", as: "alice", wait: true)
        let times = try ops(c, run: "rated").map(\.dispatched).sorted()
        let first = try #require(times.first)
        let inTen = times.filter { $0 < first + 10_000_000 }.count
        // 50/s for 10 s after the first: 500 more.
        #expect(abs(inTen - 501) <= 25, "\(inTen) dispatches in the first 10 s at 50/s")
    }

    /// `keyRate: 20/s`: each of two keys dispatches within ± 5 % of 20/s over 5 s, on its own bucket (the
    /// two together go at 40/s); ops without a key are not held by it.
    @Test func aKeyRateOfTwentyASecondHoldsForEachKey() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let ops = (0..<130).flatMap { i in ["a", "b"].map { "  - {id: \($0)\(i), kind: noop, queue: keyed, concurrencyKey: \($0)}" } }
            + (0..<20).map { "  - {id: f\($0), kind: noop, queue: keyed}" }
        let g = try graph(c, name: "k.yaml", queues: "  - {name: keyed, keyRate: 20/s}", ops)
        try submit(c, g, run: "keyed", as: "alice", wait: true)
        let all = try self.ops(c, run: "keyed")
        for key in ["a", "b"] {
            let times = all.filter { $0.id.hasPrefix(key) }.map(\.dispatched).sorted()
            let first = try #require(times.first)
            let inFive = times.filter { $0 < first + 5_000_000 }.count
            // 20/s for 5 s after the first: 100 more.
            #expect(abs(inFive - 101) <= 5, "key \(key): \(inFive) dispatches in the first 5 s at 20/s")
        }
        let free = all.filter { $0.id.hasPrefix("f") }.map(\.dispatched)
        #expect((free.max() ?? 0) - (free.min() ?? 0) < 1_000_000, "ops without a key are not rate-limited")
    }

    /// The key strategies over real processes: `cancel-newest` cancels what comes over the limit;
    /// `cancel-in-progress` cancels the running holder (on its worker) and runs the newcomer.
    @Test func keyStrategiesCancelTheNewestOrTheRunningHolder() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w1", slots: 2)
        try c.startWorker("w2", slots: 2)
        let env = ["OPCOORD": c.endpoint]
        func outcome(_ run: String, _ id: String) throws -> (String, String) {
            let r = try CommandLineTests.run(opctl, ["status", "--json", "--run", run, id], env: env)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let op = try #require((json["operations"] as? [[String: Any]])?.first)
            return (op["outcome"] as? String ?? "", op["error"] as? String ?? "")
        }
        let newest = try graph(c, name: "n.yaml", queues: "  - {name: newest, keyLimit: 1, keyStrategy: cancel-newest}",
                               (0..<3).map { "  - {id: n\($0), kind: sleep, payload: 300, queue: newest, concurrencyKey: x}" })
        let submitted = try CommandLineTests.run(opctl, ["submit", newest, "--run", "newest", "--wait", "--timeout", "60"], env: env, timeout: 90)
        #expect(submitted.status == 1, "two of three are cancelled: \(submitted.stdout)\(submitted.stderr)")
        let outcomes = try (0..<3).map { try outcome("newest", "n\($0)") }
        #expect(outcomes.filter { $0.0 == "succeeded" }.count == 1, "\(outcomes)")
        #expect(outcomes.filter { $0.0 == "cancelled" && $0.1.contains("cancel-newest") }.count == 2, "\(outcomes)")

        let old = try graph(c, name: "o.yaml", queues: "  - {name: latest, keyLimit: 1, keyStrategy: cancel-in-progress}",
                            ["  - {id: old, kind: sleep, payload: 30000, queue: latest, concurrencyKey: x}"])
        try submit(c, old, run: "old", as: "alice")
        try c.waitUntil("old to run on its worker") {
            try ops(c, run: "old").first.map { $0.started > 0 } ?? false
        }
        let new = try graph(c, name: "new.yaml", ["  - {id: new, kind: sleep, payload: 10, queue: latest, concurrencyKey: x}"])
        try submit(c, new, run: "new", as: "alice", wait: true)
        let (o, why) = try outcome("old", "old")
        #expect(o == "cancelled" && why.contains("replaced by new/new"), "\(o): \(why)")
        #expect(try outcome("new", "new").0 == "succeeded")
    }
}

