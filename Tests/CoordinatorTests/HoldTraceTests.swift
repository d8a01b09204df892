@testable import Coordinator
import Testing

/// `HoldTrace`: what an over-budget hold's line says (steps by wall time, thread CPU), and that it costs
/// nothing when off.
struct HoldTraceTests {
    @Test func anOverBudgetHoldNamesItsStepsLongestFirstAndMergesRepeats() throws {
        var t = HoldTrace(enabled: true)
        t.woke(at: 0)
        t.mark("decode", now: 5_000)
        t.mark("core SUBMIT", now: 35_000)
        t.mark("core started", now: 36_500)
        t.mark("core started", now: 38_000)
        t.mark("tiny", now: 38_100)
        let first = t.reading(at: 40_000, over: true)
        let line = try #require(first)
        #expect(line.hasPrefix("thread CPU "))
        #expect(line.hasSuffix("steps: core SUBMIT 30 ms, decode 5 ms, core started 3 ms ×2, unmarked 1 ms"), "\(line)")
        #expect(!line.contains("tiny"), "steps under 1 ms are left out")
        // The next hold starts empty.
        t.mark("flush", now: 62_000)
        let second = t.reading(at: 62_000, over: true)
        let next = try #require(second)
        #expect(next.hasSuffix("steps: flush 22 ms"), "\(next)")
    }

    @Test func aHoldWithinBudgetSaysNothingAndOffTracesNothing() {
        var on = HoldTrace(enabled: true)
        on.mark("decode", now: 5_000)
        #expect(on.reading(at: 10_000, over: false) == nil)
        var off = HoldTrace(enabled: false)
        off.mark("decode", now: 5_000)
        #expect(off.reading(at: 500_000, over: true) == nil)
    }
}
