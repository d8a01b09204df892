import Glibc

/// The coordinator's one clock (µs). Deadlines — liveness, timeouts, retry delays, WAIT, start timeouts,
/// retention — follow `CLOCK_MONOTONIC`, so an NTP step or a `date -s` neither fires nor postpones them.
/// Displayed times (status, events, the journal) are the wall clock read once at start plus the monotonic
/// time since: they mean something to people, line up across machines and with the journal's times from
/// earlier runs (each start re-anchors). A wall-clock step while the coordinator runs shows as a constant
/// offset in displayed times until its next start; the core only compares times, so nothing else moves.
public enum CoordinatorClock {
    private static let anchor: (wall: Int64, monotonic: Int64) = (read(CLOCK_REALTIME), read(CLOCK_MONOTONIC))

    public static func nowMicros() -> Int64 { anchor.wall + (read(CLOCK_MONOTONIC) - anchor.monotonic) }

    private static func read(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
