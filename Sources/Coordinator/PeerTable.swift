/// Who is behind each ROUTER routing id.
///
/// Every HELLO starts a new worker session with a fresh, never-reused session id, so the core treats a
/// worker that re-registers as a new worker and fences anything it says about an earlier session. The
/// session id carries the worker's number, which a worker keeps across reconnects and coordinator
/// restarts as long as it uses the same name and key (`WorkerIdentity`; the journal's `workerSession`
/// records restore them): status, logs and the Prometheus `worker` label keep pointing at the same
/// machine. A worker named "wN" gets number N unless another worker holds it. A routing id keeps pointing at
/// its last session after that session was declared lost, so late messages (a frozen worker that wakes
/// up) still reach the core, are counted as fenced, and the worker is told to register again.
struct PeerTable {
    enum Role: Equatable { case worker(UInt64), client(UInt64) }

    private(set) var roles: [[UInt8]: Role] = [:]
    private var workerRouting: [UInt64: [UInt8]] = [:]
    private var clientRouting: [UInt64: [UInt8]] = [:]
    private var nextWorkerNumber: UInt64 = 1
    private var nextClient: UInt64 = 1
    /// A worker's number by its identity (and back), and the sessions it had so far.
    private var numberByWorker: [WorkerIdentity: UInt64] = [:]
    private var workerByNumber: [UInt64: WorkerIdentity] = [:]
    private var sessions: [UInt64: UInt64] = [:]
    /// The session each worker number has open now.
    private var openSession: [UInt64: UInt64] = [:]
    /// When each client last sent something (µs), for forgetting idle ones.
    private var clientLastSeen: [UInt64: Int64] = [:]
    /// Lost worker sessions whose routing is kept a while for late messages, by when they were lost.
    private var lostAt: [UInt64: Int64] = [:]

    var clientCount: Int { clientRouting.count }

    func role(of routing: [UInt8]) -> Role? { roles[routing] }

    func routing(ofWorker id: UInt64) -> [UInt8]? { workerRouting[id] }
    func routing(ofClient id: UInt64) -> [UInt8]? { clientRouting[id] }

    /// The open session of the worker `who`, if any (the caller ends it before a new one starts: a worker
    /// restarted under the same name and key replaces its old session at once).
    func openSession(of who: WorkerIdentity) -> UInt64? { numberByWorker[who].flatMap { openSession[$0] } }

    /// The number a worker has or will get: its own; N for a name "wN" when no other worker holds N
    /// (so `--name w1` is w1); else the next free one.
    func number(for who: WorkerIdentity) -> UInt64 {
        if let known = numberByWorker[who] { return known }
        if who.name.first == "w", let n = UInt64(who.name.dropFirst()), n > 0, n < 1 << 40, workerByNumber[n] == nil,
           String(n) == who.name.dropFirst() {
            return n
        }
        var n = nextWorkerNumber
        while workerByNumber[n] != nil { n += 1 }
        return n
    }

    /// Registers a new session of worker `who` on `routing` (replacing whatever was there).
    mutating func newWorker(routing: [UInt8], who: WorkerIdentity) -> UInt64 {
        let n = number(for: who)
        bind(n, who)
        let session = (sessions[n] ?? 0) + 1
        sessions[n] = session
        let id = WorkerName.sessionID(number: n, session: session)
        openSession[n] = id
        roles[routing] = .worker(id)
        workerRouting[id] = routing
        return id
    }

    /// A session the journal names (a coordinator restart): its worker keeps its number, and its next
    /// session continues the count (so a session id names one session across restarts too).
    mutating func restore(session id: UInt64, who: WorkerIdentity) {
        let n = WorkerName.number(id)
        guard n > 0, workerByNumber[n] == nil || workerByNumber[n] == who, numberByWorker[who] == nil || numberByWorker[who] == n else { return }
        bind(n, who)
        sessions[n] = max(sessions[n] ?? 0, UInt64(WorkerName.session(id)))
    }

    private mutating func bind(_ n: UInt64, _ who: WorkerIdentity) {
        numberByWorker[who] = n
        workerByNumber[n] = who
        if n >= nextWorkerNumber { nextWorkerNumber = n + 1 }
    }

    /// The session ended (lost or left); its number is free for the same name again.
    mutating func sessionEnded(_ id: UInt64) {
        let n = WorkerName.number(id)
        if openSession[n] == id { openSession[n] = nil }
    }

    /// The client id of `routing`, allocated on first sight; `now` marks it active.
    mutating func client(for routing: [UInt8], now: Int64) -> UInt64 {
        if case .client(let id)? = roles[routing] { clientLastSeen[id] = now; return id }
        let id = nextClient
        nextClient += 1
        roles[routing] = .client(id)
        clientRouting[id] = routing
        clientLastSeen[id] = now
        return id
    }

    /// Forgets clients silent since before `idleSince` unless `busy` (a WAIT, WATCH or reply still
    /// owed to it). A client holds no other state here: if it speaks again it is simply a new client.
    /// Returns how many were forgotten. O(clients).
    mutating func forgetIdleClients(idleSince: Int64, busy: (UInt64) -> Bool) -> Int {
        var gone: [UInt64] = []
        for (id, seen) in clientLastSeen where seen < idleSince && !busy(id) { gone.append(id) }
        for id in gone {
            clientLastSeen[id] = nil
            if let r = clientRouting.removeValue(forKey: id), roles[r] == .client(id) { roles[r] = nil }
        }
        return gone.count
    }

    /// A worker session the core declared lost: its routing stays (late messages are fenced and the
    /// worker is told to register again) until `forgetLostWorkers` drops it.
    mutating func workerLost(_ id: UInt64, now: Int64) {
        sessionEnded(id)
        lostAt[id] = now
    }

    /// Drops the routing of sessions lost before `lostBefore`; returns their ids.
    mutating func forgetLostWorkers(lostBefore: Int64) -> [UInt64] {
        var gone: [UInt64] = []
        for (id, at) in lostAt where at < lostBefore { gone.append(id) }
        for id in gone { forgetWorker(id) }
        return gone
    }

    /// Forgets a worker's routing entry (after it said DISCONNECT).
    mutating func forgetWorker(_ id: UInt64) {
        sessionEnded(id)
        lostAt[id] = nil
        if let r = workerRouting.removeValue(forKey: id), roles[r] == .worker(id) { roles[r] = nil }
    }

    var workerIDs: Dictionary<UInt64, [UInt8]>.Keys { workerRouting.keys }
}

/// Who a worker is: its name and owner (its key's pin tag with keys, else its name; `WorkerHello.owner`).
/// Two workers with the same name and different keys are two workers, with two numbers.
struct WorkerIdentity: Hashable {
    var name: String
    var owner: String
}

/// Worker session ids: the worker's number (kept across reconnects) in the high bits, the session count
/// in the low 24. The text form on the wire and in logs is the number ("w7"); the session is shown apart.
enum WorkerName {
    static func sessionID(number: UInt64, session: UInt64) -> UInt64 { number << 24 | (session & 0xFF_FFFF) }
    static func number(_ id: UInt64) -> UInt64 { id >> 24 }
    static func session(_ id: UInt64) -> UInt32 { UInt32(id & 0xFF_FFFF) }
    static func text(_ id: UInt64) -> String { "w\(id >> 24)" }
    /// "w7#2": number and session, for logs about one session.
    static func sessionText(_ id: UInt64) -> String { "w\(id >> 24)#\(id & 0xFF_FFFF)" }
}
