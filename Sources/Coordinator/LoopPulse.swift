/// How long the loop went without reading its socket (docs/ARCHITECTURE.md, "A loop with a bound"), as
/// a pure value: the loop calls `reading(at:)` whenever it is about to read (before `zmq_poll`, between
/// the messages of a burst) and `woke(at:)` when `zmq_poll` returns (time spent waiting there is time
/// spent listening). A hold longer than the budget is a pass over budget: it is counted, the longest is
/// kept for /metrics, and what exceeds the budget is returned so the core does not count it as any
/// worker's silence — a worker is lost only when *it* was silent while the coordinator listened.
struct LoopPulse {
    /// No single input should hold the loop longer than this.
    static let defaultBudgetMicros: Int64 = 20_000

    let budget: Int64
    /// When the loop last read (or waited on) its socket.
    private(set) var lastRead: Int64
    /// The longest hold since `takeLongest` (µs).
    private(set) var longest: Int64 = 0
    /// Holds over budget since start.
    private(set) var overBudget: UInt64 = 0

    init(budget: Int64 = defaultBudgetMicros, now: Int64) {
        self.budget = budget
        lastRead = now
    }

    /// The loop is about to read at `now`. Returns the time beyond the budget it held without reading
    /// (0 within budget): the pause to excuse.
    mutating func reading(at now: Int64) -> Int64 {
        let held = now - lastRead
        lastRead = now
        longest = max(longest, held)
        guard held > budget else { return 0 }
        overBudget &+= 1
        return held - budget
    }

    /// `zmq_poll` returned at `now`: the loop was listening until then.
    mutating func woke(at now: Int64) { lastRead = max(lastRead, now) }

    /// The longest hold since the last call, and start a new window.
    mutating func takeLongest() -> Int64 {
        defer { longest = 0 }
        return longest
    }
}
