import Testing
@testable import SchedulerCore

/// What a greedy, buggy or hostile worker cannot do to the core (issue 14): hoard work with credit,
/// sit on work without starting it, or grow the core's tables with what its HELLO names.
@Suite struct HostilePeerTests {
    @Test func testAGreedyWorkerHoldsAtMostItsSlotsPlusItsCappedPrefetch() {
        var h = Harness()
        h.submit((0..<300).map { op("o\($0)") })
        let d = dispatches(h.send(.workerJoined(WorkerHello(worker: 1, name: "greedy", slots: 1, kinds: ["noop"],
                                                            credit: 1_000_000, prefetch: 0))))
        #expect(d.count == 1)
        #expect(dispatches(h.send(.credit(worker: 1, grant: 1_000_000))).isEmpty, "extra credit is ignored")
        #expect(h.s.workerSnapshot().first?.inFlight == 1)
        #expect(h.s.workerSnapshot().first?.credit == 0)
        // Finishing frees its place: one more, not more.
        #expect(dispatches(h.finish(d[0], grant: 1_000_000)).count == 1)
        // A declared prefetch is capped by the coordinator's maximum.
        var c = SchedulerConfig(); c.maxPrefetch = 10
        var h2 = Harness(config: c)
        h2.submit((0..<300).map { op("o\($0)") })
        let d2 = dispatches(h2.send(.workerJoined(WorkerHello(worker: 1, name: "w", slots: 2, kinds: ["noop"],
                                                              credit: 1_000_000, prefetch: 1_000))))
        #expect(d2.count == 12)
        // Without a declared prefetch the worker may hold twice its slots (opworker's default).
        var h3 = Harness()
        h3.submit((0..<300).map { op("o\($0)") })
        #expect(dispatches(h3.send(.workerJoined(WorkerHello(worker: 1, name: "w", slots: 3, kinds: ["noop"],
                                                             credit: 1_000_000)))).count == 6)
    }

    @Test func testWorkNotStartedInTimeIsTakenBackAndGivenToAnotherWorker() {
        var c = SchedulerConfig(); c.startTimeoutMicros = 1_000_000
        c.heartbeatIntervalMicros = 100_000             // liveness ticks (where this is checked) every 0.3 s
        var h = Harness(config: c)
        h.submit([op("a"), op("b")])
        let d = dispatches(h.send(.workerJoined(WorkerHello(worker: 1, name: "sitter", slots: 1, kinds: ["noop"],
                                                            credit: 2, prefetch: 1))))
        #expect(d.map(\.op) == ["a", "b"])
        h.start(d[0])                                   // a runs; b waits there
        for _ in 0..<12 {                               // 1.2 s of heartbeats and ticks
            h.now += 100_000
            h.send(.heartbeat(worker: 1))
            h.send(.tick)
        }
        #expect(h.state("a") == .executing, "a started: it stays")
        #expect(h.state("b") == .ready, "b was not started within 1 s: taken back")
        #expect(h.s.status("b")?.attempts == 2)
        #expect(h.s.story("b")?.entries.contains { $0.event == .requeued(part: 0, reason: "not started in time, taken back") } == true)
        let other = h.join(2)
        #expect(other.map { "\($0.op)#\($0.attempt)" } == ["b#2"])
        // The sitter's late report of b is fenced; its credit still comes back.
        h.finish(d[1], .cancelled("taken back"))
        #expect(h.s.fencing.staleAttempt == 1)
    }

    @Test func testAHelloNeverGrowsTheCoresTablesAndIsReleasedWithItsWorker() {
        var h = Harness()
        h.submit([op("x")])
        let kindsBefore = h.s.workers.kindNames.count
        let tagsBefore = h.s.workers.tagBits.count
        let kinds = (0..<256).map { "k\($0)-" + String(repeating: "x", count: 200) }
        let tags = (0..<64).map { "t\($0)" }
        for w in UInt64(1)...40 {
            h.send(.workerJoined(WorkerHello(worker: w, name: "spam\(w)", slots: 1, tags: tags, kinds: kinds, credit: 0)))
            h.send(.workerLost(worker: w, reason: "vanished"))
        }
        #expect(h.s.workers.kindNames.count == kindsBefore, "kinds nobody uses are not interned")
        #expect(h.s.workers.tagBits.count == tagsBefore, "a HELLO's tags take no tag bits")
        #expect(h.s.workers.allSatisfy { $0.kindNames.isEmpty && $0.tagNames.isEmpty }, "lost workers keep no names")
        // Tags and kinds an op uses later still match a live worker that named them.
        h.join(100, kinds: ["noop", "render"], tags: ["gpu"], credit: 0)
        var gpu = op("g", kind: "render"); gpu.requires = ["gpu"]
        h.submit([gpu])
        #expect(dispatches(h.send(.credit(worker: 100, grant: 2))).map(\.op).sorted() == ["g", "x"])
    }
}
