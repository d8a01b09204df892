import HeapModule

/// What the loop keeps per worker session beside its routing (`PeerTable`): when we last sent it
/// something (idle ones get a HEARTBEAT so they do not take our silence for a dead coordinator), its
/// clock offset, what its HELLO said, and which sessions the core declared lost but may still talk
/// (frozen, partitioned: their messages are fenced and they are told to register again). A pure value:
/// times come in as arguments; the loop sends what it returns.
struct WorkerLinks {
    /// What HELLO said that the core does not keep, for logs and WORKERS replies.
    struct Info {
        var name: String
        var tags: [String]
        var kinds: [String]
        var connectedAt: Int64
    }

    /// A session's next heartbeat, due an interval after the last thing sent to it. Entries are not
    /// moved when something else is sent: a popped entry whose session was sent to since is pushed back
    /// at its new due time (one entry per live session; a lost or closed one is dropped when popped).
    private struct Due: Comparable {
        var at: Int64
        var session: UInt64
        static func < (a: Due, b: Due) -> Bool { a.at < b.at }
    }

    /// µs between HEARTBEATs to an idle worker: each hears one an interval after the last message it
    /// got (not at a sweep, so a late heartbeat measures a stalled loop: `scripts/bench loop`).
    let heartbeatInterval: Int64
    /// Heartbeats due within this much of the first due one go together (one wake-up, not one per
    /// session): early by at most 1/16 of the interval, never late.
    var heartbeatSlack: Int64 { heartbeatInterval / 16 }
    /// Live sessions only: a lost or departed one gets no heartbeat.
    private var lastSent: [UInt64: Int64] = [:]
    private var dues = Heap<Due>()
    private var lost: Set<UInt64> = []
    private(set) var clocks: [UInt64: WorkerClock] = [:]
    private(set) var info: [UInt64: Info] = [:]
    /// When the next heartbeat is due (the loop wakes up by then; `.max`: no live session).
    var nextHeartbeat: Int64 { dues.min?.at ?? .max }

    init(heartbeatInterval: Int64) { self.heartbeatInterval = heartbeatInterval }

    /// A session began (HELLO): it counts as just sent to (the WELCOME is on its way).
    mutating func opened(_ id: UInt64, info i: Info, clock: WorkerClock, now: Int64) {
        if lastSent.updateValue(now, forKey: id) == nil { dues.insert(Due(at: now + heartbeatInterval, session: id)) }
        clocks[id] = clock
        info[id] = i
    }

    /// The core declared the session lost or a new HELLO replaced it: it gets no more heartbeats and its
    /// late messages are fenced. Returns what its HELLO said (for the log line).
    @discardableResult
    mutating func markLost(_ id: UInt64) -> Info? {
        lost.insert(id)
        lastSent[id] = nil
        clocks[id] = nil
        return info.removeValue(forKey: id)
    }

    /// The worker said DISCONNECT: nothing of the session is kept.
    mutating func closed(_ id: UInt64) {
        lost.remove(id)
        lastSent[id] = nil
        clocks[id] = nil
        info[id] = nil
    }

    /// The peer table dropped a lost session's routing: no late message can reach it any more.
    mutating func forgot(_ id: UInt64) { lost.remove(id) }

    func isLost(_ id: UInt64) -> Bool { lost.contains(id) }

    /// Something went to the worker at `now` (a live session's silence starts again).
    mutating func sent(to id: UInt64, now: Int64) {
        if let i = lastSent.index(forKey: id) { lastSent.values[i] = now }
    }

    /// Stores a session's clock after a message moved it, unless the session ended meanwhile.
    mutating func update(_ clock: WorkerClock, of id: UInt64) {
        if let i = clocks.index(forKey: id) { clocks.values[i] = clock }
    }

    /// Live workers sent nothing since `t` (before an input that holds the loop: they get HEARTBEAT).
    func notSentTo(since t: Int64) -> [UInt64] {
        var out: [UInt64] = []
        for (w, last) in lastSent where last < t { out.append(w) }
        return out
    }

    /// The live sessions whose heartbeat is due by `now` + the slack (sent nothing for an interval,
    /// or nearly): the loop sends each a HEARTBEAT (and so `sent(to:)`). O(log sessions) per entry
    /// popped; an entry whose session was sent to since goes back at its new due time.
    mutating func idleWorkers(now: Int64) -> [UInt64] {
        var out: [UInt64] = []
        let horizon = now + heartbeatSlack
        while let first = dues.min, first.at <= horizon {
            _ = dues.popMin()
            guard let last = lastSent[first.session] else { continue }    // lost or closed: dropped
            let due = last + heartbeatInterval
            if due <= horizon {
                out.append(first.session)
                dues.insert(Due(at: now + heartbeatInterval, session: first.session))
            } else {
                dues.insert(Due(at: due, session: first.session))
            }
        }
        return out
    }
}
