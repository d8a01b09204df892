@testable import Coordinator
import Testing

/// The coordinator shell's pure values, tested without sockets.
struct ShellValueTests {
    @Test func aWorkersClockIsPutOnTheCoordinatorsTimelineInItsOwnOrder() {
        var clock = WorkerClock()
        #expect(clock.convert(500, now: 10_000) == nil, "no offset before the first message")
        // The worker's clock is 1,000,000 µs behind; the first message took 300 µs.
        clock.observe(sent: 9_000, receivedAt: 1_009_300)
        #expect(clock.convert(8_000, now: 1_009_300) == 1_008_300)
        // A faster message improves the offset, but never so fast that a later event lands before an
        // earlier one: the offset moves down no faster than the worker's own time passes.
        clock.observe(sent: 9_500, receivedAt: 1_009_600)     // 100 µs delay: offset 1,000,100
        let finish = clock.convert(9_400, now: 1_009_600)!    // at most the old offset's time
        let nextStart = clock.convert(9_401, now: 1_009_600)!
        #expect(nextStart > finish, "\(finish) then \(nextStart)")
        #expect(finish <= 1_009_600 && nextStart <= 1_009_600, "never later than receipt")
        // Events reported out of order keep their gaps exactly.
        let later = clock.convert(9_450, now: 1_009_600)!
        let earlier = clock.convert(9_420, now: 1_009_600)!
        #expect(later - earlier == 30)
        #expect(clock.convert(0, now: 1_009_600) == nil, "0 means not given")
    }

    @Test func repeatedLinesAreCountedNotLogged() {
        var limiter = LogLimiter(window: 10, burst: 1, budget: 3, capacity: 2)
        #expect(limiter.admit("a", now: 0) == 0)
        #expect(limiter.admit("a", now: 5) == nil)
        #expect(limiter.admit("a", now: 6) == nil)
        #expect(limiter.admit("a", now: 10) == 2, "the next line after the window carries the count")
        #expect(limiter.admit("b", burst: 5, now: 10) == 0)
        #expect(limiter.admit("c", now: 11) == 0)
        #expect(limiter.admit("d", now: 12) == nil, "at most `budget` lines per window in all")
        #expect(clipped(String(repeating: "x", count: 1000)).count < 260)
        #expect(clipped((0..<100).map(String.init)).hasSuffix("(100 in all)"))
    }
}
