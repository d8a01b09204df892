import Foundation

/// Everything of a `RemoteOperation` that changes, under its one lock. No I/O: each transition returns
/// what the caller then does outside the lock (observers to tell, a finish to deliver, a request to send).
struct OperationState {
    typealias Snapshot = RemoteOperation.Snapshot
    typealias Stream = AsyncStream<Snapshot>.Continuation

    var name: String?
    var priority: OperationPriority = .normal
    var qos: OperationQoS?
    /// Fair share (A11): sent when the operation is added.
    var share: String?
    var concurrencyKey: String?
    var dependencies: [RemoteOperation] = []
    var completion: (@Sendable () -> Void)?
    var queue: String?            // set when added
    var engine: Engine?
    /// Keeps the connection (and its event thread) alive while the operation is on the coordinator, also
    /// when the queue and its private coordinator are dropped; cleared when it finishes (no lasting cycle).
    var coordinator: RemoteCoordinator?
    weak var owner: RemoteOperationQueue?
    var snapshot = Snapshot(state: .pending, isCancelled: false, outcome: nil, fraction: nil)
    var worker = ""
    var attempt = 0
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// Waits that the waiting task's cancellation ends (`TypedRemoteOperation.value`), by key.
    var cancellableWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    var nextWaiter: UInt64 = 0
    /// `RemoteOperation.progress`, made on first use (most operations never have one).
    var progress: Progress?
    var streams: [UInt64: Stream] = [:]
    var nextStream: UInt64 = 0
    /// The completion block has run and the owner has counted the finish: waits return.
    var finishedDelivered = false
    /// Finished without the coordinator (cancelled before it was sent).
    var local = false
    /// Waiting in the client for a dependency to be added (see `RemoteOperationQueue.addOperations`).
    var parkedOn: Engine?
    /// The last failure of a request the property setters or `cancel()` could not throw.
    var lastError: RemoteOperationError?

    // MARK: transitions

    /// Claims the operation for `queue`; an error when it cannot be added.
    mutating func claim(queue: String, owner: RemoteOperationQueue?, id: String) -> RemoteOperationError? {
        if snapshot.state == .finished { return .alreadyFinished(name ?? id) }
        if let q = self.queue { return .alreadyAdded(name ?? id, queue: q) }
        self.queue = queue
        self.owner = owner
        return nil
    }

    mutating func unclaim() { queue = nil; owner = nil }

    /// The operation is being sent (or was): dependents need not wait for it in the client.
    mutating func sent(engine: Engine, coordinator: RemoteCoordinator?) {
        self.engine = engine
        self.coordinator = coordinator
    }

    /// The send failed: it is in the client again.
    mutating func unsent() { engine = nil; coordinator = nil }

    /// What an applied event or status record asks for.
    struct UpdateAction {
        var streams: [Stream] = []
        /// Yield `snapshot` to `streams` (it changed).
        var yield = false
        var snapshot: Snapshot
        /// It finished: end the streams and deliver the finish (completion block, owner, waiters).
        var finished = false
        var owner: RemoteOperationQueue?
        /// Handler progress for the owner's `progress` (when not finished).
        var fraction: Double?
        /// Released after the lock: it may be the last reference to the connection.
        var released: RemoteCoordinator?
        /// `RemoteOperation.progress`, when made, to advance after the lock.
        var progress: Progress?
    }

    /// Events arrive in the coordinator's order and may move the state back (a failed attempt waits to be
    /// retried: executing → pending); a status record (`authoritative == false`) only moves it forward;
    /// nil keeps it. Nothing leaves `finished`.
    mutating func update(state: RemoteOperation.State?, authoritative: Bool, cancelled: Bool, outcome: OperationOutcome?,
                         fraction: Double?, worker: String, attempt: Int) -> UpdateAction {
        guard snapshot.state != .finished else { return UpdateAction(snapshot: snapshot) }
        let before = snapshot
        if let state { snapshot.state = authoritative ? state : max(snapshot.state, state) }
        if cancelled { snapshot.isCancelled = true }
        if let fraction { snapshot.fraction = fraction }
        if !worker.isEmpty { self.worker = worker }
        if attempt > 0 { self.attempt = attempt }
        var action = UpdateAction(streams: Array(streams.values), yield: snapshot != before, snapshot: snapshot, owner: owner)
        action.progress = progress
        if snapshot.state == .finished {
            snapshot.outcome = outcome
            if case .cancelled? = outcome { snapshot.isCancelled = true }
            action.snapshot = snapshot
            action.yield = snapshot != before
            action.finished = true
            streams = [:]
            action.released = coordinator
            coordinator = nil
        } else {
            action.fraction = fraction
        }
        return action
    }

