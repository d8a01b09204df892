import DequeModule
import WireProtocol
import WorkerRuntime

/// What this worker holds across sessions (PROTOCOL.md §7.4): the parts dispatched to it and not yet
/// finished, and the finished ones a coordinator may not have made durable. A lost coordinator does not
/// stop the parts; the next HELLO lists them (`running`, `finished`) so a restarted coordinator can
/// reattach them instead of running them again.
///
/// A pure state machine (no sockets, clocks or threads; times are inputs, µs on the worker's monotonic
/// clock): `SessionMachine` feeds it one input per event and sends what it answers.
struct HeldParts {
    struct Limits: Sendable {
        /// Finished records kept for, and listed in, a HELLO (the newest; older ones are dropped).
        var maxRecords = 4096
        /// Their bytes (`wireSizeBound`: id, result or text, tags) in total.
        var maxBytes = 8 << 20
        /// FINISHED sent within this long before a session was lost is listed in the next HELLO …
        var minimumWindow: Int64 = 10_000_000
        /// … or within this many liveness bounds (heartbeat interval × liveness), whichever is longer.
        var livenessBounds: Int64 = 3
        /// Parts listed in `running` (a HELLO's lists hold at most one batch each).
        var maxRunning = WireLimits.maxBatchRecords
        /// `running` and `finished` together stay within this, far below the 16 MiB frame limit.
        var helloBudget = 14 << 20
    }

    /// What to do with a part's FINISHED.
    enum Disposition: Equatable {
        /// Send it now, with this much credit (0 while the worker holds more than it asked for).
        case report(credit: Int)
        /// No session is registered: kept for the next HELLO.
        case buffered
        /// Not a part this worker holds (a duplicate or an event of a part it gave up).
        case ignored
    }

    /// What goes out right after WELCOME, before anything else.
    struct Welcomed: Equatable {
        /// The first grant: slots + prefetch − parts held, at least 0 (0: send no CREDIT).
        var credit: Int
        /// Finished records the HELLO did not carry: they did not fit, or finished after it was sent.
        /// Sent as FINISHED without credit (their slots are already counted free in `credit`).
        var finished: [WireFinishedRecord]
        /// Parts whose handler started after the HELLO was sent.
        var started: [WirePartRef]
    }

    private struct Part {
        var seq: Int
        /// The DISPATCH's token (1.10), echoed in STARTED and FINISHED; 0 = none.
        var token: UInt64 = 0
        /// When its handler started; 0 = waiting for a slot.
        var startedAt: Int64 = 0
        /// A coordinator knows it started (STARTED, or `at_us` in a HELLO).
        var startConveyed = false
        /// A coordinator cancelled it: it still finishes and is reported, but is not offered again.
        var cancelled = false
    }

    private struct Finished {
        var record: WireFinishedRecord
        var size: Int
        /// When it finished (`record.atUs`).
        var at: Int64
        /// When it was last sent to a coordinator (FINISHED, or a HELLO answered by WELCOME).
        var reportedAt: Int64 = 0
        /// Listed in the HELLO last sent.
        var inHello = false
    }

    /// slots + prefetch: the most parts the worker asks to hold.
    let capacity: Int
    let limits: Limits
    /// A session is registered (between WELCOME and its end).
    private(set) var registered = false
    private var parts: [PartKey: Part] = [:]
    private var nextSeq = 0
    /// FINISHED being sent in this session (between `finished` and `reportedFinished`).
    private var outgoing: [PartKey: Finished] = [:]
    /// Finished while no session was registered, never sent; in finish order. Not dropped: there are
    /// never more than the parts the worker held when it lost its coordinator (no dispatch comes then).
    private var unreported: [Finished] = []
    /// Sent, kept while the window lasts and within the limits; in report order.
    private var recent: Deque<Finished> = []
    private var recentBytes = 0
    /// The current session's window (set at WELCOME).
    private var window: Int64
    /// Credit still owed back after a WELCOME that found more parts held than `capacity`.
    private var creditDeficit = 0

