import Foundation
import OpClient
import OpSpec
import WireProtocol

struct RunOptions {
    var endpoint: String
    var requestTimeout: Double
    var workload: Workload
    var ops: Int
    var width: Int
    var seed: UInt64
    var opKind: String
    var opMs: Int
    var timeLimit: Double
    var minWorkers: Int
    var workersTimeout: Double
    var watch: Bool
    var probes: Int
    var cancelFraction: Double
    var timelineLimit: Int
    var baselineRSS: UInt64?
    var label: String?
    var series: String?
    var target: String?
}

struct LoadTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs one workload against a coordinator through one client connection and measures it.
///
/// Latencies come from the coordinator's own timestamps where they can (STATUS: submitted, ready,
/// dispatched, finished — one clock, so remote targets need no clock sync), and from this process's
/// monotonic clock for round trips it takes part in (cancel: CANCEL-OPS sent → WATCH event received).
final class Driver {
    let o: RunOptions
    let conn: CoordinatorConnection
    /// The run every submit of this load test joins; bare ids in waits are resolved in it.
    let runName = Batcher.uniqueRunName(prefix: "load-")
    var rng: SeededGenerator
    let queue: String
    let template: OpTemplate
    let deadline: Double
    var report: RunReport
    var latencies: [String: LatencyRecorder] = [:]
    private var workerNames: [String: (name: String, slots: Int)] = [:]

    // WATCH bookkeeping.
    private var finishedEvents: [String: Int] = [:]
    private var lastState: [String: WireOpState] = [:]
    private var lastSequence: UInt64 = 0
    private var eventGaps = 0
    private var pendingCancels: [String: (sent: Int64, running: Bool)] = [:]

    init(_ o: RunOptions) throws {
        self.o = o
        // Keys, for a coordinator with keys: $OPQ_KEY and $OPQ_COORDINATOR_KEY (as opctl reads them).
        conn = try CoordinatorConnection(endpoint: o.endpoint, timeout: .milliseconds(Int(o.requestTimeout * 1000)),
                                         curve: ClientKeys.resolve(key: nil, coordinatorKey: nil))
        rng = SeededGenerator(seed: o.seed)
        // Unique per run, so several runs can share one coordinator (it keeps finished operations). Short,
        // so ids stay within Swift's 15-byte inline strings up to a million ops: the memory figures then
        // measure the scheduler, not string allocations (a longer id costs one heap block more).
        let tag = String(UInt64.random(in: 0..<(1 << 30)), radix: 36)
        queue = "lt-\(o.workload.rawValue)-\(tag)"
        template = OpTemplate(queue: queue, idPrefix: tag + ".", kind: o.opKind, opMs: o.opMs)
        deadline = Double(monotonicMicros()) / 1e6 + o.timeLimit
        report = RunReport(label: o.label, series: o.series, target: o.target, workload: o.workload.rawValue, ops: o.ops,
                           seed: o.seed, opKind: o.opKind, opMs: o.opMs, coordinator: o.endpoint,
                           startedAt: ISO8601DateFormatter().string(from: Date()), workers: 0, slotsTotal: 0)
    }

    func now() -> Double { Double(monotonicMicros()) / 1e6 }
    var secondsLeft: Double { max(0, deadline - now()) }
    var isTimed: Bool { o.opKind == BuiltinKind.sleep || o.opKind == BuiltinKind.burn }

