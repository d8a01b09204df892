// Part reports from workers, op completion, and releasing dependents (iteratively: chains may be 1M deep).

extension Scheduler {
    /// The in-flight record a worker report names, or nil (counted) when the report is stale.
    mutating func fenced(_ ref: PartRef) -> (w: WorkerIndex, op: Int32, key: UInt64)? {
        guard let w = liveWorker(ref.worker) else { return nil }
        return fencedOp(ref, w)
    }

    mutating func fencedOp(_ ref: PartRef, _ w: WorkerIndex) -> (w: WorkerIndex, op: Int32, key: UInt64)? {
        let op: Int32
        if let t = ref.token, t < UInt64(ops.count), ops.ids[Int(t)] == ref.op {
            op = Int32(t)
        } else if let o = lookup(ref.op) {
            op = o
        } else {
            fencing.unknownOp += 1; return nil
        }
        guard ref.part >= 0, ref.part < Int(ops.hot[Int(op)].parts) else { fencing.staleAttempt += 1; return nil }
        let key = partKey(op, ref.part)
        guard let f = inflightGet(op, ref.part), f.worker == w, Int(f.attempt) == ref.attempt else {
            fencing.staleAttempt += 1; return nil
        }
        return (w, op, key)
    }

    /// When the worker says the part's event happened, kept between its dispatch and now (so a
    /// worker's clock can never put it in the future or before the coordinator sent it).
    func eventTime(_ ref: PartRef, _ op: Int32) -> Int64 {
        guard let at = ref.at else { return now }
        return min(now, max(at, ops.cold[Int(op)].dispatchedAt))
    }

    /// dispatched → executing: the worker started the part's handler.
    mutating func partStarted(_ ref: PartRef, _ out: inout [Action]) {
        if recovery.hold != nil, let w = workers.byID[ref.worker], claimStarted(w, ref) { return }
        guard let (w, op, _) = fenced(ref) else { return }
        let i = Int(op)
        guard ops.partStatus(op, ref.part) == .dispatched else { return }   // a repeated STARTED
        ops.setPartStatus(op, ref.part, .running)
        workers[w].running += 1
        let at = eventTime(ref, op)
        metrics.started &+= 1
        if ref.attempt == 1 && ops.cold[i].depCount > 0 { metrics.dependencyHop.add(at - ops.cold[i].readyAt) }
        if ops.hot[i].state == .dispatched {
            ops.cold[i].startedAt = at
            transition(op, to: .executing, .started, part: ref.part, extra: Int32(ref.attempt), at: at)
        } else {
            record(op, .started, part: ref.part, extra: Int32(ref.attempt), at: at)
        }
        // A timeout bounds each attempt from its start (A4).
        if !ops.timeouts.isEmpty, let t = ops.timeouts[op] {
            timers.attemptTimeouts.insert(AttemptDeadline(at: at &+ t, op: OpIndex(raw: op), part: UInt16(ref.part), attempt: UInt16(truncatingIfNeeded: ref.attempt)))
        }
        if !watchers.isEmpty {
            publish(op, .executing(part: ref.part, attempt: ref.attempt, worker: ref.worker), at: at, &out)
        }
    }

    mutating func progress(_ ref: PartRef, _ f: Double, _ message: String, _ out: inout [Action]) {
        guard let (_, op, _) = fenced(ref) else { return }
        if !watchers.isEmpty { publish(op, .progress(part: ref.part, fraction: f, message: message), &out) }
    }

