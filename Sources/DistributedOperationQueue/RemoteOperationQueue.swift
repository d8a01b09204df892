import Dispatch
import Foundation
import OpClient
import OpSpec
import Synchronization
import WireProtocol

/// A named queue on the coordinator, with `OperationQueue`'s vocabulary. Its limit, suspension and
/// priorities hold cluster-wide; `operationCount`, `operations`, `progress` and the waits cover the
/// operations added through this object.
public final class RemoteOperationQueue: Sendable, CustomStringConvertible {
    /// The coordinator's queue name (shared by every client that uses it).
    public let name: String
    public let coordinator: RemoteCoordinator
    /// Aggregates this queue's operations: 100 units each, handler-reported fractions included.
    public let progress: Progress

    /// Everything that changes, under the queue's one lock (QueueState.swift).
    let fields = StateLock(QueueState<CheckedContinuation<Void, Never>>())
    /// Orders the writes to `progress` (a read then a write each), which cannot be made under `fields`:
    /// Foundation calls a Progress's observers synchronously, and they may read this queue. It guards
    /// no state of the queue.
    private let progressLock = NSLock()

    public static let defaultMaxConcurrentOperationCount = -1

    public init(name: String = "default", coordinator: RemoteCoordinator) {
        self.name = name
        self.coordinator = coordinator
        progress = Progress(totalUnitCount: 0)
    }

    /// A queue with a connection of its own.
    public convenience init(name: String = "default", endpoint: String = CoordinatorConnection.defaultEndpoint) throws {
        self.init(name: name, coordinator: try RemoteCoordinator(endpoint: endpoint))
    }

    public var description: String { "RemoteOperationQueue(\(name), \(operationCount) operations)" }
    private var engine: Engine { coordinator.engine }

    // MARK: settings (applied on the coordinator before the setter returns)

    /// Cluster-wide limit of running operations of this queue; −1 = no limit, 1 = serial. An invalid value
    /// is ignored (`setMaxConcurrentOperationCount` throws for it). A failure (invalid value, coordinator
    /// gone) is kept in `lastError`; `setMaxConcurrentOperationCount` throws it.
    public var maxConcurrentOperationCount: Int {
        get { fields.withLock { $0.maxConcurrent } }
        set { recordFailure { try setMaxConcurrentOperationCount(newValue) } }
    }

    /// A suspended queue starts nothing new; running operations continue; operations can still be added.
    /// A failure to tell the coordinator is kept in `lastError`; `setSuspended` throws it.
    public var isSuspended: Bool {
        get { fields.withLock { $0.suspended } }
        set { recordFailure { try setSuspended(newValue) } }
    }

    /// The QoS of the operations that do not set their own. Set it before the first operation is added:
    /// a queue is created with it, and the coordinator does not change an existing queue's QoS (a later
    /// set is ignored and kept in `lastError`; `setQualityOfService` throws).
    public var qualityOfService: OperationQoS {
        get { fields.withLock { $0.qos } }
        set { recordFailure { try setQualityOfService(newValue) } }
    }

    /// Fair share between submitters, concurrency-key limit and rate of this queue on the coordinator (A11;
    /// docs/GRAPHS.md "Queues"); the default: fair share by submitter, no limits. Changing it needs the
    /// 'admin' role with keys on. A failure is kept in `lastError`; `setFairness` throws it.
    public var fairness: QueueFairness {
        get { fields.withLock { $0.fairness ?? .default } }
        set { recordFailure { try setFairness(newValue) } }
    }

    /// The last failure of a property setter or `cancelAllOperations()`, which cannot throw (their
    /// throwing forms are `setSuspended`, `setMaxConcurrentOperationCount`, `setQualityOfService`,
    /// `cancelAllOperationsOrThrow`); nil when none failed. Not cleared by a later success.
    public var lastError: RemoteOperationError? { fields.withLock { $0.lastError } }

