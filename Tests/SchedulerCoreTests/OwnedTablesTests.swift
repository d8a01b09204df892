import Testing
@testable import SchedulerCore

/// The tables that own their storage (issue 27): each one's own rules, apart from the scheduler
/// (the simulations cover them in use).
@Suite struct OwnedTablesTests {
    private func run(_ name: String, _ number: Int64) -> RunState {
        RunState(number: number, name: name, submitter: "", submittedAt: 0)
    }

    /// A freed slot is reused by the next run; the name index follows; a slot kept across the eviction
    /// finds the new run through `retained`, the evicted name nothing.
    @Test func runSlotsAreReusedAndTheNameIndexFollows() {
        var runs = RunTable()
        let a = runs.add(run("a", 1))
        let b = runs.add(run("b", 2))
        #expect(a != b && runs.slot(named: "a") == a && runs[b].name == "b")
        runs.remove(a)
        #expect(runs.slot(named: "a") == nil && runs.retained(a) == nil)
        let c = runs.add(run("c", 3))
        #expect(c == a, "the freed slot is taken first")
        #expect(runs.retained(a)?.number == 3, "an old holder of the slot sees the new run")
        #expect(runs.all.map(\.run.name) == ["c", "b"], "slot order")
        runs[c].ops = [5, 9]
        runs.renumberOps(OpRemap(newIndex: [Int32](repeating: -1, count: 5) + [0, -1, -1, -1, 1]))
        #expect(runs[c].ops == [0, 1])
    }

    /// One op's last finish finishes its run, counted by outcome.
    @Test func aRunFinishesWithItsLastOp() {
        var r = run("r", 1)
        r.unfinished = 2
        let first = r.opFinished(.succeeded), last = r.opFinished(.cancelled)
        #expect(!first && last)
        #expect(r.succeeded == 1 && r.cancelled == 1 && r.failed == 0 && r.unfinished == 0)
    }

    /// An edge keeps its kind through renumbering; op 0 is a valid dependent of both kinds.
    @Test func dependentEdgesKeepTheirKind() {
        for op: Int32 in [0, 1, 1_000_000] {
            let data = DependentEdge.dependency(op), order = DependentEdge.barrierOrder(op)
            #expect(data.dependent == op && !data.isBarrierOrder)
            #expect(order.dependent == op && order.isBarrierOrder)
            #expect(order.to(7) == .barrierOrder(7) && data.to(7) == .dependency(7))
        }
    }

    /// `push` puts the newest first; `append` builds a list in order (compaction).
    @Test func dependentListsPushNewestFirstAndAppendInOrder() {
        var lists = DependentLists()
        var pushed: Int32 = -1
        for op: Int32 in [1, 2, 3] { lists.push(.dependency(op), onto: &pushed) }
        var head: Int32 = -1, tail: Int32 = -1
        for op: Int32 in [4, 5] { lists.append(.barrierOrder(op), head: &head, tail: &tail) }
        func walk(_ start: Int32) -> [Int32] {
            var out: [Int32] = [], e = start
            while e >= 0 { out.append(lists.edges[Int(e)].dependent); e = lists.next[Int(e)] }
            return out
        }
        #expect(walk(pushed) == [3, 2, 1])
        #expect(walk(head) == [4, 5])
    }

    /// The earliest deadline of every heap; due ones come off in time order; compaction renumbers the
    /// attempts' ops and drops those of dropped ops.
    @Test func timersAnswerTheEarliestAndFollowCompaction() {
        var timers = Timers()
        #expect(timers.earliestDue == .max)
        timers.workerLiveness.insert(TargetDeadline(at: 50, target: WorkerIndex(0)))
        timers.queueAgeing.insert(TargetDeadline(at: 30, target: QueueIndex(2)))
        timers.attemptTimeouts.insert(AttemptDeadline(at: 40, op: OpIndex(3), part: 0, attempt: 1))
        timers.retryDelays.insert(AttemptDeadline(at: 20, op: OpIndex(1), part: 0, attempt: 2))
        timers.keyRates.insert(TargetDeadline(at: 60, target: ConcurrencyKeyIndex(0)))
        #expect(timers.earliestDue == 20)
        let early = timers.queueAgeing.popDue(29), due = timers.queueAgeing.popDue(30)
        #expect(early == nil && due?.target == QueueIndex(2))
        timers.renumberOps(OpRemap(newIndex: [-1, -1, 0, 1]))
        #expect(timers.retryDelays.isEmpty, "op 1 was dropped")
        #expect(timers.attemptTimeouts.min?.op == OpIndex(1), "op 3 is op 1 now")
        #expect(timers.earliestDue == 40)
    }

