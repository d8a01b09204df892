import Testing
@testable import SchedulerCore

/// Fair share, concurrency keys and rate limits (A11), on the core alone: the harness validates the
/// whole state (share counts, fronts, key holders) after every input.
@Suite struct FairShareTests {
    /// Submits `n` noops as `submitter` in a new run; returns what was dispatched at once.
    @discardableResult
    static func submit(_ h: inout Harness, _ submitter: String, _ n: Int, prefix: String, queue: String = "default",
                       priority: Int = 0, share: String? = nil, key: String? = nil, queues: [QueueSpec] = []) -> [Dispatch] {
        let specs = (0..<n).map { i in
            OperationSpec(id: "\(prefix)\(i)", queue: queue, priority: OperationPriority(rawValue: priority)!,
                          share: share, concurrencyKey: key)
        }
        let out = h.send(.submit(h.ref(), ops: specs, queues: queues, run: .new(submitter: submitter)))
        guard case .accepted? = replies(out).first else { Issue.record("not accepted: \(replies(out))"); return [] }
        return dispatches(out)
    }

    /// Finishes one dispatch at a time (FIFO) and returns the bare op ids in dispatch order, at most `limit`.
    static func order(_ h: inout Harness, _ first: [Dispatch], limit: Int) -> [String] {
        h.drain(first, limit: limit).map { String($0.split(separator: "/").last!) }
    }

