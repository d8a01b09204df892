import OpClient
import Testing

/// Rate (finished per second over a sliding window) and ETA, with injected times.
struct RateWindowTests {
    @Test func rateIsFinishedPerSecondOverTheWindow() {
        var w = RateWindow(span: 10)
        for t in 0...20 { w.add(UInt64(t * 3), at: Double(t)) }   // 3 per second, steadily
        #expect(w.rate == 3)
        #expect(RateWindow.eta(remaining: 30, rate: w.rate) == 10)
    }

    @Test func unknownUntilTheSamplesCoverASecond() {
        var w = RateWindow(span: 10, minimumSpan: 1)
        #expect(w.rate == nil)
        w.add(0, at: 5)
        w.add(4, at: 5.5)
        #expect(w.rate == nil, "half a second says too little")
        #expect(RateWindow.eta(remaining: 10, rate: w.rate) == nil)
        w.add(8, at: 6)
        #expect(w.rate == 8)
    }

    @Test func theWindowSlidesSoAStallShowsAsZeroAndTheEtaAsUnknown() {
        var w = RateWindow(span: 10)
        for t in 0...10 { w.add(UInt64(t * 10), at: Double(t)) }
        #expect(w.rate == 10)
        // Nothing finishes for 5 s: half the window is idle.
        for t in 11...15 { w.add(100, at: Double(t)) }
        #expect(w.rate == 5)
        // Then for longer than the window.
        for t in 16...26 { w.add(100, at: Double(t)) }
        #expect(w.rate == 0)
        #expect(RateWindow.eta(remaining: 7, rate: w.rate) == nil, "no progress: no ETA")
        #expect(RateWindow.eta(remaining: 0, rate: w.rate) == 0, "nothing left")
    }

    /// A queue's finished count drops when its finished runs are evicted: the rate goes on (issue 25:
    /// `watch` showed 226/s for a run and 64/s for its only queue, whose window had started afresh).
    @Test func aCountThatGoesDownKeepsTheRate() {
        var w = RateWindow(span: 10)
        for t in 0...5 { w.add(UInt64(100 + t), at: Double(t)) }
        w.add(3, at: 6)   // an eviction (or a coordinator that came back without its journal)
        #expect(w.rate != nil, "the window is kept")
        w.add(5, at: 7)
        #expect(w.rate == 1, "the drop is not progress; the rate goes on")
        // Steady 10/s, with 50 finished ops evicted at t = 5 while 10 more finished.
        var q = RateWindow(span: 10)
        for t in 0...20 { q.add(UInt64(10 * t - (t >= 5 ? 50 : 0)), at: Double(t)) }
        #expect(q.rate == 10, "past the eviction, the same rate as a run's beside it")
    }

    @Test func manySamplesStayBoundedAndRight() {
        var w = RateWindow(span: 10)
        for i in 0...10_000 { w.add(UInt64(i), at: Double(i) / 100) }   // 100 per second, a sample every 10 ms
        let r = w.rate ?? -1
        #expect(abs(r - 100) < 0.5, "\(r)")
    }
}