    /// Beyond the limit the oldest evicted name is forgotten; the total counts every eviction.
    @Test func evictedRunNamesForgetTheOldestBeyondTheLimit() {
        var names = EvictedRunNames()
        for (k, name) in ["a", "b", "c"].enumerated() {
            names.remember(name, EvictedRun(finishedAt: Int64(k), evictedAt: Int64(k) + 10), limit: 2)
        }
        #expect(names["a"] == nil && names["b"]?.evictedAt == 11 && names["c"] != nil)
        #expect(Array(names.order) == ["b", "c"] && names.total == 3)
    }

    /// Multi-part records follow their op through compaction; a finished op's is gone.
    @Test func multiPartRecordsFollowCompaction() {
        var table = MultiPartTable()
        table.add(2, parts: 3)
        table.add(4, parts: 2)
        table[4].status[1] = .running
        table.remove(2)
        #expect(table.record(of: 2) == nil)
        table.renumberOps(OpRemap(newIndex: [-1, -1, -1, -1, 0]))
        #expect(table.record(of: 4) == nil && table[0].status == [.waiting, .running])
    }

    /// Appends an op row with dependencies `deps` (wired into their dependents lists, newest first).
    private func addOp(_ store: inout OpStore, _ id: String, after deps: [Int32] = []) {
        let op = Int32(store.count)
        store.hot.append(OpHot(lane: 0, parts: 1, partsLeft: 1, waitingParts: 1, failRetriesLeft: 0, lossRetriesLeft: 0,
                               priority: 0, flags: 0))
        store.ids.append(id)
        store.payloads.append(Array(id.utf8))
        var cold = OpCold(submittedAt: 0, lastWorker: .nobody)
        cold.setDependencies(start: Int32(store.depList.count), count: Int32(deps.count))
        store.cold.append(cold)
        store.depList += deps
        for d in deps {
            var head = store.hot[Int(d)].firstOut
            store.dependents.push(.dependency(op), onto: &head)
            store.hot[Int(d)].firstOut = head
        }
    }

    private func dependents(_ store: OpStore, of op: Int32) -> [String] {
        var out: [String] = [], e = store.hot[Int(op)].firstOut
        while e >= 0 { out.append(store.ids[Int(store.dependents.edges[Int(e)].dependent)]); e = store.dependents.next[Int(e)] }
        return out
    }

    /// Compaction drops evicted rows from every per-op table of the store at once: columns, dependency
    /// and dependents lists, side tables and multi-part records follow their op; the remap it returns
    /// renumbers the rest in order and drops the evicted.
    @Test func opStoreCompactionRenumbersEveryPerOpTable() {
        var store = OpStore()
        addOp(&store, "a")                       // 0
        addOp(&store, "b")                       // 1, evicted
        addOp(&store, "c", after: [0, 1])        // 2
        addOp(&store, "d", after: [2])           // 3, evicted
        addOp(&store, "e", after: [2, 0])        // 4
        store.names = [0: "A", 2: "C", 4: "E"]
        store.timeouts = [4: 7]
        store.results = [1: [1], 2: [2]]
        store.reasons = [4: "why"]
        store.attemptErrors = [2: ["x"]]
        store.retryDelays = [4: RetryDelay(base: 1, max: 2)]
        store.multi.add(4, parts: 2)
        #expect(store.validate().isEmpty)
        store.forgetEvicted(1)
        store.forgetEvicted(3)
        #expect(store.results[1] == nil && store.payloads[1].isEmpty, "an evicted op's data goes at once")

        let remap = store.compactEvicted()
        #expect(remap[0] == 0 && remap[1] == -1 && remap[2] == 1 && remap[3] == -1 && remap[4] == 2)
        #expect(remap[-1] == -1, "none stays none")
        #expect(store.count == 3 && (0..<3).map { store.ids[$0] } == ["a", "c", "e"])
        #expect((0..<3).map { String(decoding: store.payloads[$0], as: UTF8.self) } == ["a", "c", "e"])
        #expect(store.names == [0: "A", 1: "C", 2: "E"] && store.timeouts == [2: 7] && store.results == [1: [2]])
        #expect(store.reasons == [2: "why"] && store.attemptErrors == [1: ["x"]] && store.retryDelays[2]?.max == 2)
        #expect(store.multi.record(of: 2)?.status.count == 2 && store.multi.ops == [2])
        func deps(_ op: Int) -> [Int32] {
            let c = store.cold[op]
            return Array(store.depList[Int(c.depStart)..<Int(c.depStart + c.depCount)])
        }
        #expect(deps(0) == [] && deps(1) == [0] && deps(2) == [1, 0], "an evicted dependency leaves the list")
        #expect(dependents(store, of: 0) == ["e", "c"] && dependents(store, of: 1) == ["e"], "lists keep their order")
        #expect(store.validate().isEmpty)
    }

