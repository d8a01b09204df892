// S4/S5/S10, A2, A4: cancel (optionally cascading), cancel-all, timeouts.

extension Scheduler {
    mutating func cancelRequest(_ ref: ClientRef, _ ids: [String], _ cascade: Bool, _ reason: String, _ run: String?,
                                scope: QueueScope? = nil, _ out: inout [Action]) {
        let found: [Int32]
        switch resolveAll(ids, in: run) {
        case .success(let f): found = f
        case .failure(let f): out.append(.reply(ref, .error(.notFound(f.text)))); return
        }
        if cascade, let scope {
            cancelWithinScope(ref, found, reason, scope, &out)
            return
        }
        if journaling { out.append(.journal(.cancelRequested(ids: found.map { ops.ids[Int($0)] }, cascade: cascade, reason: reason))) }
        for op in found { cancelOp(op, reason, cascade: cascade, &out) }
        out.append(.reply(ref, .ok))
    }

    /// A cascade by a caller limited to some queues (PROTOCOL.md §12): the dependents it reaches are
    /// found now, and it stops at those outside the scope (they are left alone and counted in the
    /// reply; they follow their dependency policy as for any finished dependency). The unscoped cascade
    /// reaches dependents when the cancelled op finishes; this one cancels them at once (S4: an op not
    /// started finishes cancelled at once, even with unfinished dependencies), so the journal holds
    /// plain cancels and replay needs no scope.
    private mutating func cancelWithinScope(_ ref: ClientRef, _ roots: [Int32], _ reason: String, _ scope: QueueScope,
                                            _ out: inout [Action]) {
        var seen = Set(roots)
        var reached: [(op: Int32, because: Int32)] = []
        var work = roots.filter { ops.hot[Int($0)].state != .finished }
        var leftAlone = 0
        while let v = work.popLast() {
            var e = ops.hot[Int(v)].firstOut
            while e >= 0 {
                let edge = ops.dependents.edges[Int(e)]
                e = ops.dependents.next[Int(e)]
                // Implicit barrier edges order, they do not cascade (drainReleases).
                guard !edge.isBarrierOrder else { continue }
                let t = edge.dependent
                guard ops.hot[Int(t)].state != .finished, seen.insert(t).inserted else { continue }
                guard scope.allows(queue: queueName(of: t)) else { leftAlone += 1; continue }
                reached.append((t, v))
                work.append(t)
            }
        }
        if journaling {
            out.append(.journal(.cancelRequested(ids: roots.map { ops.ids[Int($0)] }, cascade: false, reason: reason)))
        }
        for op in roots { cancelOp(op, reason, cascade: false, &out) }
        for (op, because) in reached {
            let why = "dependency \(inputName(because, of: op)) cancelled"
            if journaling { out.append(.journal(.cancelRequested(ids: [ops.ids[Int(op)]], cascade: false, reason: why))) }
            cancelOp(op, why, cascade: false, &out)
        }
        out.append(.reply(ref, leftAlone > 0 ? .okOutsideScope(leftAlone: leftAlone) : .ok))
    }

    /// The name of the queue op `op` is in.
    func queueName(of op: Int32) -> String { queues[lanes[Int(ops.hot[Int(op)].lane)].queue].name }

    mutating func cancelAllRequest(_ ref: ClientRef, _ name: String, _ reason: String, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        if journaling { out.append(.journal(.cancelAll(queue: name, reason: reason))) }
        let members = queues[q].members
        var kept: [Int32] = []
        for op in members where ops.hot[Int(op)].state != .finished {
            cancelOp(op, reason, cascade: false, &out)
            if ops.hot[Int(op)].state != .finished { kept.append(op) }
        }
        queues[q].members = kept
        out.append(.reply(ref, .ok))
    }

    /// Not started (or waiting out a retry delay): finished(cancelled) at once, even with unfinished
    /// dependencies (S4).
    /// Executing: workers are told; it finishes when they report (or are lost).
    mutating func cancelOp(_ op: Int32, _ reason: String, cascade: Bool, _ out: inout [Action]) {
        let i = Int(op)
        switch ops.hot[i].state {
        case .finished:
            return
        case .pending, .ready, .delayed:
            if cascade { ops.hot[i].flags |= Flag.cascade }
            if !watchers.isEmpty { publish(op, .cancelled(state: ops.hot[i].state), &out) }
            finishOp(op, .cancelled(reason), &out)
        case .dispatched, .executing:
            if ops.hot[i].flags & Flag.cancelled != 0 { return }
            ops.hot[i].flags |= Flag.cancelled | (cascade ? Flag.cascade : 0)
            ops.reasons[op] = reason
            record(op, .cancelRequested, part: 0, extra: 0)
            if metrics.cancelLatency.capacity > 0 { cancelAskedAt[op] = now }
            if !watchers.isEmpty { publish(op, .cancelled(state: ops.hot[i].state), &out) }
            ops.hot[i].waitingParts = 0
            if ops.hot[i].inflightParts == 0 { finishOp(op, .cancelled(reason), &out); return }
            for part in 0..<Int(ops.hot[i].parts) {
                if let f = inflightGet(op, part) {
                    out.append(.cancelOnWorker(worker: workers[f.worker].id, op: ops.ids[i], part: part,
                                               attempt: Int(f.attempt), reason: reason))
                }
            }
        }
    }

    mutating func tick(_ out: inout [Action]) {
        if now >= requestedTick { requestedTick = .max }
        fireTimeouts(&out)
        fireRetries(&out)
        fireRateWakes()
        fireKeyRateWakes()
        fireAgeing(&out)
        checkLiveness(&out)
        if let h = recovery.hold, now >= h.until { endHold(&out) }
        // Eviction by age is left to the end of `handle`: compaction renumbers ops, and this input's
        // finished ops (timeouts, lost workers) still wait in `releaseQueue` for `drainReleases`.
    }

    /// Asks for a tick at the earliest deadline when it is earlier than the one already asked for.
    mutating func armTick(_ out: inout [Action]) {
        var due = timers.earliestDue
        if let t = nextEviction, t < due { due = t }
        if let h = recovery.hold, h.until < due { due = h.until }
        if due < requestedTick {
            requestedTick = due
            out.append(.scheduleTick(at: due))
        }
    }
}
