// Public value types of the scheduler core: specs in, outcomes and states out.

/// `qualityOfService`; raw value orders dispatch (higher first).
public enum QoS: UInt8, Sendable, CaseIterable, Comparable {
    case background = 0, utility = 1, `default` = 2, userInitiated = 3, userInteractive = 4
    public static func < (a: QoS, b: QoS) -> Bool { a.rawValue < b.rawValue }
}

/// `queuePriority` values; any other integer is rejected at submit.
public enum Priority {
    public static let veryLow = -8, low = -4, normal = 0, high = 4, veryHigh = 8
    public static func isValid(_ p: Int) -> Bool { p == -8 || p == -4 || p == 0 || p == 4 || p == 8 }
}

/// `finished` = OperationQueue's rule; `succeeded` = cancel when a dependency did not succeed.
public enum DependencyPolicy: UInt8, Sendable { case finished, succeeded }

public enum Outcome: Sendable, Equatable {
    case succeeded([UInt8])
    case failed(String)
    case cancelled(String)

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
/// worker, waiting there for a slot; `executing`: a handler runs. Every move is checked against
/// `OpState.transitions` (Transitions.swift).
public enum OpState: UInt8, Sendable, CaseIterable { case pending, ready, dispatched, executing, finished }

/// One operation as submitted (field names follow docs/GRAPHS.md; times in µs).
public struct OperationSpec: Sendable, Equatable {
    public var id: String
    public var name: String?
    public var queue: String
    public var kind: String
    public var payload: [UInt8]
    public var after: [String]
    public var priority: Int
    public var qos: QoS?          // nil: the queue's
    public var parts: Int
    public var policy: DependencyPolicy
    public var retries: Int
    public var lossRetries: Int
    /// Per attempt, from its STARTED; a timed-out attempt is a failed attempt (it counts against `retries`).
    public var timeoutMicros: Int64?
    public var requires: [String]
    public var barrier: Bool
    /// Delay before retrying a failed attempt: doubled after each failed attempt up to
    /// `retryDelayMaxMicros`, each delay drawn between half and all of it (jitter). 0 = at once.
    public var retryDelayMicros: Int64
    public var retryDelayMaxMicros: Int64

    public static let defaultRetryDelayMicros: Int64 = 1_000_000
    public static let defaultRetryDelayMaxMicros: Int64 = 60_000_000

    public init(id: String, name: String? = nil, queue: String = "default", kind: String = "noop",
                payload: [UInt8] = [], after: [String] = [], priority: Int = 0, qos: QoS? = nil,
                parts: Int = 1, policy: DependencyPolicy = .finished, retries: Int = 0, lossRetries: Int = 3,
                timeoutMicros: Int64? = nil, requires: [String] = [], barrier: Bool = false,
                retryDelayMicros: Int64 = OperationSpec.defaultRetryDelayMicros,
                retryDelayMaxMicros: Int64 = OperationSpec.defaultRetryDelayMaxMicros) {
        self.id = id; self.name = name; self.queue = queue; self.kind = kind; self.payload = payload
        self.after = after; self.priority = priority; self.qos = qos; self.parts = parts; self.policy = policy
        self.retries = retries; self.lossRetries = lossRetries; self.timeoutMicros = timeoutMicros
        self.requires = requires; self.barrier = barrier
        self.retryDelayMicros = retryDelayMicros; self.retryDelayMaxMicros = retryDelayMaxMicros
    }
}

/// Named queue settings. In a submit batch it creates the queue or updates limit/suspension.
public struct QueueSpec: Sendable, Equatable {
    public var name: String
    public var maxConcurrent: Int   // -1 = unlimited
    public var qos: QoS
    public var suspended: Bool
    public init(name: String, maxConcurrent: Int = -1, qos: QoS = .default, suspended: Bool = false) {
        self.name = name; self.maxConcurrent = maxConcurrent; self.qos = qos; self.suspended = suspended
    }
}

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
    /// Names of evicted runs remembered (to say "evicted" rather than "unknown").
    public var evictedRunsRemembered: Int = 100_000
    /// Dead rows of evicted ops are compacted away once they are this many and outnumber live ones.
    public var compactMinimum: Int = 65_536
    public var livenessBoundMicros: Int64 { heartbeatIntervalMicros * missedHeartbeats }
    public init() {}
}
