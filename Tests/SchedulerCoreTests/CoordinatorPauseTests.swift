import Testing
@testable import SchedulerCore

/// Liveness counts only the time the coordinator listened (docs/ARCHITECTURE.md, "A loop with a bound"):
/// a pause of its own (`.coordinatorPaused`) is not a worker's silence.
struct CoordinatorPauseTests {
    private func lost(_ out: [Action]) -> [UInt64] {
        out.compactMap { if case .disconnectWorker(let w, _) = $0 { w } else { nil } }
    }

    @Test func aWorkerSilentOnlyWhileTheCoordinatorPausedIsNotLost() {
        var h = Harness()          // 1 s heartbeat × 3: lost after 3 s of silence
        h.submit([op("a")])
        h.join(1)
        h.now += 2_900_000         // heard last 2.9 s ago, then the loop holds 4 s on one input
        h.now += 4_000_000
        h.send(.coordinatorPaused(micros: 3_980_000))
        #expect(lost(h.send(.tick)).isEmpty, "the coordinator did not listen for 3.98 s of the 6.9")
        #expect(h.s.workerSnapshot().map(\.id) == [1])
        // Its silence goes on counting once the coordinator listens again: 2.9 + 0.02 + 0.08 s = 3 s.
        h.now += 79_999
        #expect(lost(h.send(.tick)).isEmpty)
        h.now += 1
        #expect(lost(h.send(.tick)) == [1], "silent for more than 3 s while the coordinator listened")
    }

    @Test func aPauseNeverMovesLastSeenPastNowNorRevivesALostWorker() {
        var h = Harness()
        h.join(1)
        h.join(2)
        h.now += 1_000_000
        h.send(.heartbeat(worker: 2))
        h.send(.coordinatorPaused(micros: 60_000_000))    // longer than anything since worker 2 was heard
        let seen = Dictionary(uniqueKeysWithValues: h.s.workerSnapshot().map { ($0.id, $0.lastSeen) })
        #expect(seen[1] == h.now && seen[2] == h.now, "at most now")
        h.now += 3_000_001
        #expect(lost(h.send(.tick)).sorted() == [1, 2])
        h.send(.coordinatorPaused(micros: 10_000_000))
        #expect(h.s.workerSnapshot().isEmpty, "a lost worker stays lost")
    }
}
