/// Keeps peers from flooding the coordinator's log. Per key (a cause, or a peer and a cause) at most
/// `burst` lines are logged per `window` µs; the rest are counted and the count rides on the key's next
/// line after the window. All keys together log at most `budget` lines per window. A pure value (the
/// caller passes the time); its table is bounded (`capacity` keys, the oldest dropped first), so it
/// cannot grow with the number of peers either.
struct LogLimiter {
    let window: Int64
    let burst: Int
    let budget: Int
    let capacity: Int
    private var keys: [String: Entry] = [:]
    private var order: [String] = []
    private var windowStart: Int64?
    private var logged = 0

    private struct Entry {
        var since: Int64
        var logged = 0
        var suppressed = 0
    }

    init(window: Int64 = 10_000_000, burst: Int = 1, budget: Int = 1000, capacity: Int = 1024) {
        self.window = window
        self.burst = burst
        self.budget = budget
        self.capacity = capacity
    }

    /// nil: stay quiet. Otherwise log now, mentioning the returned count (lines held back for this key before).
    mutating func admit(_ key: String, burst: Int? = nil, now: Int64) -> Int? {
        if windowStart.map({ now - $0 >= window }) ?? true { windowStart = now; logged = 0 }
        var e = keys[key] ?? Entry(since: now)
        if keys[key] == nil {
            if keys.count >= capacity, !order.isEmpty { keys[order.removeFirst()] = nil }
            order.append(key)
        }
        if now - e.since >= window { e.since = now; e.logged = 0 }
        guard e.logged < (burst ?? self.burst), logged < budget else {
            e.suppressed += 1
            keys[key] = e
            return nil
        }
        let suppressed = e.suppressed
        e.logged += 1
        e.suppressed = 0
        keys[key] = e
        logged += 1
        return suppressed
    }
}

/// A value from a peer as it may appear in a log line: at most `limit` characters, the cut said.
func clipped(_ s: String, _ limit: Int = 200) -> String {
    s.count <= limit ? s : String(s.prefix(limit)) + "… (\(s.utf8.count) bytes)"
}

/// A list from a peer for a log line: the first few, and how many there were.
func clipped(_ list: [String], first n: Int = 8) -> String {
    let head = list.prefix(n).map { clipped($0, 64) }.joined(separator: ",")
    return list.count <= n ? head : head + ",… (\(list.count) in all)"
}

/// " (N what)" for a log line after N held-back ones, else "".
func heldBack(_ n: Int, _ what: String) -> String { n > 0 ? " (\(n) \(what))" : "" }