    init(capacity: Int, limits: Limits = Limits()) {
        self.capacity = capacity
        self.limits = limits
        window = limits.minimumWindow
    }

    /// Parts held (dispatched and not finished).
    var count: Int { parts.count }
    var isEmpty: Bool { parts.isEmpty }
    func holds(_ key: PartKey) -> Bool { parts[key] != nil }
    /// Finished records kept for a later HELLO (for logs and tests).
    var finishedKept: Int { unreported.count + recent.count + outgoing.count }

    // MARK: inputs

    /// DISPATCH: the parts are held from now on (a key held already is a duplicate, ignored), each with
    /// the token its reports echo.
    mutating func dispatched(_ records: some Sequence<(key: PartKey, token: UInt64)>) {
        for (key, token) in records where parts[key] == nil {
            parts[key] = Part(seq: nextSeq, token: token)
            nextSeq += 1
        }
    }

    /// Its handler started: the STARTED record to send now, with the DISPATCH's token (nil: not held, or
    /// no session to send it to — a HELLO will tell).
    mutating func started(_ key: PartKey, at: Int64) -> WirePartRef? {
        guard let i = parts.index(forKey: key) else { return nil }
        parts.values[i].startedAt = at
        parts.values[i].startConveyed = registered
        guard registered else { return nil }
        var ref = WirePartRef(key: key, at: at)
        ref.token = parts.values[i].token
        return ref
    }

    /// It finished: `record` is its FINISHED record (`at_us` = `at`), given the DISPATCH's token here.
    mutating func finished(_ key: PartKey, record: inout WireFinishedRecord, at: Int64) -> Disposition {
        guard let part = parts.removeValue(forKey: key) else { return .ignored }
        record.token = part.token
        var kept = record
        if part.startedAt > 0 { kept.startedAtUs = part.startedAt }   // a HELLO tells when it started
        let entry = Finished(record: kept, size: kept.wireSizeBound, at: at)
        guard registered else {
            unreported.append(entry)
            return .buffered
        }
        outgoing[key] = entry
        if creditDeficit > 0 {
            creditDeficit -= 1
            return .report(credit: 0)
        }
        return .report(credit: 1)
    }

    /// The FINISHED of these parts went out at `at`: kept for the window, in case the coordinator
    /// did not make it durable before it was lost.
    mutating func reportedFinished(_ keys: some Sequence<PartKey>, at: Int64) {
        for key in keys {
            guard var entry = outgoing.removeValue(forKey: key) else { continue }
            entry.reportedAt = at
            appendRecent(entry)
        }
        pruneRecent(before: at - window)
    }

    /// The coordinator sent CANCEL for (op, attempt): the local queue cancels the parts; they are not
    /// offered to a coordinator again (their FINISHED still goes out).
    mutating func cancelledByCoordinator(opID: String, attempt: Int) {
        for (key, _) in parts where key.opID == opID && key.attempt == attempt {
            parts[key]!.cancelled = true
        }
    }

