import Glibc
import Testing
@testable import Coordinator

/// `CoordinatorClock`: the wall clock at start plus monotonic time since (deadlines immune to clock steps).
@Suite struct ClockTests {
    @Test func neverGoesBackAndStartsAtTheWallClock() {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let wall = Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
        var last = CoordinatorClock.nowMicros()
        #expect(abs(last - wall) < 2_000_000, "displayed times start at the wall clock")
        for _ in 0..<200_000 {
            let t = CoordinatorClock.nowMicros()
            #expect(t >= last)
            if t < last { break }
            last = t
        }
    }
}
