import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// Fair share end to end through opctl (A11): a graph's `queues:` settings, `opctl share` changing only what
/// it is given, `opctl status` showing them, their errors and exit codes, admin only with keys, and the
/// settings surviving a restart (the journal).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FairShareCommandLineTests {
    let opctl = Binaries.path("opctl")

    @Test func shareSettingsFromAGraphAndOpctlShowInStatusAndSurviveARestart() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let env = ["OPCOORD": c.endpoint]
        let graph = try CommandLineTests.writeGraph("""
            queues:
              - {name: shared, share: key, weights: {team-a: 3}, keyLimit: 2, rate: 50/s, burst: 5, ageing: 30s}
              - {name: plain}
            operations:
              - {id: a, kind: noop, queue: shared, share: team-a, concurrencyKey: customer-42}
              - {id: b, kind: noop, queue: plain}
            """, in: c.dir)
        let submitted = try CommandLineTests.run(opctl, ["submit", graph], env: env)
        #expect(submitted.status == 0, "\(submitted.stdout)\(submitted.stderr)")

        func status() throws -> String {
            let s = try CommandLineTests.run(opctl, ["status", "--queues-only"], env: env)
            #expect(s.status == 0, "\(s.stderr)")
            return s.stdout
        }
        var text = try status()
        #expect(text.contains("queue shared: share key; weights team-a=3; key limit 2 (wait); rate 50/s, burst 5; ageing 30s"), "\(text)")
        #expect(!text.contains("queue plain:"), "a queue with one share and no limits gets no lines: \(text)")

        // Only what is given changes.
        let set = try CommandLineTests.run(opctl, ["share", "shared", "--key-limit", "4", "--key-strategy", "cancel-newest",
                                                   "--weight", "team-b=7"], env: env)
        #expect(set.status == 0 && set.stdout.contains("queue shared fair share set"), "\(set.stdout)\(set.stderr)")
        text = try status()
        #expect(text.contains("queue shared: share key; weights team-a=3,team-b=7; key limit 4 (cancel-newest); rate 50/s, burst 5; ageing 30s"), "\(text)")

        let off = try CommandLineTests.run(opctl, ["share", "shared", "--no-rate", "--mode", "fifo", "--reset-weights", "--no-ageing"], env: env)
        #expect(off.status == 0, "\(off.stderr)")
        let json = try CommandLineTests.run(opctl, ["status", "--json", "--queues-only"], env: env)
        #expect(json.stdout.contains(#""share":"fifo""#) && !json.stdout.contains("rate_per_second"), "\(json.stdout)")
        #expect(!json.stdout.contains("ageing_us"), "\(json.stdout)")
        #expect(json.stdout.contains(#""key_limit":4"#), "\(json.stdout)")

        // Mistakes: the arguments (64), the coordinator's refusal (3), an unknown queue (5).
        for (args, words) in [(["share", "shared"], "nothing to change"), (["share", "shared", "--weight", "a=0"], "1...1000"),
                              (["share", "shared", "--rate", "5/d"], "unknown rate unit"),
                              (["share", "shared", "--no-rate", "--rate", "5/s"], "--no-rate removes"),
                              (["share", "shared", "--ageing", "0.5ms"], "--ageing: must be 1ms to 24h"),
                              (["share", "shared", "--no-ageing", "--ageing", "5s"], "--no-ageing turns")] {
            let r = try CommandLineTests.run(opctl, args, env: env)
            #expect(r.status == 64 && r.stderr.contains(words), "\(args): \(r.status) \(r.stderr)")
        }
        let burst = try CommandLineTests.run(opctl, ["share", "shared", "--burst", "3"], env: env)
        #expect(burst.status == 3 && burst.stderr.contains("without a rate"), "\(burst.status) \(burst.stderr)")
        let unknown = try CommandLineTests.run(opctl, ["share", "nosuch", "--key-limit", "1"], env: env)
        #expect(unknown.status == 5, "\(unknown.status) \(unknown.stderr)")

        // The journal keeps them.
        _ = try CommandLineTests.run(opctl, ["share", "shared", "--rate", "120/m", "--burst", "2", "--ageing", "2m"], env: env)
        _ = try c.restartCoordinator()
        let q = try #require(try c.statusReply().queues.first { $0.name == "shared" })
        #expect(q.fairness.share == .fifo && q.fairness.keyLimit == 4 && q.fairness.keyStrategy == .cancelNewest, "\(q)")
        #expect(q.fairness.ratePerSecond == 2 && q.fairness.burst == 2 && q.fairness.weights.isEmpty, "\(q)")
        #expect(q.fairness.ageingUs == 120_000_000, "\(q)")
    }

    /// The per-key rate: set in a graph and with `opctl share --key-rate/--key-burst`, shown by status, named
    /// by why (the key and its next token), its mistakes refused, kept by the journal.
    @Test func keyRateFromAGraphAndOpctlShowsInStatusAndWhy() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let env = ["OPCOORD": c.endpoint]
        try c.startWorker("w1", slots: 2)
        let graph = try CommandLineTests.writeGraph("""
            queues:
              - {name: keyed, keyRate: 1/m, keyBurst: 1}
              - {name: plain}
            operations:
              - {id: k0, kind: noop, queue: keyed, concurrencyKey: customer-7}
              - {id: k1, kind: noop, queue: keyed, concurrencyKey: customer-7}
            """, in: c.dir)
        let submitted = try CommandLineTests.run(opctl, ["submit", graph, "--run", "kr"], env: env)
        #expect(submitted.status == 0, "\(submitted.stdout)\(submitted.stderr)")
        var why = ""
        try c.waitUntil("k1 to wait for its key's token") {
            why = try CommandLineTests.run(opctl, ["why", "kr/k1"], env: env).stdout
            return why.contains("concurrency key customer-7 is at its rate limit: next token in")
        }
        func status() throws -> String { try CommandLineTests.run(opctl, ["status", "--queues-only"], env: env).stdout }
        var text = try status()
        #expect(text.contains("queue keyed: share submitter; key rate 1/m, key burst 1"), "\(text)")
        let set = try CommandLineTests.run(opctl, ["share", "keyed", "--key-rate", "10/s", "--key-burst", "3"], env: env)
        #expect(set.status == 0, "\(set.stdout)\(set.stderr)")
        text = try status()
        #expect(text.contains("key rate 10/s, key burst 3"), "\(text)")
        // The faster rate lets the waiter go.
        let done = try CommandLineTests.run(opctl, ["wait", "--run", "kr", "--timeout", "30"], env: env, timeout: 40)
        #expect(done.status == 0, "\(done.stdout)\(done.stderr)")
        for (args, words) in [(["share", "keyed", "--key-rate", "5/d"], "--key-rate: unknown rate unit"),
                              (["share", "keyed", "--no-key-rate", "--key-burst", "2"], "--no-key-rate removes"),
                              (["share", "keyed", "--key-burst", "0"], "--key-burst must be 1...1000000")] {
            let r = try CommandLineTests.run(opctl, args, env: env)
            #expect(r.status == 64 && r.stderr.contains(words), "\(args): \(r.status) \(r.stderr)")
        }
        let burst = try CommandLineTests.run(opctl, ["share", "plain", "--key-burst", "3"], env: env)
        #expect(burst.status == 3 && burst.stderr.contains("without a key rate"), "\(burst.status) \(burst.stderr)")
        _ = try c.restartCoordinator()
        let q = try #require(try c.statusReply().queues.first { $0.name == "keyed" })
        #expect(q.fairness.keyRatePerSecond == 10 && q.fairness.keyBurst == 3, "\(q)")
        _ = try CommandLineTests.run(opctl, ["share", "keyed", "--no-key-rate"], env: env)
        let json = try CommandLineTests.run(opctl, ["status", "--json", "--queues-only"], env: env)
        #expect(!json.stdout.contains("key_rate_per_second"), "\(json.stdout)")
    }

    @Test func onlyAnAdminSetsFairness() throws {
        let c = try LocalCluster(journal: false, keys: true)
        defer { c.stop() }
        try c.addKey("team-a", roles: "submit", scopes: ["team-a/*"])
        let graph = try CommandLineTests.writeGraph("""
            queues:
              - {name: team-a/q, keyLimit: 2}
            operations:
              - {id: a, kind: noop, queue: team-a/q}
            """, in: c.dir)
        let base = ["--coordinator", c.endpoint]
        let refused = try CommandLineTests.run(opctl, ["submit", graph] + base + c.keyArguments("team-a"))
        #expect(refused.status != 0 && refused.stderr.contains("creates it with fair-share settings other than the default"),
                "\(refused.status) \(refused.stderr)")
        let share = try CommandLineTests.run(opctl, ["share", "team-a/q", "--key-limit", "1"] + base + c.keyArguments("team-a"))
        #expect(share.status == 3 && share.stderr.contains("needs the 'admin' role"), "\(share.status) \(share.stderr)")
        let admin = try CommandLineTests.run(opctl, ["submit", graph] + base + c.keyArguments("admin"))
        #expect(admin.status == 0, "\(admin.stdout)\(admin.stderr)")
        // The same settings again are no change: the team's own file now goes through.
        let again = try CommandLineTests.run(opctl, ["submit", graph] + base + c.keyArguments("team-a"))
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
    }
}