    mutating func partFinished(_ ref: PartRef, _ outcome: Outcome, _ grant: Int, _ out: inout [Action]) {
        guard let w = liveWorker(ref.worker) else { return }
        // The grant is applied fenced or not, after the part's place is freed (credit is capped by it).
        // After recovery, an attempt a worker listed in its HELLO may finish before the hold ends: its
        // claim takes the outcome (Recovery.swift).
        if recovery.hold != nil, claimFinished(w, ref, outcome) { giveCredit(w, grant); return }
        guard let (_, op, _) = fencedOp(ref, w) else { giveCredit(w, grant); return }
        let i = Int(op)
        let at = eventTime(ref, op)
        inflightClear(op, ref.part)
        ops.hot[i].inflightParts -= 1
        giveCredit(w, grant)
        record(op, .partFinished, part: ref.part, extra: Int32(outcome.kind.rawValue), at: at)
        if ops.hot[i].flags & Flag.cancelled != 0 {
            partDone(op, ref.part, [])
            if ops.hot[i].inflightParts == 0 { finishOp(op, .cancelled(ops.reasons[op] ?? "cancelled"), at: at, &out) }
            return
        }
        switch outcome {
        case .succeeded(let bytes):
            ops.hot[i].partsLeft -= 1
            if ops.hot[i].parts == 1 {
                finishOp(op, outcome, at: at, &out)
            } else {
                partDone(op, ref.part, bytes)
                if ops.hot[i].partsLeft == 0 {
                    finishOp(op, .succeeded(ops.multi[op].results.flatMap { $0 }), at: at, &out)
                }
            }
        case .failed(let error):
            attemptFailed(op, ref.part, attempt: ref.attempt, error: error, timedOut: false, at: at, &out)
        case .cancelled:
            ops.hot[i].flags |= Flag.cancelled
            finishOp(op, outcome, at: at, &out)
        }
    }

    /// A part finished (a single-part op's one part finishes with the op, in `finishOp`).
    mutating func partDone(_ op: Int32, _ part: Int, _ bytes: [UInt8]) {
        guard ops.hot[Int(op)].parts > 1 else { return }
        ops.multi[op].status[part] = .done
        if !bytes.isEmpty { ops.multi[op].results[part] = bytes }
    }

    /// Any state → finished with `outcome`, exactly once: the one function that enters `finished`
    /// (`OpState.transitions`). Its steps, in this order (the story, journal and events keep it):
    /// parts still on workers are stopped (from dispatched or executing), the state moves, the outcome
    /// is kept and counted, the op's run is told, per-attempt state goes, the journal and watchers hear
    /// of it, then what waited for it: its barrier epoch, waits, and (by `drainReleases`) dependents.
    mutating func finishOp(_ op: Int32, _ outcome: Outcome, at: Int64? = nil, _ out: inout [Action]) {
        let i = Int(op)
        guard ops.hot[i].state != .finished else { return }
        let q = queueOf(op)
        let at = at ?? now
        if ops.hot[i].inflightParts > 0 { stopPartsOnWorkers(op, outcome, &out) }
        transition(op, to: .finished, .finished, extra: Int32(outcome.kind.rawValue), at: at)
        ops.hot[i].settle(outcome.kind)
        ops.cold[i].finishedAt = at
        // The outcome counted (metrics, the queue's totals) and kept (result or reason, their bytes held
        // against `--retain-bytes`); the payload goes (needed only to dispatch). Written here, not as a
        // step of its own: the compiler kept that function out of line even marked @inline(__always),
        // and it cost 33 instructions an op (docs/BENCHMARKS.md, "One part status, and the moves named").
        if !cancelAskedAt.isEmpty, let asked = cancelAskedAt.removeValue(forKey: op) {
            metrics.cancelLatency.add(now - asked)
        }
        switch outcome {
        case .succeeded(let bytes):
            metrics.succeeded &+= 1
            queues[q].succeeded += 1
            if !bytes.isEmpty { ops.results[op] = bytes }
        case .failed(let e):
            metrics.failed &+= 1
            queues[q].failed += 1
            ops.reasons[op] = e
        case .cancelled(let r):
            metrics.cancelled &+= 1
            queues[q].cancelled += 1
            ops.reasons[op] = r
        }
        ops.payloads[i] = []
        holdBytes(op, outcome)
        if !crossRunDeps.isEmpty { unpinDependencyRuns(of: op) }
        runOpFinished(op, outcome.kind, at: at, &out)
        dropAttemptState(op)
        if journaling { out.append(.journal(.finished(id: ops.ids[i], outcome: outcome, at: at, history: history(of: op)))) }
        if !watchers.isEmpty { publish(op, .finished(outcome), at: at, &out) }
        closeEpoch(of: op, &out)
        countDownWaits(on: op, queue: q, outcome.kind, &out)
        if ops.hot[i].firstOut >= 0 { releaseQueue.append(op) }
    }

