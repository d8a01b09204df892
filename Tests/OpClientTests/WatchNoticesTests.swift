import OpClient
import Testing
import WireProtocol

/// Worker losses and re-dispatches named in the recent-events area, from WORKERS replies and EVENTs.
struct WatchNoticesTests {
    /// w3 runs four ops of run r; it vanishes: the coordinator sends them back (READY, then DISPATCHED to
    /// w4 with attempt 2) and WORKERS no longer lists it. One line says so, whichever came first.
    func fourOpsOnW3(_ n: inout WatchNotices) {
        _ = n.workers([worker("w3", "host-a"), worker("w4", "host-b")], at: 0)
        _ = n.record((1...4).map { event("r", "x\($0)", .dispatched, attempt: 1, worker: "w3") }, at: 1)
        _ = n.record((1...4).map { event("r", "x\($0)", .executing, attempt: 1, worker: "w3") }, at: 1.2)
    }

    @Test func aLostWorkerIsOneLineWithItsReDispatchedOps_eventsFirst() {
        var n = WatchNotices()
        fourOpsOnW3(&n)
        let moved = n.record((1...4).flatMap { [event("r", "x\($0)", .ready), event("r", "x\($0)", .dispatched, attempt: 2, worker: "w4")] },
                             at: 4)
        #expect(moved.map(\.text) == (1...4).map { "op r/x\($0) re-dispatched (attempt 2)" })
        let lost = n.workers([worker("w4", "host-b")], at: 4.3)
        #expect(lost.map(\.text) == ["worker w3 (host-a) lost — 4 ops re-dispatched"])
        #expect(n.recent.map(\.text) == ["worker w3 (host-a) lost — 4 ops re-dispatched"], "the op lines are folded into it")
    }

    @Test func aLostWorkerIsOneLineWithItsReDispatchedOps_workersFirst() {
        var n = WatchNotices()
        fourOpsOnW3(&n)
        #expect(n.workers([worker("w4", "host-b")], at: 4).map(\.text) == ["worker w3 (host-a) lost"])
        let moved = n.record((1...4).map { event("r", "x\($0)", .ready) }, at: 4.2)
        #expect(moved.isEmpty, "counted in the loss's line")
        #expect(n.recent.map(\.text) == ["worker w3 (host-a) lost — 4 ops re-dispatched"])
    }

    @Test func anOpSentBackFromALiveWorkerIsNamed() {
        var n = WatchNotices()
        _ = n.workers([worker("w1", "a")], at: 0)
        _ = n.record([event("RUN", "x", .dispatched, attempt: 1, worker: "w1")], at: 1)
        // Not started in time: taken back and dispatched again, here without a READY in between.
        #expect(n.record([event("RUN", "x", .dispatched, attempt: 2, worker: "w1")], at: 2).map(\.text)
                == ["op RUN/x re-dispatched (attempt 2)"])
        #expect(n.workers([worker("w1", "a")], at: 3).isEmpty)
    }

    @Test func aFailedAttemptIsARetryNotAReDispatchAndAFailureIsNamed() {
        var n = WatchNotices()
        _ = n.record([event("r", "f", .executing, attempt: 1, worker: "w1")], at: 1)
        #expect(n.record([event("r", "f", .pending, attempt: 1)], at: 2).isEmpty)
        #expect(n.record([event("r", "f", .ready)], at: 3).isEmpty, "READY after the retry delay")
        _ = n.record([event("r", "f", .executing, attempt: 2, worker: "w1")], at: 4)
        #expect(n.record([event("r", "f", .finished, failed: "exit 1\nno such file")], at: 5).map(\.text)
                == ["op r/f failed: no such file"])
    }

    @Test func aWorkerBackUnderANewSessionLostItsOldOneAndJoinsAreSaid() {
        var n = WatchNotices()
        _ = n.workers([worker("w1", "a")], at: 0)
        #expect(n.workers([worker("w1", "a", session: 2), worker("w2", "b", slots: 4)], at: 1).map(\.text)
                == ["worker w1 (a) re-registered (session 2), its old session lost", "worker w2 (b) joined, 4 slots"])
    }

    @Test func aCoordinatorRestartIsNotTakenForLostOrJoiningWorkers() {
        var n = WatchNotices(settleTime: 5)
        _ = n.workers([worker("w1", "a"), worker("w2", "b")], at: 0)
        _ = n.coordinatorLost(at: 1)
        _ = n.coordinatorBack(after: 2, at: 3)
        // The coordinator that came back lists nobody yet, then the workers as they register again.
        #expect(n.workers([], at: 3).isEmpty)
        #expect(n.workers([worker("w1", "a", session: 2)], at: 4).isEmpty)
        #expect(n.workers([worker("w1", "a", session: 2), worker("w2", "b", session: 2)], at: 6).isEmpty)
        // Settled: news again.
        #expect(n.workers([worker("w1", "a", session: 2)], at: 9).map(\.text) == ["worker w2 (b) lost"])
        #expect(n.recent.map(\.text) == ["lost the coordinator; retrying", "coordinator back after 2.0s", "worker w2 (b) lost"])
    }
}
