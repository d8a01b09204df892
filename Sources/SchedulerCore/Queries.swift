// Read-only views for the coordinator shell: status, why, queue counts, workers.

public struct OpStatus: Sendable, Equatable {
    public var id: String
    public var name: String
    public var queue: String
    public var kind: String
    public var state: OpState
    public var isCancelled: Bool
    public var outcome: OutcomeKind
    public var workers: [UInt64]          // workers holding a part now
    public var lastWorker: UInt64?        // the worker that last held a part (stays after it finished)
    /// That worker's owner (its key's name with keys, else its name): a session of before a restart is
    /// not connected, so the shell cannot look its key up.
    public var lastWorkerOwner: String?
    public var attempts: Int
    public var priority: Int
    public var qos: OperationQoS
    public var parts: Int
    public var partsFinished: Int
    public var unfinishedDependencies: Int
    public var submittedAt: Int64
    public var readyAt: Int64?            // the last time it became ready
    public var dispatchedAt: Int64?       // the last dispatch to a worker
    public var startedAt: Int64?          // the last time it became executing (a worker's STARTED)
    public var finishedAt: Int64?
    public var resultSize: Int
    public var errorText: String?         // failure text or cancel reason
    /// Every failed attempt's error, oldest first (the newest `Scheduler.attemptErrorsKept`).
    public var attemptErrors: [String]
    /// Its run's results were evicted (`SchedulerConfig.retainBytes`): a succeeded op's result is gone.
    public var resultEvicted: Bool
}

/// Which ops a status listing covers (every set field applies).
public struct OpFilter: Sendable, Equatable {
    public var run: String?
    public var queue: String?
    /// `.pending` also matches delayed ops: the wire has one state for both.
    public var states: Set<OpState>?
    /// Ops last held by one of these workers.
    public var workers: Set<UInt64>?
    public init(run: String? = nil, queue: String? = nil, states: Set<OpState>? = nil, workers: Set<UInt64>? = nil) {
        self.run = run; self.queue = queue; self.states = states; self.workers = workers
    }
}

public struct OpPage: Sendable, Equatable {
    public var ids: [String] = []
    public var next: String?
    public var matched = 0
    public init() {}
}

public struct QueueCounts: Sendable, Equatable {
    public var name: String
    public var pending: Int
    public var ready: Int
    /// On workers, waiting there for a slot (prefetched).
    public var dispatched: Int
    /// A handler runs (S1's isExecuting).
    public var executing: Int
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    public var finished: Int { succeeded + failed + cancelled }
    /// OperationQueue's `operationCount`: not yet finished.
    public var operationCount: Int { pending + ready + dispatched + executing }
    public var maxConcurrent: Int
    public var suspended: Bool
    public var qos: OperationQoS
}

public struct WorkerSnapshot: Sendable, Equatable {
    public var id: UInt64
    public var name: String
    public var slots: Int
    public var credit: Int
    /// Parts dispatched there and not finished (prefetched ones included).
    public var inFlight: Int
    /// Of those, parts whose handler runs (≤ slots for a worker that keeps its word).
    public var running: Int
    /// Parts ever dispatched there.
    public var dispatched: Int
    public var alive: Bool
    public var lastSeen: Int64
    public var lostReason: String?
}

/// Why an op is not running (the first reason that applies, most specific first).
public enum WhyNotRunning: Sendable, Equatable {
    case unknownOperation
    case finished(OutcomeKind)
    case running(workers: [UInt64])
    case cancelling(waitingFor: [UInt64])
    case waitingForDependencies([String])
    /// A failed attempt waits out its retry delay until `until`.
    case retrying(failedAttempts: Int, until: Int64, lastError: String?)
    /// Dispatched to these workers; waiting there for a free slot.
    case dispatched(workers: [UInt64])
    case heldByBarrier(String)
    case barrierWaitingForEarlier(queue: String, count: Int)
    case queueSuspended(String)
    /// `ahead`: ready ops of the same queue that go first (higher QoS or priority, or earlier).
    case queueAtLimit(queue: String, limit: Int, ahead: Int)
    case noWorkerWith(kind: String, tags: [String])
    case noFreeCredit(capableWorkers: Int, ahead: Int)
    case dispatchPending
    /// Ready, its concurrency key at the queue's `keyLimit`: waits for one of `holders` (op keys) to finish.
    case heldByConcurrencyKey(key: String, limit: Int, holders: [String])
    /// Ready, the queue's rate limit has no token until `nextTokenAt` (the core's clock, µs).
    case rateLimited(queue: String, nextTokenAt: Int64)
    /// Ready, its concurrency key's rate (`keyRate`) has no token until `nextTokenAt` (the core's clock, µs).
    case keyRateLimited(key: String, nextTokenAt: Int64)
    /// Ready, waiting for a free slot while `shares` share keys take turns in its queue; `share` is its own.
    case waitingForTurn(share: String, shares: Int, capableWorkers: Int, ahead: Int)
}

