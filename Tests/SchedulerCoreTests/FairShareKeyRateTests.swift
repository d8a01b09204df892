import Testing
@testable import SchedulerCore

/// Rate limits per concurrency key (`QueueFairness.keyRate`, A11), on the core alone with the harness
/// (the whole state validated after every input, key-rate wakes included). Time moves only by `h.now`.
extension FairShareTests {
    static func keyRateHarness(_ config: SchedulerConfig = SchedulerConfig()) -> Harness {
        var c = config
        c.heartbeatIntervalMicros = 60_000_000   // the scripted worker sends no heartbeats
        return Harness(config: c)
    }

    static func bare(_ d: Dispatch) -> String { String(d.op.split(separator: "/").last!) }

    /// Ticks at the times the core asks for (the tick it asked for last, then each tick's), up to `until`;
    /// returns each dispatch in `out` and after (bare op id) with its time, and the dispatches themselves.
    @discardableResult
    static func tickUntil(_ h: inout Harness, _ out: [Action], until: Int64) -> [(String, Int64, Dispatch)] {
        var out = out
        if h.s.requestedTick != .max { out.append(.scheduleTick(at: h.s.requestedTick)) }
        var seen: [(String, Int64, Dispatch)] = []
        while true {
            seen += dispatches(out).map { (bare($0), h.now, $0) }
            guard let next = out.compactMap({ a -> Int64? in if case .scheduleTick(let at) = a { at } else { nil } }).min(),
                  next <= until else { break }
            h.now = max(h.now + 1, next)
            out = h.send(.tick)
        }
        return seen
    }

    @Test func aKeyRateStartsItsBurstThenOnePerInterval() {
        var h = Self.keyRateHarness()
        h.join(1, slots: 100, credit: 100)
        let rated = QueueSpec(name: "default", fairness: QueueFairness(keyRate: RateLimit(perSecond: 10, burst: 2)))
        let ops = (0..<20).map { OperationSpec(id: "k\($0)", concurrencyKey: "k") }
            + (0..<2).map { OperationSpec(id: "o\($0)", concurrencyKey: "other") }
            + (0..<3).map { OperationSpec(id: "free\($0)") }
        let start = h.now
        let out = h.send(.submit(h.ref(), ops: ops, queues: [rated]))
        // The burst of each key at once; the other key has its own bucket; ops without a key are not limited.
        #expect(Set(dispatches(out).map(Self.bare)) == ["k0", "k1", "o0", "o1", "free0", "free1", "free2"])
        guard case .keyRateLimited(let key, let at) = h.s.why("k2") else { Issue.record("k2: \(h.s.why("k2"))"); return }
        #expect(key == "k" && at == start + 100_000)
        #expect(h.s.fairnessStatus("default")!.keys.first { $0.name == "k" }?.waiting == 18)
        // Then one every 100 ms, in submission order.
        let later = Self.tickUntil(&h, out, until: start + 3_000_000).filter { $0.0.hasPrefix("k") && !["k0", "k1"].contains($0.0) }
        #expect(later.map(\.0) == (2..<20).map { "k\($0)" })
        #expect(later.map { $0.1 - start } == (1..<19).map { Int64($0) * 100_000 }, "\(later.map { $0.1 - start })")
        #expect(h.s.timers.keyRates.isEmpty || h.s.concurrencyKeys.allSatisfy { $0.rateWakeAt == .max || $0.waiting.isEmpty })
    }

    @Test func aKeyRateAndAKeyLimitBothHold() {
        var h = Self.keyRateHarness()
        h.join(1, slots: 100, credit: 100)
        let q = QueueSpec(name: "default", fairness: QueueFairness(keyLimit: 1, keyRate: RateLimit(perSecond: 10, burst: 3)))
        let start = h.now
        let (_, first) = h.submit((0..<6).map { OperationSpec(id: "k\($0)", concurrencyKey: "k") }, queues: [q])
        #expect(first.map(Self.bare) == ["k0"], "the limit of 1 holds the rest")
        // The burst of 3 lets each next op go at once as its predecessor finishes…
        let second = dispatches(h.finish(first[0]))
        #expect(second.map(Self.bare) == ["k1"])
        let third = dispatches(h.finish(second[0]))
        #expect(third.map(Self.bare) == ["k2"])
        // …then the key has a place but no token: k3 waits for the token at +100 ms.
        var out = h.finish(third[0])
        #expect(dispatches(out).isEmpty)
        guard case .keyRateLimited(_, let at) = h.s.why("k3") else { Issue.record("k3: \(h.s.why("k3"))"); return }
        #expect(at == start + 100_000)
        let fourth = Self.tickUntil(&h, out, until: start + 200_000)
        #expect(fourth.map(\.0) == ["k3"] && fourth.first?.1 == start + 100_000, "\(fourth)")
        // k3 holds the key's one place: k4 waits for it, not for a token.
        guard case .heldByConcurrencyKey(_, let limit, let holders) = h.s.why("k4") else { Issue.record("k4: \(h.s.why("k4"))"); return }
        #expect(limit == 1 && holders.count == 1)
        // Finished at +250 ms: the token of +200 ms is there, k4 goes at once; k5 then waits for +300 ms.
        h.now = start + 250_000
        out = h.finish(fourth[0].2)
        let k4 = dispatches(out)
        #expect(k4.map(Self.bare) == ["k4"])
        guard !k4.isEmpty else { return }
        let out2 = h.finish(k4[0])
        #expect(dispatches(out2).isEmpty)
        let last = Self.tickUntil(&h, [], until: start + 1_000_000)
        #expect(last.map(\.0) == ["k5"] && last.first?.1 == start + 300_000, "\(last)")
    }

