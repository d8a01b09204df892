// Atomic batch submit: validate everything, list every problem, then insert (S2, S3, S15, A8).
// Hot path: each id is hashed once on insert and each dependency once on lookup; a rejected batch
// takes its tentatively registered ids back out.

/// One-entry caches for runs of ops sharing queue / kind / class / lane (the common case in a batch).
struct InsertCache {
    var queueName = ""
    var queue: QueueIndex?
    var kindName = ""
    var kind: Int32 = -1
    var classKey: (Int32, UInt64) = (-1, 0)
    var cls: Int32 = -1
    var laneKey: (QueueIndex, UInt8, Int32) = (QueueIndex(raw: -1), 0, -1)   // -1: none yet
    var lane: Int32 = -1
    /// The share slot of the last (queue, share name) looked up.
    var shareQueue = QueueIndex(raw: -1)
    var shareName = ""
    var share: Int32 = 0
    /// The share mode of `queue` (read once per queue change, not per op).
    var shareMode = QueueFairness.ShareMode.fifo
}

extension Scheduler {
    mutating func submit(_ ref: ClientRef, _ specArray: [OperationSpec], _ qspecs: [QueueSpec], _ run: RunRequest,
                         key: SubmissionKey? = nil, unknownPriorities: [Int: Int] = [:], _ out: inout [Action]) {
        if let key, let applied = submissionKeys[key.key] {
            // A retry (A5): the same content is acknowledged again, other content refused; nothing applied.
            if applied.digest == key.digest, let r = runs.retained(applied.slot) {
                out.append(.reply(ref, .acceptedBefore(count: applied.count, run: r.name)))
            } else {
                out.append(.reply(ref, .rejected([.submissionKeyReused(key.key)])))
            }
            return
        }
        let existed = run.name.map { runs.slot(named: $0) != nil } ?? false
        let slot: RunSlot
        switch openRun(run) {
        case .success(let s): slot = s
        case .failure(let p): out.append(.reply(ref, .rejected([p]))); return
        }
        let runName = runs[slot].name
        // The core's keys: "RUN/OP" (bare ids in the unnamed run).
        let keys = runName.isEmpty ? specArray.map(\.id) : specArray.map { RunNames.key(run: runName, op: $0.id) }
        // Borrow elements in place (array subscripts here would copy whole specs).
        let accepted = specArray.withUnsafeBufferPointer { specs in
            keys.withUnsafeBufferPointer { submit(ref, specArray, specs, $0, qspecs, slot, key, unknownPriorities, &out) }
        }
        if !accepted && !existed { dropRun(slot) }
        if accepted, let key {
            submissionKeys[key.key] = AppliedSubmission(digest: key.digest, slot: slot, count: specArray.count)
            runs[slot].submissionKeys.append(key.key)
        }
    }

    /// Takes back a run created for a batch that was rejected.
    private mutating func dropRun(_ slot: RunSlot) {
        guard runs[slot].ops.isEmpty else { return }
        runs.remove(slot)
    }

