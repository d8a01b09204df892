/// A named queue's settings. In a submission it creates the queue, or updates an existing one's
/// limit and suspension (an existing queue keeps its QoS).
public struct QueueSpec: Sendable, Hashable {
    public var name: String
    /// Cluster-wide limit of running operations; −1 = unlimited.
    public var maxConcurrent: Int
    public var qos: OperationQoS
    public var suspended: Bool
    /// Fair share, concurrency keys and rate (A11); nil = the queue's current settings (a new queue: the
    /// default, `QueueFairness.default`).
    public var fairness: QueueFairness?

    public init(name: String, maxConcurrent: Int = -1, qos: OperationQoS = .default, suspended: Bool = false,
                fairness: QueueFairness? = nil) {
        self.name = name
        self.maxConcurrent = maxConcurrent
        self.qos = qos
        self.suspended = suspended
        self.fairness = fairness
    }
}
