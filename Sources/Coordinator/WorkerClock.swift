/// Puts the times a worker stamps on STARTED and FINISHED (its monotonic clock, µs) on the coordinator's
/// timeline, without synchronised clocks (S1: recorded times are per operation, where the transition
/// happened). The offset is the smallest (receipt − send) seen on the session: the clock difference plus
/// the least delay, so a converted time is not later than its receipt. The offset in use moves to a
/// better (smaller) estimate no faster than the worker's own time passes between its events, so the
/// converted times keep the order and the gaps the worker measured: on a 1-slot worker each op starts
/// after the previous one finished. A pure value; one per worker session.
struct WorkerClock {
    private var best: Int64?      // smallest receipt − send seen
    private var inUse: Int64?     // the offset conversions use now (≥ best)
    private var lastAt: Int64?    // latest worker time converted so far

    /// Learns from a message the worker sent at `sent` (its clock; 0 = not given) that arrived at `now`.
    mutating func observe(sent: Int64, receivedAt now: Int64) {
        guard sent > 0 else { return }
        let o = now - sent
        if best.map({ o < $0 }) ?? true { best = o }
    }

    /// `at` (worker clock; 0 = not given) on the coordinator's timeline, or nil when unknown.
    mutating func convert(_ at: Int64, now: Int64) -> Int64? {
        guard at > 0, let best else { return nil }
        var offset = inUse ?? best
        if offset > best {
            // Events reported out of order (earlier than `lastAt`) keep the offset: their order stays exact.
            let elapsed = lastAt.map { max(0, at - $0 - 1) } ?? (offset - best)
            offset = max(best, offset - elapsed)
        }
        inUse = offset
        if at > (lastAt ?? .min) { lastAt = at }
        return min(now, at &+ offset)
    }
}
