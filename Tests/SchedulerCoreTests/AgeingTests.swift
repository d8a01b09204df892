import Testing
@testable import SchedulerCore

/// Ageing (A11): a queue's optional rule that raises a waiting ready op one priority level a period,
/// so a steady stream of higher priorities cannot starve it forever. Times are driven by the harness.
@Suite struct AgeingTests {
    static let period: Int64 = 1_000_000
    static let step: Int64 = 100_000

    struct Outcome {
        /// When `low` was dispatched (nil: never within the steps).
        var startedAt: Int64?
        /// `low`'s priority and when it changed, in order.
        var levels: [(at: Int64, priority: Int)]
        var t0: Int64
    }

    /// One worker with one slot; `low` (veryLow) waits while every `step` a new high (4) op arrives and
    /// the running one finishes, for `steps` steps.
    static func starve(ageing: Int64?, steps: Int, harness h: inout Harness) -> Outcome {
        h.join(1, slots: 1, credit: 1)
        let queue = QueueSpec(name: "default", fairness: QueueFairness(ageingMicros: ageing))
        var (_, running) = h.submit([op("h0", p: 4), op("low", p: -8)], queues: [queue])
        let t0 = h.now
        var levels: [(at: Int64, priority: Int)] = [(t0, -8)]
        var startedAt: Int64?
        for i in 1...steps {
            h.now += step
            h.submit([op("h\(i)", p: 4)])
            h.send(.tick)
            if let p = h.s.status("low")?.priority, p != levels.last!.priority { levels.append((h.now, p)) }
            let d = running.removeFirst()
            running += dispatches(h.finish(d))
            if startedAt == nil, running.contains(where: { $0.op == "low" }) { startedAt = h.now }
        }
        return Outcome(startedAt: startedAt, levels: levels, t0: t0)
    }

    @Test func withoutAgeingALowPriorityNeverStartsUnderAHighStream() {
        var h = Harness()
        let o = Self.starve(ageing: nil, steps: 200, harness: &h)
        #expect(o.startedAt == nil)
        #expect(o.levels.map(\.priority) == [-8])
        #expect(h.s.timers.queueAgeing.isEmpty, "no timer for a queue without ageing")
    }

    @Test func withAgeingItClimbsOneLevelAPeriodAndStarts() {
        var h = Harness()
        let o = Self.starve(ageing: Self.period, steps: 200, harness: &h)
        // −8 → −4 → 0 → 4: at level 4 it is older than every high op, so it goes next.
        #expect(o.levels.map(\.priority) == [-8, -4, 0, 4], "\(o.levels)")
        var last = o.t0
        for (at, _) in o.levels.dropFirst() {
            // Each step after a full period since the last (a raise restarts the clock), at most a sweep's
            // granularity (period/8) and one harness step late.
            #expect(at - last >= Self.period && at - last <= Self.period + Self.period / 8 + Self.step, "\(o.levels)")
            last = at
        }
        #expect(o.startedAt != nil && o.startedAt! - last <= Self.step, "started at \(String(describing: o.startedAt)), level 4 at \(last)")
        // Each raise is journalled as a plain priority change.
        let raises = h.journal.compactMap { r -> Int? in
            if case .priorityChanged("low", let p, false) = r.record { return p } else { return nil }
        }
        #expect(raises == [-4, 0, 4])
    }

    @Test func aRaiseStopsAtVeryHigh() {
        var h = Harness()
        let queue = QueueSpec(name: "default", fairness: QueueFairness(ageingMicros: Self.period))
        h.submit([op("a", p: -8)], queues: [queue])   // no worker: it only waits
        for _ in 0..<80 { h.now += Self.step; h.send(.tick) }
        #expect(h.s.status("a")?.priority == 8)
    }

    @Test func turningAgeingOffStopsItsTimer() {
        var h = Harness()
        let queue = QueueSpec(name: "default", fairness: QueueFairness(ageingMicros: Self.period))
        h.submit([op("a", p: -8)], queues: [queue])
        h.send(.setQueueFairness(h.ref(), queue: "default", QueueFairness()))
        for _ in 0..<30 { h.now += Self.step; h.send(.tick) }
        #expect(h.s.status("a")?.priority == -8)
        #expect(h.s.timers.queueAgeing.isEmpty)
    }

    /// The journal (or a snapshot) fed to a new core gives the same priorities, and the same clocks: the
    /// next raise comes a period after the last one, not at once.
    @Test func replayGivesTheSamePrioritiesAndClocks() {
        for snapshot in [false, true] {
            var h = Harness()
            let queue = QueueSpec(name: "default", fairness: QueueFairness(ageingMicros: Self.period))
            h.submit([op("a", p: -8), op("b", p: 0)], queues: [queue])
            for _ in 0..<25 { h.now += Self.step; h.send(.tick) }
            let before = ["a", "b"].map { h.s.status($0)?.priority }
            #expect(before == [0, 8])
            var r = Harness()
            let records: [(at: Int64, record: JournalRecord)] = snapshot ? h.s.snapshotRecords() : h.journal
            for record in records { r.now = record.at; r.send(.restore(record.record)) }
            #expect(["a", "b"].map { r.s.status($0)?.priority } == before, "snapshot: \(snapshot)")
            #expect(r.s.agedAt == h.s.agedAt, "snapshot: \(snapshot)")
            r.now = h.now
            r.send(.recovered)
            r.send(.tick)
            #expect(r.s.status("a")?.priority == 0, "a was raised at once after recovery (snapshot: \(snapshot))")
            r.now = h.now + Self.period
            r.send(.tick)
            #expect(r.s.status("a")?.priority == 4, "snapshot: \(snapshot)")
        }
    }

    @Test func ageingOutsideItsBoundsIsRefusedPrecisely() {
        #expect(QueueFairness(ageingMicros: 999).problem == "ageing must be 1ms...24h, got 999µs")
        #expect(QueueFairness(ageingMicros: 86_400_000_001).problem != nil)
        #expect(QueueFairness(ageingMicros: 1_000).problem == nil)
    }
}