extension Scheduler {
    /// Ops ever accepted (finished ones included; see `QueueCounts.operationCount` for unfinished).
    public var totalOperations: Int { ops.count - deadOps }
    /// Workers connected now.
    public var liveWorkerCount: Int { workers.liveCount }

    /// Index of an op a client names (`resolve` without a run context).
    func find(_ ref: String) -> Int32? { if case .success(let op) = resolve(ref) { op } else { nil } }

    /// The retained dependencies of op `key` ("RUN/OP"), as keys, in the order they were given
    /// (dependencies of evicted runs are forgotten with them). For the dashboard's DAG.
    public func dependencies(of key: String) -> [String] {
        guard let op = find(key) else { return [] }
        let s = Int(ops.cold[Int(op)].depStart)
        return ops.depList[s..<s + Int(ops.cold[Int(op)].depCount)].map { ops.ids[Int($0)] }
    }

    public func status(_ ref: String) -> OpStatus? {
        guard let op = find(ref) else { return nil }
        let i = Int(op)
        let id = ops.ids[i]
        let lane = lanes[Int(ops.hot[i].lane)]
        let partsFinished: Int
        if ops.hot[i].state == .finished { partsFinished = ops.hot[i].outcome == .succeeded ? Int(ops.hot[i].parts) : 0 }
        else { partsFinished = (0..<Int(ops.hot[i].parts)).filter { ops.partStatus(op, $0) == .done }.count }
        return OpStatus(
            id: id, name: ops.names[op] ?? runAndOp(of: id).op, queue: queues[lane.queue].name,
            kind: workers.kindNames[Int(workers.classes[Int(lane.cls)].kind)], state: ops.hot[i].state,
            isCancelled: ops.hot[i].flags & Flag.cancelled != 0, outcome: ops.hot[i].outcome, workers: holders(op),
            lastWorker: ops.cold[i].lastWorker.isWorker ? workers[ops.cold[i].lastWorker].id : nil,
            lastWorkerOwner: ops.cold[i].lastWorker.isWorker ? workers[ops.cold[i].lastWorker].owner : nil,
            attempts: Int(ops.hot[i].attempt), priority: Int(ops.hot[i].priority), qos: OperationQoS(rank: Int(lane.qos))!,
            parts: Int(ops.hot[i].parts), partsFinished: partsFinished,
            unfinishedDependencies: ops.hot[i].state == .pending ? Int(ops.hot[i].unfinishedDeps) : 0,
            submittedAt: ops.cold[i].submittedAt, readyAt: ops.cold[i].readyAt == 0 ? nil : ops.cold[i].readyAt,
            dispatchedAt: ops.cold[i].dispatchedAt == 0 ? nil : ops.cold[i].dispatchedAt,
            startedAt: ops.cold[i].startedAt == 0 ? nil : ops.cold[i].startedAt,
            finishedAt: ops.hot[i].state == .finished ? ops.cold[i].finishedAt : nil,
            resultSize: ops.results[op]?.count ?? 0, errorText: ops.reasons[op], attemptErrors: ops.attemptErrors[op] ?? [],
            resultEvicted: ops.hot[i].outcome == .succeeded && resultEvicted(op))
    }