    /// The lists of the next HELLO. `running`: every part held and not cancelled by a coordinator,
    /// started ones first (by start time), then waiting ones in dispatch order, `at_us` = start time or 0.
    /// `finished`: the newest of the unreported and recently reported records, within the limits; the
    /// rest goes out as FINISHED after WELCOME (`welcomed`).
    mutating func helloSnapshot() -> (running: [WirePartRef], finished: [WireFinishedRecord]) {
        let offered = parts.filter { !$0.value.cancelled }.sorted { a, b in
            switch (a.value.startedAt > 0, b.value.startedAt > 0) {
            case (true, false): true
            case (false, true): false
            case (true, true): a.value.startedAt < b.value.startedAt || (a.value.startedAt == b.value.startedAt && a.value.seq < b.value.seq)
            case (false, false): a.value.seq < b.value.seq
            }
        }.prefix(limits.maxRunning)
        var running: [WirePartRef] = []
        running.reserveCapacity(offered.count)
        var runningBytes = 0
        for (key, part) in offered {
            let ref = WirePartRef(key: key, at: part.startedAt)
            runningBytes += ref.wireSizeBound
            running.append(ref)
            if part.startedAt > 0 { parts[key]!.startConveyed = true }
        }

        // Newest first across both lists, until a limit is reached.
        for i in unreported.indices { unreported[i].inHello = false }
        for i in recent.indices { recent[i].inHello = false }
        var candidates: [(at: Int64, unreported: Bool, index: Int)] = []
        candidates.reserveCapacity(unreported.count + recent.count)
        for (i, f) in unreported.enumerated() { candidates.append((f.at, true, i)) }
        for (i, f) in recent.enumerated() { candidates.append((f.at, false, i)) }
        candidates.sort { $0.at > $1.at }
        let budget = min(limits.maxBytes, limits.helloBudget - runningBytes)
        var finished: [WireFinishedRecord] = []
        var bytes = 0
        for c in candidates {
            let entry = c.unreported ? unreported[c.index] : recent[c.index]
            if finished.count == limits.maxRecords || bytes + entry.size > budget { break }
            bytes += entry.size
            finished.append(entry.record)
            if c.unreported { unreported[c.index].inHello = true } else { recent[c.index].inHello = true }
        }
        finished.reverse()   // oldest first, as they finished
        return (running, finished)
    }

    /// WELCOME: the session is registered. `livenessBound`: its heartbeat interval × liveness (µs).
    /// Everything finished and kept counts as reported now (in the HELLO, or in the FINISHED sent
    /// right after); parts held from before belong to this session.
    mutating func welcomed(at: Int64, livenessBound: Int64) -> Welcomed {
        registered = true
        window = max(limits.minimumWindow, limits.livenessBounds * livenessBound)
        var all = Array(recent) + unreported
        all.sort { $0.at < $1.at }
        let notInHello = all.filter { !$0.inHello }.map(\.record)
        recent = []
        recentBytes = 0
        unreported = []
        for var entry in all {
            entry.reportedAt = at
            entry.inHello = false
            appendRecent(entry)
        }
        var started: [(Int64, WirePartRef)] = []
        for (key, part) in parts where part.startedAt > 0 && !part.startConveyed {
            parts[key]!.startConveyed = true
            started.append((part.startedAt, WirePartRef(key: key, at: part.startedAt)))
        }
        started.sort { $0.0 < $1.0 }
        creditDeficit = max(0, parts.count - capacity)
        return Welcomed(credit: max(0, capacity - parts.count), finished: notInHello, started: started.map(\.1))
    }

    /// The session ended (coordinator silent, DISCONNECT, ERROR `UNEXPECTED`, no WELCOME). The parts
    /// go on; if it was registered, FINISHED sent within the window before `at` is kept for the next
    /// HELLO, and anything finished from now on is buffered.
    mutating func sessionEnded(at: Int64) {
        if registered { pruneRecent(before: at - window) }
        registered = false
        creditDeficit = 0
        // Records whose FINISHED never went out (nothing else reports them).
        for (_, entry) in outgoing { unreported.append(entry) }
        outgoing.removeAll()
        unreported.sort { $0.at < $1.at }
    }

    /// The worker leaves (shutdown) or was rejected: forgets everything and returns the parts it held,
    /// in dispatch order, for the caller to cancel.
    mutating func dropAll() -> [PartKey] {
        let keys = parts.sorted { $0.value.seq < $1.value.seq }.map(\.key)
        parts.removeAll()
        outgoing.removeAll()
        unreported.removeAll()
        recent.removeAll()
        recentBytes = 0
        registered = false
        creditDeficit = 0
        return keys
    }

    // MARK: the recent list

    private mutating func appendRecent(_ entry: Finished) {
        recent.append(entry)
        recentBytes += entry.size
        while recent.count > limits.maxRecords || recentBytes > limits.maxBytes, let first = recent.popFirst() {
            recentBytes -= first.size
        }
    }

    private mutating func pruneRecent(before cutoff: Int64) {
        while let first = recent.first, first.reportedAt < cutoff {
            recent.removeFirst()
            recentBytes -= first.size
        }
    }
}