    /// The store's validation names a side table keyed beyond the rows and a dependency range beyond the list.
    @Test func opStoreValidationCatchesStrayIndices() {
        var store = OpStore()
        addOp(&store, "a")
        addOp(&store, "b", after: [0])
        store.reasons[5] = "stray"
        store.multi.add(9, parts: 2)
        var cold = store.cold[1]
        cold.setDependencies(start: 0, count: 4)
        store.cold[1] = cold
        let bad = store.validate()
        #expect(bad.contains { $0.contains("reasons keys op 5") })
        #expect(bad.contains { $0.contains("multi keys op 9") })
        #expect(bad.contains { $0.contains("b: dependencies 0+4") })
    }

    /// Renumbering lists keeps their order and drops what compaction dropped; `kept` refuses a dropped op.
    @Test func opRemapRenumbersListsAndTables() {
        let remap = OpRemap(newIndex: [0, -1, 1, 2])
        #expect(remap.renumbered([3, 1, 0]) == [2, 0])
        #expect(remap.rekeyed([1: "x", 3: "y"]) == [2: "y"])
        #expect(remap.kept(3) == 2)
    }

    /// An op's chain runs back through its own entries; once the ring wraps over its oldest entry the
    /// chain stops there and says so; a chain that ends in a restart says where it ended.
    @Test func storyRingChainsAndDetectsOverwrittenEntries() {
        var ring = StoryRing(capacity: 4)
        func entry(_ op: Int32, prev: Int32) -> StoryRaw {
            StoryRaw(stimulus: 0, at: 0, op: op, prev: prev, extra: 0, part: 0, code: .ready)
        }
        var heads: [Int32: Int32] = [1: -1, 2: storyRestarted]
        for op: Int32 in [1, 2, 1] { heads[op] = ring.append(entry(op, prev: heads[op]!)) }
        let one = ring.chain(of: 1, from: heads[1]!, limit: 10)
        #expect(one.entries.count == 2 && one.end == -1 && !one.truncated)
        let two = ring.chain(of: 2, from: heads[2]!, limit: 10)
        #expect(two.entries.count == 1 && two.end == storyRestarted && !two.truncated)
        #expect(ring.chain(of: 1, from: heads[1]!, limit: 1).truncated, "beyond the limit")
        for _ in 0..<2 { heads[2] = ring.append(entry(2, prev: heads[2]!)) }   // slot 0 (op 1's first) is overwritten
        let wrapped = ring.chain(of: 1, from: heads[1]!, limit: 10)
        #expect(wrapped.entries.count == 1 && wrapped.truncated)
    }

    /// A wait counting ops is answered by its last op, with every outcome counted; an op's waits are
    /// taken once; compaction renumbers the ops waited on.
    @Test func waitsCountDownAndAnswerOnce() {
        var waits = WaitTable()
        let ref = ClientRef(client: 1, request: 1)
        let a = waits.add(WaitRecord(ref: ref, remaining: 2), onOps: [3, 5])
        let b = waits.add(WaitRecord(ref: ref, remaining: 1), onOps: [5])
        #expect(a != b)
        waits.renumberOps(OpRemap(newIndex: [-1, -1, -1, 0, -1, 1]))
        #expect(waits.takeWaits(on: 0) == [a] && waits.takeWaits(on: 0) == nil, "op 3 is op 0 now; taken once")
        #expect(waits.countDown(a, .failed) == nil, "one op left")
        #expect(waits.takeWaits(on: 1) == [a, b])
        let doneA = waits.countDown(a, .succeeded), doneB = waits.countDown(b, .cancelled)
        #expect(doneA?.summary == WaitSummary(succeeded: 1, failed: 1, cancelled: 0))
        #expect(doneB?.summary == WaitSummary(succeeded: 0, failed: 0, cancelled: 1))
        #expect(!waits.isOpen(a) && waits.countDown(a, .succeeded) == nil && waits.remove(b) == nil, "answered once")
    }