    private func recordFailure(_ body: () throws -> Void) {
        do { try body() } catch {
            let e = error as? RemoteOperationError ?? .connection("\(error)")
            fields.withLock { $0.failed(e) }
        }
    }

    /// The throwing forms of the setters above.
    public func setSuspended(_ suspended: Bool) throws {
        fields.withLock { $0.suspended = suspended }
        var s = WireQueueSettings()
        s.name = name
        s.suspended = suspended
        try control(s)
    }

    /// Throws `invalidValue` for anything but −1 or 0…Int32.max (what the coordinator accepts), changing nothing.
    public func setMaxConcurrentOperationCount(_ n: Int) throws {
        try QueueState<CheckedContinuation<Void, Never>>.validate(maxConcurrent: n)
        fields.withLock { $0.maxConcurrent = n }
        var s = WireQueueSettings()
        s.name = name
        s.maxConcurrent = Int32(n)
        try control(s)
    }

    /// Throws `invalidValue` for settings the coordinator would refuse (`QueueFairness.problem`), changing nothing.
    public func setFairness(_ f: QueueFairness) throws {
        if let p = f.problem { throw RemoteOperationError.invalidValue(p) }
        fields.withLock { $0.fairness = f }
        var s = WireQueueSettings()
        s.name = name
        s.fairness = WireQueueFairness(f)
        try control(s)
    }

    /// Throws `invalidValue` once the coordinator has the queue (it keeps its own QoS), changing nothing.
    public func setQualityOfService(_ qos: OperationQoS) throws {
        try fields.withLock { try $0.setQoS(qos) }
    }

    /// QUEUE for a queue the coordinator has; for one it does not have yet, the settings go with the
    /// first operations added (SUBMIT creates queues).
    private func control(_ s: WireQueueSettings) throws {
        try engine.perform { connection in
            guard try self.known(connection) else {
                self.fields.withLock { $0.unsentSettings = true }   // sent with the first SUBMIT
                return
            }
            var q = WireQueueControl()
            q.settings = s
            _ = try connection.request(.queue(q))
        }
    }

    /// On the connection thread: does the coordinator have this queue? The first time, an existing
    /// queue's settings are read (unless set here already, which are then sent).
    private func known(_ connection: CoordinatorConnection) throws -> Bool {
        if let k = fields.withLock({ $0.known }), k { return true }
        var st = WireStatus()
        st.queue = name
        guard case .statusReply(let r) = try connection.request(.status(st)) else { return false }
        let remote = r.queues.first(where: { $0.name == name })
        let unsent = fields.withLock { $0.learned(remote, name: name) }
        guard remote != nil else { return false }
        if let unsent {
            var c = WireQueueControl()
            c.settings = unsent
            _ = try connection.request(.queue(c))
        }
        return true
    }

    // MARK: adding

    public func addOperation(_ op: RemoteOperation) throws {
        try addOperations([op], waitUntilFinished: false)
    }

    /// Adds an operation of a handler kind; returns it.
    @discardableResult
    public func addOperation(kind: String, payload: [UInt8] = [], name: String? = nil,
                             queuePriority: OperationPriority = .normal) throws -> RemoteOperation {
        let op = RemoteOperation(kind: kind, payload: payload, name: name, queuePriority: queuePriority)
        try addOperation(op)
        return op
    }

    /// Like `addBarrierBlock`: runs after everything added to this queue before it and holds back what
    /// is added after it. `block` runs in this process when the barrier finishes; `kind` runs on a worker.
    @discardableResult
    public func addBarrierBlock(kind: String = BuiltinKind.noop, payload: [UInt8] = [],
                                _ block: (@Sendable () -> Void)? = nil) throws -> RemoteOperation {
        let op = RemoteOperation(kind: kind, payload: payload, name: nil, id: nil, queuePriority: .normal,
                                 qualityOfService: nil, parts: 1, dependencyPolicy: .finished, retries: 0,
                                 timeout: nil, requiredTags: [], barrier: true)
        op.completionBlock = block
        try addOperation(op)
        return op
    }

