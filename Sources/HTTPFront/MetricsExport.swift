import Coordinator
import CoreMetrics
import Foundation
import Prometheus
import SchedulerCore

/// /metrics (docs/METRICS.md): the loop's once-a-second snapshot (MetricsBoard) turned into swift-metrics
/// counters, gauges and timers on a Prometheus registry. Runs on the HTTP side's threads only; the
/// latency samples are recorded here, not on the loop.
final class MetricsExport: @unchecked Sendable {
    // @unchecked: every mutable field is touched under `lock` only.
    private let lock = NSLock()
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let board: MetricsBoard
    /// Counters are fed the difference since the last snapshot (Prometheus counters only go up).
    private var counted: [String: UInt64] = [:]
    private var counters: [String: CoreMetrics.Counter] = [:]
    private var gauges: [String: CoreMetrics.Gauge] = [:]
    private var timers: [String: CoreMetrics.Timer] = [:]
    private var cpuCounter: FloatingPointCounter?
    private var cpuCounted: UInt64 = 0
    /// When this process started (the exporter is made at opcoord's start-up, well within a second of it).
    private let startedAt = Date().timeIntervalSince1970
    /// Gauges of workers and queues seen last time: those that went away are removed.
    private var labelledLastTime: Set<String> = []

    /// Buckets for the latency histograms: 50 µs … 60 s.
    static let buckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10), .seconds(30), .seconds(60),
    ]

    init(board: MetricsBoard) {
        self.board = board
        var f = PrometheusMetricsFactory(registry: registry)
        f.defaultDurationHistogramBuckets = Self.buckets
        factory = f
    }

    /// Takes what the loop published since the last call and returns the whole exposition.
    func render() -> String {
        lock.lock()
        defer { lock.unlock() }
        if let s = board.take() { apply(s) }
        return MetricHelp.annotate(registry.emitToString())
    }

    /// Folds in what the loop published without rendering (a background task calls this every
    /// second, so samples do not wait on the board for a scrape).
    func absorb() {
        lock.lock()
        defer { lock.unlock() }
        if let s = board.take() { apply(s) }
    }

    private func apply(_ s: MetricsBoard.Snapshot) {
        let c = s.core
        count("opqueue_operations_submitted_total", c.submitted)
        count("opqueue_dispatches_total", c.dispatched)
        count("opqueue_starts_total", c.started)
        count("opqueue_operations_finished_total", c.succeeded, ["outcome": "succeeded"])
        count("opqueue_operations_finished_total", c.failed, ["outcome": "failed"])
        count("opqueue_operations_finished_total", c.cancelled, ["outcome": "cancelled"])
        count("opqueue_retries_total", c.retried)
        count("opqueue_requeues_total", c.requeued)
        count("opqueue_timeouts_total", c.timedOut)
        count("opqueue_workers_joined_total", c.workersJoined)
        count("opqueue_workers_lost_total", c.workersLost)
        count("opqueue_heartbeat_timeouts_total", c.heartbeatLosses)
        count("opqueue_fenced_reports_total", s.fenced)
        count("opqueue_worker_claims_refused_total", s.refusedClaims)
        count("opqueue_auth_failures_total", s.authFailures)
        count("opqueue_replication_sync_fallbacks_total", s.replicationSyncFallbacks)
        gauge("opqueue_standby", s.standby ? 1 : 0)
        gauge("opqueue_standbys", Double(s.standbys.count))
        gauge("opqueue_standbys_in_sync", Double(s.standbys.filter(\.inSync).count))
        gauge("opqueue_standby_lag_records", Double(s.standbys.map(\.lagRecords).max() ?? 0))
        gauge("opqueue_standby_lag_seconds", Double(s.standbys.map(\.lagMicros).max() ?? 0) / 1e6)
        count("opqueue_runs_evicted_total", UInt64(s.runsEvicted))
        count("opqueue_loop_passes_over_budget_total", s.loopPassesOverBudget)
        gauge("opqueue_loop_longest_pass_seconds", Double(s.loopLongestPassMicros) / 1e6)
        gauge("opqueue_runs_retained", Double(s.runsRetained))
        // Without --ha a coordinator always serves: leader 1, epoch 0, no elections.
        gauge("opqueue_ha_leader", s.ha.map { $0.leading ? 1 : 0 } ?? 1)
        gauge("opqueue_ha_epoch", Double(s.ha?.epoch ?? 0))
        count("opqueue_ha_elections_won_total", s.ha?.electionsWon ?? 0)
        gauge("opqueue_workers_connected", Double(s.workers.count))
        gauge("process_resident_memory_bytes", Double(s.residentBytes))
        cpu(s.cpuMicros)
        count("opqueue_latency_samples_dropped_total", c.queueWait.dropped + c.dependencyHop.dropped + c.cancelLatency.dropped)
        gauge("process_start_time_seconds", startedAt)
        gauge("opqueue_build_info", 1, ["version": MetricHelp.version, "protocol_version": MetricHelp.protocolVersion])

        record("opqueue_queue_wait_seconds", s.queueWait)
        record("opqueue_dependency_hop_seconds", s.dependencyHop)
        record("opqueue_cancel_latency_seconds", s.cancelLatency)
        if s.journal { record("opqueue_journal_sync_seconds", s.journalSync) }

        var labelled: Set<String> = []
        func labelledGauge(_ name: String, _ value: Double, _ labels: [String: String]) {
            labelled.insert(key(name, labels))
            gauge(name, value, labels)
        }
        for q in s.queues {
            for (state, n) in [("pending", q.pending), ("ready", q.ready), ("dispatched", q.dispatched),
                               ("executing", q.executing), ("succeeded", q.succeeded), ("failed", q.failed),
                               ("cancelled", q.cancelled)] {
                labelledGauge("opqueue_operations", Double(n), ["queue": q.name, "state": state])
            }
            labelledGauge("opqueue_queue_suspended", q.suspended ? 1 : 0, ["queue": q.name])
            labelledGauge("opqueue_queue_max_concurrent", Double(q.maxConcurrent), ["queue": q.name])
        }
        for f in s.fairness { fairness(f, labelledGauge) }
        for w in s.workers {
            let l = ["worker": w.id, "name": w.name]
            labelledGauge("opqueue_worker_slots", Double(w.slots), l)
            labelledGauge("opqueue_worker_slots_running", Double(w.running), l)
            labelledGauge("opqueue_worker_slots_free", Double(max(0, w.slots - w.running)), l)
            labelledGauge("opqueue_worker_in_flight", Double(w.inFlight), l)
            labelledGauge("opqueue_worker_last_seen_seconds", Double(max(0, s.at - w.lastSeenMicros)) / 1e6, l)
        }
        for gone in labelledLastTime.subtracting(labelled) { gauges.removeValue(forKey: gone)?.destroy() }
        labelledLastTime = labelled
    }

    /// Share keys and concurrency keys of one queue (A11), at most `FairnessSummary.metricsLimit` of each with
    /// their own series, the rest summed as "other": a share per customer must not make a series per customer.
    /// "other" is always there (0 with fewer keys), so each family exists for every queue. A share that moves
    /// into "other" leaves its dispatched counter where it was.
    private func fairness(_ f: QueueFairnessStatus, _ labelledGauge: (String, Double, [String: String]) -> Void) {
        let shares = FairnessSummary.topShares(f.shares, limit: FairnessSummary.metricsLimit)
        var rows = shares.top.map { ($0.name, $0.running, $0.ready, $0.dispatchedTotal) }
        rows.append((FairnessSummary.otherName, shares.rest?.running ?? 0, shares.rest?.ready ?? 0, shares.rest?.dispatchedTotal ?? 0))
        for (name, running, ready, dispatched) in rows {
            let l = ["queue": f.queue, "share": name]
            labelledGauge("opqueue_share_running", Double(running), l)
            labelledGauge("opqueue_share_ready", Double(ready), l)
            count("opqueue_share_dispatched_total", dispatched, l)
        }
        let keys = FairnessSummary.topKeys(f.keys, limit: FairnessSummary.metricsLimit)
        for (name, holding) in keys.top.map({ ($0.name, $0.holding) }) + [(FairnessSummary.otherName, keys.rest?.holding ?? 0)] {
            labelledGauge("opqueue_concurrency_key_holding", Double(holding), ["queue": f.queue, "key": name])
        }
    }

    private func key(_ name: String, _ labels: [String: String]) -> String {
        labels.isEmpty ? name : name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }

    private func dimensions(_ labels: [String: String]) -> [(String, String)] {
        labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    private func count(_ name: String, _ total: UInt64, _ labels: [String: String] = [:]) {
        let k = key(name, labels)
        let counter = counters[k] ?? {
            let made = CoreMetrics.Counter(label: name, dimensions: dimensions(labels), factory: factory)
            counters[k] = made
            return made
        }()
        let before = counted[k] ?? 0
        if total > before { counter.increment(by: Int64(total - before)) }
        counted[k] = max(before, total)
    }

    /// `process_cpu_seconds_total`, the standard name, fed the CPU time used since the last snapshot.
    private func cpu(_ micros: UInt64) {
        let c = cpuCounter ?? FloatingPointCounter(label: "process_cpu_seconds_total", dimensions: [], factory: factory)
        cpuCounter = c
        if micros > cpuCounted { c.increment(by: Double(micros - cpuCounted) / 1e6) }
        cpuCounted = max(cpuCounted, micros)
    }

    private func gauge(_ name: String, _ value: Double, _ labels: [String: String] = [:]) {
        let k = key(name, labels)
        let g = gauges[k] ?? {
            let made = CoreMetrics.Gauge(label: name, dimensions: dimensions(labels), factory: factory)
            gauges[k] = made
            return made
        }()
        g.record(value)
    }

    private func record(_ name: String, _ micros: [Int64]) {
        let t = timers[name] ?? {
            let made = CoreMetrics.Timer(label: name, dimensions: [], factory: factory)
            timers[name] = made
            return made
        }()
        for m in micros { t.recordMicroseconds(m) }
    }
}