    /// Parts still on workers are told to stop, and taken back before the op's state (a single-part op's
    /// part status) says finished: each worker's count of running parts reads whether the part started.
    @inline(__always)
    private mutating func stopPartsOnWorkers(_ op: Int32, _ outcome: Outcome, _ out: inout [Action]) {
        let i = Int(op)
        let reason: String
        if case .cancelled(let r) = outcome { reason = r } else { reason = "operation finished" }
        for part in 0..<Int(ops.hot[i].parts) {
            if let f = inflightClear(op, part) {
                out.append(.cancelOnWorker(worker: workers[f.worker].id, op: ops.ids[i], part: part,
                                           attempt: Int(f.attempt), reason: reason))
            }
        }
        ops.hot[i].inflightParts = 0
    }

    /// What only an unfinished op needs: its multi-part record, timeout and retry delays.
    @inline(__always)
    private mutating func dropAttemptState(_ op: Int32) {
        if ops.hot[Int(op)].parts > 1 { ops.multi.remove(op) }
        if !ops.timeouts.isEmpty { ops.timeouts[op] = nil }
        if !ops.retryDelays.isEmpty { ops.retryDelays[op] = nil }
    }

    /// One op fewer open in its barrier epoch (S15): an epoch whose last op finished releases its closing
    /// barrier, and the next epoch counts that barrier as finished too.
    @inline(__always)
    private mutating func closeEpoch(of op: Int32, _ out: inout [Action]) {
        var e = Int(ops.hot[Int(op)].epoch)
        epochs[e].unfinished -= 1
        while epochs[e].unfinished == 0 {
            let b = epochs[e].closer
            let next = epochs[e].next
            epochs[e].closer = -1
            epochs[e].next = -1
            if b >= 0 { releaseOne(b, &out) }
            guard next >= 0 else { break }
            e = Int(next)
            epochs[e].unfinished -= 1
        }
    }

    /// Waits on the op count down (S12), and waits on its whole queue end when nothing there is unfinished.
    @inline(__always)
    private mutating func countDownWaits(on op: Int32, queue q: QueueIndex, _ kind: OutcomeKind, _ out: inout [Action]) {
        if let ws = waits.takeWaits(on: op) {
            for wid in ws { waitCountDown(wid, kind, &out) }
        }
        if queues[q].unfinished == 0 && !queues[q].waiters.isEmpty {
            let ws = queues[q].waiters
            queues[q].waiters.removeAll()
            for wid in ws { finishWait(wid, &out) }
        }
    }

    /// One prerequisite of `d` finished (normally): ready when none remain.
    mutating func releaseOne(_ d: Int32, _ out: inout [Action]) {
        let di = Int(d)
        guard ops.hot[di].state == .pending else { return }
        ops.hot[di].unfinishedDeps -= 1
        if ops.hot[di].unfinishedDeps == 0 { makeReady(d, &out) }
    }

    /// → ready: on its lane's heap at its place (priority, then submission order).
    mutating func makeReady(_ d: Int32, code: StoryCode = .ready, extra: Int32 = 0, _ out: inout [Action]) {
        transition(d, to: .ready, code, extra: extra)
        ops.cold[Int(d)].readyAt = now
        pushReady(d)
        if !watchers.isEmpty { publish(d, .ready, &out) }
    }

    /// Walks dependents of finished ops (worklist, no recursion).
    mutating func drainReleases(_ out: inout [Action]) {
        var head = 0
        while head < releaseQueue.count {
            let op = releaseQueue[head]
            head += 1
            let i = Int(op)
            let kind = ops.hot[i].outcome
            let cascade = ops.hot[i].flags & Flag.cascade != 0
            var e = ops.hot[i].firstOut
            while e >= 0 {
                let edge = ops.dependents.edges[Int(e)]
                e = ops.dependents.next[Int(e)]
                if edge.isBarrierOrder { releaseOne(edge.dependent, &out); continue }   // ordering only
                let t = edge.dependent
                let di = Int(t)
                if ops.hot[di].state == .finished { continue }
                if ops.hot[di].state == .pending { ops.hot[di].unfinishedDeps -= 1 }
                if cascade {
                    cancelOp(t, "dependency \(inputName(op, of: t)) cancelled", cascade: true, &out)
                } else if kind != .succeeded && ops.hot[di].flags & Flag.policySucceeded != 0 {
                    let what = kind == .failed ? "failed" : "was cancelled"
                    cancelOp(t, "dependency \(inputName(op, of: t)) \(what)", cascade: false, &out)
                } else if ops.hot[di].state == .pending && ops.hot[di].unfinishedDeps == 0 {
                    makeReady(t, &out)
                }
            }
        }
        releaseQueue.removeAll(keepingCapacity: true)
    }
}