    func run() throws -> RunReport {
        let workers = try awaitWorkers()
        report.workers = workers.count
        report.slotsTotal = workers.reduce(0) { $0 + Int($1.slots) }
        for w in workers { workerNames[w.workerID] = (w.name, Int(w.slots)) }
        let s0 = try stats()
        report.coordinatorFigures.rssBytesStart = nonZero(s0.coordinatorRssBytes)
        if let b = o.baselineRSS, !workers.isEmpty, s0.coordinatorRssBytes > 0 {
            report.coordinatorFigures.rssBytesNoWorkers = b
            report.coordinatorFigures.bytesPerWorker = (Double(s0.coordinatorRssBytes) - Double(b)) / Double(workers.count)
        }
        // Every operation's events (the run's queue does not exist yet); `absorb` keeps this run's.
        if o.watch || o.workload == .cancel { try conn.watch() }

        let t0 = now()
        var ids: [String] = []
        switch o.workload {
        case .independent, .sleep, .burn:
            ids = try submitAndWait(Graphs.independent(template, n: o.ops))
        case .chain:
            ids = try submitAndWait(Graphs.chain(template, n: o.ops))
        case .layered:
            ids = try submitAndWait(Graphs.layered(template, n: o.ops, width: o.width))
        case .fan:
            let (ops, _) = Graphs.fan(template, n: o.ops, width: o.width)
            ids = try submitAndWait(ops)
        case .priority:
            ids = try priorityRun()
        case .cancel:
            ids = try cancelRun()
        case .queued:
            ids = try queuedRun()
        }
        report.wallS = now() - t0
        report.ops = ids.count
        if o.workload != .queued { report.throughputOpsS = (Double(ids.count) / report.wallS).rounded() }
        let s1 = try stats()
        report.fenced = s1.fenced &- s0.fenced
        if s1.coordinatorCpuUs > 0 { report.coordinatorFigures.cpuS = Double(s1.coordinatorCpuUs - s0.coordinatorCpuUs) / 1e6 }
        report.coordinatorFigures.rssBytesEnd = nonZero(s1.coordinatorRssBytes)

        // Sessions that began during the run (a worker came back) are new worker ids: learn their names.
        if case .workersReply(let r) = try conn.request(.workers) {
            for w in r.workers where workerNames[w.workerID] == nil { workerNames[w.workerID] = (w.name, Int(w.slots)) }
        }
        let records = try statuses()
        analyse(records, expected: ids.count)
        if o.watch || o.workload == .cancel { try finishWatch(ids: ids) }
        return finish()
    }

    private func nonZero(_ x: UInt64) -> UInt64? { x == 0 ? nil : x }

    // MARK: coordinator requests

    private func awaitWorkers() throws -> [WireWorkerInfo] {
        let until = now() + o.workersTimeout
        while true {
            guard case .workersReply(let r) = try conn.request(.workers) else {
                throw LoadTestError("unexpected reply to WORKERS")
            }
            if r.workers.count >= o.minWorkers { return r.workers }
            if now() >= until {
                throw LoadTestError("only \(r.workers.count) of the \(o.minWorkers) workers asked for (--min-workers) registered within \(Int(o.workersTimeout)) s")
            }
            Thread.sleep(forTimeInterval: 0.1)   // polling a remote count; nothing to await
        }
    }

    func stats() throws -> WireStatusReply {
        guard case .statusReply(let r) = try conn.request(.status(WireStatus())) else {
            throw LoadTestError("unexpected reply to STATUS")
        }
        return r
    }

    func queueCounts(_ name: String) throws -> WireQueueCounts? {
        var s = WireStatus()
        s.queue = name
        guard case .statusReply(let r) = try conn.request(.status(s)) else { throw LoadTestError("unexpected reply to STATUS") }
        return r.queues.first { $0.name == name }
    }

    func submit(_ ops: [WireOperation], queues: [WireQueueSettings] = []) throws {
        for m in Batcher.submits(ops, queues: queues, run: runName, appendAll: true) {
            guard case .submitReply(let r) = try conn.request(m, timeout: .seconds(120)) else {
                throw LoadTestError("unexpected reply to SUBMIT")
            }
            guard r.accepted else {
                let first = r.errors.prefix(3).map { "\($0.opID): \($0.message)" }.joined(separator: "; ")
                throw LoadTestError("the coordinator rejected the graph (\(r.errors.count) problems): \(first)")
            }
            drainEvents()
        }
    }