    /// Adds the operations as one atomic SUBMIT: all are accepted or none (the error lists every problem,
    /// e.g. a cycle with the operations on it). As with OperationQueue, a dependency may be added later
    /// than its dependent (also to another queue): the dependent waits here, counted in `operationCount`,
    /// and is sent when its dependencies are.
    public func addOperations(_ ops: [RemoteOperation], waitUntilFinished wait: Bool) throws {
        guard !ops.isEmpty else { return }
        var seen = Set<ObjectIdentifier>()
        // Claim every operation (so a concurrent add of the same one fails), or none.
        var claimed: [RemoteOperation] = []
        var closures = false
        func unclaim() { for o in claimed { o.fields.withLock { $0.unclaim() } } }
        for op in ops {
            if let e = op.addError { unclaim(); throw e }
            if op.runsInProcess { closures = true }
            let error: RemoteOperationError? = op.fields.withLock { f in
                if f.snapshot.state != .finished, f.queue == nil, !seen.insert(ObjectIdentifier(op)).inserted {
                    return .alreadyAdded(f.name ?? op.id, queue: name)
                }
                return f.claim(queue: name, owner: self, id: op.id)
            }
            if let error { unclaim(); throw error }
            claimed.append(op)
        }
        // The first closure starts this client's embedded worker (and says why when it cannot register).
        if closures {
            do { try coordinator.closureHost.ensureRegistered() } catch { unclaim(); throw error }
        }
        // Cancelled before being added: finished at once, never sent (S4); dependents do not wait for them.
        let cancelled = Set(ops.filter { $0.isCancelled }.map(ObjectIdentifier.init))
        // Waiting here: a dependency not on the coordinator yet (not added, or itself waiting).
        var parked = Set<ObjectIdentifier>()
        var changed = true
        while changed {
            changed = false
            for op in ops where !parked.contains(ObjectIdentifier(op)) && !cancelled.contains(ObjectIdentifier(op)) {
                let blocked = op.dependencies.contains { d in
                    let k = ObjectIdentifier(d)
                    if cancelled.contains(k) { return false }
                    if seen.contains(k) { return parked.contains(k) }
                    return !d.isSentOrLocal
                }
                if blocked { parked.insert(ObjectIdentifier(op)); changed = true }
            }
        }
        if let cycle = Self.firstCycle(through: ops.filter { parked.contains(ObjectIdentifier($0)) }) {
            unclaim()
            throw RemoteOperationError.rejected(["cycle: " + cycle.map(\.name).joined(separator: " → ")])
        }
        let now = ops.filter { !cancelled.contains(ObjectIdentifier($0)) && !parked.contains(ObjectIdentifier($0)) }
        do {
            try submit(now, skipping: cancelled)
        } catch {
            unclaim()
            throw error
        }
        let later = ops.filter { parked.contains(ObjectIdentifier($0)) }
        let local = ops.filter { cancelled.contains(ObjectIdentifier($0)) }
        track(later + local)
        engine.park(later, in: self)
        for op in local {
            op.fields.withLock { $0.engine = engine }
            op.finishLocally(reason: "cancelled before it was added to a queue")
        }
        engine.releaseParked()
        if wait { for op in ops { op.waitUntilFinished() } }
    }