    /// Watchers with the same filters and form share one stream; a new combination gets a new one,
    /// never a reused one; the last watcher's leaving drops the group; an evicted run's group matches nothing.
    @Test func watchGroupsShareStreamsAndNeverReuseThem() {
        var watchers = WatchGroups()
        let form = WatchGroup.Form(withResults: false, progress: false)
        let s1 = watchers.add(1, queue: nil, run: .any, form: form)
        let s2 = watchers.add(2, queue: nil, run: .any, form: form)
        let s3 = watchers.add(3, queue: nil, run: .run(RunSlot(4)), form: form)
        #expect(s1 == s2 && s3 != s1 && watchers.groups.count == 2)
        watchers.remove(3)
        #expect(watchers.groups.count == 1)
        let s4 = watchers.add(3, queue: nil, run: .run(RunSlot(4)), form: form)
        #expect(s4 != s3 && s4 != s1, "a stream is never reused")
        watchers.runEvicted(RunSlot(4))
        #expect(watchers.groups.first { $0.stream == s4 }?.run == .evicted)
        watchers.remove(1); watchers.remove(2); watchers.remove(3)
        #expect(watchers.isEmpty)
    }

    /// The pool keeps a worker's, its classes' and the total credit together: a grant is capped by what
    /// the worker may hold, a class that had none wakes the queues parked on it once, dispatch takes
    /// workers round-robin, and a loss takes the worker's credit and hands back the parts it held.
    @Test func workerPoolKeepsCreditTogether() {
        var pool = WorkerPool()
        let kind = pool.internKind("noop")
        let gpu = pool.internTag("gpu")!
        let any = Int(pool.placementClass(kind: kind, requires: 0))
        let tagged = Int(pool.placementClass(kind: kind, requires: 1 << UInt64(gpu)))
        let a = pool.join(WorkerHello(worker: 10, name: "a", slots: 2, tags: ["gpu"], kinds: ["noop"], prefetch: 0), capacity: 2, at: 0)
        let b = pool.join(WorkerHello(worker: 11, name: "b", slots: 1, kinds: ["noop"], prefetch: 0), capacity: 1, at: 0)
        #expect(pool.byID[10] == a && pool.liveCount == 2 && pool.count == 2)
        #expect(pool.classes[any].capable == [a, b] && pool.classes[tagged].capable == [a], "the tag places only a")
        pool.park(QueueIndex(3), onClass: tagged)
        pool.park(QueueIndex(4), onClass: any)
        #expect(pool.classes[tagged].parked == [QueueIndex(3)] && pool.classes[any].parked == [QueueIndex(4)], "no credit yet: both park")
        let woke = pool.giveCredit(a, 5)
        #expect(woke, "a class with no credit and a parked queue wakes it")
        let unparked = pool.takeUnparked(), again = pool.takeUnparked()
        #expect(unparked.count == 2 && Set(unparked) == [QueueIndex(3), QueueIndex(4)] && again.isEmpty && pool.classes[tagged].parked.isEmpty)
        pool.park(QueueIndex(5), onClass: tagged)
        #expect(pool.classes[tagged].parked.isEmpty, "a class with credit parks nothing: no grant would wake it")
        #expect(pool[a].credit == 2, "capped by its capacity")
        let wokeAgain = pool.giveCredit(b, 1)
        #expect(!wokeAgain)
        #expect(pool.totalCredit == 3 && pool.classes[any].credit == 3 && pool.classes[tagged].credit == 2)
        var picked: [WorkerIndex] = []
        for _ in 0..<3 {
            let w = pool.pickWorker(any)
            pool.takeCredit(w, 1)
            picked.append(w)
        }
        #expect(picked == [a, b, a], "round-robin over the workers with credit")
        #expect(pool.totalCredit == 0 && pool.classes[any].credit == 0 && pool.classes[tagged].credit == 0)
        _ = pool.giveCredit(a, 1)
        pool[a].held = [7 << 16, 9 << 16 | 1]
        let held = pool.lose(a, "gone")
        #expect(held == [7 << 16, 9 << 16 | 1])
        #expect(!pool[a].alive && pool[a].held.isEmpty && pool[a].lostReason == "gone" && pool.liveCount == 1)
        #expect(pool.totalCredit == 0 && pool.classes[any].credit == 0, "its credit left with it")
    }