    /// Finishes in the client, never sent (cancelled before it was added, or while it waited here).
    mutating func finishLocally(reason: String) -> UpdateAction {
        local = true
        return update(state: .finished, authoritative: true, cancelled: true, outcome: .cancelled(reason),
                      fraction: nil, worker: "", attempt: 0)
    }

    /// The completion block, handed out once.
    mutating func takeCompletion() -> (@Sendable () -> Void)? {
        defer { completion = nil }
        return completion
    }

    /// After the completion block ran and the owner counted the finish: the async waiters to resume
    /// (the blocking ones see `finishedDelivered`). Empty the second time.
    mutating func delivered() -> [CheckedContinuation<Void, Never>] {
        guard !finishedDelivered else { return [] }
        finishedDelivered = true
        defer { waiters = [] }
        return waiters
    }

    /// An async wait: false when it is over already (resume at once), else kept until `delivered()`.
    mutating func addWaiter(_ c: CheckedContinuation<Void, Never>) -> Bool {
        if finishedDelivered { return false }
        waiters.append(c)
        return true
    }

    /// What `cancel()` does next.
    enum CancelAction {
        /// Finished or cancelled already.
        case none
        /// Tell `streams`; then, when it waits in the client on `parkedOn`, finish it there; else send
        /// CANCEL-OPS when it is on the coordinator (`engine`).
        case cancelled(streams: [Stream], snapshot: Snapshot, engine: Engine?, parkedOn: Engine?)
    }

    mutating func cancel() -> CancelAction {
        guard snapshot.state != .finished, !snapshot.isCancelled else { return .none }
        snapshot.isCancelled = true
        defer { parkedOn = nil }
        return .cancelled(streams: Array(streams.values), snapshot: snapshot, engine: engine, parkedOn: parkedOn)
    }

    /// A wait that ends at the finish or when the waiting task is cancelled: its key, or nil when it is
    /// over already (resume at once). Handed out with `delivered()`, or taken back by `removeCancellableWaiter`.
    mutating func addCancellableWaiter(_ c: CheckedContinuation<Void, any Error>) -> UInt64? {
        if finishedDelivered { return nil }
        nextWaiter += 1
        cancellableWaiters[nextWaiter] = c
        return nextWaiter
    }

    /// The waiting task was cancelled: the wait to end (nil when the finish ended it already).
    mutating func removeCancellableWaiter(_ key: UInt64) -> CheckedContinuation<Void, any Error>? {
        cancellableWaiters.removeValue(forKey: key)
    }

    /// After `delivered()`: the cancellable waits to resume.
    mutating func takeCancellableWaiters() -> [CheckedContinuation<Void, any Error>] {
        defer { cancellableWaiters = [:] }
        return Array(cancellableWaiters.values)
    }

    /// A new `stateChanges` stream: its key, or nil when it is finished already (the stream ends at once).
    mutating func addStream(_ s: Stream) -> UInt64? {
        guard snapshot.state != .finished else { return nil }
        nextStream += 1
        streams[nextStream] = s
        return nextStream
    }

    /// A priority change: the engine to send SET-PRIORITY to, when it is on the coordinator.
    mutating func setPriority(_ p: OperationPriority) -> Engine? {
        priority = p
        return snapshot.state == .finished ? nil : engine
    }

    /// A dependency change, allowed only before the operation is added.
    mutating func changeDependencies(of id: String, dependency: String, _ change: (inout [RemoteOperation]) -> Void) throws {
        guard queue == nil else { throw RemoteOperationError.dependencyAfterSubmit(name ?? id, dependency: dependency) }
        change(&dependencies)
    }
}