    /// A cycle through the first of `starts` that is on one, from it back to it (`DependencyCycles`,
    /// dependencies as listed), over added operations not yet on the coordinator (the coordinator
    /// checks the rest; operations in no queue may still change their dependencies).
    private static func firstCycle(through starts: [RemoteOperation]) -> [RemoteOperation]? {
        var nodes: [RemoteOperation] = []
        var index: [ObjectIdentifier: Int] = [:]
        func node(_ op: RemoteOperation) -> Int {
            if let i = index[ObjectIdentifier(op)] { return i }
            index[ObjectIdentifier(op)] = nodes.count
            nodes.append(op)
            return nodes.count - 1
        }
        for op in starts { _ = node(op) }
        var dependencies: [[Int]] = []
        while dependencies.count < nodes.count {
            let unsent = nodes[dependencies.count].dependencies.filter { !$0.isSentOrLocal && $0.fields.withLock({ $0.queue != nil }) }
            dependencies.append(unsent.map(node))
        }
        // Starts come first, so a cycle through one is the first found, and it starts there.
        guard let cycle = DependencyCycles.find(dependencies).first, cycle[0] < starts.count else { return nil }
        return (cycle + [cycle[0]]).map { nodes[$0] }
    }

    /// One SUBMIT (or several, for more than 8,192) of claimed operations whose dependencies are all on
    /// the coordinator, in this batch, or finished here (`skipping`).
    func submit(_ ops: [RemoteOperation], skipping: Set<ObjectIdentifier> = []) throws {
        guard !ops.isEmpty else { return }
        var wire: [WireOperation] = []
        for op in ops {
            var w = WireOperation()
            w.id = op.id
            w.queue = name
            w.kind = op.kind
            w.payload = Data(op.payload)
            let (n, priority, qos, deps, share, key) = op.fields.withLock {
                ($0.name, $0.priority, $0.qos, $0.dependencies, $0.share, $0.concurrencyKey)
            }
            if let n { w.name = n }
            if let share { w.share = share }
            if let key { w.concurrencyKey = key }
            w.priority = Int32(priority.rawValue)
            w.qos = qos?.wire ?? .unspecified
            w.parts = UInt32(op.parts)
            w.policy = op.dependencyPolicy.wire
            w.retries = UInt32(op.retries)
            if let t = op.timeout { w.timeoutUs = Microseconds.from(seconds: t) }
            if let d = op.retryDelay { w.retryDelayUs = Microseconds.from(seconds: d) }
            if let d = op.retryDelayMax { w.retryDelayMaxUs = Microseconds.from(seconds: d) }
            w.requires = op.requiredTags
            w.barrier = op.isBarrier
            if op.runsInProcess { w.lossRetries = 0 }
            for d in deps where !skipping.contains(ObjectIdentifier(d)) && !d.isLocal {
                w.after.append(d.id)
            }
            wire.append(w)
        }
        let names = Dictionary(ops.flatMap { [$0] + $0.dependencies }.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        let engine = self.engine
        let unplaceable: [WireUnplaceable]
        do {
            unplaceable = try engine.perform { [wire, name] connection in
                // A new queue is created with the settings made so far (an existing one keeps its own).
                let settings: WireQueueSettings? = try self.known(connection) ? nil : self.fields.withLock { $0.creationSettings(name: name) }
                engine.register(ops)
                for op in ops { op.fields.withLock { $0.sent(engine: engine, coordinator: self.coordinator) } }
                // "user@host": without keys, the share key this client's operations take turns under (A11).
                var messages = Batcher.submits(wire, queues: settings.map { [$0] } ?? [], run: engine.run, appendAll: true,
                                               submitter: Submitter.current)
                var k = 0
                var renewed = false
                var unplaceable: [WireUnplaceable] = []
                while k < messages.count {
                    // Sent again with its submission key if the coordinator goes away before it answers
                    // (within the request timeout): applied once either way.
                    let r = try connection.submit(messages[k])
                    if !r.accepted && !renewed && r.errors.contains(where: { $0.field == "run" }) {
                        // Our run was evicted while we were idle (the run is checked before anything
                        // else, so nothing was added): the same batches go to a new run.
                        engine.startNewRun()
                        renewed = true
                        messages = Batcher.submits(wire, queues: settings.map { [$0] } ?? [], run: engine.run, appendAll: true,
                                                   submitter: Submitter.current)
                        continue
                    }
                    guard r.accepted else { throw RemoteOperationError.rejected(r.errors.map { Self.problem($0, names) }) }
                    unplaceable += r.unplaceable
                    k += 1
                }
                // On the connection thread, so before any event of these operations is applied.
                self.track(ops)
                self.fields.withLock { $0.submitted() }
                return unplaceable
            }
        } catch {
            engine.unregister(ops)
            for op in ops { op.fields.withLock { $0.unsent() } }
            throw error
        }
        if !unplaceable.isEmpty { warnUnplaceable(unplaceable, ops) }
        // Cancelled while it waited to be sent (or while being sent): cancel it on the coordinator.
        for op in ops where op.isCancelled {
            var c = WireCancelOps()
            c.opIds = [op.id]
            c.run = engine.run
            recordFailure { try engine.ack(.cancelOps(c)) }
        }
    }

    private static func problem(_ e: WireSubmitError, _ names: [String: String]) -> String {
        let n = { (id: String) in names[id] ?? id }
        switch e.problem {
        case .cycle: return "cycle: " + e.related.map(n).joined(separator: " → ")
        case .duplicateID: return "duplicate id '\(e.opID)'"
        case .unknownDependency: return "'\(n(e.opID))' depends on unknown '\(e.related.map(n).joined(separator: "', '"))'"
        default: return e.opID.isEmpty ? e.message : "\(n(e.opID)): \(e.message)"
        }
    }

    // MARK: the queue's operations

    /// Unfinished operations added through this object, in the order they were added.
    public var operations: [RemoteOperation] { fields.withLock { $0.operations } }

    public var operationCount: Int { fields.withLock { $0.unfinished.count } }

    /// Cancels every operation of the coordinator's queue (also those added by other clients). A
    /// CANCEL-OPS that fails is kept in `lastError`; `cancelAllOperationsOrThrow` throws it.
    public func cancelAllOperations() {
        recordFailure { try cancelAllOperationsOrThrow() }
    }

    /// `cancelAllOperations()`, throwing when the coordinator could not be told (this object's operations
    /// are cancelled here either way).
    public func cancelAllOperationsOrThrow() throws {
        // Locally first, so operations still waiting in the client (never sent) finish too.
        for op in operations { _ = op.cancelLocally() }
        var c = WireCancelOps()
        c.queue = name
        try engine.ack(.cancelOps(c))
    }

    /// Blocks until every operation added through this object has finished (completion blocks included).
    public func waitUntilAllOperationsAreFinished() {
        _ = fields.wait { $0.unfinished.isEmpty ? () : nil }
    }

    /// Blocks at most `timeout`; true when everything has finished.
    public func waitUntilAllOperationsAreFinished(timeout: Duration) -> Bool {
        fields.wait(until: timeout.deadline) { $0.unfinished.isEmpty ? () : nil } != nil
    }

    public func waitUntilAllOperationsAreFinished() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if !fields.withLock({ $0.addIdleWaiter(c) }) { c.resume() }
        }
    }

    // MARK: bookkeeping (adding thread, connection thread and callback queue)

    private func track(_ ops: [RemoteOperation]) {
        let units = fields.withLock { $0.track(ops) }
        progressLock.withLock { progress.totalUnitCount += units }
    }

    func progressed(_ op: RemoteOperation, fraction: Double) {
        let units = fields.withLock { $0.progressed(op, fraction: fraction) }
        if units > 0 { progressLock.withLock { progress.completedUnitCount += units } }
    }

    func finished(_ op: RemoteOperation) {
        // The blocking waits see `unfinished` empty when the lock is left; async ones are resumed here.
        let action = fields.withLock { $0.finished(op) }
        if action.units > 0 { progressLock.withLock { progress.completedUnitCount += action.units } }
        for w in action.waiters { w.resume() }
    }
}
