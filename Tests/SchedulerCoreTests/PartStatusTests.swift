import Testing
@testable import SchedulerCore

/// One `PartStatus` for every part: a single-part op's part is its state, a multi-part op's parts are
/// in their record, and a retry delay is the state `delayed`, with no prerequisite made up for it.
@Suite struct PartStatusTests {
    /// An op with one retry, 100 ms after its failed attempt.
    private func retriedOnceAfter100ms(_ id: String) -> OperationSpec {
        var spec = op(id)
        spec.retries = 1; spec.retryDelayMicros = 100_000; spec.retryDelayMaxMicros = 100_000
        return spec
    }

    @Test func aFailedAttemptIsDelayedWithNoMadeUpPrerequisiteAndCountsAsPending() {
        var h = Harness()
        let a = retriedOnceAfter100ms("a")
        h.submit([a])
        let d = h.join(1, slots: 1)
        h.start(d[0])
        let op = h.s.lookup("a")!
        #expect(h.s.ops.partStatus(op, 0) == .running)
        h.finish(d[0], .failed("x"))
        #expect(h.state("a") == .delayed)
        #expect(h.s.ops.partStatus(op, 0) == .delayed)
        #expect(h.s.ops.hot[Int(op)].unfinishedDeps == 0)
        #expect(h.s.status("a")?.unfinishedDependencies == 0, "a retry delay is not a prerequisite")
        #expect(h.s.queueCounts("default")?.pending == 1, "the wire's one state for pending and delayed")
        guard case .retrying = h.s.why("a") else { Issue.record("\(h.s.why("a"))"); return }
        h.now += 200_000
        let again = dispatches(h.send(.tick))
        #expect(again.map { "\($0.op)#\($0.attempt)" } == ["a#2"])
        #expect(h.s.ops.partStatus(op, 0) == .dispatched)
    }

    /// The wire has one state for both, so a listing of pending ops has the delayed ones too.
    @Test func aListingOfPendingOpsHasTheDelayedOnes() {
        var h = Harness()
        let a = retriedOnceAfter100ms("a")
        h.submit([a, op("b", ["a"]), op("c")])
        let d = h.join(1, slots: 1)
        #expect(d.map(\.op) == ["a"])
        _ = h.finish(d[0], .failed("x"), grant: 0)
        #expect(h.state("a") == .delayed)
        guard case .success(let pending) = h.s.operationIDs(limit: 10, filter: OpFilter(states: [.pending])),
              case .success(let delayed) = h.s.operationIDs(limit: 10, filter: OpFilter(states: [.delayed])) else { Issue.record(); return }
        #expect(pending.ids.map { h.s.runAndOp(of: $0).op } == ["a", "b"])
        #expect(delayed.ids.map { h.s.runAndOp(of: $0).op } == ["a"])
    }

    @Test func aDelayedOpIsCancelledAtOnceAndItsDelayRunsOutOnNothing() {
        var h = Harness()
        let a = retriedOnceAfter100ms("a")
        h.submit([a, op("b", ["a"])])
        let d = h.join(1, slots: 1)
        h.finish(d[0], .failed("x"))
        #expect(h.state("a") == .delayed)
        let out = h.send(.cancel(h.ref(), ids: ["a"], cascade: false))
        #expect(cancels(out).isEmpty, "no worker holds it")
        #expect(h.state("a") == .finished)
        #expect(h.s.status("a")?.outcome == .cancelled)
        #expect(dispatches(out).map(\.op) == ["b"], "its dependent runs (policy finished)")
        h.now += 200_000
        #expect(dispatches(h.send(.tick)).isEmpty, "the delay's timer finds nothing to wake")
        #expect(h.s.status("a")?.attempts == 2)
    }

    /// When one part's report finishes a multi-part op, the parts still on workers are taken back
    /// while their status still says they started: each worker's running count stays true (the
    /// harness validates it after every step).
    @Test func partsStillRunningWhenTheirOpFinishesAreTakenBackAsStarted() {
        var h = Harness()
        var m = op("m"); m.parts = 3
        h.submit([m])
        let d = h.join(1, slots: 1) + h.join(2, slots: 1) + h.join(3, slots: 1)
        #expect(d.count == 3)
        for p in d { h.start(p) }
        let op = h.s.lookup("m")!
        #expect((0..<3).map { h.s.ops.partStatus(op, $0) } == [.running, .running, .running])
        h.finish(d[2], .succeeded([3]))
        #expect(h.s.ops.partStatus(op, d[2].part) == .done)
        #expect(h.s.status("m")?.partsFinished == 1)
        let out = h.finish(d[0], .cancelled("handler gave up"))
        #expect(h.s.status("m")?.outcome == .cancelled)
        #expect(cancels(out).map(\.0) == [d[1].worker], "the one part still running is stopped")
        #expect((0..<3).map { h.s.ops.partStatus(op, $0) } == [.done, .done, .done])
        #expect(h.s.validate().isEmpty)
    }
}