    @Test func keyRateStateAndWakesSurviveCompaction() {
        var h = Self.keyRateHarness(config(retainRuns: 1, compactMinimum: 1))
        h.join(1, slots: 100, credit: 100)
        let q = QueueSpec(name: "default", fairness: QueueFairness(keyRate: RateLimit(perSecond: 10)))
        func run(_ name: String, _ ops: [OperationSpec]) -> [Action] {
            let out = h.send(.submit(h.ref(), ops: ops, queues: [q], run: .new(submitter: "u")))
            guard case .accepted? = replies(out).first else { Issue.record("\(name) not accepted: \(replies(out))"); return [] }
            return out
        }
        // Ten short-lived keys first, so the live key's number moves down when they are dropped.
        for k in 0..<10 { h.drain(dispatches(run("r\(k)", [OperationSpec(id: "o", concurrencyKey: "c\(k)")]))) }
        let start = h.now
        let out = run("keep", (0..<5).map { OperationSpec(id: "live\($0)", concurrencyKey: "live") })
        #expect(dispatches(out).map(Self.bare) == ["live0"])
        guard let live0 = dispatches(out).first?.op else { return }
        let live1 = live0.replacingOccurrences(of: "live0", with: "live1")
        let before = h.s.concurrencyKeyIndex[QueueScopedName(queue: QueueIndex(raw: 0), name: "live")]
        // Many more runs: the old keys are dropped at compaction, "live" is renumbered with its wake.
        h.now += 30_000
        for k in 10..<50 { h.drain(dispatches(run("r\(k)", [OperationSpec(id: "o", concurrencyKey: "c\(k)")]))) }
        #expect(h.s.compactions > 0)
        let after = h.s.concurrencyKeyIndex[QueueScopedName(queue: QueueIndex(raw: 0), name: "live")]
        #expect(before != nil && after != nil && after! < before!, "renumbered: \(String(describing: before)) → \(String(describing: after))")
        guard case .keyRateLimited(let key, let at) = h.s.why(live1) else { Issue.record("live1: \(h.s.why(live1))"); return }
        #expect(key == "live" && at == start + 100_000)
        // The ticks still bring one live op per 100 ms.
        let rest = Self.tickUntil(&h, [], until: start + 1_000_000)
        #expect(rest.map(\.0) == (1..<5).map { "live\($0)" }, "\(rest)")
        #expect(rest.map { $0.1 - start } == [100_000, 200_000, 300_000, 400_000])
    }

    @Test func removingTheKeyRateReleasesItsWaiters() {
        var h = Self.keyRateHarness()
        h.join(1, slots: 100, credit: 100)
        let q = QueueSpec(name: "default", fairness: QueueFairness(keyRate: RateLimit(perSecond: 1)))
        let (_, first) = h.submit((0..<4).map { OperationSpec(id: "k\($0)", concurrencyKey: "k") }, queues: [q])
        #expect(first.count == 1)
        let out = h.send(.setQueueFairness(h.ref(), queue: "default", QueueFairness()))
        #expect(Set(dispatches(out).map(Self.bare)) == ["k1", "k2", "k3"])
    }

    /// A faster key rate owes at most one of its own intervals, not the rest of the old rate's.
    @Test func aFasterKeyRateDoesNotWaitOutTheOldInterval() {
        var h = Self.keyRateHarness()
        h.join(1, slots: 100, credit: 100)
        let q = QueueSpec(name: "default", fairness: QueueFairness(keyRate: RateLimit(perSecond: 1.0 / 60)))
        let start = h.now
        let (_, first) = h.submit((0..<3).map { OperationSpec(id: "k\($0)", concurrencyKey: "k") }, queues: [q])
        #expect(first.map(Self.bare) == ["k0"])
        let out = h.send(.setQueueFairness(h.ref(), queue: "default", QueueFairness(keyRate: RateLimit(perSecond: 10))))
        #expect(dispatches(out).isEmpty)
        let next = Self.tickUntil(&h, out, until: start + 1_000_000)
        #expect(next.map(\.0) == ["k1", "k2"] && next.map { $0.1 - start } == [100_000, 200_000], "\(next.map { ($0.0, $0.1 - start) })")
    }
}
