import WireProtocol

/// One line of the live view's recent-events area.
public struct WatchNotice: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A worker left WORKERS (`session` nil), or came back under a new session (its old one ended):
        /// either way what it held went elsewhere; `ops` counts the re-dispatches seen from it.
        case workerLost(id: String, name: String, ops: Int, session: UInt32?)
        case workerJoined(id: String, name: String, slots: UInt32)
        /// An op went back from a worker (dispatched or executing) to be dispatched again.
        case redispatched(op: String, attempt: UInt32)
        case failed(op: String, error: String)
        case coordinatorLost
        case coordinatorBack(after: Double)
    }

    /// Serial number, so a later re-dispatch can be added to the loss it belongs to.
    public let serial: Int
    /// When it was seen (the view's monotonic seconds).
    public let at: Double
    public var kind: Kind

    public var text: String {
        switch kind {
        case .workerLost(let id, let name, let ops, let session):
            let what = session.map { "re-registered (session \($0)), its old session lost" } ?? "lost"
            let moved = ops == 0 ? "" : " — \(ops) op\(ops == 1 ? "" : "s") re-dispatched"
            return "worker \(id) (\(name)) \(what)\(moved)"
        case .workerJoined(let id, let name, let slots):
            return "worker \(id) (\(name)) joined, \(slots) slot\(slots == 1 ? "" : "s")"
        case .redispatched(let op, let attempt):
            return "op \(op) re-dispatched (attempt \(attempt))"
        case .failed(let op, let error):
            return "op \(op) failed" + (error.isEmpty ? "" : ": \(error)")
        case .coordinatorLost:
            return "lost the coordinator; retrying"
        case .coordinatorBack(let after):
            return "coordinator back after \(WatchFormat.duration(after, tenths: true, unknown: "?"))"
        }
    }
}

/// What the recent-events area says: worker losses and joins (from successive WORKERS replies), ops
/// sent back from a worker to be dispatched again (from EVENTs), failures, and the coordinator's own
/// comings and goings. Re-dispatches from a worker found lost are folded into the loss's one line.
public struct WatchNotices: Sendable {
    /// The newest notices, oldest first.
    public private(set) var recent: [WatchNotice] = []
    public let capacity: Int
    /// Re-dispatches this long before or after a loss is seen count towards it: the EVENTs and the
    /// WORKERS reply that show one loss come in either order, a redraw or two apart.
    public let foldWindow: Double
    private var serial = 0
    /// Ops known to be on a worker (their last event was DISPATCHED or EXECUTING): worker id, attempt.
    private var onWorker: [String: (worker: String, attempt: UInt32)] = [:]
    /// Re-dispatches by the worker they left, not yet folded into a loss: when, and the notice's serial.
    private var movedFrom: [String: [(at: Double, serial: Int)]] = [:]
    /// Losses seen, by worker id: when, and the notice's serial (later re-dispatches add to it).
    private var losses: [String: (at: Double, serial: Int)] = [:]
    /// The workers of the last WORKERS reply (id → name, session); nil until one came since the
    /// (re)connection: a coordinator that came back lists its workers again as they re-register.
    private var workers: [String: (name: String, session: UInt32)]?
    /// Until then workers coming and going are not said: after the coordinator is back, its workers
    /// register again one by one (within a few seconds), which is no news.
    private var quietUntil = -Double.infinity
    public let settleTime: Double

    /// Past this many ops on workers the map is dropped (re-dispatches of older ops are then not seen):
    /// a watch of a huge cluster must not grow without bound.
    static let trackedOpsLimit = 1_000_000

    public init(capacity: Int = 32, foldWindow: Double = 10, settleTime: Double = 5) {
        self.capacity = capacity
        self.foldWindow = foldWindow
        self.settleTime = settleTime
    }

