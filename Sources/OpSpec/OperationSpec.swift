/// One operation as a user describes it (graph file, client API). Field names and defaults
/// are the shared vocabulary's; durations are seconds here and converted at the edges.
public struct OperationSpec: Sendable, Hashable {
    /// Unique within a submission and stable across retries.
    public var id: String
    /// Display name; defaults to `id`.
    public var name: String
    /// Named queue; `"default"` unless given.
    public var queue: String
    /// Handler kind registered in workers (`shell`, `sleep`, `noop`, `echo`, `fail`, or custom).
    public var kind: String
    /// Handler input.
    public var payload: [UInt8]
    /// Ids of the operations this one runs after (dependencies).
    public var after: [String]
    public var priority: OperationPriority
    /// `nil` inherits the queue's QoS.
    public var qos: OperationQoS?
    /// BlockOperation-style parts (≥ 1); the operation is finished when every part is.
    public var parts: Int
    public var policy: DependencyPolicy
    /// Re-runs after a failure (≥ 0); a timed-out attempt is a failed one.
    public var retries: Int
    /// Seconds before a failed attempt is retried, doubled after each failed attempt, each delay drawn
    /// between half and all of it; `nil` = the coordinator's default (1 s); 0 = at once.
    public var retryDelay: Double?
    /// Cap of the retry delay in seconds; `nil` = the coordinator's default (60 s).
    public var retryDelayMax: Double?
    /// Re-dispatches after worker loss (≥ 0).
    public var lossRetries: Int
    /// Seconds each attempt may run, from its start; `nil` = no timeout. A timed-out attempt is stopped and
    /// counts as failed (retried while `retries` allow; finally failed "timed out after N attempts").
    public var timeout: Double?
    /// Tags a worker must all have to run this operation.
    public var requires: [String]
    /// Runs after everything added to its queue before it and holds back what is added after.
    public var barrier: Bool

    public static let defaultQueue = "default"
    public static let defaultLossRetries = 3

    public init(
        id: String,
        name: String? = nil,
        queue: String = OperationSpec.defaultQueue,
        kind: String,
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
        retryDelayMax: Double? = nil
    ) {
        self.retryDelay = retryDelay
        self.retryDelayMax = retryDelayMax
        self.id = id
        self.name = name ?? id
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
        self.timeout = timeout
        self.requires = requires
        self.barrier = barrier
    }

    /// A `shell` operation whose payload is the encoded command.
    public static func shell(id: String, _ command: ShellCommand, after: [String] = [],
                             priority: OperationPriority = .normal) -> OperationSpec {
        OperationSpec(id: id, kind: BuiltinKind.shell, payload: command.encoded(), after: after, priority: priority)
    }
}

/// A named queue as a user describes it.
public struct QueueSpec: Sendable, Hashable {
    public var name: String
    /// Cluster-wide limit of running operations; −1 = unlimited.
    public var maxConcurrent: Int
    public var qos: OperationQoS
    public var suspended: Bool

    public init(name: String, maxConcurrent: Int = -1, qos: OperationQoS = .default, suspended: Bool = false) {
        self.name = name
        self.maxConcurrent = maxConcurrent
        self.qos = qos
        self.suspended = suspended
    }
}

/// A submission: queues to create or update, and operations.
public struct Graph: Sendable, Hashable {
    public var queues: [QueueSpec]
    public var operations: [OperationSpec]

    public init(queues: [QueueSpec] = [], operations: [OperationSpec] = []) {
        self.queues = queues
        self.operations = operations
    }
}

/// Names of the kinds every worker has without custom code.
public enum BuiltinKind {
    public static let shell = "shell"
    public static let sleep = "sleep"
    public static let noop = "noop"
    public static let echo = "echo"
    public static let fail = "fail"
    public static let burn = "burn"
    public static let all = [shell, sleep, noop, echo, fail, burn]
}
