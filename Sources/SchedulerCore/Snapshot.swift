// Snapshots (A5): the journal's records that rebuild the live state, so recovery reads a snapshot plus
// a short tail instead of the whole history. A snapshot is written from a copy of the core value (the
// shell hands the copy to another thread; copy-on-write keeps that cheap for the loop). What it does
// not keep is what the journal does not keep either: attempts in flight, retry counts used, retry
// delays being waited out, stories and earlier attempts' errors (docs/ARCHITECTURE.md).

/// An op as the journal makes it durable: enough to compare a recovered core with the one it replaces.
public struct DurableOp: Sendable, Equatable {
    public var queue: String
    public var kind: String
    public var priority: Int
    public var dependencies: [String]
    /// nil while unfinished (whatever its live state: pending, ready, dispatched or executing).
    public var outcome: Outcome?
    /// Cancel was requested while it ran (it finishes cancelled).
    public var cancelRequested: Bool
}

extension Scheduler {
    /// Records that rebuild this state when replayed into a new core: queue settings, every retained op
    /// in submission order (grouped into batches of one run and time), outcomes in the order they
    /// happened, cancels still to take effect, runs' submission keys, evicted run names, live workers.
    public func snapshotRecords() -> [(at: Int64, record: JournalRecord)] {
        var out: [(at: Int64, record: JournalRecord)] = []
        out.append((now, .runNumber(next: nextRunNumber)))
        for name in evictedRuns.order {
            if let e = evictedRuns[name] { out.append((e.evictedAt, .evictedRun(name: name, finishedAt: e.finishedAt, evictedAt: e.evictedAt))) }
        }
        for q in queues {
            out.append((now, .queueSettings(QueueSpec(name: q.name, maxConcurrent: Int(q.maxConcurrent), qos: q.qos, suspended: q.suspended, fairness: q.fairness))))
        }
        for r in workerSessionRecords() { out.append((now, r)) }
        var tagNames = [String](repeating: "", count: 64)
        for (t, b) in workers.tagBits { tagNames[b] = t }
        var batch: [OperationSpec] = []
        var batchRun: RunSlot?
        var batchAt: Int64 = 0
        func flush(_ out: inout [(at: Int64, record: JournalRecord)]) {
            guard !batch.isEmpty, let r = batchRun.map({ runs[$0] }) else { return }
            out.append((batchAt, .submitted(run: r.name, submitter: r.submitter, ops: batch, queues: [], key: nil)))
            batch.removeAll(keepingCapacity: true)
        }
        var finished: [Int32] = []
        var cancelling: [Int32] = []
        for i in 0..<ops.count where ops.hot[i].flags & Flag.evicted == 0 {
            let op = Int32(i)
            let run = ops.hot[i].run
            if run != batchRun || ops.cold[i].submittedAt != batchAt {
                flush(&out)
                batchRun = run
                batchAt = ops.cold[i].submittedAt
            }
            batch.append(spec(of: op, tagNames))
            if ops.hot[i].state == .finished {
                finished.append(op)
            } else if ops.hot[i].flags & Flag.cancelled != 0 {
                cancelling.append(op)
            }
        }
        flush(&out)
        finished.sort { (ops.cold[Int($0)].finishedAt, $0) < (ops.cold[Int($1)].finishedAt, $1) }
        for op in finished {
            out.append((ops.cold[Int(op)].finishedAt, .finished(id: ops.ids[Int(op)], outcome: outcome(of: op)!, at: ops.cold[Int(op)].finishedAt,
                                                           history: history(of: op))))
        }
        for (_, r) in runs.all where r.resultsEvicted { out.append((now, .resultsEvicted(run: r.name))) }
        for op in cancelling {
            let cascade = ops.hot[Int(op)].flags & Flag.cascade != 0
            out.append((now, .cancelRequested(ids: [ops.ids[Int(op)]], cascade: cascade, reason: ops.reasons[op] ?? "cancelled")))
        }
        // Ageing's clocks (Ageing.swift): the op's latest priority change again, at its time.
        for (op, at) in agedAt.sorted(by: { $0.key < $1.key }) where ops.hot[Int(op)].state != .finished && ops.hot[Int(op)].flags & Flag.evicted == 0 {
            out.append((at, .priorityChanged(id: ops.ids[Int(op)], priority: Int(ops.hot[Int(op)].priority), inherit: false)))
        }
        for (key, applied) in submissionKeys.sorted(by: { $0.key < $1.key }) {
            guard let r = runs.retained(applied.slot) else { continue }
            out.append((now, .submissionKey(run: r.name, key: SubmissionKey(key: key, digest: applied.digest), count: applied.count)))
        }
        for w in workers where w.alive { out.append((now, .workerJoined(name: w.name))) }
        return out
    }

