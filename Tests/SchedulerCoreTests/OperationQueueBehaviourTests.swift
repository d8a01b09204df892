import Testing
@testable import SchedulerCore

/// Foundation OperationQueue behaviours, at the core's level.
@Suite struct OperationQueueBehaviourTests {
    @Test func testPriorityOrderOnOneSlotQueue() {
        var h = Harness()
        let ps = OperationPriority.allCases.map(\.rawValue)
        h.submit(ps.map { op("p\($0)", p: $0) }, queues: [QueueSpec(name: "default", maxConcurrent: 1, suspended: true)])
        h.join(1, slots: 1)
        let first = dispatches(h.send(.resume(h.ref(), queue: "default")))
        #expect(h.drain(first) == ["p8", "p4", "p0", "p-4", "p-8"])
    }

    @Test func testFIFOWithinALevel() {
        var h = Harness()
        h.submit((0..<6).map { op("o\($0)", p: $0 % 2 == 0 ? 4 : 0) })
        #expect(h.drain(h.join(1)) == ["o0", "o2", "o4", "o1", "o3", "o5"])
    }

    @Test func testCancelQueuedOpNeverRuns() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c")])
        h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        #expect(h.s.status("b")?.outcome == .cancelled)
        #expect(h.state("b") == .finished)
        #expect(h.drain(h.join(1)) == ["a", "c"])
    }

    @Test func testCancelOpsOfOnePriorityOnly() {
        var h = Harness()
        h.submit([op("l1", p: -4), op("h1", p: 4), op("l2", p: -4), op("n1")])
        h.send(.cancel(h.ref(), ids: ["l1", "l2"], cascade: false))
        #expect(h.drain(h.join(1)) == ["h1", "n1"])
        #expect(h.s.queueCounts("default")?.cancelled == 2)
    }

    @Test func testSuspendStartsNothingButRunningContinues() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let d = h.join(1, slots: 2, credit: 1)
        #expect(d.map(\.op) == ["a"])
        h.send(.suspend(h.ref(), queue: "default"))
        #expect(dispatches(h.send(.credit(worker: 1, grant: 1))).isEmpty)
        #expect(dispatches(h.finish(d[0])).isEmpty, "suspended queue must not start b")
        #expect(h.state("a") == .finished)
        #expect(h.s.why("b") == .queueSuspended("default"))
        h.submit([op("c")])   // adding to a suspended queue is allowed
        let after = dispatches(h.send(.resume(h.ref(), queue: "default")))
        #expect(after.map(\.op) == ["b", "c"])
    }

    @Test func testDependencyCount() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c", ["a", "b"])])
        #expect(h.s.status("c")?.unfinishedDependencies == 2)
        #expect(h.s.why("c") == .waitingForDependencies(["a", "b"]))
        let d = h.join(1)
        h.finish(d[0])
        #expect(h.s.status("c")?.unfinishedDependencies == 1)
        #expect(h.state("c") == .pending)
    }

    @Test func testCancelledDependencyUnblocksDependent() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        #expect(h.state("b") == .ready)
        #expect(h.drain(h.join(1)) == ["b"])
    }

    @Test func testDependenciesAcrossQueues() {
        var h = Harness()
        h.submit([op("x", q: "q1"), op("y", ["x"], q: "q2"), op("z", ["y"], q: "q1")])
        #expect(h.drain(h.join(1, slots: 3)) == ["x", "y", "z"])
    }

    @Test func testCancelWhileSuspendedIsFinishedAndNeverDispatchedAfterResume() {
        var h = Harness()
        h.submit([op("a"), op("b")], queues: [QueueSpec(name: "default", suspended: true)])
        h.join(1)
        h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        #expect(h.s.status("a")!.isCancelled)
        let d = dispatches(h.send(.resume(h.ref(), queue: "default")))
        #expect(d.map(\.op) == ["b"])
        #expect(h.state("a") == .finished)
        #expect(h.s.status("a")?.outcome == .cancelled)
    }

    @Test func testExecutionOrderFollowsDependencies() {
        var h = Harness()
        // Submitted in reverse priority so that only dependencies force the order.
        h.submit([op("d"), op("c", ["d"], p: 8), op("b", ["c"], p: 8), op("a", ["b"], p: 8)])
        #expect(h.drain(h.join(1)) == ["d", "c", "b", "a"])
    }

    @Test func testMaxTwoConcurrent() {
        var h = Harness()
        h.submit((0..<5).map { op("o\($0)") }, queues: [QueueSpec(name: "default", maxConcurrent: 2)])
        let d = h.join(1, slots: 5)
        #expect(d.count == 2)
        #expect(h.s.queueCounts("default")?.dispatched == 2)
        #expect(h.s.why("o2") == .queueAtLimit(queue: "default", limit: 2, ahead: 0))
        let next = dispatches(h.finish(d[0]))
        #expect(next.map(\.op) == ["o2"])
    }

    @Test func testBarrierRunsAfterEarlierAndHoldsBackLater() {
        var h = Harness()
        var b = op("bar"); b.barrier = true
        h.submit([op("a"), op("b"), b, op("c", p: 8)])
        let d = h.join(1, slots: 4)
        #expect(Set(d.map(\.op)) == ["a", "b"])
        #expect(h.s.why("c") == .heldByBarrier("bar"))
        h.finish(d[0])
        #expect(h.state("bar") == .pending)
        let d2 = dispatches(h.finish(d[1]))
        #expect(d2.map(\.op) == ["bar"])
        #expect(dispatches(h.finish(d2[0])).map(\.op) == ["c"])
    }

    @Test func testMultiPartOpFinishesWhenEveryPartHas() {
        var h = Harness()
        var m = op("m"); m.parts = 3
        h.submit([m, op("after", ["m"])])
        let d = h.join(1, slots: 2) + h.join(2, slots: 2)
        #expect(d.map(\.part).sorted() == [0, 1, 2])
        #expect(Set(d.map(\.worker)).count == 2, "parts spread over workers")
        #expect(h.state("m") == .dispatched)
        h.start(d[1])
        #expect(h.state("m") == .executing, "one part's handler runs")
        h.finish(d[0], .succeeded([1]))
        h.finish(d[2], .succeeded([3]))
        #expect(h.state("m") == .executing)
        let next = dispatches(h.finish(d[1], .succeeded([2])))
        #expect(h.s.result("m") == [1, 2, 3])
        #expect(next.map(\.op) == ["after"])
        #expect(next[0].inputs.first?.1 == [1, 2, 3])
    }
}
