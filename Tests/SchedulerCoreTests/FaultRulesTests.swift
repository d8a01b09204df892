import Testing
@testable import SchedulerCore

@Suite struct FaultRulesTests {
    @Test func testCancelledBeforeStartFinishesAtOnceDespiteUnfinishedDependencies() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        #expect(h.state("b") == .finished)
        #expect(h.state("a") == .ready)
    }

    @Test func testCascadeCancelsDependentsTransitively() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"]), op("c", ["b"]), op("other")])
        h.send(.cancel(h.ref(), ids: ["a"], cascade: true))
        for id in ["a", "b", "c"] { #expect(h.s.status(id)?.outcome == .cancelled, "\(id)") }
        #expect(h.s.status("c")?.errorText == "dependency b cancelled")
        #expect(h.state("other") == .ready)
    }

    @Test func testCancelRunningOpIsCooperative() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        let d = h.join(1)
        h.start(d[0])
        let out = h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        #expect(cancels(out).map(\.1) == ["a"])
        #expect(h.state("a") == .executing)
        #expect(h.s.status("a")!.isCancelled)
        let next = dispatches(h.finish(d[0], .succeeded([1])))
        #expect(h.s.status("a")?.outcome == .cancelled)
        #expect(next.map(\.op) == ["b"], "a cancelled op counts as finished for dependents")
    }

    @Test func testCancelAllInQueue() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c"), op("x", q: "other")])
        let d = h.join(1)
        let out = h.send(.cancelAll(h.ref(), queue: "default"))
        #expect(cancels(out).map(\.1) == [d[0].op])
        #expect(h.s.queueCounts("default")?.cancelled == 2)
        #expect(h.state("x") == .ready)
        h.finish(d[0], .cancelled("stopped"))
        #expect(h.s.queueCounts("default")?.operationCount == 0)
    }

    @Test func testWorkerLossRequeuesWithNextAttemptThenFails() {
        var h = Harness()
        var a = op("a"); a.lossRetries = 1
        h.submit([a])
        let d1 = h.join(1)
        #expect(d1.first?.attempt == 1)
        h.send(.workerLost(worker: 1, reason: "gone"))
        #expect(h.state("a") == .ready, "back in its queue, nothing holds it")
        let d2 = h.join(2)
        #expect(d2.first?.attempt == 2)
        // The lost worker's late report is fenced.
        h.finish(d1[0])
        #expect(h.s.fencing.lostWorker == 1)
        #expect(h.state("a") == .dispatched)
        h.send(.workerLost(worker: 2, reason: "gone again"))
        #expect(h.s.status("a")?.outcome == .failed)
        #expect(h.s.status("a")?.errorText == "worker lost: gone again")
    }

    @Test func testStaleAttemptIsFencedAndCounted() {
        var h = Harness()
        var a = op("a"); a.retries = 1; a.retryDelayMicros = 0
        h.submit([a])
        let d1 = h.join(1, slots: 2)
        let d2 = dispatches(h.finish(d1[0], .failed("first"), grant: 1))
        #expect(d2.first?.attempt == 2)
        h.send(.partStarted(PartRef(worker: 1, op: "a", part: 0, attempt: 1)))
        h.finish(d1[0])
        #expect(h.s.fencing.staleAttempt == 2)
        h.send(.partFinished(PartRef(worker: 99, op: "a", part: 0, attempt: 2), .succeeded([]), grant: 0))
        h.send(.partFinished(PartRef(worker: 1, op: "zz", part: 0, attempt: 2), .succeeded([]), grant: 0))
        #expect(h.s.fencing.unknownWorker == 1)
        #expect(h.s.fencing.unknownOp == 1)
        #expect(h.state("a") == .dispatched)
        h.finish(d2[0])
        #expect(h.s.status("a")?.outcome == .succeeded)
        #expect(h.s.status("a")?.attempts == 2)
    }

    @Test func testFailureRetriesDefaultZero() {
        var h = Harness()
        h.submit([op("a")])
        let d = h.join(1)
        #expect(dispatches(h.finish(d[0], .failed("nope"))).isEmpty)
        #expect(h.s.status("a")?.outcome == .failed)
        #expect(h.s.status("a")?.errorText == "nope")
    }

    /// A timeout bounds each attempt from its STARTED; a timed-out attempt is stopped and fails (A4).
    @Test func testTimeoutCountsFromStartStopsTheAttemptAndFails() {
        var h = Harness()
        var a = op("a"); a.timeoutMicros = 500_000
        h.submit([a, op("b", ["a"])])
        let d = h.join(1, slots: 1)
        h.now += 2_000_000                  // waiting on the worker does not count
        h.send(.tick)
        #expect(h.state("a") == .dispatched)
        let out = h.start(d[0])
        #expect(out.contains(.scheduleTick(at: h.now + 500_000)))
        h.now += 499_999
        h.send(.tick)
        #expect(h.state("a") == .executing)
        h.now += 1
        let t = h.send(.tick)
        #expect(h.s.status("a")?.outcome == .failed)
        #expect(h.s.status("a")?.errorText == "timed out after 1 attempt (limit 500ms each)")
        #expect(cancels(t).map(\.1) == ["a"])
        // b becomes ready; the worker still holds a until it reports (fenced), then gets b.
        #expect(h.state("b") == .ready)
        let next = dispatches(h.send(.partFinished(PartRef(worker: 1, op: "a", part: 0, attempt: 1), .cancelled("stopped"), grant: 1)))
        #expect(next.map(\.op) == ["b"])
        #expect(h.s.fencing.staleAttempt == 1)
    }

    @Test func testSilentWorkerIsDeclaredLostByTick() {
        var h = Harness()
        h.submit([op("a")])
        h.join(1)
        h.join(2, credit: 0)
        h.now += 2_000_000
        h.send(.heartbeat(worker: 2))
        h.now += 1_000_001
        let out = h.send(.tick)
        #expect(out.contains { if case .disconnectWorker(1, _) = $0 { return true } else { return false } })
        #expect(h.s.workerSnapshot().map(\.id) == [2])
        #expect(h.state("a") == .ready, "re-queued, waiting for credit")
        #expect(dispatches(h.send(.credit(worker: 2, grant: 1))).map { ($0.op, $0.attempt) }.first?.1 == 2)
    }

    @Test func testReusedWorkerIdIsRefused() {
        var h = Harness()
        h.join(1)
        h.send(.workerLost(worker: 1, reason: "x"))
        let out = h.send(.workerJoined(WorkerHello(worker: 1, name: "again", slots: 1, kinds: ["noop"])))
        #expect(out.contains { if case .disconnectWorker(1, _) = $0 { return true } else { return false } })
    }
}

