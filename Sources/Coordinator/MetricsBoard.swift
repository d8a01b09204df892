import SchedulerCore
import Synchronization

/// What the loop publishes about once a second for the HTTP side's /metrics (docs/METRICS.md). The
/// loop takes this lock once per publish, never per message; the HTTP side takes it once per read.
public final class MetricsBoard: Sendable {
    public struct Worker: Sendable, Equatable {
        public var id: String        // "w3"
        public var name: String
        public var slots: Int
        public var running: Int
        public var inFlight: Int
        public var lastSeenMicros: Int64
    }

    public struct Leadership: Sendable, Equatable {
        public var leading = false
        public var epoch: UInt64 = 0
        public var electionsWon: UInt64 = 0
    }

    public struct Standby: Sendable, Equatable {
        public var name: String
        public var lagRecords: UInt64
        public var lagMicros: UInt64
        public var inSync: Bool
    }

    public struct Snapshot: Sendable {
        /// When it was taken (wall clock, µs).
        public var at: Int64 = 0
        /// Counters; their latency samples are in the arrays below (accumulated since the last `take`).
        public var core = SchedulerMetrics()
        public var queueWait: [Int64] = []
        public var dependencyHop: [Int64] = []
        public var cancelLatency: [Int64] = []
        public var journalSync: [Int64] = []
        public var queues: [QueueCounts] = []
        /// Fair share of every queue (A11).
        public var fairness: [QueueFairnessStatus] = []
        public var workers: [Worker] = []
        public var fenced: UInt64 = 0
        public var refusedClaims: UInt64 = 0
        public var authFailures: UInt64 = 0
        /// Hot standby (issue 29): 1 while this coordinator is a standby; the leader's standbys and how
        /// often sync mode stopped waiting for them.
        public var standby = false
        public var standbys: [Standby] = []
        public var replicationSyncFallbacks: UInt64 = 0
        public var residentBytes: UInt64 = 0
        public var cpuMicros: UInt64 = 0
        public var journal = false
        public var runsRetained = 0
        public var runsEvicted = 0
        /// The longest time the loop held without reading its socket since the last publish (µs), and
        /// how many holds went over its budget since start (LoopPulse.swift).
        public var loopLongestPassMicros: Int64 = 0
        public var loopPassesOverBudget: UInt64 = 0
        /// `--ha` (issue 29): nil without it.
        public var ha: Leadership?
    }

    /// Samples waiting for a reader are bounded per series, so a coordinator nobody scrapes stays small.
    public static let samplesKept = 200_000
    private let latest = Mutex<Snapshot?>(nil)

    public init() {}

    func publish(_ s: Snapshot) {
        latest.withLock { old in
            var s = s
            if let o = old {
                s.queueWait = Self.merge(o.queueWait, s.queueWait)
                s.dependencyHop = Self.merge(o.dependencyHop, s.dependencyHop)
                s.cancelLatency = Self.merge(o.cancelLatency, s.cancelLatency)
                s.journalSync = Self.merge(o.journalSync, s.journalSync)
                s.loopLongestPassMicros = max(o.loopLongestPassMicros, s.loopLongestPassMicros)   // until taken
            }
            old = s
        }
    }

    /// The newest snapshot with every sample published since the last call (the samples go to the caller).
    public func take() -> Snapshot? {
        latest.withLock { s in
            let taken = s
            s?.queueWait = []; s?.dependencyHop = []; s?.cancelLatency = []; s?.journalSync = []
            s?.loopLongestPassMicros = 0
            return taken
        }
    }

    private static func merge(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        a.isEmpty ? b : a + b.prefix(max(0, samplesKept - a.count))
    }
}

extension CoordinatorLoop {
    /// Once a second when the HTTP side is on: counters, gauges and samples onto the board.
    func publishMetrics() {
        guard let board = config.metricsBoard else { return }
        var s = MetricsBoard.Snapshot()
        s.at = now
        let core = self.core.takeMetrics()
        s.queueWait = core.queueWait.values
        s.dependencyHop = core.dependencyHop.values
        s.cancelLatency = core.cancelLatency.values
        s.core = core
        s.journalSync = journal?.takeSyncTimes() ?? []
        s.journal = journal != nil
        s.queues = self.core.queueNames.compactMap { self.core.queueCounts($0) }
        s.fairness = self.core.queueNames.compactMap { self.core.fairnessStatus($0) }
        s.workers = self.core.workerSnapshot().map {
            MetricsBoard.Worker(id: WorkerName.text($0.id), name: $0.name, slots: $0.slots, running: $0.running,
                                inFlight: $0.inFlight, lastSeenMicros: $0.lastSeen)
        }
        (s.runsRetained, s.runsEvicted) = (self.core.runCounts.retained, self.core.runCounts.evicted)
        s.loopLongestPassMicros = pulse.takeLongest()
        s.loopPassesOverBudget = pulse.overBudget
        s.fenced = UInt64(self.core.fencing.total)
        s.refusedClaims = UInt64(self.core.fencing.refusedClaim)
        s.authFailures = shell.authFailures
        s.standby = replication.standby != nil
        s.replicationSyncFallbacks = replication.syncFallbacks
        s.standbys = standbyInfos().map {
            MetricsBoard.Standby(name: $0.name, lagRecords: $0.lagRecords, lagMicros: $0.lagUs, inSync: $0.state == "sync")
        }
        s.residentBytes = ProcessStats.residentBytes()
        s.cpuMicros = ProcessStats.cpuMicros()
        if let ha {
            s.ha = MetricsBoard.Leadership(leading: ha.role.serves(at: now), epoch: ha.role.epoch,
                                           electionsWon: ha.box.currentDetails.electionsWon)
        }
        board.publish(s)
    }
}
