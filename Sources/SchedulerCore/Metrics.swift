// Counters and latency samples for the coordinator's /metrics (docs/METRICS.md). Plain integers bumped
// where the core already makes the change, so the hot path pays an add, not a lock; the shell copies
// the counters and takes the samples about once a second.

/// What the core has done since it started (monotonic; a recovered coordinator starts again at 0).
public struct SchedulerMetrics: Sendable, Equatable {
    public var submitted: UInt64 = 0
    /// Parts sent to workers (a retried or re-dispatched part counts again).
    public var dispatched: UInt64 = 0
    /// Parts whose handler started (STARTED).
    public var started: UInt64 = 0
    public var succeeded: UInt64 = 0
    public var failed: UInt64 = 0
    public var cancelled: UInt64 = 0
    /// Failed or timed-out attempts that run again after their retry delay.
    public var retried: UInt64 = 0
    /// Parts taken back from a lost or unresponsive worker and dispatched again.
    public var requeued: UInt64 = 0
    public var timedOut: UInt64 = 0
    public var workersJoined: UInt64 = 0
    public var workersLost: UInt64 = 0
    /// Workers declared lost because they missed their heartbeats (a subset of `workersLost`).
    public var heartbeatLosses: UInt64 = 0
    /// First attempts: ready (or submitted) → dispatched, µs.
    public var queueWait: LatencySamples
    /// Ops with dependencies, first attempt: last dependency finished → its handler started, µs.
    public var dependencyHop: LatencySamples
    /// Running ops: cancel requested → finished cancelled (the worker stopped it), µs.
    public var cancelLatency: LatencySamples

    public init(sampleCapacity: Int = 0) {
        queueWait = LatencySamples(capacity: sampleCapacity)
        dependencyHop = LatencySamples(capacity: sampleCapacity)
        cancelLatency = LatencySamples(capacity: sampleCapacity)
    }
}

/// Latency samples waiting for the shell to take them; bounded (past `capacity` they are counted as
/// dropped), so a coordinator nobody scrapes does not grow. Capacity 0 records nothing.
public struct LatencySamples: Sendable, Equatable {
    public private(set) var values: [Int64] = []
    public private(set) var dropped: UInt64 = 0
    public let capacity: Int

    public init(capacity: Int) { self.capacity = capacity }

    @inline(__always) mutating func add(_ micros: Int64) {
        guard capacity > 0 else { return }
        if values.count < capacity { values.append(max(0, micros)) } else { dropped &+= 1 }
    }

    /// The samples so far; the buffer starts empty again (a new one: the taken array is not copied).
    public mutating func take() -> [Int64] {
        defer { values = [] }
        return values
    }
}

extension Scheduler {
    /// The counters and the samples since the last call, which leave the core (the shell's
    /// once-a-second read for /metrics).
    public mutating func takeMetrics() -> SchedulerMetrics {
        let taken = metrics
        _ = metrics.queueWait.take()
        _ = metrics.dependencyHop.take()
        _ = metrics.cancelLatency.take()
        return taken
    }
}