    /// False when the batch was rejected.
    mutating func submit(_ ref: ClientRef, _ specArray: [OperationSpec], _ specs: UnsafeBufferPointer<OperationSpec>,
                         _ batchKeys: UnsafeBufferPointer<String>, _ qspecs: [QueueSpec], _ run: RunSlot,
                         _ key: SubmissionKey?, _ unknownPriorities: [Int: Int], _ out: inout [Action]) -> Bool {
        var problems = validateQueues(qspecs)
        let base = Int32(ops.count)
        let n = specs.count
        let runName = runs[run].name
        var mine = [Bool](repeating: false, count: n)
        var newTags = Set<String>()
        var resolved: [Int32] = []
        var starts = [Int32](repeating: 0, count: n + 1)
        var ordered = true
        do {
            // Ids of the batch are registered tentatively (taken out again if the batch is rejected).
            let keys = IdKeys(ids: ops.ids, batch: batchKeys, base: base)
            for i in 0..<n {
                let id = specs[i].id
                if id.isEmpty {
                    problems.append(.emptyId(index: i))
                } else if RunNames.slashOffset(id) != nil {
                    problems.append(.invalidId(op: id, reason: "an operation id must not contain '/' (it separates run and op in RUN/OP)"))
                } else if idTable.insert(batchKeys[i], base + Int32(i), keys) != nil {
                    problems.append(.duplicateId(id))
                } else {
                    mine[i] = true
                }
                let unknownPriority = unknownPriorities.isEmpty ? nil : unknownPriorities[i]
                Self.checkFields(specs, i, unknownPriority, workers.tagBits, &problems, &newTags)
            }
            // Resolve dependencies once; the indices are reused when wiring. "RUN/OP" names another
            // run's op; a bare id one of this run.
            for i in 0..<n {
                starts[i] = Int32(resolved.count)
                for d in specs[i].after {
                    let qualified = RunNames.slashOffset(d) != nil
                    if let j = idTable.find(qualified ? d : RunNames.key(run: runName, op: d), keys) {
                        if j >= base + Int32(i) { ordered = false }
                        resolved.append(j)
                    } else if qualified, let (r, _) = RunNames.split(d), runs.slot(named: String(r)) == nil {
                        problems.append(.unavailableDependency(op: specs[i].id, dependency: d, reason: "\(runFailure(String(r)))"))
                    } else {
                        problems.append(.unknownDependency(op: specs[i].id, dependency: d))
                    }
                }
            }
            if !ordered || !problems.isEmpty { starts[n] = Int32(resolved.count) }
            if !ordered { problems.append(contentsOf: Self.cycles(specs, base: base, resolved, starts)) }
            if !problems.isEmpty {
                for i in 0..<n where mine[i] { idTable.remove(batchKeys[i], keys) }
                out.append(.reply(ref, .rejected(problems)))
                return false
            }
        }
        starts[n] = Int32(resolved.count)
        reopenRun(run)
        if journaling {
            out.append(.journal(.submitted(run: runName, submitter: runs[run].submitter, ops: specArray, queues: qspecs, key: key)))
        }
        for qs in qspecs { applyQueueSettings(qs) }
        var cancelNow: [(Int32, String)] = []
        var cache = InsertCache()
        var unplaceable = UnplaceableTally()
        for i in 0..<n {   // all ops exist before edges are wired
            insert(specs, batchKeys, i, run, &cache)
            // (Replay has no workers and no one to warn: every op would be noted.)
            if !unplaceable.isPlaceable(cache.cls) && !recovery.replaying { unplaceable.note(base + Int32(i), cache.cls, self) }
        }
        // The batch joins its run in one step (two `runs[run]` writes per op cost ~80 instructions).
        runs[run].ops.append(contentsOf: base..<base + Int32(n))
        runs[run].unfinished += Int32(n)
        metrics.submitted &+= UInt64(n)
        for i in 0..<n {
            wire(base + Int32(i), specs, i, resolved[Int(starts[i])..<Int(starts[i + 1])], &cancelNow, &out)
        }
        for (op, reason) in cancelNow { cancelOp(op, reason, cascade: false, &out) }
        out.append(.reply(ref, .accepted(count: n, unplaceable: unplaceable.list, run: runName)))
        return true
    }

    /// Creates the queue, or sets an existing one's limit and suspension (its QoS never changes).
    mutating func applyQueueSettings(_ qs: QueueSpec) {
        if let q = queueIndex[qs.name] {
            queues[q].maxConcurrent = Int32(qs.maxConcurrent)
            queues[q].suspended = qs.suspended
            if let f = qs.fairness {
                if queues[q].fairness.ageingMicros != f.ageingMicros { queues[q].ageingDue = .max }
                queues[q].fairness = f
                armAgeing(q)
            }
            activateAll(q)
        } else {
            let q = ensureQueue(qs)
            if let f = qs.fairness { queues[q].fairness = f; armAgeing(q) }
        }
    }

