import Glibc

/// The shells' one clock. Wall-clock microseconds, so status timestamps mean something to people and
/// line up across machines; the core only compares them, so a small NTP step is harmless.
public enum WallClock {
    public static func nowMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
