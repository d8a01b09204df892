import XCTest
@testable import SchedulerCore

final class FaultRulesTests: XCTestCase {
    func testCancelledBeforeStartFinishesAtOnceDespiteUnfinishedDependencies() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        XCTAssertEqual(h.state("b"), .finished)
        XCTAssertEqual(h.state("a"), .ready)
    }

    func testCascadeCancelsDependentsTransitively() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"]), op("c", ["b"]), op("other")])
        h.send(.cancel(h.ref(), ids: ["a"], cascade: true))
        for id in ["a", "b", "c"] { XCTAssertEqual(h.s.status(id)?.outcome, .cancelled, id) }
        XCTAssertEqual(h.s.status("c")?.errorText, "dependency b cancelled")
        XCTAssertEqual(h.state("other"), .ready)
    }

    func testCancelRunningOpIsCooperative() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"])])
        let d = h.join(1)
        h.start(d[0])
        let out = h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        XCTAssertEqual(cancels(out).map(\.1), ["a"])
        XCTAssertEqual(h.state("a"), .executing)
        XCTAssertTrue(h.s.status("a")!.isCancelled)
        let next = dispatches(h.finish(d[0], .succeeded([1])))
        XCTAssertEqual(h.s.status("a")?.outcome, .cancelled)
        XCTAssertEqual(next.map(\.op), ["b"], "a cancelled op counts as finished for dependents")
    }

    func testCancelAllInQueue() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c"), op("x", q: "other")])
        let d = h.join(1)
        let out = h.send(.cancelAll(h.ref(), queue: "default"))
        XCTAssertEqual(cancels(out).map(\.1), [d[0].op])
        XCTAssertEqual(h.s.queueCounts("default")?.cancelled, 2)
        XCTAssertEqual(h.state("x"), .ready)
        h.finish(d[0], .cancelled("stopped"))
        XCTAssertEqual(h.s.queueCounts("default")?.operationCount, 0)
    }

    func testWorkerLossRequeuesWithNextAttemptThenFails() {
        var h = Harness()
        var a = op("a"); a.lossRetries = 1
        h.submit([a])
        let d1 = h.join(1)
        XCTAssertEqual(d1.first?.attempt, 1)
        h.send(.workerLost(worker: 1, reason: "gone"))
        XCTAssertEqual(h.state("a"), .ready, "back in its queue, nothing holds it")
        let d2 = h.join(2)
        XCTAssertEqual(d2.first?.attempt, 2)
        // The lost worker's late report is fenced.
        h.finish(d1[0])
        XCTAssertEqual(h.s.fencing.lostWorker, 1)
        XCTAssertEqual(h.state("a"), .dispatched)
        h.send(.workerLost(worker: 2, reason: "gone again"))
        XCTAssertEqual(h.s.status("a")?.outcome, .failed)
        XCTAssertEqual(h.s.status("a")?.errorText, "worker lost: gone again")
    }

    func testStaleAttemptIsFencedAndCounted() {
        var h = Harness()
        var a = op("a"); a.retries = 1; a.retryDelayMicros = 0
        h.submit([a])
        let d1 = h.join(1, slots: 2)
        let d2 = dispatches(h.finish(d1[0], .failed("first"), grant: 1))
        XCTAssertEqual(d2.first?.attempt, 2)
        h.send(.partStarted(PartRef(worker: 1, op: "a", part: 0, attempt: 1)))
        h.finish(d1[0])
        XCTAssertEqual(h.s.fencing.staleAttempt, 2)
        h.send(.partFinished(PartRef(worker: 99, op: "a", part: 0, attempt: 2), .succeeded([]), grant: 0))
        h.send(.partFinished(PartRef(worker: 1, op: "zz", part: 0, attempt: 2), .succeeded([]), grant: 0))
        XCTAssertEqual(h.s.fencing.unknownWorker, 1)
        XCTAssertEqual(h.s.fencing.unknownOp, 1)
        XCTAssertEqual(h.state("a"), .dispatched)
        h.finish(d2[0])
        XCTAssertEqual(h.s.status("a")?.outcome, .succeeded)
        XCTAssertEqual(h.s.status("a")?.attempts, 2)
    }

    func testFailureRetriesDefaultZero() {
        var h = Harness()
        h.submit([op("a")])
        let d = h.join(1)
        XCTAssertTrue(dispatches(h.finish(d[0], .failed("nope"))).isEmpty)
        XCTAssertEqual(h.s.status("a")?.outcome, .failed)
        XCTAssertEqual(h.s.status("a")?.errorText, "nope")
    }

    /// A timeout bounds each attempt from its STARTED; a timed-out attempt is stopped and fails (A4).
    func testTimeoutCountsFromStartStopsTheAttemptAndFails() {
        var h = Harness()
        var a = op("a"); a.timeoutMicros = 500_000
        h.submit([a, op("b", ["a"])])
        let d = h.join(1, slots: 1)
        h.now += 2_000_000                  // waiting on the worker does not count
        h.send(.tick)
        XCTAssertEqual(h.state("a"), .dispatched)
        let out = h.start(d[0])
        XCTAssertTrue(out.contains(.scheduleTick(at: h.now + 500_000)))
        h.now += 499_999
        h.send(.tick)
        XCTAssertEqual(h.state("a"), .executing)
        h.now += 1
        let t = h.send(.tick)
        XCTAssertEqual(h.s.status("a")?.outcome, .failed)
        XCTAssertEqual(h.s.status("a")?.errorText, "timed out after 1 attempt (limit 500ms each)")
        XCTAssertEqual(cancels(t).map(\.1), ["a"])
        // b becomes ready; the worker still holds a until it reports (fenced), then gets b.
        XCTAssertEqual(h.state("b"), .ready)
        let next = dispatches(h.send(.partFinished(PartRef(worker: 1, op: "a", part: 0, attempt: 1), .cancelled("stopped"), grant: 1)))
        XCTAssertEqual(next.map(\.op), ["b"])
        XCTAssertEqual(h.s.fencing.staleAttempt, 1)
    }

    func testSilentWorkerIsDeclaredLostByTick() {
        var h = Harness()
        h.submit([op("a")])
        h.join(1)
        h.join(2, credit: 0)
        h.now += 2_000_000
        h.send(.heartbeat(worker: 2))
        h.now += 1_000_001
        let out = h.send(.tick)
        XCTAssertTrue(out.contains { if case .disconnectWorker(1, _) = $0 { return true } else { return false } })
        XCTAssertEqual(h.s.workerSnapshot().map(\.id), [2])
        XCTAssertEqual(h.state("a"), .ready, "re-queued, waiting for credit")
        XCTAssertEqual(dispatches(h.send(.credit(worker: 2, grant: 1))).map { ($0.op, $0.attempt) }.first?.1, 2)
    }

    func testReusedWorkerIdIsRefused() {
        var h = Harness()
        h.join(1)
        h.send(.workerLost(worker: 1, reason: "x"))
        let out = h.send(.workerJoined(WorkerHello(worker: 1, name: "again", slots: 1, kinds: ["noop"])))
        XCTAssertTrue(out.contains { if case .disconnectWorker(1, _) = $0 { return true } else { return false } })
    }
}

