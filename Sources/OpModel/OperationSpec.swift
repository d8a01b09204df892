/// One operation as submitted: written by users (graph file, client API) and scheduled by the core.
/// Field names and defaults are docs/GRAPHS.md's. Durations are kept in whole microseconds, as the
/// wire and the journal carry them, so a spec goes through the coordinator unchanged; users see them
/// in seconds (`timeout`, `retryDelay`, `retryDelayMax`), converted by `Microseconds`.
public struct OperationSpec: Sendable, Hashable {
    /// Unique within a submission and stable across retries.
    public var id: String
    /// The display name as given; `nil` when none was (the id stands for it). Kept apart from `name`
    /// because the journal records whether a name was given.
    public var givenName: String?
    /// Named queue; `"default"` unless given.
    public var queue: String
    /// Handler kind registered in workers (`shell`, `sleep`, `noop`, `echo`, `fail`, or custom).
    public var kind: String
    /// Handler input.
    public var payload: [UInt8]
    /// Ids of the operations this one runs after (dependencies); `RUN/OP` names another run's.
    public var after: [String]
    public var priority: OperationPriority
    /// `nil` inherits the queue's QoS.
    public var qos: OperationQoS?
    /// BlockOperation-style parts (≥ 1); the operation is finished when every part is.
    public var parts: Int
    public var policy: DependencyPolicy
    /// Re-runs after a failure (≥ 0); a timed-out attempt is a failed one.
    public var retries: Int
    /// Re-dispatches after worker loss (≥ 0).
    public var lossRetries: Int
    /// Per attempt, from its start; `nil` = no timeout. A timed-out attempt is stopped and counts as
    /// failed (retried while `retries` allow; finally failed "timed out after N attempts").
    public var timeoutMicros: Int64?
    /// Tags a worker must all have to run this operation.
    public var requires: [String]
    /// Runs after everything added to its queue before it and holds back what is added after.
    public var barrier: Bool
    /// Delay before retrying a failed attempt: doubled after each failed attempt up to
    /// `retryDelayMaxMicros`, each delay drawn between half and all of it (jitter); 0 = at once;
    /// `nil` = the coordinator's default (`defaultRetryDelayMicros`).
    public var retryDelayMicros: Int64?
    /// Cap of the retry delay; `nil` = the coordinator's default (`defaultRetryDelayMaxMicros`).
    public var retryDelayMaxMicros: Int64?
    /// Share key in a queue whose share mode is `key` (A11); nil = its submitter. Ignored in other modes.
    public var share: String?
    /// Concurrency key: at most the queue's `keyLimit` ops with the same key are dispatched or executing
    /// at once (A11); nil = none.
    public var concurrencyKey: String?

    public static let defaultQueue = "default"
    public static let defaultLossRetries = 3
    // Computed, so that the core's submit reads them without a global's lazy initialisation.
    @inlinable public static var defaultRetryDelayMicros: Int64 { 1_000_000 }
    @inlinable public static var defaultRetryDelayMaxMicros: Int64 { 60_000_000 }

    /// A spec with durations in seconds (`nil`: no timeout; the coordinator's retry delays).
    public init(
        id: String,
        name: String? = nil,
        queue: String = OperationSpec.defaultQueue,
        kind: String = BuiltinKind.noop,
        payload: [UInt8] = [],
        after: [String] = [],
        priority: OperationPriority = .normal,
        qos: OperationQoS? = nil,
        parts: Int = 1,
        policy: DependencyPolicy = .finished,
        retries: Int = 0,
        lossRetries: Int = OperationSpec.defaultLossRetries,
        timeout: Double? = nil,
        requires: [String] = [],
        barrier: Bool = false,
        retryDelay: Double? = nil,
        retryDelayMax: Double? = nil,
        share: String? = nil,
        concurrencyKey: String? = nil
    ) {
        self.init(id: id, name: name, queue: queue, kind: kind, payload: payload, after: after, priority: priority,
                  qos: qos, parts: parts, policy: policy, retries: retries, lossRetries: lossRetries,
                  timeoutMicros: timeout.map(Microseconds.from(seconds:)), requires: requires, barrier: barrier,
                  retryDelayMicros: retryDelay.map(Microseconds.from(seconds:)),
                  retryDelayMaxMicros: retryDelayMax.map(Microseconds.from(seconds:)), share: share,
                  concurrencyKey: concurrencyKey)
    }

    /// A spec with durations in microseconds, as the wire and the journal carry them.
    public init(
        id: String,
        name: String? = nil,
        queue: String = OperationSpec.defaultQueue,
        kind: String = BuiltinKind.noop,
        payload: [UInt8] = [],
        after: [String] = [],
        priority: OperationPriority = .normal,
        qos: OperationQoS? = nil,
        parts: Int = 1,
        policy: DependencyPolicy = .finished,
        retries: Int = 0,
        lossRetries: Int = OperationSpec.defaultLossRetries,
        timeoutMicros: Int64?,
        requires: [String] = [],
        barrier: Bool = false,
        retryDelayMicros: Int64? = nil,
        retryDelayMaxMicros: Int64? = nil,
        share: String? = nil,
        concurrencyKey: String? = nil
    ) {
        self.id = id
        self.givenName = name
        self.queue = queue
        self.kind = kind
        self.payload = payload
        self.after = after
        self.priority = priority
        self.qos = qos
        self.parts = parts
        self.policy = policy
        self.retries = retries
        self.lossRetries = lossRetries
        self.timeoutMicros = timeoutMicros
        self.requires = requires
        self.barrier = barrier
        self.retryDelayMicros = retryDelayMicros
        self.retryDelayMaxMicros = retryDelayMaxMicros
        self.share = share
        self.concurrencyKey = concurrencyKey
    }

    /// `micros` as the coordinator keeps a retry delay: nil for the default, which a journal record
    /// cannot tell from one left out (so a spec comes back from the journal as it went in).
    @inlinable public static func retryDelayMicros(_ micros: Int64?) -> Int64? {
        micros == defaultRetryDelayMicros ? nil : micros
    }

    /// `micros` as the coordinator keeps a retry delay's cap: nil for the default.
    @inlinable public static func retryDelayMaxMicros(_ micros: Int64?) -> Int64? {
        micros == defaultRetryDelayMaxMicros ? nil : micros
    }

    /// Display name; the id unless one was given.
    public var name: String {
        get { givenName ?? id }
        set { givenName = newValue }
    }

    /// Seconds each attempt may run, from its start; `nil` = no timeout.
    public var timeout: Double? {
        get { timeoutMicros.map(Microseconds.seconds) }
        set { timeoutMicros = newValue.map(Microseconds.from(seconds:)) }
    }

    /// Seconds before a failed attempt is retried, doubled after each failed attempt, each delay drawn
    /// between half and all of it; `nil` = the coordinator's default (1 s); 0 = at once.
    public var retryDelay: Double? {
        get { retryDelayMicros.map(Microseconds.seconds) }
        set { retryDelayMicros = newValue.map(Microseconds.from(seconds:)) }
    }

    /// Cap of the retry delay in seconds; `nil` = the coordinator's default (60 s).
    public var retryDelayMax: Double? {
        get { retryDelayMaxMicros.map(Microseconds.seconds) }
        set { retryDelayMaxMicros = newValue.map(Microseconds.from(seconds:)) }
    }
}