    @Test func aLaterSubmitterTakesTurnsInsteadOfWaitingForTheBacklog() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        let held = Self.submit(&h, "alice", 200, prefix: "a")
        #expect(Self.submit(&h, "bob", 20, prefix: "b").isEmpty)
        // The worker holds a0; from here on, alice and bob take turns of `ShareTable.turn` dispatches until
        // bob's 20 are done: a0…a8, b0…b7, a9…a16, b8…b15, a17…a24, b16…b19.
        let order = Self.order(&h, held, limit: 60)
        let turn = Int(ShareTable.turn)
        let bobs = order.prefix(20 + 20 + turn + 1).filter { $0.hasPrefix("b") }.count
        #expect(bobs == 20, "bob's ops within the first \(20 + 20 + turn + 1) dispatches: \(bobs); order \(order.prefix(50))")
        #expect(Array(order[9..<17]) == (0..<8).map { "b\($0)" }, "bob's first turn comes right after alice's: \(order.prefix(20))")
        // Inside each share the order is FIFO.
        #expect(order.filter { $0.hasPrefix("b") } == (0..<20).map { "b\($0)" })
        #expect(order.filter { $0.hasPrefix("a") } == Array((0..<200).map { "a\($0)" }.prefix(order.filter { $0.hasPrefix("a") }.count)))
    }

    @Test func fifoModeKeepsTheOrderOfArrival() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        let fifo = QueueSpec(name: "default", fairness: QueueFairness(share: .fifo))
        let first = Self.submit(&h, "alice", 50, prefix: "a", queues: [fifo])
        Self.submit(&h, "bob", 5, prefix: "b")
        let order = Self.order(&h, first, limit: 100)
        #expect(order == (0..<50).map { "a\($0)" } + (0..<5).map { "b\($0)" })
    }

    @Test func priorityStillBeatsAnyShare() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        let first = Self.submit(&h, "alice", 30, prefix: "a")
        Self.submit(&h, "bob", 30, prefix: "b")
        Self.submit(&h, "alice", 3, prefix: "high", priority: 8)
        let order = Self.order(&h, first, limit: 100)
        // a0 was already on the worker; the three veryHigh ops go next, whatever alice's share used.
        #expect(Array(order.dropFirst().prefix(3)) == ["high0", "high1", "high2"], "\(order.prefix(6))")
    }

    @Test func weightsShareTheDispatchesWithinFivePercent() {
        var h = Harness()
        h.validateEachStep = false   // 100,000 steps: validated every 1,000 below
        h.join(1, slots: 1, credit: 1)
        let weighted = QueueSpec(name: "default", fairness: QueueFairness(share: .submitter, weights: ["a": 3, "b": 1]))
        var pending = Self.submit(&h, "a", 100_000, prefix: "a", queues: [weighted])
        Self.submit(&h, "b", 100_000, prefix: "b")
        var counts: [Character: Int] = [:]
        for step in 0..<100_000 {
            let d = pending.removeFirst()
            counts[d.op.split(separator: "/").last!.first!, default: 0] += 1
            pending += dispatches(h.finish(d))
            if step % 1_000 == 0 { #expect(h.s.validate().isEmpty) }
        }
        let share = Double(counts["a"]!) / 100_000
        #expect(abs(share - 0.75) <= 0.75 * 0.05, "a's share \(share), expected 0.75")
    }

    @Test func aThousandShareKeysNoneStarves() {
        var h = Harness()
        h.validateEachStep = false
        h.join(1, slots: 1, credit: 1)
        var pending: [Dispatch] = []
        for k in 0..<1_000 { pending += Self.submit(&h, "team\(k)", 10, prefix: "t\(k)-") }
        var lastSeen: [String: Int] = [:]
        var longestGap = 0
        for step in 0..<10_000 {
            let d = pending.removeFirst()
            let team = String(d.op.split(separator: "/").last!.split(separator: "-").first!)
            if let last = lastSeen[team] { longestGap = max(longestGap, step - last) }
            lastSeen[team] = step
            pending += dispatches(h.finish(d))
        }
        #expect(h.s.validate().isEmpty)
        // Round robin over 1,000 equal shares: each share's turn comes once every 1,000 turns of 8.
        #expect(lastSeen.count == 1_000)
        #expect(longestGap <= 1_000 * Int(ShareTable.turn), "a share waited \(longestGap) dispatches")
    }

    @Test func anIdleShareDoesNotBankTurns() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        var pending = Self.submit(&h, "alice", 100, prefix: "a")
        Self.submit(&h, "bob", 1, prefix: "early")
        // 60 dispatches go by (bob's one op among them); then bob comes back with 20.
        for _ in 0..<60 { let d = pending.removeFirst(); pending += dispatches(h.finish(d)) }
        Self.submit(&h, "bob", 20, prefix: "b")
        let order = Self.order(&h, pending, limit: 40)
        // Bob gets turns like alice, never his 20 in a row to make up for his idle time.
        var run = 0, longest = 0
        for id in order { run = id.hasPrefix("b") ? run + 1 : 0; longest = max(longest, run) }
        #expect(longest <= Int(ShareTable.turn), "bob ran \(longest) in a row: \(order)")
        #expect(order.filter { $0.hasPrefix("b") }.count == 20, "and all of his ran within 40: \(order)")
    }

    @Test func aKeyLimitHoldsTheRestReady() {
        var h = Harness()
        h.join(1, slots: 8, credit: 8)
        let limited = QueueSpec(name: "default", fairness: QueueFairness(keyLimit: 2))
        let (_, first) = h.submit((0..<6).map { OperationSpec(id: "k\($0)", concurrencyKey: "cust-42") } + [OperationSpec(id: "free")],
                                  queues: [limited])
        #expect(first.map(\.op).map { String($0.split(separator: "/").last!) }.sorted() == ["free", "k0", "k1"])
        let key = h.s.fairnessStatus("default")!.keys.first
        #expect(key?.holding == 2 && key?.waiting == 4)
        if case .heldByConcurrencyKey(let k, let limit, let holders) = h.s.why(first.first { $0.op.hasSuffix("k0") }!.op.replacingOccurrences(of: "k0", with: "k2")) {
            #expect(k == "cust-42" && limit == 2 && holders.count == 2)
        } else {
            Issue.record("k2 should be held by its key")
        }
        // Each finish lets exactly the next waiter go, in order; never more than 2 at once.
        var pending = first.filter { !$0.op.hasSuffix("free") }
        var order: [String] = []
        while !pending.isEmpty {
            let d = pending.removeFirst()
            order.append(String(d.op.split(separator: "/").last!))
            let next = dispatches(h.finish(d))
            #expect(next.count <= 1)
            pending += next
            #expect(h.s.fairnessStatus("default")!.keys.allSatisfy { $0.holding <= 2 })
        }
        #expect(order == ["k0", "k1", "k2", "k3", "k4", "k5"])
    }

    /// Share slots and concurrency keys live as long as an op names them: 50 runs, each with its own
    /// share key and concurrency key, finished and evicted, leave only what live ops name. A key held
    /// across the compactions keeps its holder and its waiter under its new number.
    @Test func keysNoLiveOpNamesAreDroppedAtCompaction() {
        var h = Harness(config: config(retainRuns: 1, compactMinimum: 1))
        h.join(1, slots: 4, credit: 4)
        let q = QueueSpec(name: "default", fairness: QueueFairness(share: .key, keyLimit: 1))
        func run(_ name: String, _ ops: [OperationSpec]) -> [Dispatch] {
            let out = h.send(.submit(h.ref(), ops: ops, queues: [q], run: .new(submitter: "u")))
            guard case .accepted? = replies(out).first else { Issue.record("\(name) not accepted: \(replies(out))"); return [] }
            return dispatches(out)
        }
        var held: [Dispatch] = []
        for k in 0..<50 {
            if k == 10 {
                held = run("keep", (0..<2).map { OperationSpec(id: "live\($0)", share: "live", concurrencyKey: "live") })
                #expect(held.count == 1, "the key's limit of 1 holds the second op")
            }
            h.drain(run("r\(k)", (0..<2).map { OperationSpec(id: "o\($0)", share: "s\(k)", concurrencyKey: "c\(k)") }))
        }
        #expect(h.s.compactions > 0)
        let status = h.s.fairnessStatus("default")!
        // Slot 0 (the first key's, kept as the lane's own heap), "live", and the retained run's.
        #expect(status.shares.count <= 3, "\(status.shares.map(\.name))")
        #expect(Set(status.keys.map(\.name)).isSubset(of: ["live", "c49"]), "\(status.keys.map(\.name))")
        let live = status.keys.first { $0.name == "live" }
        #expect(live?.holding == 1 && live?.waiting == 1)
        // The waiter goes when the holder finishes.
        let next = dispatches(h.finish(held[0]))
        #expect(next.map { String($0.op.split(separator: "/").last!) } == ["live1"])
    }

    /// A queue whose second share key no live op names any more stops sharing at compaction: its first
    /// key's ready ops go back from their share queue to the lane's heap, and run in their order.
    @Test func aQueueLeftWithOneShareKeyStopsSharingWithItsReadyOpsInOrder() {
        var h = Harness(config: config(retainRuns: 1, compactMinimum: 1))
        h.join(1, slots: 1, credit: 1)
        let q = [QueueSpec(name: "default", fairness: QueueFairness(share: .key))]
        let first = Self.submit(&h, "u", 6, prefix: "a", share: "a", queues: q)
        #expect(first.count == 1)
        #expect(Self.submit(&h, "u", 10, prefix: "b", priority: 4, share: "b").isEmpty)
        let index = h.s.queueIndex["default"]!
        #expect(h.s.shareTables[index].isSharing, "a second share key: the queue shares")
        // b's ten go first (higher priority), then c0 (share a): when c's run finishes, b's run is evicted
        // (one finished run is retained), and with it the share key b; its ten dead ops make compaction due.
        var running = dispatches(h.finish(first[0]))
        for _ in 0..<9 { running = dispatches(h.finish(running[0])) }
        #expect(running.map(\.op).last?.hasSuffix("/b9") == true)
        #expect(Self.submit(&h, "u", 1, prefix: "c", priority: 4, share: "a").isEmpty)
        let c0 = dispatches(h.finish(running[0]))
        #expect(c0.map(\.op).last?.hasSuffix("/c0") == true)
        let next = dispatches(h.finish(c0[0]))
        #expect(h.s.compactions > 0)
        #expect(!h.s.shareTables[index].isSharing, "one share key left: the queue stopped sharing")
        #expect(Self.order(&h, next, limit: 10) == ["a1", "a2", "a3", "a4", "a5"])
    }

    /// The waiter a leaving holder released is cancelled before it is dispatched: the next waiter takes
    /// the place (before the fix it waited for ever: no holder was left to leave).
    @Test func aReleasedWaiterCancelledBeforeDispatchPassesThePlaceOn() {
        var h = Harness()
        h.join(1, slots: 2, credit: 2)
        let limited = QueueSpec(name: "default", fairness: QueueFairness(keyLimit: 1))
        // k0 runs, k1 and k2 wait for its place, and `free` takes the worker's last credit.
        let (_, first) = h.submit((0..<3).map { OperationSpec(id: "k\($0)", concurrencyKey: "x") } + [OperationSpec(id: "free")],
                                  queues: [limited])
        #expect(first.map { String($0.op.split(separator: "/").last!) }.sorted() == ["free", "k0"])
        let k0 = first.first { $0.op.hasSuffix("k0") }!
        let k1 = k0.op.replacingOccurrences(of: "k0", with: "k1")
        let k2 = k0.op.replacingOccurrences(of: "k0", with: "k2")
        guard case .heldByConcurrencyKey = h.s.why(k2) else { Issue.record("k2 should wait for the key"); return }
        // k0 finishes without giving its credit back: k1 is released to its heap but cannot go yet.
        #expect(dispatches(h.finish(k0, grant: 0)).isEmpty)
        if case .heldByConcurrencyKey = h.s.why(k1) { Issue.record("k1 should be released, not held") }
        _ = h.send(.cancel(h.ref(), ids: [k1], cascade: false))
        let next = dispatches(h.send(.credit(worker: 1, grant: 1)))
        #expect(next.map(\.op) == [k2], "k2 takes the place k1 left: \(next.map(\.op)), why k2: \(String(describing: h.s.why(k2)))")
    }

    @Test func cancelNewestCancelsTheOpOverTheLimit() {
        var h = Harness()
        h.join(1, slots: 8, credit: 8)
        let limited = QueueSpec(name: "default", fairness: QueueFairness(keyLimit: 1, keyStrategy: .cancelNewest))
        let (_, first) = h.submit((0..<3).map { OperationSpec(id: "k\($0)", concurrencyKey: "x") }, queues: [limited])
        #expect(first.count == 1)
        let st = h.s.status(first[0].op.replacingOccurrences(of: "k0", with: "k1"))
        #expect(st?.state == .finished && st?.outcome == .cancelled)
    }

    @Test func cancelInProgressCancelsTheOldestHolder() {
        var h = Harness()
        h.join(1, slots: 8, credit: 8)
        let limited = QueueSpec(name: "default", fairness: QueueFairness(keyLimit: 1, keyStrategy: .cancelInProgress))
        let (_, first) = h.submit([OperationSpec(id: "old", concurrencyKey: "x")], queues: [limited])
        #expect(first.count == 1)
        let out = h.send(.submit(h.ref(), ops: [OperationSpec(id: "new", concurrencyKey: "x")], queues: [], run: .new()))
        #expect(cancels(out).map(\.1) == [first[0].op], "the holder is cancelled on its worker")
        // The worker confirms the cancel: the new op takes the place.
        let next = dispatches(h.finish(first[0], .cancelled("replaced")))
        #expect(next.map { $0.op.hasSuffix("/new") } == [true])
    }

    @Test func aRateLimitSpacesDispatchesAndATickBringsTheNext() {
        var config = SchedulerConfig()
        config.heartbeatIntervalMicros = 60_000_000   // the scripted worker sends no heartbeats
        var h = Harness(config: config)
        h.join(1, slots: 1_000, credit: 1_000)
        let rated = QueueSpec(name: "default", fairness: QueueFairness(rate: RateLimit(perSecond: 50, burst: 1)))
        var out = h.send(.submit(h.ref(), ops: (0..<1_000).map { OperationSpec(id: "r\($0)") }, queues: [rated]))
        #expect(dispatches(out).count == 1)
        var dispatched = 0
        let start = h.now
        // Ten seconds of ticks at the times the core asks for.
        while true {
            dispatched += dispatches(out).count
            guard let next = out.compactMap({ a -> Int64? in if case .scheduleTick(let at) = a { at } else { nil } }).min(),
                  next - start <= 10_000_000 else { break }
            h.now = max(h.now + 1, next)
            out = h.send(.tick)
        }
        // 50/s over 10 s: 500 (+1 for the first at time 0), within 5 %.
        #expect(abs(dispatched - 501) <= 25, "dispatched \(dispatched) in 10 s at 50/s, until \(h.now - start)")
    }

    @Test func switchingToFifoAtRunTimeRestoresTheOrderOfArrival() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        let first = Self.submit(&h, "alice", 10, prefix: "a")
        Self.submit(&h, "bob", 10, prefix: "b")
        let r = h.ref()
        let out = h.send(.setQueueFairness(r, queue: "default", QueueFairness(share: .fifo)))
        #expect(replies(out) == [.ok])
        let order = Self.order(&h, first, limit: 100)
        #expect(order == (0..<10).map { "a\($0)" } + (0..<10).map { "b\($0)" })
        // And back: the two submitters take turns again.
        _ = h.send(.setQueueFairness(h.ref(), queue: "default", QueueFairness()))
        let again = Self.submit(&h, "alice", 20, prefix: "c")
        Self.submit(&h, "bob", 20, prefix: "d")
        let turns = Self.order(&h, again, limit: 100)
        #expect(turns.prefix(2 * Int(ShareTable.turn) + 1).filter { $0.hasPrefix("d") }.count == Int(ShareTable.turn), "\(turns)")
    }

    @Test func badFairnessSettingsGetAPreciseError() {
        var h = Harness()
        let out = h.send(.setQueueFairness(h.ref(), queue: "default", QueueFairness(weights: ["a": 0])))
        #expect(replies(out) == [.error(.invalid("queue default: weight of share a must be 1...1000, got 0"))])
        let unknown = h.send(.setQueueFairness(h.ref(), queue: "nope", QueueFairness()))
        #expect(replies(unknown) == [.error(.notFound("unknown queue nope"))])
        let (reply, _) = h.submit([OperationSpec(id: "x")], queues: [QueueSpec(name: "q", fairness: QueueFairness(rate: RateLimit(perSecond: 0)))])
        if case .rejected(let problems)? = reply {
            #expect(problems.map(\.description) == ["queue q: rate must be > 0 and ≤ 1000000 per second, got 0.0"])
        } else {
            Issue.record("a rate of 0 was accepted: \(String(describing: reply))")
        }
    }

    @Test func whyNamesTheShareTheKeyAndTheRate() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        Self.submit(&h, "alice", 3, prefix: "a")
        _ = h.send(.submit(h.ref(), ops: (0..<3).map { OperationSpec(id: "b\($0)") }, queues: [],
                           run: RunRequest(name: "bobs", mode: .create, submitter: "bob")))
        guard case .waitingForTurn(let share, let shares, _, let ahead) = h.s.why("bobs/b2") else {
            Issue.record("b2: \(h.s.why("bobs/b2"))"); return
        }
        #expect(share == "bob" && shares == 2 && ahead == 2)
        let rated = QueueSpec(name: "slow", fairness: QueueFairness(rate: RateLimit(perSecond: 1)))
        var h2 = Harness()
        h2.join(1, slots: 4, credit: 4)
        let (_, d) = h2.submit([OperationSpec(id: "r0", queue: "slow"), OperationSpec(id: "r1", queue: "slow")], queues: [rated])
        #expect(d.count == 1)
        guard case .rateLimited(let q, let at) = h2.s.why("r1") else { Issue.record("r1: \(h2.s.why("r1"))"); return }
        #expect(q == "slow" && at == h2.now + 1_000_000)
    }

    /// Priority inheritance crosses shares: raising alice's op raises bob's op it waits for, which then goes
    /// before every other op of bob's share and of alice's (S6 stays above fair share).
    @Test func priorityInheritanceRaisesADependencyInAnotherShare() {
        var h = Harness()
        h.join(1, slots: 1, credit: 1)
        let first = Self.submit(&h, "alice", 10, prefix: "a")
        _ = h.send(.submit(h.ref(), ops: (0..<10).map { OperationSpec(id: "b\($0)") }, queues: [],
                           run: RunRequest(name: "bobs", mode: .create, submitter: "bob")))
        _ = h.send(.submit(h.ref(), ops: [OperationSpec(id: "top", after: ["bobs/b9"])], queues: [],
                           run: RunRequest(name: "tops", mode: .create, submitter: "alice")))
        let out = h.send(.setPriority(h.ref(), id: "tops/top", priority: 8, inherit: true))
        #expect(replies(out) == [.ok], "\(replies(out))")
        let order = Self.order(&h, first, limit: 100)
        // a0 was on the worker already; b9 (raised to veryHigh) goes next, then top once b9 has finished.
        #expect(Array(order.prefix(3)) == ["a0", "b9", "top"], "\(order.prefix(6))")
    }
}