    /// Reads a batch of EVENTs; returns the notices it added.
    public mutating func record(_ events: [WireEvent], at now: Double) -> [WatchNotice] {
        var added: [WatchNotice] = []
        for e in events {
            let key = e.run.isEmpty ? e.opID : e.run + "/" + e.opID
            switch e.state {
            case .dispatched, .executing:
                // A dispatch with a higher attempt while on a worker: sent back without a READY seen.
                if e.state == .dispatched, let was = onWorker[key], e.attempt > was.attempt, !e.cancelled {
                    if let n = moved(key, from: was.worker, attempt: e.attempt, at: now) { added.append(n) }
                }
                if onWorker.count >= Self.trackedOpsLimit { onWorker.removeAll() }
                onWorker[key] = (e.workerID, e.attempt)
            case .ready:
                // Back from a worker (lost, or it never started it): the next attempt follows.
                if let was = onWorker.removeValue(forKey: key), !e.cancelled,
                   let n = moved(key, from: was.worker, attempt: was.attempt + 1, at: now) {
                    added.append(n)
                }
            case .finished:
                onWorker[key] = nil
                if case .failed(let error)? = e.outcome.result {
                    added.append(add(.failed(op: key, error: Self.lastLine(error)), at: now))
                }
            default:
                // PENDING after a failed attempt: a retry, not a re-dispatch.
                if !e.cancelled { onWorker[key] = nil }
            }
        }
        return added
    }

    /// Compares a WORKERS reply with the previous one; returns the notices it added.
    public mutating func workers(_ list: [WireWorkerInfo], at now: Double) -> [WatchNotice] {
        let current = Dictionary(list.map { ($0.workerID, (name: $0.name, session: $0.session)) }, uniquingKeysWith: { a, _ in a })
        defer { workers = current }
        guard let before = workers, now >= quietUntil else { return [] }
        var added: [WatchNotice] = []
        for (id, w) in before.sorted(by: { $0.key < $1.key }) {
            if let now_ = current[id], now_.session == w.session { continue }
            added.append(lost(id, name: w.name, session: current[id]?.session, at: now))
        }
        for info in list where before[info.workerID] == nil {
            added.append(add(.workerJoined(id: info.workerID, name: info.name, slots: info.slots), at: now))
        }
        return added
    }

    /// The connection to the coordinator was lost: the next WORKERS reply is a new baseline.
    public mutating func coordinatorLost(at now: Double) -> WatchNotice {
        workers = nil
        return add(.coordinatorLost, at: now)
    }

    public mutating func coordinatorBack(after: Double, at now: Double) -> WatchNotice {
        quietUntil = now + settleTime
        return add(.coordinatorBack(after: after), at: now)
    }

    // MARK: -

    private mutating func lost(_ id: String, name: String, session: UInt32?, at now: Double) -> WatchNotice {
        // Its re-dispatches seen shortly before: folded into this line.
        let recentMoves = (movedFrom.removeValue(forKey: id) ?? []).filter { $0.at >= now - foldWindow }
        let folded = Set(recentMoves.map(\.serial))
        recent.removeAll { folded.contains($0.serial) }
        let n = add(.workerLost(id: id, name: name, ops: recentMoves.count, session: session), at: now)
        losses[id] = (now, n.serial)
        return n
    }

    /// An op sent back from `worker`: added to that worker's loss when one was just seen, else a line
    /// of its own (taken back into the loss if that is seen shortly after). Nil when folded.
    private mutating func moved(_ op: String, from worker: String, attempt: UInt32, at now: Double) -> WatchNotice? {
        if let loss = losses[worker], loss.at >= now - foldWindow,
           let i = recent.firstIndex(where: { $0.serial == loss.serial }),
           case .workerLost(let id, let name, let ops, let session) = recent[i].kind {
            recent[i].kind = .workerLost(id: id, name: name, ops: ops + 1, session: session)
            return nil
        }
        let n = add(.redispatched(op: op, attempt: attempt), at: now)
        var list = movedFrom[worker, default: []].filter { $0.at >= now - foldWindow }
        list.append((now, n.serial))
        movedFrom[worker] = list
        return n
    }

    private mutating func add(_ kind: WatchNotice.Kind, at now: Double) -> WatchNotice {
        serial += 1
        let n = WatchNotice(serial: serial, at: now, kind: kind)
        recent.append(n)
        if recent.count > capacity { recent.removeFirst(recent.count - capacity) }
        return n
    }

    /// A process's error is usually most telling in its last line.
    static func lastLine(_ s: String) -> String {
        s.split(separator: "\n", omittingEmptySubsequences: true).last.map(String.init) ?? ""
    }
}