    /// One page of op keys ("RUN/OP") matching `filter`: runs newest first, each in submission order,
    /// starting after the key `after`. `next` is the cursor for the following page (nil at the end);
    /// `matched` counts every match (all pages). O(ops of the runs in scope).
    public func operationIDs(after: String? = nil, limit: Int, filter: OpFilter = OpFilter()) -> Result<OpPage, LookupFailure> {
        var slots: [RunSlot]
        if let run = filter.run {
            guard let s = runs.slot(named: run) else { return .failure(runFailure(run)) }
            slots = [s]
        } else {
            slots = runs.all.map(\.slot)
            slots.sort { runs[$0].number > runs[$1].number }
        }
        var q: QueueIndex?
        if let queue = filter.queue {
            guard let qi = queueIndex[queue] else { return .failure(.unknownQueue(queue)) }
            q = qi
        }
        var workerSet: Set<WorkerIndex>?
        if let ids = filter.workers {
            workerSet = Set(workers.indices.filter { ids.contains(workers[$0].id) }.map { WorkerIndex($0) })
        }
        var startSlot = 0, startPos = 0
        if let after, let a = lookup(after) {
            let r = ops.hot[Int(a)].run
            if let k = slots.firstIndex(of: r) {
                startSlot = k
                startPos = (runs[r].ops.firstIndex(of: a) ?? -1) + 1
            }
        }
        var page = OpPage()
        for (k, s) in slots.enumerated() {
            let list = runs[s].ops
            for (pos, op) in list.enumerated() {
                let i = Int(op)
                if let q, lanes[Int(ops.hot[i].lane)].queue != q { continue }
                if let states = filter.states, !states.contains(ops.hot[i].state),
                   !(ops.hot[i].state == .delayed && states.contains(.pending)) { continue }
                if let workerSet, !workerSet.contains(ops.cold[i].lastWorker) { continue }
                page.matched += 1
                guard k > startSlot || (k == startSlot && pos >= startPos) else { continue }
                if page.ids.count < limit { page.ids.append(ops.ids[i]) } else if page.next == nil { page.next = page.ids.last }
            }
        }
        return .success(page)
    }

    /// Result bytes of a succeeded op (empty if none).
    public func result(_ id: String) -> [UInt8]? {
        guard let op = find(id), ops.hot[Int(op)].outcome == .succeeded else { return nil }
        return ops.results[op] ?? []
    }

    func holders(_ op: Int32) -> [UInt64] {
        guard ops.hot[Int(op)].inflightParts > 0 else { return [] }
        return (0..<Int(ops.hot[Int(op)].parts)).compactMap { inflightGet(op, $0).map { workers[$0.worker].id } }
    }

    public func queueCounts(_ name: String) -> QueueCounts? {
        guard let q = queueIndex[name] else { return nil }
        let s = queues[q]
        return QueueCounts(name: s.name, pending: Int(s.pending), ready: Int(s.ready),
                           dispatched: Int(s.dispatched), executing: Int(s.executing), succeeded: Int(s.succeeded), failed: Int(s.failed), cancelled: Int(s.cancelled),
                           maxConcurrent: Int(s.maxConcurrent), suspended: s.suspended, qos: s.qos)
    }

    public var queueNames: [String] { queues.map(\.name) }

    public func workerSnapshot(includeLost: Bool = false) -> [WorkerSnapshot] {
        workers.filter { includeLost || $0.alive }.map {
            WorkerSnapshot(id: $0.id, name: $0.name, slots: $0.slots, credit: $0.credit, inFlight: $0.inflightCount,
                           running: $0.running, dispatched: $0.dispatched, alive: $0.alive, lastSeen: $0.lastSeen, lostReason: $0.lostReason)
        }
    }