    func validateQueues(_ qspecs: [QueueSpec]) -> [SubmitProblem] {
        var problems: [SubmitProblem] = []
        var seen: [String: QueueSpec] = [:]
        for qs in qspecs {
            if qs.name.isEmpty { problems.append(.invalidQueue(name: qs.name, reason: "empty name")); continue }
            if qs.maxConcurrent < -1 || qs.maxConcurrent > Int(Int32.max) {
                problems.append(.invalidQueue(name: qs.name, reason: "maxConcurrent must be -1 or ≥ 0, got \(qs.maxConcurrent)"))
            }
            if let p = qs.fairness?.problem { problems.append(.invalidQueue(name: qs.name, reason: p)) }
            if let q = queueIndex[qs.name], queues[q].qos != qs.qos {
                problems.append(.invalidQueue(name: qs.name, reason: "qos of an existing queue cannot change"))
            }
            if let prev = seen[qs.name], prev != qs {
                problems.append(.invalidQueue(name: qs.name, reason: "declared twice with different settings"))
            }
            seen[qs.name] = qs
        }
        return problems
    }

    /// Every cycle among the batch's own dependencies (edges to already accepted ops cannot close one),
    /// each named by the ops on it in dependency order (`DependencyCycles`, dependencies as listed).
    /// `resolved[starts[i]..<starts[i+1]]` are op i's dependencies as global indices; in-batch ones are ≥ base.
    static func cycles(_ specs: UnsafeBufferPointer<OperationSpec>, base: Int32, _ resolved: [Int32], _ starts: [Int32]) -> [SubmitProblem] {
        let dependencies = (0..<specs.count).map { i in
            resolved[Int(starts[i])..<Int(starts[i + 1])].compactMap { $0 >= base ? Int($0 - base) : nil }
        }
        return DependencyCycles.find(dependencies).map { cycle in .cycle(cycle.map { specs[$0].id }) }
    }

    /// Problems of one spec's own fields (`unknownPriority`: the integer given where a priority was
    /// wanted, when it is none). Static, given the one table it reads: called once per op from
    /// mutating code, a method would be passed a copy of the whole Scheduler (see Inflight.swift).
    static func checkFields(_ specs: UnsafeBufferPointer<OperationSpec>, _ i: Int, _ unknownPriority: Int?,
                            _ tagBits: [String: Int], _ problems: inout [SubmitProblem], _ newTags: inout Set<String>) {
        let name = specs[i].id.isEmpty ? "#\(i)" : specs[i].id
        if let p = unknownPriority { problems.append(.invalidPriority(op: name, p)) }
        let parts = specs[i].parts
        if parts < 1 || parts > 65535 { problems.append(.invalidParts(op: name, parts)) }
        let r = specs[i].retries, lr = specs[i].lossRetries
        if r < 0 || r > 65535 { problems.append(.invalidRetries(op: name, r)) }
        if lr < 0 || lr > 65535 { problems.append(.invalidRetries(op: name, lr)) }
        if let t = specs[i].timeoutMicros, t <= 0 { problems.append(.invalidTimeout(op: name)) }
        if (specs[i].retryDelayMicros ?? 0) < 0 || (specs[i].retryDelayMaxMicros ?? 0) < 0 { problems.append(.invalidRetryDelay(op: name)) }
        if specs[i].kind.isEmpty { problems.append(.emptyKind(op: name)) }
        if specs[i].queue.isEmpty { problems.append(.invalidQueue(name: "", reason: "\(name): empty queue name")) }
        if !specs[i].requires.isEmpty {
            for t in specs[i].requires where tagBits[t] == nil && !newTags.contains(t) {
                if tagBits.count + newTags.count >= 64 { problems.append(.tooManyTags(t)) } else { newTags.insert(t) }
            }
        }
    }

