import SchedulerCore

/// What the loop owes clients beyond one reply per request: requests answered by several core replies,
/// WAITs with deadlines, and WATCH streams. A pure value: times come in as arguments and each input
/// says what the loop must send; the loop keeps the socket.
struct ClientBook {
    private var acks: [ClientRef: AckAccumulator] = [:]
    private var waits: [ClientRef: WaitRequest] = [:]
    private var watchers: [UInt64: WatchStream] = [:]
    /// The earliest deadline among `waits` (.max: none), kept exact so the loop's poll timeout is.
    private var earliestDeadline: Int64 = .max

    // MARK: requests answered by several core replies

    /// What the loop does with a core reply (`collect(_:for:)`).
    enum AckStep: Equatable {
        /// Not a collected request: the reply goes out as it is.
        case notCollected
        /// More core replies are due before the client hears anything.
        case waiting
        /// The last reply came: ACK with this count of what took effect (and of ops left alone: outside
        /// the caller's scope).
        case ack(affected: Int, leftAlone: Int = 0)
        /// The last reply came and nothing took effect: the first refusal is the answer.
        case error(ReplyError)
    }

    /// `ref` is answered once, after `count` core replies (QUEUE with limit and suspension,
    /// SET-PRIORITY of several ids, CANCEL of ids, WATCH).
    mutating func expect(_ count: Int, repliesFor ref: ClientRef) {
        acks[ref] = AckAccumulator(remaining: count)
    }

    /// Counts one core reply to `ref`.
    mutating func collect(_ reply: Reply, for ref: ClientRef) -> AckStep {
        // Most replies are not collected: no hashing for them while nothing is.
        guard !acks.isEmpty, let i = acks.index(forKey: ref) else { return .notCollected }
        var acc = acks.values[i]
        acc.add(reply)
        guard acc.remaining <= 0 else { acks.values[i] = acc; return .waiting }
        acks.remove(at: i)
        if let e = acc.firstError, acc.affected == 0 { return .error(e) }
        return .ack(affected: acc.affected, leftAlone: acc.leftAlone)
    }

    // MARK: WAIT deadlines

    mutating func wait(_ w: WaitRequest, for ref: ClientRef) {
        waits[ref] = w
        if let d = w.deadline, d < earliestDeadline { earliestDeadline = d }
    }

    /// Ends the wait of `ref` (answered, or refused by the core); nil when it is not waiting (timed out).
    mutating func endWait(_ ref: ClientRef) -> WaitRequest? {
        guard !waits.isEmpty, let w = waits.removeValue(forKey: ref) else { return nil }
        if w.deadline == earliestDeadline { recomputeEarliest() }
        return w
    }

    /// Ends every wait of `client` (its key was revoked); returns their refs.
    mutating func endWaits(ofClient client: UInt64) -> [ClientRef] {
        let refs = waits.keys.filter { $0.client == client }
        for ref in refs { waits[ref] = nil }
        if !refs.isEmpty { recomputeEarliest() }
        return refs
    }

    /// Ends the waits whose deadline is at or before `now`, earliest deadline first: the loop answers
    /// each with what is known (timed out) and drops the core's later reply.
    mutating func expired(now: Int64) -> [(ref: ClientRef, wait: WaitRequest)] {
        guard now >= earliestDeadline else { return [] }
        var out: [(ref: ClientRef, wait: WaitRequest)] = []
        for (ref, w) in waits {
            if let d = w.deadline, d <= now { out.append((ref, w)) }
        }
        for e in out { waits[e.ref] = nil }
        recomputeEarliest()
        out.sort { ($0.wait.deadline!, $0.ref.client, $0.ref.request) < ($1.wait.deadline!, $1.ref.client, $1.ref.request) }
        return out
    }

    /// When the next wait times out, if any has a deadline (the loop wakes up by then).
    var nextDeadline: Int64? { earliestDeadline == .max ? nil : earliestDeadline }

    private mutating func recomputeEarliest() {
        earliestDeadline = .max
        for w in waits.values { if let d = w.deadline, d < earliestDeadline { earliestDeadline = d } }
    }

    // MARK: WATCH streams

    /// Records `client`'s subscription (a new WATCH replaces the old one: returned, to leave its stream).
    @discardableResult
    mutating func watch(_ client: UInt64, _ stream: WatchStream) -> WatchStream? {
        watchers.updateValue(stream, forKey: client)
    }

    /// The core made the subscription of `client`'s WATCH `request`: its events come in `stream`. False
    /// when that WATCH is no longer the client's (replaced or stopped meanwhile).
    mutating func joined(_ client: UInt64, request: UInt32, stream: UInt64) -> Bool {
        guard watchers[client]?.requestID == request else { return false }
        watchers[client]!.stream = stream
        return true
    }

    /// Ends `client`'s stream; nil when it had none (then the core has no subscription to end).
    mutating func unwatch(_ client: UInt64) -> WatchStream? { watchers.removeValue(forKey: client) }

    func stream(of client: UInt64) -> WatchStream? { watchers[client] }

    // MARK: peers

    /// Clients owed something (a collected reply, a WAIT or a WATCH): the idle sweep keeps them.
    var clientsOwed: Set<UInt64> {
        var s = Set(watchers.keys)
        for ref in acks.keys { s.insert(ref.client) }
        for ref in waits.keys { s.insert(ref.client) }
        return s
    }
}

/// A client request answered by several core replies (the reply goes out when the last one arrives).
struct AckAccumulator {
    var remaining: Int
    var affected = 0
    /// Ops a cascade or an inheritance did not reach: outside the caller's scope.
    var leftAlone = 0
    /// The first refusal, answered when nothing took effect.
    var firstError: ReplyError?

    mutating func add(_ reply: Reply) {
        remaining -= 1
        switch reply {
        case .ok: affected += 1
        case .okOutsideScope(let n): affected += 1; leftAlone += n
        case .error(let e): if firstError == nil { firstError = e }
        default: break
        }
    }
}

struct WaitRequest {
    var ids: [String]
    var queue: String
    /// The run plain ids are resolved in; with no ids and no queue, the run awaited as a whole.
    var run: String
    var withResults: Bool
    var deadline: Int64?
}

/// One client's event subscription: the WATCH it answers and the stream (shared with every watcher of
/// the same filters and form, `EventStreams`) its events come in; 0 until the core has made it.
struct WatchStream {
    var requestID: UInt32
    var stream: UInt64 = 0
}
