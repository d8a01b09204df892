import XCTest
@testable import SchedulerCore

/// Foundation OperationQueue behaviours, at the core's level.
final class OperationQueueBehaviourTests: XCTestCase {
    func testPriorityOrderOnOneSlotQueue() {
        var h = Harness()
        let ps = OperationPriority.allCases.map(\.rawValue)
        h.submit(ps.map { op("p\($0)", p: $0) }, queues: [QueueSpec(name: "default", maxConcurrent: 1, suspended: true)])
        h.join(1, slots: 1)
        let first = dispatches(h.send(.resume(h.ref(), queue: "default")))
        XCTAssertEqual(h.drain(first), ["p8", "p4", "p0", "p-4", "p-8"])
    }

    func testFIFOWithinALevel() {
        var h = Harness()
        h.submit((0..<6).map { op("o\($0)", p: $0 % 2 == 0 ? 4 : 0) })
        XCTAssertEqual(h.drain(h.join(1)), ["o0", "o2", "o4", "o1", "o3", "o5"])
    }

    func testCancelQueuedOpNeverRuns() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c")])
        h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        XCTAssertEqual(h.s.status("b")?.outcome, .cancelled)
        XCTAssertEqual(h.state("b"), .finished)
        XCTAssertEqual(h.drain(h.join(1)), ["a", "c"])
    }

    func testCancelOpsOfOnePriorityOnly() {
        var h = Harness()
        h.submit([op("l1", p: -4), op("h1", p: 4), op("l2", p: -4), op("n1")])
        h.send(.cancel(h.ref(), ids: ["l1", "l2"], cascade: false))
        XCTAssertEqual(h.drain(h.join(1)), ["h1", "n1"])
        XCTAssertEqual(h.s.queueCounts("default")?.cancelled, 2)
    }

    func testSuspendStartsNothingButRunningContinues() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let d = h.join(1, slots: 2, credit: 1)
        XCTAssertEqual(d.map(\.op), ["a"])
        h.send(.suspend(h.ref(), queue: "default"))
        XCTAssertTrue(dispatches(h.send(.credit(worker: 1, grant: 1))).isEmpty)
        XCTAssertTrue(dispatches(h.finish(d[0])).isEmpty, "suspended queue must not start b")
        XCTAssertEqual(h.state("a"), .finished)
        XCTAssertEqual(h.s.why("b"), .queueSuspended("default"))
        h.submit([op("c")])   // adding to a suspended queue is allowed
        let after = dispatches(h.send(.resume(h.ref(), queue: "default")))
        XCTAssertEqual(after.map(\.op), ["b", "c"])
    }

    func testDependencyCount() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c", ["a", "b"])])
        XCTAssertEqual(h.s.status("c")?.unfinishedDependencies, 2)
        XCTAssertEqual(h.s.why("c"), .waitingForDependencies(["a", "b"]))
        let d = h.join(1)
        h.finish(d[0])
        XCTAssertEqual(h.s.status("c")?.unfinishedDependencies, 1)
        XCTAssertEqual(h.state("c"), .pending)
    }

    func testCancelledDependencyUnblocksDependent() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        XCTAssertEqual(h.state("b"), .ready)
        XCTAssertEqual(h.drain(h.join(1)), ["b"])
    }

    func testDependenciesAcrossQueues() {
        var h = Harness()
        h.submit([op("x", q: "q1"), op("y", ["x"], q: "q2"), op("z", ["y"], q: "q1")])
        XCTAssertEqual(h.drain(h.join(1, slots: 3)), ["x", "y", "z"])
    }

    func testCancelWhileSuspendedIsFinishedAndNeverDispatchedAfterResume() {
        var h = Harness()
        h.submit([op("a"), op("b")], queues: [QueueSpec(name: "default", suspended: true)])
        h.join(1)
        h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        XCTAssertTrue(h.s.status("a")!.isCancelled)
        let d = dispatches(h.send(.resume(h.ref(), queue: "default")))
        XCTAssertEqual(d.map(\.op), ["b"])
        XCTAssertEqual(h.state("a"), .finished)
        XCTAssertEqual(h.s.status("a")?.outcome, .cancelled)
    }

    func testExecutionOrderFollowsDependencies() {
        var h = Harness()
        // Submitted in reverse priority so that only dependencies force the order.
        h.submit([op("d"), op("c", ["d"], p: 8), op("b", ["c"], p: 8), op("a", ["b"], p: 8)])
        XCTAssertEqual(h.drain(h.join(1)), ["d", "c", "b", "a"])
    }

    func testMaxTwoConcurrent() {
        var h = Harness()
        h.submit((0..<5).map { op("o\($0)") }, queues: [QueueSpec(name: "default", maxConcurrent: 2)])
        let d = h.join(1, slots: 5)
        XCTAssertEqual(d.count, 2)
        XCTAssertEqual(h.s.queueCounts("default")?.dispatched, 2)
        XCTAssertEqual(h.s.why("o2"), .queueAtLimit(queue: "default", limit: 2, ahead: 0))
        let next = dispatches(h.finish(d[0]))
        XCTAssertEqual(next.map(\.op), ["o2"])
    }

    func testBarrierRunsAfterEarlierAndHoldsBackLater() {
        var h = Harness()
        var b = op("bar"); b.barrier = true
        h.submit([op("a"), op("b"), b, op("c", p: 8)])
        let d = h.join(1, slots: 4)
        XCTAssertEqual(Set(d.map(\.op)), ["a", "b"])
        XCTAssertEqual(h.s.why("c"), .heldByBarrier("bar"))
        h.finish(d[0])
        XCTAssertEqual(h.state("bar"), .pending)
        let d2 = dispatches(h.finish(d[1]))
        XCTAssertEqual(d2.map(\.op), ["bar"])
        XCTAssertEqual(dispatches(h.finish(d2[0])).map(\.op), ["c"])
    }

    func testMultiPartOpFinishesWhenEveryPartHas() {
        var h = Harness()
        var m = op("m"); m.parts = 3
        h.submit([m, op("after", ["m"])])
        let d = h.join(1, slots: 2) + h.join(2, slots: 2)
        XCTAssertEqual(d.map(\.part).sorted(), [0, 1, 2])
        XCTAssertEqual(Set(d.map(\.worker)).count, 2, "parts spread over workers")
        XCTAssertEqual(h.state("m"), .dispatched)
        h.start(d[1])
        XCTAssertEqual(h.state("m"), .executing, "one part's handler runs")
        h.finish(d[0], .succeeded([1]))
        h.finish(d[2], .succeeded([3]))
        XCTAssertEqual(h.state("m"), .executing)
        let next = dispatches(h.finish(d[1], .succeeded([2])))
        XCTAssertEqual(h.s.result("m"), [1, 2, 3])
        XCTAssertEqual(next.map(\.op), ["after"])
        XCTAssertEqual(next[0].inputs.first?.1, [1, 2, 3])
    }
}
