// What `opctl status`, `opctl why`, the dashboard and /metrics show of a queue's fair share (A11).

public struct ShareStatus: Sendable, Equatable {
    public var name: String
    public var weight: Int
    /// Ready ops of this share key (held by a concurrency key included).
    public var ready: Int
    /// Dispatched or executing ops of this share key.
    public var running: Int
    /// New ops dispatched from this share key while the queue shared (a rate over two reads is its
    /// recent share of slots).
    public var dispatchedTotal: UInt64
}

public struct ConcurrencyKeyStatus: Sendable, Equatable {
    public var name: String
    /// Ops of the key dispatched or executing (≤ the queue's keyLimit).
    public var holding: Int
    /// Ready ops of the key waiting for a place.
    public var waiting: Int
    /// The holding ops ("RUN/OP").
    public var holders: [String]
}

public struct QueueFairnessStatus: Sendable, Equatable {
    public var queue: String
    public var fairness: QueueFairness
    /// Share keys with ready or running ops, or that dispatched before; by name.
    public var shares: [ShareStatus]
    /// Concurrency keys holding or waiting, by name.
    public var keys: [ConcurrencyKeyStatus]
    /// With a rate limit: when the next token comes (the core's clock, µs); nil when one is there now.
    public var nextTokenAt: Int64?
}

extension Scheduler {
    /// A queue's fair share, concurrency keys and rate now; nil for an unknown queue.
    public func fairnessStatus(_ queue: String) -> QueueFairnessStatus? {
        guard let q = queueIndex[queue] else { return nil }
        return fairnessStatus(q)
    }
}
