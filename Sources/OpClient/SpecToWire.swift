import Foundation
import OpSpec
import WireProtocol

// Specs (what users write) → wire records; QoS and policy map in WireProtocol/Vocabulary.swift.

extension WireOperation {
    public init(_ s: OperationSpec) {
        self.init()
        id = s.id
        if s.name != s.id { name = s.name }
        if s.queue != OperationSpec.defaultQueue { queue = s.queue }
        kind = s.kind
        if !s.payload.isEmpty { payload = Data(s.payload) }
        after = s.after
        priority = Int32(s.priority.rawValue)
        qos = s.qos?.wire ?? .unspecified
        parts = UInt32(max(1, s.parts))
        policy = s.policy.wire
        retries = UInt32(max(0, s.retries))
        if s.lossRetries != OperationSpec.defaultLossRetries { lossRetries = UInt32(max(0, s.lossRetries)) }
        if let t = s.timeoutMicros { timeoutUs = t }
        if let d = s.retryDelayMicros { retryDelayUs = d }
        if let d = s.retryDelayMaxMicros { retryDelayMaxUs = d }
        requires = s.requires
        barrier = s.barrier
        if let share = s.share { self.share = share }
        if let key = s.concurrencyKey { concurrencyKey = key }
    }
}

extension WireQueueSettings {
    public init(_ q: QueueSpec) {
        self.init()
        name = q.name
        maxConcurrent = Int32(q.maxConcurrent)
        qos = q.qos.wire
        suspended = q.suspended
        if let f = q.fairness { fairness = WireQueueFairness(f) }
    }
}

extension Graph {
    /// SUBMIT messages for the graph, each within the protocol's limits: at most `maxBatchRecords`
    /// operations and about `batchBodyBudget` bytes (`Batcher`), and at most `maxElements` list elements
    /// in all (operations, their dependencies and tags: 8,192 operations with 32 dependencies each would
    /// be over); queues go with the first. Each message is accepted or rejected as a whole.
    public var submitMessages: [WireProtocol.Message] { submitMessages(run: "") }

    /// `submitMessages` into run `run` (empty: the coordinator names it from the first reply; the
    /// caller then sets `run` and `append` on the later ones).
    public func submitMessages(run: String, submitter: String = "") -> [WireProtocol.Message] {
        var batches: [[WireOperation]] = []
        for batch in Batcher.split(operations.map(WireOperation.init)) {
            batches += Self.splitByElements(batch, reserved: batches.isEmpty ? queues.count : 0)
        }
        return batches.enumerated().map { i, ops in
            var m = WireSubmit()
            if i == 0 { m.queues = queues.map(WireQueueSettings.init) }
            m.operations = ops
            m.run = run
            m.append = i > 0
            m.submitter = submitter
            return .submit(m)
        }
    }

    /// Consecutive runs of `ops` whose list elements stay within `maxElements` (`reserved` already used).
    static func splitByElements(_ ops: [WireOperation], reserved: Int) -> [[WireOperation]] {
        var out: [[WireOperation]] = []
        var current: [WireOperation] = []
        var count = reserved
        for o in ops {
            let n = 1 + o.after.count + o.requires.count
            if !current.isEmpty && count + n > WireLimits.maxElements {
                out.append(current)
                current = []
                count = 0
            }
            current.append(o)
            count += n
        }
        if !current.isEmpty { out.append(current) }
        return out
    }
}
