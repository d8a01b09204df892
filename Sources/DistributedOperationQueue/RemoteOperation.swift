import Dispatch
import Foundation
import OpSpec
import Synchronization
import WireProtocol

/// An operation that runs on a worker: Foundation's `Operation`, with a handler kind and a payload in
/// place of `main()`. Configure it, set its dependencies, add it to a `RemoteOperationQueue`; its state
/// follows the coordinator's events. Not `open`: its subclasses are `TypedRemoteOperation` and `LocalOperation`.
public class RemoteOperation: @unchecked Sendable, CustomStringConvertible {
    /// The life cycle (S1); cancellation is the separate `isCancelled` flag. `dispatched`: sent to a
    /// worker, waiting there for a slot; `executing`: its handler runs.
    public enum State: Int, Sendable, Comparable, CustomStringConvertible {
        case pending, ready, dispatched, executing, finished
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["pending", "ready", "dispatched", "executing", "finished"][rawValue] }
        init(_ w: WireOpState) {
            self = switch w {
            case .ready: .ready
            case .dispatched: .dispatched
            case .executing: .executing
            case .finished: .finished
            default: .pending
            }
        }
    }

    /// One observation of the operation, as delivered by `stateChanges` (the KVO analogue).
    public struct Snapshot: Sendable, Equatable {
        public var state: State
        public var isCancelled: Bool
        public var outcome: OperationOutcome?
        /// Progress reported by the handler (0…1), when any.
        public var fraction: Double?
    }

    /// The coordinator's id: unique per coordinator (generated unless given).
    public let id: String
    public let kind: String
    public let payload: [UInt8]
    /// BlockOperation-style parts: the operation is finished when every part is (each may run elsewhere).
    public let parts: Int
    /// Run after dependencies finish (OperationQueue's rule) or only after they succeed.
    public let dependencyPolicy: DependencyPolicy
    /// Re-runs after a failure (a timed-out attempt is a failed one).
    public let retries: Int
    /// Seconds before a failed attempt is retried, doubled after each failed attempt (with jitter);
    /// nil = the coordinator's default (1 s), 0 = at once.
    public let retryDelay: Double?
    /// Cap of the retry delay in seconds; nil = the coordinator's default (60 s).
    public let retryDelayMax: Double?
    /// Seconds each attempt may run, from its start; a timed-out attempt fails (and is retried while
    /// `retries` allow; the final error says "timed out after N attempts").
    public let timeout: Double?
    /// Tags a worker must all have.
    public let requiredTags: [String]
    let isBarrier: Bool
    /// Fetch the result when it succeeds whatever the coordinator's `fetchResults` says (a typed
    /// operation with an output: true; with `Void`: false); nil = as the coordinator says.
    let wantsResult: Bool?
    /// A closure of this process (`LocalOperation`): run by this client's embedded worker, never re-run
    /// on worker loss (sent with `loss_retries` 0).
    let runsInProcess: Bool

    /// Everything that changes, under the operation's one lock (OperationState.swift).
    let fields = StateLock(OperationState())

    private static let idPrefix = "swift-" + UUID().uuidString.prefix(8).lowercased()
    private static let counter = Atomic<Int>(0)

    /// A new id, unique per process run ("swift-1a2b3c4d-17").
    static func generatedID() -> String { "\(idPrefix)-\(counter.wrappingAdd(1, ordering: .relaxed).newValue)" }

    public convenience init(kind: String, payload: [UInt8] = [], name: String? = nil, id: String? = nil,
                queuePriority: OperationPriority = .normal, qualityOfService: OperationQoS? = nil,
                parts: Int = 1, dependencyPolicy: DependencyPolicy = .finished, retries: Int = 0,
                timeout: Double? = nil, requiredTags: [String] = [], retryDelay: Double? = nil,
                retryDelayMax: Double? = nil, share: String? = nil, concurrencyKey: String? = nil) {
        self.init(kind: kind, payload: payload, name: name, id: id, queuePriority: queuePriority,
                  qualityOfService: qualityOfService, parts: parts, dependencyPolicy: dependencyPolicy,
                  retries: retries, timeout: timeout, requiredTags: requiredTags, barrier: false,
                  retryDelay: retryDelay, retryDelayMax: retryDelayMax)
        self.share = share
        self.concurrencyKey = concurrencyKey
    }

    /// Payload given as text (UTF-8).
    public convenience init(kind: String, payload: String, name: String? = nil, queuePriority: OperationPriority = .normal) {
        self.init(kind: kind, payload: Array(payload.utf8), name: name, queuePriority: queuePriority)
    }

    init(kind: String, payload: [UInt8], name: String?, id: String?, queuePriority: OperationPriority,
         qualityOfService: OperationQoS?, parts: Int, dependencyPolicy: DependencyPolicy, retries: Int,
         timeout: Double?, requiredTags: [String], barrier: Bool, retryDelay: Double? = nil, retryDelayMax: Double? = nil,
         wantsResult: Bool? = nil, runsInProcess: Bool = false) {
        self.wantsResult = wantsResult
        self.runsInProcess = runsInProcess
        self.retryDelay = retryDelay.map { max(0, $0) }
        self.retryDelayMax = retryDelayMax.map { max(0, $0) }
        self.id = id ?? Self.generatedID()
        self.kind = kind
        self.payload = payload
        self.parts = max(1, parts)
        self.dependencyPolicy = dependencyPolicy
        self.retries = max(0, retries)
        self.timeout = timeout
        self.requiredTags = requiredTags
        self.isBarrier = barrier
        fields.withLock {
            $0.name = name
            $0.priority = queuePriority
            $0.qos = qualityOfService
        }
    }

    public var description: String { "RemoteOperation(\(name), \(kind), \(snapshot.state)\(isCancelled ? ", cancelled" : ""))" }

    // MARK: Operation's vocabulary

    /// Display name; the id when not set. Sent when the operation is added.
    public var name: String {
        get { fields.withLock { $0.name } ?? id }
        set { fields.withLock { $0.name = newValue } }
    }

    /// Its share key in a queue whose fair-share mode is `key` (A11, `RemoteOperationQueue.fairness`); nil =
    /// its submitter. Set it before the operation is added (it is sent then).
    public var share: String? {
        get { fields.withLock { $0.share } }
        set { fields.withLock { $0.share = newValue } }
    }

    /// Its concurrency key: at most the queue's `keyLimit` operations with one key are dispatched or
    /// executing at once, cluster-wide (A11); nil = none. Set it before the operation is added.
    public var concurrencyKey: String? {
        get { fields.withLock { $0.concurrencyKey } }
        set { fields.withLock { $0.concurrencyKey = newValue } }
    }

    /// Settable before and after the operation is added (then it reorders it among the ready ones).
    public var queuePriority: OperationPriority {
        get { fields.withLock { $0.priority } }
        set { recordFailure { try setQueuePriority(newValue) } }
    }

    /// Changes the priority; `inherit` also raises every unfinished transitive dependency.
    public func setQueuePriority(_ priority: OperationPriority, inherit: Bool = false) throws {
        let engine = fields.withLock { $0.setPriority(priority) }
        guard let engine else { return }
        var p = WireSetPriority()
        p.opIds = [id]
        p.run = engine.run
        p.priority = Int32(priority.rawValue)
        p.inherit = inherit
        try engine.ack(.setPriority(p))
    }

    /// `nil` = the queue's. Takes effect when the operation is added.
    public var qualityOfService: OperationQoS? {
        get { fields.withLock { $0.qos } }
        set { fields.withLock { $0.qos = newValue } }
    }

    /// Runs once, on the coordinator's callback queue, when the finished event arrives (also when cancelled
    /// or failed), before `waitUntilFinished` returns.
    public var completionBlock: (@Sendable () -> Void)? {
        get { fields.withLock { $0.completion } }
        set { fields.withLock { $0.completion = newValue } }
    }

    public var dependencies: [RemoteOperation] { fields.withLock { $0.dependencies } }

    /// Dependencies may be in any queue of the same coordinator. Only before the operation is added.
    public func addDependency(_ op: RemoteOperation) throws {
        guard op !== self else { throw RemoteOperationError.dependencyOnItself(name) }
        let depName = op.name
        try fields.withLock { f in
            try f.changeDependencies(of: id, dependency: depName) { deps in
                if !deps.contains(where: { $0 === op }) { deps.append(op) }
            }
        }
    }

    public func removeDependency(_ op: RemoteOperation) throws {
        let depName = op.name
        try fields.withLock { f in
            try f.changeDependencies(of: id, dependency: depName) { deps in deps.removeAll { $0 === op } }
        }
    }

    public var snapshot: Snapshot { fields.withLock { $0.snapshot } }
    public var state: State { snapshot.state }
    /// Before it is added: every dependency has finished (or it is cancelled). After: the coordinator says so.
    public var isReady: Bool {
        let (s, queue, deps) = fields.withLock { ($0.snapshot, $0.queue, $0.dependencies) }
        if s.isCancelled || s.state >= .ready { return true }
        return queue == nil && deps.allSatisfy(\.isFinished)
    }
    public var isExecuting: Bool { snapshot.state == .executing }
    public var isFinished: Bool { snapshot.state == .finished }
    public var isCancelled: Bool { snapshot.isCancelled }
    /// succeeded(result) | failed(text) | cancelled(reason), once finished.
    public var outcome: OperationOutcome? { snapshot.outcome }
    /// The result bytes when it succeeded.
    public var result: [UInt8]? { outcome?.result }
    /// The worker that last ran it and the attempt number (1-based).
    public var lastRun: (worker: String, attempt: Int) { fields.withLock { ($0.worker, $0.attempt) } }

    /// Cooperative, as `Operation.cancel()`: not yet running → finishes at once without running;
    /// running → the worker's handler sees `isCancelled`. Dependents are released, not cancelled (S4).
    /// A CANCEL-OPS that fails (e.g. the coordinator is gone) is kept in `lastError`.
    public func cancel() {
        recordFailure { try sendCancel() }
    }

    /// `cancel()`, throwing when the coordinator could not be told (the operation is cancelled here either way).
    public func cancelOrThrow() throws { try sendCancel() }

    private func sendCancel() throws {
        guard let engine = cancelLocally() else { return }
        var c = WireCancelOps()
        c.opIds = [id]
        c.run = engine.run
        try engine.ack(.cancelOps(c))
    }

    /// The last failure of a request that `queuePriority`'s setter or `cancel()` could not throw
    /// (`RemoteOperationError.connection` or `.closed`); nil when none failed.
    public var lastError: RemoteOperationError? { fields.withLock { $0.lastError } }

    private func recordFailure(_ body: () throws -> Void) {
        do { try body() } catch {
            let e = error as? RemoteOperationError ?? .connection("\(error)")
            fields.withLock { $0.lastError = e }
        }
    }

    /// The client's half of `cancel()` (shared with `cancelAllOperations()`, which sends one queue-wide
    /// CANCEL-OPS instead): sets the flag, tells observers, finishes it when it still waits in the client.
    /// Returns the engine to send CANCEL-OPS to when the operation is on the coordinator.
    func cancelLocally() -> Engine? {
        guard case .cancelled(let streams, let snapshot, let engine, let parkedOn) = fields.withLock({ $0.cancel() }) else { return nil }
        for c in streams { c.yield(snapshot) }
        if let parkedOn, parkedOn.unpark(self) {
            // Still waiting in the client for a dependency: finished at once, like a cancelled op (S4).
            fields.withLock { $0.engine = parkedOn }
            finishLocally(reason: "cancelled by client")
            parkedOn.releaseParked()
            return nil
        }
        return engine
    }

    /// Blocks until finished (and the completion block has run).
    public func waitUntilFinished() { _ = fields.wait { $0.finishedDelivered ? () : nil } }

    /// Blocks at most `timeout`; true when finished.
    public func waitUntilFinished(timeout: Duration) -> Bool {
        fields.wait(until: timeout.deadline) { $0.finishedDelivered ? () : nil } != nil
    }

    public func waitUntilFinished() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if !fields.withLock({ $0.addWaiter(c) }) { c.resume() }
        }
    }

    /// `waitUntilFinished()` that throws `CancellationError` when the waiting task is cancelled (the
    /// operation goes on: only `cancel()` cancels it).
    nonisolated(nonsending) func waitUntilFinishedOrTaskCancelled() async throws {
        let key = Atomic<UInt64>(0)       // 0: no wait kept (yet)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                guard let k = fields.withLock({ $0.addCancellableWaiter(c) }) else { c.resume(); return }
                key.store(k, ordering: .sequentiallyConsistent)
                // Cancelled before the wait was kept: the handler found nothing to end.
                if Task.isCancelled, let c = fields.withLock({ $0.removeCancellableWaiter(k) }) { c.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let k = key.load(ordering: .sequentiallyConsistent)
            if k != 0, let c = fields.withLock({ $0.removeCancellableWaiter(k) }) { c.resume(throwing: CancellationError()) }
        }
    }

    /// Why this operation cannot be added (a typed one whose input could not be encoded); nil = it can.
    var addError: RemoteOperationError? { nil }

    /// The Swift type of a typed operation (for the add-time warnings), nil for a bytes one.
    var typeName: String? { nil }

    /// Foundation progress of this operation: 100 units, fed by the handler's `reportProgress`
    /// fractions (up to 99) and complete when it finishes, however it ends. The queue's `progress`
    /// counts the same units. Made on first use.
    public var progress: Progress {
        let (p, made, fraction, finished) = fields.withLock { f -> (Progress, Bool, Double?, Bool) in
            if let p = f.progress { return (p, false, nil, false) }
            let p = Progress(totalUnitCount: 100)
            f.progress = p
            return (p, true, f.snapshot.fraction, f.snapshot.state == .finished)
        }
        if made { Self.advance(p, fraction: fraction, finished: finished) }
        return p
    }

    /// Progress only grows (a retry's fractions start again, the units do not), so updates from
    /// the connection thread and the first read need no order between them.
    private static let progressLock = NSLock()
    static func advance(_ p: Progress, fraction: Double?, finished: Bool) {
        let units: Int64 = finished ? 100 : fraction.map { Int64(min(1, max(0, $0)) * 99) } ?? 0
        guard units > 0 else { return }
        // Outside the operation's lock: Foundation calls a Progress's observers synchronously.
        progressLock.withLock { if units > p.completedUnitCount { p.completedUnitCount = units } }
    }

    /// Every state change from now on, starting with the current state; ends after `finished`.
    public var stateChanges: AsyncStream<Snapshot> {
        AsyncStream { continuation in
            let (key, current) = fields.withLock { ($0.addStream(continuation), $0.snapshot) }
            continuation.yield(current)
            guard let key else { continuation.finish(); return }
            continuation.onTermination = { [weak self] _ in _ = self?.fields.withLock { $0.streams.removeValue(forKey: key) } }
        }
    }

    // MARK: driven by the engine

    /// Applies an event or a status record (on the connection thread); see `OperationState.update`.
    func update(state: State?, authoritative: Bool, cancelled: Bool, outcome: OperationOutcome?, fraction: Double?,
                worker: String, attempt: Int) {
        perform(fields.withLock {
            $0.update(state: state, authoritative: authoritative, cancelled: cancelled, outcome: outcome,
                      fraction: fraction, worker: worker, attempt: attempt)
        })
    }

    private func perform(_ action: OperationState.UpdateAction) {
        if action.yield { for s in action.streams { s.yield(action.snapshot) } }
        if let p = action.progress { Self.advance(p, fraction: action.snapshot.fraction, finished: action.finished) }
        if action.finished {
            for s in action.streams { s.finish() }
            deliverFinish(owner: action.owner)
        } else if let fraction = action.fraction, let owner = action.owner {
            owner.progressed(self, fraction: fraction)
        }
        _ = action.released   // the last reference to the connection may go here, after the lock
    }

    /// On the coordinator (or being sent), or finished here: dependents need not wait for it in the client.
    var isSentOrLocal: Bool { fields.withLock { $0.engine != nil || $0.local } }
    var isLocal: Bool { fields.withLock { $0.local } }

    /// Finishes without ever reaching the coordinator (cancelled before it was added).
    func finishLocally(reason: String) {
        perform(fields.withLock { $0.finishLocally(reason: reason) })
    }

    private func deliverFinish(owner: RemoteOperationQueue?) {
        let engine = fields.withLock { $0.engine }
        let work: @Sendable () -> Void = { [self] in
            let block = fields.withLock { $0.takeCompletion() }
            block?()
            owner?.finished(self)
            // Blocking waits return from here on; async ones are resumed.
            let (waiters, cancellable) = fields.withLock { ($0.delivered(), $0.takeCancellableWaiters()) }
            for w in waiters { w.resume() }
            for w in cancellable { w.resume() }
        }
        if let engine { engine.callbacks.async(execute: work) } else { DispatchQueue.global().async(execute: work) }
    }
}
