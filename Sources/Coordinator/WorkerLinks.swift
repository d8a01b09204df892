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

    /// µs between HEARTBEATs to an idle worker; the sweep runs twice per interval.
    let heartbeatInterval: Int64
    /// Live sessions only: a lost or departed one gets no heartbeat.
    private var lastSent: [UInt64: Int64] = [:]
    private var lost: Set<UInt64> = []
    private(set) var clocks: [UInt64: WorkerClock] = [:]
    private(set) var info: [UInt64: Info] = [:]
    /// When the next idle sweep is due (the loop wakes up by then).
    private(set) var nextSweep: Int64 = 0

    init(heartbeatInterval: Int64) { self.heartbeatInterval = heartbeatInterval }

    /// A session began (HELLO): it counts as just sent to (the WELCOME is on its way).
    mutating func opened(_ id: UInt64, info i: Info, clock: WorkerClock, now: Int64) {
        lastSent[id] = now
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

    /// At a sweep (`now` ≥ `nextSweep`): the live workers sent nothing for an interval, which the loop
    /// sends HEARTBEAT; none between sweeps. O(workers) twice per interval.
    mutating func idleWorkers(now: Int64) -> [UInt64] {
        guard now >= nextSweep else { return [] }
        nextSweep = now + heartbeatInterval / 2
        var out: [UInt64] = []
        for (w, last) in lastSent where now - last >= heartbeatInterval { out.append(w) }
        return out
    }
}
