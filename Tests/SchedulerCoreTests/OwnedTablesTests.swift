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
        runs.renumberOps([Int32](repeating: -1, count: 5) + [0, -1, -1, -1, 1])
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
        timers.renumberOps([-1, -1, 0, 1])
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
        table.renumberOps([-1, -1, -1, -1, 0])
        #expect(table.record(of: 4) == nil && table[0].status == [.waiting, .running])
    }
}