    mutating func insert(_ specs: UnsafeBufferPointer<OperationSpec>, _ keys: UnsafeBufferPointer<String>, _ i: Int,
                         _ run: RunSlot, _ c: inout InsertCache) {
        let op = Int32(ops.count)
        let qname = specs[i].queue
        let q: QueueIndex
        if let cached = c.queue, qname == c.queueName { q = cached } else {
            q = ensureQueue(QueueSpec(name: qname))
            c.queueName = qname
            c.queue = q
            c.shareMode = queues[q].fairness.share
        }
        let kname = specs[i].kind
        if kname != c.kindName || c.kind < 0 { c.kindName = kname; c.kind = workers.internKind(kname) }
        var mask: UInt64 = 0
        if !specs[i].requires.isEmpty { for t in specs[i].requires { mask |= 1 << UInt64(workers.internTag(t)!) } }
        if c.classKey != (c.kind, mask) { c.classKey = (c.kind, mask); c.cls = workers.placementClass(kind: c.kind, requires: mask) }
        let qos = UInt8(truncatingIfNeeded: (specs[i].qos ?? queues[q].qos).rank)
        if c.laneKey != (q, qos, c.cls) { c.laneKey = (q, qos, c.cls); c.lane = laneFor(queue: q, qos: qos, cls: c.cls) }
        let parts = specs[i].parts
        let barrier = specs[i].barrier
        // The hot record is built here and appended once (each paged write checks uniqueness).
        var h = OpHot(lane: c.lane, parts: UInt16(parts), partsLeft: UInt16(parts), waitingParts: UInt16(parts),
                        failRetriesLeft: UInt16(specs[i].retries), lossRetriesLeft: UInt16(specs[i].lossRetries),
                        priority: Int8(truncatingIfNeeded: specs[i].priority.rawValue),
                        flags: (barrier ? Flag.barrier : 0) | (specs[i].policy == .succeeded ? Flag.policySucceeded : 0))
        h.run = run
        if c.shareMode == .key {
            // (One branch per source of the name: `??`, or one `name` bound in two branches, copied the op's
            // own key again per op — 40 instructions, measured.)
            if let name = specs[i].share {
                if c.shareQueue != q || c.shareName != name { c.shareQueue = q; c.shareName = name; c.share = shareSlot(name, queue: q) }
            } else {
                let name = runs[run].submitter
                if c.shareQueue != q || c.shareName != name { c.shareQueue = q; c.shareName = name; c.share = shareSlot(name, queue: q) }
            }
            h.share = c.share
        } else {
            if c.shareMode != .fifo {
                // By submitter or by run: one share for the whole batch (one run), looked up once per queue.
                if c.shareQueue != q { c.shareQueue = q; c.share = shareSlot(shareName(specs[i], run: run, queue: q), queue: q) }
                h.share = c.share
            }
            // In `key` mode the share is the slot's name; other modes ignore it, so it is kept aside (re-sharing, snapshots).
            if let s = specs[i].share { opShares[op] = s }
        }
        if let k = specs[i].concurrencyKey { h.concurrencyKey = concurrencyKey(k, queue: q) }
        ops.ids.append(keys[i])
        ops.payloads.append(specs[i].payload)
        ops.cold.append(OpCold(submittedAt: now, lastWorker: recovery.replaying ? WorkerIndex.unknown : WorkerIndex.nobody))
        if let name = specs[i].givenName, name != specs[i].id { ops.names[op] = name }
        if let t = specs[i].timeoutMicros { ops.timeouts[op] = t }
        if specs[i].retries > 0 {
            let base = specs[i].retryDelayMicros ?? OperationSpec.defaultRetryDelayMicros
            let max = specs[i].retryDelayMaxMicros ?? OperationSpec.defaultRetryDelayMaxMicros
            if base != OperationSpec.defaultRetryDelayMicros || max != OperationSpec.defaultRetryDelayMaxMicros {
                ops.retryDelays[op] = RetryDelay(base: base, max: max)
            }
        }
        if parts > 1 {
            ops.multi.add(op, parts: parts)
        }
        var unfinished: Int32 = 0
        // Barriers (S15): an epoch is a barrier plus everything added after it.
        if barrier {
            let e = Int(queues[q].currentEpoch)
            var members: Int32 = 1
            if epochs[e].unfinished > 0 {
                unfinished += 1
                epochs[e].closer = op
                epochs[e].next = Int32(epochs.count)
                members += 1
            }
            epochs.append(Epoch(unfinished: members, closer: -1, opener: op))
            queues[q].currentEpoch = Int32(epochs.count - 1)
            queues[q].barrier = op
            h.epoch = Int32(epochs.count - 1)
        } else {
            let e = queues[q].currentEpoch
            epochs[Int(e)].unfinished += 1
            h.epoch = e
            let b = queues[q].barrier
            if b >= 0 && ops.hot[Int(b)].state != .finished {
                unfinished += 1
                addEdge(from: b, .barrierOrder(op))
            }
        }
        h.unfinishedDeps = unfinished
        ops.hot.append(h)
        queues[q].pending += 1
        queues[q].members.append(op)
        record(op, .submitted, part: 0, extra: 0)
    }

