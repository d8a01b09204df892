import Foundation
import WireProtocol

/// Everything of a `RemoteOperationQueue` that changes, under its one lock. No I/O: transitions return
/// what the caller then does outside the lock (progress to add, waiters to resume, settings to send).
/// `Waiter` is a continuation in the queue and any value in tests.
struct QueueState<Waiter> {
    var unfinished: [ObjectIdentifier: RemoteOperation] = [:]
    var order: [ObjectIdentifier] = []
    /// Each unfinished operation's share of `progress` counted so far (0…99 of its 100 units).
    var units: [ObjectIdentifier: Int64] = [:]
    var maxConcurrent = -1
    var suspended = false
    var qos: OperationQoS = .default
    /// Fair share (A11): nil until set here or learned from the coordinator (then the default when it has none).
    var fairness: QueueFairness?
    var idleWaiters: [Waiter] = []
    /// Whether the coordinator has the queue (checked once with STATUS, then kept).
    var known: Bool?
    /// Settings made before the coordinator had the queue: sent with the first SUBMIT, which creates it.
    var unsentSettings = false
    /// The last failure that a property setter or `cancelAllOperations()` could not throw.
    var lastError: RemoteOperationError?

    var operations: [RemoteOperation] { order.compactMap { unfinished[$0] } }

    // MARK: operations

    /// Counts added operations; returns the units to add to `progress.totalUnitCount`.
    mutating func track(_ ops: [RemoteOperation]) -> Int64 {
        for op in ops {
            let key = ObjectIdentifier(op)
            unfinished[key] = op
            order.append(key)
            units[key] = 0
        }
        return Int64(100 * ops.count)
    }

    /// Handler progress of an unfinished operation; returns the units to add to `completedUnitCount`.
    mutating func progressed(_ op: RemoteOperation, fraction: Double) -> Int64 {
        let key = ObjectIdentifier(op)
        guard let old = units[key] else { return 0 }
        let new = Int64(min(1, max(0, fraction)) * 99)
        guard new > old else { return 0 }
        units[key] = new
        return new - old
    }

    struct FinishAction {
        /// Units to add to `completedUnitCount`.
        var units: Int64 = 0
        /// Nothing is unfinished any more: resume these and wake the blocking waits.
        var idle = false
        var waiters: [Waiter] = []
    }

    /// An operation finished (once; again is a no-op).
    mutating func finished(_ op: RemoteOperation) -> FinishAction {
        let key = ObjectIdentifier(op)
        guard unfinished.removeValue(forKey: key) != nil else { return FinishAction() }
        var action = FinishAction(units: 100 - (units.removeValue(forKey: key) ?? 0))
        if order.count > 2 * unfinished.count + 64 {
            let live = unfinished
            order.removeAll { live[$0] == nil }
        }
        if unfinished.isEmpty {
            action.idle = true
            action.waiters = idleWaiters
            idleWaiters = []
        }
        return action
    }

    /// An async wait for idleness: false when idle already (resume at once), else kept until then.
    mutating func addIdleWaiter(_ w: Waiter) -> Bool {
        if unfinished.isEmpty { return false }
        idleWaiters.append(w)
        return true
    }

    // MARK: settings

    /// Checked before anything changes: the values the coordinator accepts.
    static func validate(maxConcurrent n: Int) throws {
        guard n >= -1, n <= Int(Int32.max) else {
            throw RemoteOperationError.invalidValue("maxConcurrentOperationCount must be -1 or ≥ 0, got \(n)")
        }
    }

    /// The QoS of a queue the coordinator has cannot change (it keeps its own).
    mutating func setQoS(_ q: OperationQoS) throws {
        guard known != true else {
            throw RemoteOperationError.invalidValue("the coordinator's queue exists already; it keeps its quality of service")
        }
        qos = q
    }

    /// What the coordinator said about the queue the first time it was asked. Its settings are taken,
    /// unless some were made here before it had the queue: those are returned, to be sent.
    mutating func learned(_ remote: WireQueueCounts?, name: String) -> WireQueueSettings? {
        guard let remote else { known = false; return nil }
        known = true
        qos = OperationQoS(wire: remote.qos) ?? qos
        guard unsentSettings else {
            maxConcurrent = Int(remote.maxConcurrent)
            suspended = remote.suspended
            fairness = remote.hasFairness ? try? remote.fairness.applied(to: .default).get() : .default
            return nil
        }
        unsentSettings = false
        var s = WireQueueSettings()
        s.name = name
        s.maxConcurrent = Int32(maxConcurrent)
        s.suspended = suspended
        if let fairness { s.fairness = WireQueueFairness(fairness) }
        return s
    }

    /// The settings a new queue is created with (its first SUBMIT).
    func creationSettings(name: String) -> WireQueueSettings {
        var s = WireQueueSettings()
        s.name = name
        s.qos = qos.wire
        s.maxConcurrent = Int32(maxConcurrent)
        s.suspended = suspended
        if let fairness { s.fairness = WireQueueFairness(fairness) }
        return s
    }

    /// The first SUBMIT created the queue (or it existed): the settings made so far went with it.
    mutating func submitted() { known = true; unsentSettings = false }

    /// A request failed where nothing could throw: kept for `lastError`.
    mutating func failed(_ error: RemoteOperationError) { lastError = error }
}
