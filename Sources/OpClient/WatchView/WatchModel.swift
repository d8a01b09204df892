import WireProtocol

/// What `opctl watch` knows, as a value: the latest snapshot (STATUS, WORKERS, RUNS), a rate window per
/// run and per queue, the recent-events area, and whether the coordinator answers. Every input carries
/// its time (seconds on a monotonic clock), so the whole view is tested without sockets or a terminal;
/// `WatchScreen` turns it into lines.
public struct WatchModel: Sendable {
    /// One round of answers.
    public struct Snapshot: Sendable {
        public var queues: [WireQueueCounts]
        public var workers: [WireWorkerInfo]
        /// "waiting for a worker: …" texts, already worded.
        public var unplaceable: [String]
        /// Newest first; the scoped run only with `--run`.
        public var runs: [WireRunInfo]
        /// The coordinator's clock when it answered RUNS (µs): a run's elapsed time is on its timeline.
        public var nowUs: Int64

        public init(queues: [WireQueueCounts] = [], workers: [WireWorkerInfo] = [], unplaceable: [String] = [],
                    runs: [WireRunInfo] = [], nowUs: Int64 = 0) {
            self.queues = queues
            self.workers = workers
            self.unplaceable = unplaceable
            self.runs = runs
            self.nowUs = nowUs
        }
    }

    public enum Link: Sendable, Equatable {
        case up
        /// The connection is lost (the socket monitor said so); libzmq reconnects meanwhile.
        case down(since: Double)
        /// Connected, but the questions asked at `since` have had no answer for a while.
        case silent(since: Double)
    }

    /// A run's or a queue's line.
    public struct Row: Sendable, Equatable {
        public var name: String
        public var pending: UInt64 = 0, ready: UInt64 = 0, onWorkers: UInt64 = 0
        public var finished: UInt64 = 0, failed: UInt64 = 0, cancelled: UInt64 = 0, total: UInt64 = 0
        public var suspended = false
        /// Finished per second over the window; nil until known.
        public var rate: Double?
        /// Seconds to go; 0 when nothing is left, nil when it cannot be said.
        public var eta: Double?
        /// A run: since it was submitted (until it finished). A queue: since this watch saw work in it
        /// (until none was left): the coordinator keeps no start time per queue.
        public var elapsed: Double?
        public var unfinished: UInt64 { pending + ready + onWorkers }
    }

    public let endpoint: String
    /// Epoch seconds = monotonic seconds + this (for the clock times of notices).
    public var wallOffset: Double
    public private(set) var snapshot: Snapshot?
    /// When `snapshot` came (monotonic seconds).
    public private(set) var snapshotAt: Double?
    public private(set) var link: Link = .up
    public private(set) var notices: WatchNotices
    /// When the watch began.
    public let started: Double
    private var windows: [String: RateWindow] = [:]
    private let windowSpan: Double
    private var queueActive: [String: (since: Double, until: Double?)] = [:]

    public init(endpoint: String, started: Double, wallOffset: Double = 0, rateWindow: Double = 10,
                notices: WatchNotices = WatchNotices()) {
        self.endpoint = endpoint
        self.started = started
        self.wallOffset = wallOffset
        self.windowSpan = rateWindow
        self.notices = notices
    }

    // MARK: inputs

    /// State changes from the WATCH stream; returns the notices they added.
    public mutating func record(_ events: [WireEvent], at now: Double) -> [WatchNotice] {
        notices.record(events, at: now)
    }

    /// A new round of answers (the coordinator answers again, if it was silent); returns the notices
    /// it added.
    public mutating func update(_ s: Snapshot, at now: Double) -> [WatchNotice] {
        if case .silent = link { link = .up }
        snapshot = s
        snapshotAt = now
        for r in s.runs { windows["r/" + r.id, default: RateWindow(span: windowSpan)].add(r.succeeded + r.failed + r.cancelled, at: now) }
        for q in s.queues {
            windows["q/" + q.name, default: RateWindow(span: windowSpan)].add(q.finished, at: now)
            let busy = q.pending + q.ready + q.dispatched + q.executing > 0
            switch (queueActive[q.name], busy) {
            case (nil, true): queueActive[q.name] = (now, nil)
            case (let a?, true) where a.until != nil: queueActive[q.name] = (now, nil)   // busy again
            case (let a?, false) where a.until == nil: queueActive[q.name] = (a.since, now)
            default: break
            }
        }
        // Runs evicted and queues gone take their windows with them.
        let keys = Set(s.runs.map { "r/" + $0.id } + s.queues.map { "q/" + $0.name })
        windows = windows.filter { keys.contains($0.key) }
        return notices.workers(s.workers, at: now)
    }

    /// The connection was lost at `since`; returns the notice, once per outage.
    public mutating func lost(since: Double, at now: Double) -> WatchNotice? {
        if case .down = link { return nil }
        link = .down(since: since)
        return notices.coordinatorLost(at: now)
    }

    /// Connected again; returns the notice if it had been lost.
    public mutating func reconnected(at now: Double) -> WatchNotice? {
        guard case .down(let since) = link else { return nil }
        link = .up
        return notices.coordinatorBack(after: now - since, at: now)
    }

    /// Questions asked at `since` are still unanswered (the connection looks up).
    public mutating func silent(since: Double) {
        if link == .up { link = .silent(since: since) }
    }

    // MARK: rows

    /// The runs' rows, in the coordinator's order (newest first).
    public func runRows(at now: Double) -> [Row] {
        guard let s = snapshot else { return [] }
        let late = Int64(((now - (snapshotAt ?? now)) * 1_000_000).rounded())
        return s.runs.map { r in
            var row = Row(name: r.id)
            row.pending = r.pending
            row.ready = r.ready
            row.onWorkers = r.dispatched + r.executing
            row.finished = r.succeeded + r.failed + r.cancelled
            row.failed = r.failed
            row.cancelled = r.cancelled
            row.total = r.total
            row.rate = windows["r/" + r.id]?.rate
            row.eta = RateWindow.eta(remaining: row.unfinished, rate: row.rate)
            // Unfinished: its clock runs on while the coordinator is away.
            let end = r.finishedUs != 0 ? r.finishedUs : s.nowUs + late
            if r.submittedUs > 0 && end >= r.submittedUs { row.elapsed = Double(end - r.submittedUs) / 1_000_000 }
            return row
        }
    }

    /// The queues' rows: those that ever had an operation, or are suspended (an idle "default" is noise).
    public func queueRows(at now: Double) -> [Row] {
        guard let s = snapshot else { return [] }
        return s.queues.compactMap { q in
            let total = q.pending + q.ready + q.dispatched + q.executing + q.finished
            guard total > 0 || q.suspended else { return nil }
            var row = Row(name: q.name)
            row.pending = q.pending
            row.ready = q.ready
            row.onWorkers = q.dispatched + q.executing
            row.finished = q.finished
            row.failed = q.failed
            row.cancelled = q.cancelled
            row.total = total
            row.suspended = q.suspended
            row.rate = windows["q/" + q.name]?.rate
            row.eta = RateWindow.eta(remaining: row.unfinished, rate: row.rate)
            if let a = queueActive[q.name] { row.elapsed = (a.until ?? now) - a.since }
            return row
        }
    }
}