@Suite struct ClientServiceTests {
    @Test func testWaitForOpsCountsDown() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c")])
        let r = ClientRef(client: 3, request: 9)
        #expect(h.send(.wait(r, ids: ["a", "b"])).isEmpty)
        let d = h.join(1)
        #expect(!h.finish(d[0], grant: 0).contains(.reply(r, .waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 0)))))
        let out = h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        #expect(out.contains(.reply(r, .waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 1)))))
        #expect(replies(h.send(.wait(r, ids: ["a"]))) == [.waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 0))])
        #expect(replies(h.send(.wait(r, ids: ["nope"]))) == [.error(.notFound("unknown operation(s): nope"))])
    }

    @Test func testWaitForQueue() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let r = ClientRef(client: 3, request: 1)
        #expect(h.send(.waitQueue(r, queue: "default")).isEmpty)
        let d = h.join(1, slots: 2)
        h.finish(d[0])
        #expect(replies(h.finish(d[1])).contains(.waitDone(WaitSummary(succeeded: 2, failed: 0, cancelled: 0))))
    }

    @Test func testPublishOnlyWhileWatching() {
        func isPublish(_ a: Action) -> Bool { if case .publish = a { return true } else { return false } }
        var h = Harness()
        let (_, d) = h.submit([op("a")])
        #expect(d.isEmpty)
        let quiet = h.join(1)
        #expect(!h.finish(quiet[0], grant: 0).contains(where: isPublish))
        h.send(.watch(ClientRef(client: 5, request: 1), queue: nil))
        let loud = h.send(.submit(h.ref(), ops: [op("b")], queues: []))
        #expect(loud.contains(where: isPublish))
        h.send(.unwatch(client: 5))
        #expect(!h.send(.submit(h.ref(), ops: [op("c")], queues: [])).contains(where: isPublish))
    }

    @Test func testWatchStreamsTransitions() {
        var h = Harness()
        h.join(1)
        h.send(.watch(ClientRef(client: 5, request: 1), queue: "default"))
        var all: [Action] = []
        let r = h.ref()
        all += h.send(.submit(r, ops: [op("a")], queues: []))
        let d = dispatches(all)
        all += h.start(d[0])
        all += h.finish(d[0], .succeeded([4]))
        let ts = all.compactMap { if case .publish(let p) = $0, p.watchers.contains(5) { return p.event.transition } else { return nil } }
        #expect(ts == [.ready, .dispatched(part: 0, attempt: 1, worker: 1), .executing(part: 0, attempt: 1, worker: 1),
                     .finished(.succeeded([4]))])
    }

    /// A watcher sees one FINISHED per op: the cancel event carries the state the op was cancelled in,
    /// not the state it reached in the same step (the coordinator used to read it too late).
    @Test func testCancelEventCarriesTheStateAtCancellation() {
        var h = Harness()
        h.send(.watch(ClientRef(client: 5, request: 1), queue: "default"))
        var all = h.send(.submit(h.ref(), ops: [op("a"), op("b", ["a"])], queues: []))
        all += h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        let ts = all.compactMap { if case .publish(let p) = $0, p.watchers.contains(5), p.event.op == "b" { return p.event.transition } else { return nil } }
        #expect(ts == [.cancelled(state: .pending), .finished(.cancelled("cancelled"))])
    }

    @Test func testStoryCarriesStimulusIds() {
        var h = Harness()
        h.submit([op("a")])                 // stimulus 1
        let d = h.join(1)                   // stimulus 2
        h.finish(d[0])                      // stimulus 3
        let s = h.s.story("a")!
        #expect(!s.truncated)
        #expect(s.entries.map(\.stimulus) == [1, 1, 2, 3, 3])
        #expect(s.entries.map(\.event) == [.submitted, .ready, .dispatched(part: 0, worker: 1),
                                         .partFinished(part: 0, .succeeded), .finished(.succeeded)])
    }

    @Test func testStoryRingIsBounded() {
        var c = SchedulerConfig(); c.storyCapacity = 8
        var h = Harness(config: c)
        h.submit((0..<10).map { op("o\($0)") })
        #expect(h.s.story("o0")!.entries.isEmpty)
        #expect(h.s.story("o0")!.truncated)
        #expect(h.s.story("o9")!.entries.map(\.event) == [.ready])
        #expect(h.s.story("o9")!.truncated, "its submitted entry was overwritten")
    }
}
