// Public value types of the scheduler core: outcomes and states out, and its settings. What goes in
// (OperationSpec, QueueSpec, …) is the shared vocabulary, OpModel (Exports.swift).

/// The shared vocabulary's `OperationOutcome` (OpModel), by the name the core has always used.
public typealias Outcome = OperationOutcome

extension OperationOutcome {
    /// Which case, without its bytes (what the core's op table stores).
    public var kind: OutcomeKind {
        switch self {
        case .succeeded: return .succeeded
        case .failed: return .failed
        case .cancelled: return .cancelled
        }
    }
}

public enum OutcomeKind: UInt8, Sendable { case none = 0, succeeded, failed, cancelled }

/// S1 (docs/SEMANTICS.md): pending → ready → dispatched → executing → finished. `dispatched`: sent to a
/// worker, waiting there for a slot; `executing`: a handler runs; `delayed`: a failed attempt waits out
/// its retry delay, then is ready again (A4; the wire and queue counts show it as pending). Every move is
/// checked against `OpState.transitions` (Transitions.swift).
public enum OpState: UInt8, Sendable, CaseIterable { case pending, ready, dispatched, executing, finished, delayed }

public struct SchedulerConfig: Sendable {
    public var heartbeatIntervalMicros: Int64 = 1_000_000
    public var missedHeartbeats: Int64 = 3
    /// Total entries of the story ring shared by all ops (each op's chain is also capped at `storyPerOp`).
    public var storyCapacity: Int = 1 << 18
    public var storyPerOp: Int = 64
    /// Latency samples kept for /metrics between two reads (SchedulerMetrics); 0 = none (no HTTP side).
    public var metricsSampleCapacity: Int = 0
    /// Emit journal actions (durability layer consumes them).
    public var journal: Bool = true
    /// A worker may hold at most slots + prefetch parts (dispatched and unfinished); the prefetch it
    /// declares is capped here, so a worker cannot hoard the cluster's ready work with credit.
    public var maxPrefetch: Int = 256
    /// A part dispatched but not started within this long is taken back and dispatched again (a worker
    /// that holds work without running it); checked at the worker's liveness ticks. 0 = never.
    public var startTimeoutMicros: Int64 = 120_000_000
    /// A finished run is kept this long, then evicted (its ops forgotten).
    public var retainMicros: Int64 = 24 * 3_600_000_000
    /// At most this many finished runs are kept; beyond it the oldest finished is evicted first.
    public var retainRuns: Int = 10_000
    /// The memory finished ops may take (`--retain-bytes`). What they hold (`Scheduler.retainedBytes`) is
    /// kept under 75 % of it: past that the oldest finished runs lose their results first, then are
    /// evicted whole, down to 65 %. The rest is room for what is in flight: messages being read, encoded
    /// or sent, and results a snapshot being written still holds after they were evicted.
    public var retainBytes: Int = .max
    var retainHighWater: Int { retainBytes == .max ? .max : retainBytes / 4 * 3 }
    var retainLowWater: Int { retainBytes == .max ? .max : retainBytes / 20 * 13 }
    /// Names of evicted runs remembered (to say "evicted" rather than "unknown").
    public var evictedRunsRemembered: Int = 100_000
    /// Dead rows of evicted ops are compacted away once they are this many and outnumber live ones.
    public var compactMinimum: Int = 65_536
    public var livenessBoundMicros: Int64 { heartbeatIntervalMicros * missedHeartbeats }
    public init() {}
}