    /// Adds the dependency edges of a just inserted op; ready at once when nothing is open.
    mutating func wire(_ op: Int32, _ specs: UnsafeBufferPointer<OperationSpec>, _ i: Int, _ deps: ArraySlice<Int32>,
                       _ cancelNow: inout [(Int32, String)], _ out: inout [Action]) {
        var unfinished = ops.hot[Int(op)].unfinishedDeps
        let depBase = ops.depList.count
        for di in deps {
            if deps.count > 1 && ops.depList[depBase...].contains(di) { continue }   // duplicate edge
            ops.depList.append(di)
            if ops.hot[Int(di)].run != ops.hot[Int(op)].run { pinDependencyRun(of: op, di) }
            if ops.hot[Int(di)].state != .finished {
                unfinished += 1
                addEdge(from: di, .dependency(op))
            } else if specs[i].policy == .succeeded && ops.hot[Int(di)].outcome != .succeeded {
                let what = ops.hot[Int(di)].outcome == .failed ? "failed" : "was cancelled"
                cancelNow.append((op, "dependency \(inputName(di, of: op)) \(what)"))
            }
        }
        ops.cold[Int(op)].setDependencies(start: Int32(depBase), count: Int32(ops.depList.count - depBase))
        ops.hot[Int(op)].unfinishedDeps = unfinished
        if unfinished == 0 { makeReady(op, &out) }
    }

    /// Adds `edge` to the dependents of `from`. (Not inlined: `wire` stays small enough to be inlined
    /// into the submit loop, which matters to batches without dependencies.)
    mutating func addEdge(from: Int32, _ edge: DependentEdge) {
        ops.dependents.push(edge, onto: &ops.hot[Int(from)].firstOut)
    }
}

/// Collects, per placement class, the ops of a submit batch that no live worker can run (a warning in
/// the reply). Classes repeat in runs, so the last verdict is cached.
struct UnplaceableTally {
    private var lastClass: Int32 = -1
    private var lastPlaceable = true
    private var byClass: [Int32: Int] = [:]
    private(set) var list: [Unplaceable] = []

    /// The common case, inlined into the submit loop: the same class as the last op, and placeable.
    @inline(__always) func isPlaceable(_ cls: Int32) -> Bool { cls == lastClass && lastPlaceable }

    mutating func note(_ op: Int32, _ cls: Int32, _ s: borrowing Scheduler) {
        if cls == lastClass && lastPlaceable { return }
        if cls != lastClass {
            lastClass = cls
            lastPlaceable = s.hasLiveWorker(cls)
            if lastPlaceable { return }
        }
        let k: Int
        if let known = byClass[cls] {
            k = known
        } else {
            k = list.count
            byClass[cls] = k
            list.append(s.unplaceable(cls, ops: [], count: 0))
        }
        list[k].count += 1
        // The batch's own ids (all of one run): bare.
        if list[k].ops.count < Unplaceable.sampleSize { list[k].ops.append(s.runAndOp(of: s.ops.ids[Int(op)]).op) }
    }
}