    /// WAIT for a queue or some ops, bounded by the run's time limit. Returns whether all finished.
    @discardableResult
    func wait(queue: String? = nil, ids: [String] = []) throws -> Bool {
        var w = WireWait()
        if let queue { w.queue = queue } else { w.opIds = ids; w.run = runName }
        let left = secondsLeft
        w.timeoutUs = Int64(left * 1_000_000)
        guard case .waitReply(let r) = try conn.request(.wait(w), timeout: .milliseconds(Int(left * 1000) + 10_000)) else {
            throw LoadTestError("unexpected reply to WAIT")
        }
        drainEvents()
        if !r.finished { report.notes.append("time limit of \(Int(o.timeLimit)) s reached with \(r.pendingCount) operations unfinished") }
        return r.finished
    }

    func submitAndWait(_ ops: [WireOperation]) throws -> [String] {
        try submit(ops)
        try wait(queue: queue)
        return ops.map(\.id)
    }

    /// Every op record of the run's queues, page by page.
    private func statuses() throws -> [WireOpStatus] {
        var out: [WireOpStatus] = []
        for q in [queue, queue + "-probe"] {
            var after = ""
            repeat {
                var s = WireStatus()
                s.queue = q
                s.ops = true
                s.limit = UInt32(WireLimits.maxBatchRecords)
                s.after = after
                guard case .statusReply(let r) = try conn.request(.status(s), timeout: .seconds(60)) else {
                    throw LoadTestError("unexpected reply to STATUS")
                }
                out += r.ops
                after = r.nextAfter
                drainEvents()
            } while !after.isEmpty
        }
        return out
    }

    // MARK: WATCH

    func drainEvents() {
        guard o.watch || o.workload == .cancel else { return }
        while let events = try? conn.nextEvents(timeout: .zero), !events.isEmpty { absorb(events) }
    }

    func absorb(_ events: [WireEvent]) {
        let t = monotonicMicros()
        for e in events {
            // A stream is shared by watchers of the same filters: its first number here may be any.
            if lastSequence != 0 && e.sequence != lastSequence + 1 { eventGaps += 1 }
            lastSequence = e.sequence
            guard e.run == runName, e.opID.hasPrefix(template.idPrefix) else { continue }
            lastState[e.opID] = e.state
            guard e.state == .finished else { continue }
            finishedEvents[e.opID, default: 0] += 1
            if let p = pendingCancels.removeValue(forKey: e.opID), e.cancelled {
                latencies["cancel", default: LatencyRecorder()].record(micros: t - p.sent)
                latencies[p.running ? "cancel_running" : "cancel_queued", default: LatencyRecorder()].record(micros: t - p.sent)
            }
        }
    }

    func state(of id: String) -> WireOpState? { lastState[id] }

    /// A cancel of an op whose FINISHED was already read is not timed: it came too late.
    func noteCancelSent(_ id: String, at t: Int64) {
        if finishedEvents[id] == nil { pendingCancels[id] = (t, lastState[id] == .executing) }
    }

    func isCancelPending(_ id: String) -> Bool { pendingCancels[id] != nil || finishedEvents[id] != nil }

    /// Reads events until every op has its FINISHED event (or 5 s), then checks exactly-once.
    private func finishWatch(ids: [String]) throws {
        let until = now() + 5
        while now() < until, finishedEvents.count < ids.count || !pendingCancels.isEmpty {
            absorb(try conn.nextEvents(timeout: .milliseconds(100)))
        }
        var once = 0, more = 0, never = 0
        for id in ids {
            switch finishedEvents[id, default: 0] {
            case 0: never += 1
            case 1: once += 1
            default: more += 1
            }
        }
        report.exactlyOnce = ExactlyOnce(ok: once == ids.count && eventGaps == 0, operations: ids.count, finishedOnce: once,
                                         finishedTwiceOrMore: more, neverFinished: never, eventGaps: eventGaps)
        report.checks.append(Check(name: "every operation finished exactly once (WATCH)", ok: report.exactlyOnce!.ok,
                                   detail: "\(once) of \(ids.count) once, \(more) more than once, \(never) never, \(eventGaps) event gaps"))
    }

    // MARK: analysis