    /// The spec that re-creates `op` as it stands: current priority, retries left, dependencies that
    /// are still retained (a finished op's dependency may belong to an evicted run).
    func spec(of op: Int32, _ tagNames: [String]) -> OperationSpec {
        let i = Int(op)
        let h = ops.hot[i]
        let lane = lanes[Int(h.lane)]
        let cls = workers.classes[Int(lane.cls)]
        var after: [String] = []
        let s = Int(ops.cold[i].depStart)
        for d in ops.depList[s..<s + Int(ops.cold[i].depCount)] where ops.hot[Int(d)].flags & Flag.evicted == 0 {
            after.append(inputName(d, of: op))
        }
        var requires: [String] = []
        if cls.requires != 0 { for b in 0..<64 where cls.requires & (1 << UInt64(b)) != 0 { requires.append(tagNames[b]) } }
        let delay = ops.retryDelays[op]
        return OperationSpec(id: runAndOp(of: ops.ids[i]).op, name: ops.names[op], queue: queues[lane.queue].name,
                             kind: workers.kindNames[Int(cls.kind)], payload: ops.payloads[i], after: after,
                             priority: OperationPriority(rawValue: Int(h.priority))!, qos: OperationQoS(rank: Int(lane.qos)),
                             parts: Int(h.parts),
                             policy: h.flags & Flag.policySucceeded != 0 ? .succeeded : .finished,
                             retries: Int(h.failRetriesLeft), lossRetries: Int(h.lossRetriesLeft),
                             timeoutMicros: ops.timeouts[op], requires: requires, barrier: h.flags & Flag.barrier != 0,
                             retryDelayMicros: OperationSpec.retryDelayMicros(delay?.base),
                             retryDelayMaxMicros: OperationSpec.retryDelayMaxMicros(delay?.max), share: opShares[op] ?? (queues[lane.queue].fairness.share == .key ? shareTables[lane.queue].slots[Int(h.share)].name : nil),
                             concurrencyKey: h.concurrencyKey.isKey ? concurrencyKeys[h.concurrencyKey].name : nil)
    }

    /// A finished op's outcome with its result or text.
    func outcome(of op: Int32) -> Outcome? {
        switch ops.hot[Int(op)].outcome {
        case .none: return nil
        case .succeeded: return .succeeded(ops.results[op] ?? [])
        case .failed: return .failed(ops.reasons[op] ?? "")
        case .cancelled: return .cancelled(ops.reasons[op] ?? "")
        }
    }

    /// Every retained op as the journal makes it durable, by key ("RUN/OP").
    public func durableOps() -> [String: DurableOp] {
        var view: [String: DurableOp] = [:]
        for i in 0..<ops.count where ops.hot[i].flags & Flag.evicted == 0 {
            let op = Int32(i)
            let lane = lanes[Int(ops.hot[i].lane)]
            let s = Int(ops.cold[i].depStart)
            let deps = ops.depList[s..<s + Int(ops.cold[i].depCount)].filter { ops.hot[Int($0)].flags & Flag.evicted == 0 }.map { ops.ids[Int($0)] }
            view[ops.ids[i]] = DurableOp(queue: queues[lane.queue].name, kind: workers.kindNames[Int(workers.classes[Int(lane.cls)].kind)],
                                         priority: Int(ops.hot[i].priority), dependencies: deps, outcome: outcome(of: op),
                                         cancelRequested: ops.hot[i].state != .finished && ops.hot[i].flags & Flag.cancelled != 0)
        }
        return view
    }

    /// Queue settings as the journal makes them durable.
    public func durableQueues() -> [QueueSpec] {
        queues.map { QueueSpec(name: $0.name, maxConcurrent: Int($0.maxConcurrent), qos: $0.qos, suspended: $0.suspended, fairness: $0.fairness) }
    }
}