final class ClientServiceTests: XCTestCase {
    func testWaitForOpsCountsDown() {
        var h = Harness()
        h.submit([op("a"), op("b"), op("c")])
        let r = ClientRef(client: 3, request: 9)
        XCTAssertTrue(h.send(.wait(r, ids: ["a", "b"])).isEmpty)
        let d = h.join(1)
        XCTAssertFalse(h.finish(d[0], grant: 0).contains(.reply(r, .waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 0)))))
        let out = h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        XCTAssertTrue(out.contains(.reply(r, .waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 1)))))
        XCTAssertEqual(replies(h.send(.wait(r, ids: ["a"]))), [.waitDone(WaitSummary(succeeded: 1, failed: 0, cancelled: 0))])
        XCTAssertEqual(replies(h.send(.wait(r, ids: ["nope"]))), [.error(.notFound("unknown operation(s): nope"))])
    }

    func testWaitForQueue() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let r = ClientRef(client: 3, request: 1)
        XCTAssertTrue(h.send(.waitQueue(r, queue: "default")).isEmpty)
        let d = h.join(1, slots: 2)
        h.finish(d[0])
        XCTAssertTrue(replies(h.finish(d[1])).contains(.waitDone(WaitSummary(succeeded: 2, failed: 0, cancelled: 0))))
    }

    func testPublishOnlyWhileWatching() {
        func isPublish(_ a: Action) -> Bool { if case .publish = a { return true } else { return false } }
        var h = Harness()
        let (_, d) = h.submit([op("a")])
        XCTAssertTrue(d.isEmpty)
        let quiet = h.join(1)
        XCTAssertFalse(h.finish(quiet[0], grant: 0).contains(where: isPublish))
        h.send(.watch(ClientRef(client: 5, request: 1), queue: nil))
        let loud = h.send(.submit(h.ref(), ops: [op("b")], queues: []))
        XCTAssertTrue(loud.contains(where: isPublish))
        h.send(.unwatch(client: 5))
        XCTAssertFalse(h.send(.submit(h.ref(), ops: [op("c")], queues: [])).contains(where: isPublish))
    }

    func testWatchStreamsTransitions() {
        var h = Harness()
        h.join(1)
        h.send(.watch(ClientRef(client: 5, request: 1), queue: "default"))
        var all: [Action] = []
        let r = h.ref()
        all += h.send(.submit(r, ops: [op("a")], queues: []))
        let d = dispatches(all)
        all += h.start(d[0])
        all += h.finish(d[0], .succeeded([4]))
        let ts = all.compactMap { if case .publish(5, let e) = $0 { return e.transition } else { return nil } }
        XCTAssertEqual(ts, [.ready, .dispatched(part: 0, attempt: 1, worker: 1), .executing(part: 0, attempt: 1, worker: 1),
                            .finished(.succeeded([4]))])
    }

    /// A watcher sees one FINISHED per op: the cancel event carries the state the op was cancelled in,
    /// not the state it reached in the same step (the coordinator used to read it too late).
    func testCancelEventCarriesTheStateAtCancellation() {
        var h = Harness()
        h.send(.watch(ClientRef(client: 5, request: 1), queue: "default"))
        var all = h.send(.submit(h.ref(), ops: [op("a"), op("b", ["a"])], queues: []))
        all += h.send(.cancel(h.ref(), ids: ["b"], cascade: false))
        let ts = all.compactMap { if case .publish(5, let e) = $0, e.op == "b" { return e.transition } else { return nil } }
        XCTAssertEqual(ts, [.cancelled(state: .pending), .finished(.cancelled("cancelled"))])
    }

    func testStoryCarriesStimulusIds() {
        var h = Harness()
        h.submit([op("a")])                 // stimulus 1
        let d = h.join(1)                   // stimulus 2
        h.finish(d[0])                      // stimulus 3
        let s = h.s.story("a")!
        XCTAssertFalse(s.truncated)
        XCTAssertEqual(s.entries.map(\.stimulus), [1, 1, 2, 3, 3])
        XCTAssertEqual(s.entries.map(\.event), [.submitted, .ready, .dispatched(part: 0, worker: 1),
                                                .partFinished(part: 0, .succeeded), .finished(.succeeded)])
    }

    func testStoryRingIsBounded() {
        var c = SchedulerConfig(); c.storyCapacity = 8
        var h = Harness(config: c)
        h.submit((0..<10).map { op("o\($0)") })
        XCTAssertTrue(h.s.story("o0")!.entries.isEmpty)
        XCTAssertTrue(h.s.story("o0")!.truncated)
        XCTAssertEqual(h.s.story("o9")!.entries.map(\.event), [.ready])
        XCTAssertTrue(h.s.story("o9")!.truncated, "its submitted entry was overwritten")
    }
}