    public func why(_ id: String) -> WhyNotRunning {
        guard let op = find(id) else { return .unknownOperation }
        let i = Int(op)
        let lane = lanes[Int(ops.hot[i].lane)]
        let q = queues[lane.queue]
        switch ops.hot[i].state {
        case .finished:
            return .finished(ops.hot[i].outcome)
        case .delayed:
            let until = timers.retryDelays.unordered.filter { $0.op.raw == op && $0.attempt == ops.hot[i].attempt }.map(\.at).min()
            return .retrying(failedAttempts: Int(ops.hot[i].failures), until: until ?? now,
                             lastError: ops.attemptErrors[op]?.last)
        case .pending:
            let s = Int(ops.cold[i].depStart)
            let open = ops.depList[s..<s + Int(ops.cold[i].depCount)].filter { ops.hot[Int($0)].state != .finished }
            if !open.isEmpty { return .waitingForDependencies(open.map { ops.ids[Int($0)] }) }
            let e = epochs[Int(ops.hot[i].epoch)]
            if ops.hot[i].flags & Flag.barrier == 0, e.opener >= 0, ops.hot[Int(e.opener)].state != .finished {
                return .heldByBarrier(ops.ids[Int(e.opener)])
            }
            let closed = epochs.firstIndex { $0.closer == op }
            return .barrierWaitingForEarlier(queue: q.name, count: closed.map { Int(epochs[$0].unfinished) } ?? 0)
        case .dispatched, .executing:
            if ops.hot[i].flags & Flag.cancelled != 0 { return .cancelling(waitingFor: holders(op)) }
            if ops.hot[i].waitingParts == 0 {
                let started = (0..<Int(ops.hot[i].parts)).contains { isStarted(op, $0) }
                return started ? .running(workers: holders(op)) : .dispatched(workers: holders(op))
            }
        case .ready:
            break
        }
        if q.suspended { return .queueSuspended(q.name) }
        let sharing = shareTables[lane.queue].isSharing
        if ops.hot[i].state == .ready && ops.hot[i].heapKey == Scheduler.heldForKey {
            let k = concurrencyKeys[ops.hot[i].concurrencyKey]
            let limit = q.fairness.keyLimit
            if q.fairness.keyRate != nil && (limit <= 0 || k.holders.count < limit) {
                return .keyRateLimited(key: k.name, nextTokenAt: keyNextToken(ops.hot[i].concurrencyKey))
            }
            return .heldByConcurrencyKey(key: k.name, limit: q.fairness.keyLimit, holders: k.holders.map { ops.ids[Int($0)] })
        }
        var ahead = 0
        if ops.hot[i].state == .ready {
            // Ready ops that go first: higher QoS, or a higher place in the same share (with sharing, other
            // shares' turns interleave and are not counted).
            for l in q.lanesByQos.flatMap({ $0 }) {
                let ln = lanes[Int(l)]
                if ln.qos < lane.qos { continue }
                for e in readyEntries(Int(l)) where e.key > ops.hot[i].heapKey || ln.qos > lane.qos {
                    let j = Int(e.op)
                    guard ops.hot[j].state == .ready && ops.hot[j].heapKey == e.key && j != i else { continue }
                    if !sharing || ln.qos > lane.qos || ops.hot[j].share == ops.hot[i].share { ahead += 1 }
                }
            }
            if q.atLimit { return .queueAtLimit(queue: q.name, limit: Int(q.maxConcurrent), ahead: ahead) }
            if let at = nextToken(lane.queue) { return .rateLimited(queue: q.name, nextTokenAt: at) }
        }
        let c = workers.classes[Int(lane.cls)]
        let capableAlive = c.capable.filter { workers[$0].alive }.count
        if capableAlive == 0 {
            let tags = workers.tagBits.filter { c.requires & (1 << UInt64($0.value)) != 0 }.map(\.key).sorted()
            return .noWorkerWith(kind: workers.kindNames[Int(c.kind)], tags: tags)
        }
        if c.credit <= 0 {
            if sharing {
                let counts = shareCounts(lane.queue)
                let active = zip(counts.ready, counts.running).filter { $0 > 0 || $1 > 0 }.count
                return .waitingForTurn(share: shareTables[lane.queue].slots[Int(ops.hot[i].share)].name, shares: active,
                                       capableWorkers: capableAlive, ahead: ahead)
            }
            return .noFreeCredit(capableWorkers: capableAlive, ahead: ahead)
        }
        return .dispatchPending
    }
}

extension Scheduler {
    /// Whether a live worker can run ops of placement class `c` (has the kind and every tag).
    func hasLiveWorker(_ c: Int32) -> Bool {
        workers.classes[Int(c)].capable.contains { workers[$0].alive }
    }

    /// What class `c` lacks, for a warning: tags no live worker with the kind has, or the kind itself.
    func unplaceable(_ c: Int32, ops sample: [String], count: Int) -> Unplaceable {
        let pc = workers.classes[Int(c)]
        let required = workers.tagBits.filter { pc.requires & (1 << UInt64($0.value)) != 0 }.map(\.key).sorted()
        var offered: UInt64 = 0
        var kindSeen = false
        for w in workers where w.alive && w.kinds.contains(pc.kind) {
            kindSeen = true
            offered |= w.tags
        }
        let missing = required.filter { offered & (1 << UInt64(workers.tagBits[$0]!)) == 0 }
        return Unplaceable(kind: workers.kindNames[Int(pc.kind)], requires: required, missingTags: missing,
                           noWorkerKind: !kindSeen, ops: sample, count: count)
    }

    /// Ready ops that no live worker can run now, by placement class (status and watch show them).
    public func unplaceableReady() -> [Unplaceable] {
        var list: [Unplaceable] = []
        for c in workers.classes.indices where !hasLiveWorker(Int32(c)) {
            var count = 0
            var sample: [Int32] = []
            for l in lanes where l.cls == Int32(c) && l.readyCount > 0 {
                count += Int(l.readyCount)
                for e in l.entriesBySlot.joined() where sample.count < Unplaceable.sampleSize {
                    let j = Int(e.op)
                    if ops.hot[j].state == .ready && ops.hot[j].heapKey == e.key { sample.append(e.op) }
                }
            }
            guard count > 0 else { continue }
            list.append(unplaceable(Int32(c), ops: sample.sorted().map { ops.ids[Int($0)] }, count: count))
        }
        return list
    }
}