    /// Kinds and tags are interned once; a worker that named them in HELLO gets them when an op first
    /// uses them; a 65th tag has no bit; a restored session is never alive and not found by id.
    @Test func workerPoolInternsWhatOpsUse() {
        var pool = WorkerPool()
        let w = pool.join(WorkerHello(worker: 1, name: "w", slots: 1, tags: ["t0"], kinds: ["k"]), capacity: 1, at: 0)
        #expect(pool[w].kinds.isEmpty && pool[w].tags == 0, "nothing interned yet")
        let k = pool.internKind("k")
        #expect(pool.internKind("k") == k && pool[w].kinds == [k] && pool.kindNames == ["k"])
        for i in 0..<64 { #expect(pool.internTag("t\(i)") == i) }
        #expect(pool[w].tags == 1 && pool.internTag("t64") == nil)
        let old = pool.restore(WorkerState(id: 1, name: "old", owner: "old", slots: 0, capacity: 0, tags: 0, kinds: [], tagNames: [],
                                           kindNames: [], lastSeen: 0).lost("restarted"))
        #expect(pool.byID[1] == w && old != w && !pool[old].alive && pool.liveCount == 1)
    }
}

private extension WorkerState {
    func lost(_ reason: String) -> WorkerState {
        var w = self
        w.alive = false
        w.lostReason = reason
        return w
    }
}

/// A share's ready queue (fair share): its one op inline, a heap from the second; S6's order either way.
@Suite struct ShareQueueTests {
    private func entry(_ op: Int32, priority: Int64 = 0) -> ReadyEntry {
        ReadyEntry(key: priority << 59 | (Int64(1) << 40 - Int64(op)), op: op)
    }

    private func drain(_ q: inout ShareQueue) -> [Int32] {
        var order: [Int32] = []
        while let e = q.popMax() { order.append(e.op) }
        return order
    }

    /// The head before each insert is reported (Int64.min when empty), and ops leave in S6's order:
    /// a later, older op goes before a newer one, a higher priority before both.
    @Test func opsLeaveInPriorityThenSubmissionOrderAcrossTheInlineEntry() {
        var q = ShareQueue()
        #expect(q.isEmpty && q.max == nil && q.popMax() == nil)
        #expect(q.insert(entry(7)) == .min)
        #expect(!q.isEmpty && q.unordered.count == 1 && q.max?.op == 7 && q.unordered.map(\.op) == [7])
        #expect(q.insert(entry(5)) == entry(7).key, "the head before: the inline op")
        #expect(q.unordered.count == 2 && q.max?.op == 5)
        #expect(q.insert(entry(9, priority: 2)) == entry(5).key)
        #expect(drain(&q) == [9, 5, 7])
        #expect(q.isEmpty)
        // Emptied, it takes one op inline again.
        #expect(q.insert(entry(3)) == .min && q.unordered.count == 1)
        #expect(q.popMax()?.op == 3 && q.isEmpty)
    }

    /// Built from a lane's entries (sharing starts, compaction): one becomes the inline entry.
    @Test func builtFromEntriesKeepsThemAll() {
        var one = ShareQueue([entry(4)])
        #expect(one.unordered.count == 1 && one.insert(entry(2)) == entry(4).key)
        #expect(drain(&one) == [2, 4])
        var many = ShareQueue([entry(8), entry(6, priority: 1), entry(1)])
        #expect(Set(many.unordered.map(\.op)) == [8, 6, 1])
        #expect(drain(&many) == [6, 1, 8])
        #expect(ShareQueue([]).isEmpty)
    }
}