    private func analyse(_ records: [WireOpStatus], expected: Int) {
        var outcomes: [String: Int] = [:]
        var perWorker: [String: Int] = [:], succeededPerWorker: [String: Int] = [:]
        var unfinished = 0, redispatched = 0
        for r in records {
            if r.attempts > 1 { redispatched += 1 }
            guard r.state == .finished else { unfinished += 1; continue }
            switch r.outcome.result {
            case .succeeded:
                outcomes["succeeded", default: 0] += 1
                succeededPerWorker[r.workerID, default: 0] += 1
            case .failed: outcomes["failed", default: 0] += 1
            case .cancelled, nil: outcomes["cancelled", default: 0] += 1
            }
            if !r.workerID.isEmpty { perWorker[r.workerID, default: 0] += 1 }
            if o.workload != .queued, r.startedUs > 0, r.readyUs > 0 {
                latencies["dispatch", default: LatencyRecorder()].record(micros: r.startedUs - r.readyUs)
            }
        }
        report.outcomes = outcomes
        report.unfinished = unfinished + max(0, expected - records.count)
        report.redispatched = redispatched
        report.checks.insert(Check(name: "every operation finished with an outcome", ok: report.unfinished == 0,
                                   detail: "\(records.count - unfinished) of \(expected) finished"), at: 0)

        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        switch o.workload {
        case .chain:
            for i in 1..<max(1, o.ops) {
                if let a = byID[template.idPrefix + "c\(i - 1)"], let b = byID[template.idPrefix + "c\(i)"], a.finishedUs > 0, b.finishedUs > 0 {
                    latencies["hop", default: LatencyRecorder()].record(micros: b.finishedUs - a.finishedUs)
                }
            }
        case .fan:
            let sinks = Graphs.fan(template, n: o.ops, width: o.width).sinks
            for (a, b) in zip(sinks, sinks.dropFirst()) {
                if let a = byID[a], let b = byID[b] { latencies["fan_stage", default: LatencyRecorder()].record(micros: b.finishedUs - a.finishedUs) }
            }
        default:
            break
        }

        let wallMicros = report.wallS * 1e6
        let total = max(1, perWorker.values.reduce(0, +))
        report.workerUtilisation = perWorker.sorted { $0.key < $1.key }.map { id, n in
            let info = workerNames[id]
            // A session that ended before the run did is no longer listed; assume the usual slots.
            let slots = info?.slots ?? workerNames.values.map(\.slots).max() ?? 1
            // Only ops that ran to the end took the full duration (a cancelled one stopped early).
            let done = Double(succeededPerWorker[id, default: 0])
            let u = isTimed && wallMicros > 0 ? done * Double(o.opMs) * 1000 / (wallMicros * Double(slots)) : nil
            return WorkerUtilisation(workerID: id, name: info?.name ?? id, slots: slots, ops: n,
                                     share: (Double(n) / Double(total) * 10_000).rounded() / 10_000,
                                     utilisation: u.map { ($0 * 1000).rounded() / 1000 })
        }

        if records.count <= o.timelineLimit {
            let finished = records.filter { $0.state == .finished && $0.startedUs > 0 }
            let origin = finished.map(\.startedUs).min() ?? 0
            report.timeline = finished.map { r in
                // A timed op's run is its last opMs before it finished; before that it may have waited in
                // the worker's local queue (prefetch), which is not running.
                let start = isTimed && r.outcome.result.map({ if case .succeeded = $0 { true } else { false } }) == true
                    ? max(r.startedUs, r.finishedUs - Int64(o.opMs) * 1000) : r.startedUs
                let outcome: String = switch r.outcome.result {
                case .succeeded: "succeeded"
                case .failed: "failed"
                default: "cancelled"
                }
                return TimelineEntry(op: String(r.id.dropFirst(template.idPrefix.count)), worker: workerNames[r.workerID]?.name ?? r.workerID,
                                     startUs: start - origin, endUs: r.finishedUs - origin, outcome: outcome)
            }.sorted { ($0.worker, $0.startUs) < ($1.worker, $1.startUs) }
        }
    }

    private func finish() -> RunReport {
        for (name, l) in latencies where !l.isEmpty { report.latenciesUs[name] = l.summary }
        return report
    }
}
