import Testing
@testable import SchedulerCore

@Suite struct DispatchRulesTests {
    @Test func testHigherQoSQueueFirst() {
        var h = Harness()
        h.submit([op("bg", q: "slow"), op("ui", q: "fast")],
                 queues: [QueueSpec(name: "slow", qos: .background), QueueSpec(name: "fast", qos: .userInteractive)])
        #expect(h.drain(h.join(1)) == ["ui", "bg"])
    }

    @Test func testOpQoSOverridesQueueQoS() {
        var h = Harness()
        var hi = op("hi"); hi.qos = .userInitiated
        h.submit([op("plain"), hi])
        #expect(h.drain(h.join(1)) == ["hi", "plain"])
    }

    @Test func testRoundRobinAmongQueuesOfEqualQoS() {
        var h = Harness()
        h.submit((0..<3).map { op("a\($0)", q: "A") } + (0..<3).map { op("b\($0)", q: "B") })
        #expect(h.drain(h.join(1)) == ["a0", "b0", "a1", "b1", "a2", "b2"])
    }

    @Test func testNotReadyHighPriorityDoesNotBlockReadyLowPriority() {
        var h = Harness()
        h.submit([op("gate"), op("hi", ["gate"], p: 8), op("lo", p: -8)], queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        let d = h.join(1, slots: 2)
        #expect(d.map(\.op) == ["gate"])
        #expect(dispatches(h.finish(d[0])).map(\.op) == ["hi"])
    }

    @Test func testNeverExceedsWorkerCredit() {
        var h = Harness()
        h.submit((0..<10).map { op("o\($0)") })
        #expect(h.join(1, slots: 3).count == 3)
        #expect(dispatches(h.send(.credit(worker: 1, grant: 2))).count == 2)
        #expect(h.s.why("o9") == .noFreeCredit(capableWorkers: 1, ahead: 4))
        #expect(h.s.workerSnapshot().first?.credit == 0)
    }

    @Test func testKindAndTagPlacement() {
        var h = Harness()
        var gpu = op("gpu", kind: "train"); gpu.requires = ["gpu"]
        h.submit([gpu, op("cpu", kind: "train"), op("other", kind: "render")])
        let d1 = h.join(1, slots: 5, kinds: ["train"])
        #expect(d1.map(\.op) == ["cpu"], "worker without tag gets only the untagged op")
        #expect(h.s.why("gpu") == .noWorkerWith(kind: "train", tags: ["gpu"]))
        #expect(h.s.why("other") == .noWorkerWith(kind: "render", tags: []))
        let d2 = h.join(2, slots: 5, kinds: ["train", "render"], tags: ["gpu"])
        #expect(Set(d2.map(\.op)) == ["gpu", "other"])
        #expect(d2.allSatisfy { $0.worker == 2 })
    }

    @Test func testUnplaceableHeadDoesNotBlockItsQueue() {
        var h = Harness()
        h.submit([op("exotic", p: 8, kind: "exotic"), op("normal")])
        #expect(h.join(1).map(\.op) == ["normal"])
    }

    @Test func testQueueLimitCountsDispatchedUnfinishedOps() {
        var h = Harness()
        var m = op("m"); m.parts = 2
        h.submit([m, op("x")], queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        let d = h.join(1, slots: 1)
        #expect(d.map(\.op) == ["m"])
        // The second part of a running op is not held back by the limit it already occupies.
        let d2 = dispatches(h.send(.credit(worker: 1, grant: 5)))
        #expect(d2.map(\.op) == ["m"])
        #expect(h.s.queueCounts("default")?.dispatched == 1, "dispatched, not started: it still holds its place")
        h.finish(d[0])
        #expect(dispatches(h.finish(d2[0])).map(\.op) == ["x"])
    }

    @Test func testLoweringLimitStopsNewStarts() {
        var h = Harness()
        h.submit((0..<4).map { op("o\($0)") })
        let d = h.join(1, slots: 2)
        h.send(.setQueueLimit(h.ref(), queue: "default", maxConcurrent: 1))
        #expect(dispatches(h.finish(d[0])).isEmpty, "still 1 running = limit")
        #expect(dispatches(h.finish(d[1])).map(\.op) == ["o2"])
        #expect(dispatches(h.send(.setQueueLimit(h.ref(), queue: "default", maxConcurrent: -1))).map(\.op) == ["o3"])
    }

    /// S6: within a priority level ops go in submission order, also after a change of priority.
    @Test func testReprioritiseKeepsSubmissionOrderInTheNewLevel() {
        var h = Harness()
        h.submit([op("h1", p: 4), op("n1"), op("h2", p: 4)], queues: [QueueSpec(name: "default", suspended: true)])
        h.send(.setPriority(h.ref(), id: "n1", priority: 4, inherit: false))
        #expect(h.s.why("n1") == .queueSuspended("default"))
        h.join(1)
        let d = dispatches(h.send(.resume(h.ref(), queue: "default")))
        #expect(h.drain(d) == ["h1", "n1", "h2"])
    }

    @Test func testRaiseIsInheritedByUnfinishedDependencies() {
        var h = Harness()
        h.submit([op("busy1"), op("busy2"), op("dep"), op("top", ["dep"])], queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        let d = h.join(1)
        #expect(d.map(\.op) == ["busy1"])
        h.send(.setPriority(h.ref(), id: "top", priority: 8, inherit: true))
        #expect(h.s.status("dep")?.priority == 8)
        #expect(h.drain(d) == ["busy1", "dep", "top", "busy2"])
        // Without inheritance the dependency keeps its place.
        var h2 = Harness()
        h2.submit([op("busy1"), op("busy2"), op("dep"), op("top", ["dep"])], queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        let e = h2.join(1)
        h2.send(.setPriority(h2.ref(), id: "top", priority: 8, inherit: false))
        #expect(h2.drain(e) == ["busy1", "busy2", "dep", "top"])
    }

    @Test func testWhyBehindHigherPriority() {
        var h = Harness()
        h.submit([op("run"), op("a", p: 8), op("b", p: 4), op("c")])
        let d = h.join(1)
        #expect(d.map(\.op) == ["a"])
        #expect(h.s.why("a") == .dispatched(workers: [1]))
        h.start(d[0])
        #expect(h.s.why("a") == .running(workers: [1]))
        #expect(h.s.why("c") == .noFreeCredit(capableWorkers: 1, ahead: 2))
        h.send(.suspend(h.ref(), queue: "default"))
        #expect(h.s.why("c") == .queueSuspended("default"))
        var h2 = Harness()
        h2.submit([op("a", p: 8, kind: "x"), op("b", p: 4, kind: "x"), op("c", kind: "x"), op("d", kind: "x")])
        h2.join(1, kinds: ["x"], credit: 0)
        #expect(h2.s.why("a") == .noFreeCredit(capableWorkers: 1, ahead: 0))
        #expect(h2.s.why("c") == .noFreeCredit(capableWorkers: 1, ahead: 2))
        #expect(h2.s.why("d") == .noFreeCredit(capableWorkers: 1, ahead: 3))
        h2.send(.credit(worker: 1, grant: 1))
        #expect(h2.s.status("a")?.state == .dispatched)
        #expect(h2.s.why("d") == .noFreeCredit(capableWorkers: 1, ahead: 2))
    }
}
