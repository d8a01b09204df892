import Testing
@testable import SchedulerCore

/// Issue 25 finding 2: what status shows of a finished op (worker, times, attempts and their errors,
/// outcome) is journalled in its finish record and restored by replay — from the journal as written and
/// from a snapshot — and its story says the earlier entries were lost in a restart, not overwritten.
@Suite struct HistoryTests {
    /// A worker w1 runs "a" (one failed attempt, then success) and "b"; "c" is cancelled before it ran.
    private func finishedRun() -> Harness {
        var h = Harness()
        var a = op("a"); a.retries = 1; a.retryDelayMicros = 0
        h.submit([a, op("b", ["a"]), op("c", ["a"])])
        h.now += 10
        let d1 = h.join(1)
        h.now += 10
        h.start(d1[0])
        h.now += 100
        let d2 = dispatches(h.finish(d1[0], .failed("first try")))
        h.now += 10
        h.start(d2[0])
        h.now += 250
        h.send(.cancel(h.ref(), ids: ["c"], cascade: false, reason: "not wanted"))
        let d3 = dispatches(h.finish(d2[0], .succeeded([1, 2])))
        h.now += 10
        h.start(d3[0])
        h.now += 40
        h.finish(d3[0], .succeeded([3]))
        return h
    }

    private func replayed(_ records: [(at: Int64, record: JournalRecord)], at now: Int64) -> Harness {
        var r = Harness()
        for (at, record) in records { r.now = at; r.send(.restore(record)) }
        r.now = now + 1_000
        r.send(.recovered)
        return r
    }

    @Test(arguments: [false, true])
    func aFinishedOpsStatusSurvivesReplay(fromSnapshot: Bool) {
        let h = finishedRun()
        let r = replayed(fromSnapshot ? h.s.snapshotRecords() : h.journal, at: h.now)
        for id in ["a", "b", "c"] {
            let before = h.s.status(id), after = r.s.status(id)
            #expect(before != nil)
            #expect(after == before, "\(id): \(String(describing: after)) != \(String(describing: before))")
        }
        #expect(r.s.status("a")?.attemptErrors == ["attempt 1: first try"])
        #expect(r.s.status("a")?.attempts == 2)
        #expect(r.s.status("a")?.lastWorker == 1)
        #expect(r.s.status("a")?.lastWorkerOwner == "w1")
        #expect(r.s.status("c")?.lastWorker == nil)
        // A snapshot of the recovered core keeps the history (a second restart loses nothing either).
        let again = replayed(r.s.snapshotRecords(), at: r.now)
        #expect(again.s.status("a") == h.s.status("a"))
    }

    /// The story of an op finished before the restart: rebuilt entries (stimulus 0), then `restarted`;
    /// never "truncated" and never empty.
    @Test func aReplayedStoryIsRebuiltAndSaysTheRestart() {
        let h = finishedRun()
        let r = replayed(h.journal, at: h.now)
        guard let (entries, truncated) = r.s.story("a") else { Issue.record("no story"); return }
        #expect(!truncated)
        let st = h.s.status("a")!
        #expect(entries.map(\.event) == [.submitted, .ready, .dispatched(part: 0, worker: 1), .started(part: 0, attempt: 2),
                                          .finished(.succeeded), .restarted])
        #expect(entries.map(\.at) == [st.submittedAt, st.readyAt!, st.dispatchedAt!, st.startedAt!, st.finishedAt!, h.now + 1_000])
        // The cancelled op never ran: submitted, finished, restarted.
        #expect(r.s.story("c")?.entries.map(\.event) == [.submitted, .finished(.cancelled), .restarted])
    }

    /// A worker joining after the restart with the id of a session from before it is not refused: the
    /// restored session is only a name for history.
    @Test func aRestoredSessionsIdIsFreeForANewSession() {
        let h = finishedRun()
        var r = replayed(h.journal, at: h.now)
        let out = r.send(.workerJoined(WorkerHello(worker: 1, name: "w1", slots: 1, kinds: ["noop"])))
        #expect(!out.contains { if case .disconnectWorker = $0 { return true }; return false })
        #expect(r.s.liveWorkerCount == 1)
    }
}
