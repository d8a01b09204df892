// Ageing (A11, docs/SEMANTICS.md): a queue's optional rule that raises a ready op one priority level
// once it has waited `QueueFairness.ageingMicros`, and again after each further period, up to veryHigh.
//
// One timer per queue with ageing (`Timers.queueAgeing`). A sweep passes over the queue's
// members once: it raises the ready ops whose wait reached the period and arms the next sweep for the
// earliest time another op reaches its next step — but not sooner than an eighth of a period, so a
// steady stream of arrivals costs at most eight passes a period (a raise is at most period/8 late).
// With no op waiting the sweep comes back after one period: an op that arrives later is seen before
// its step is due. Nothing is done per dispatch or per submit; queues without ageing have no timer.
//
// A wait runs from the latest of: submitted, ready, dispatched (a retried op), and its latest priority
// change while the queue ages (`agedAt`: a raise restarts the clock, so does an admin's change). Each
// raise is journalled as a plain `priorityChanged` (inherit off) and replay applies it through
// `reprioritise` at the record's time, which sets `agedAt` to the same time: a restart has the same
// priorities and the same clocks.

extension Scheduler {
    /// Queue `q`'s fairness may have turned ageing on: a sweep is due now unless one is armed.
    mutating func armAgeing(_ q: QueueIndex) {
        guard queues[q].fairness.ageingMicros != nil else { queues[q].ageingDue = .max; return }
        if queues[q].ageingDue != .max { return }
        queues[q].ageingDue = now
        timers.queueAgeing.insert(TargetDeadline(at: now, target: q))
    }

    mutating func fireAgeing(_ out: inout [Action]) {
        while let top = timers.queueAgeing.popDue(now) {
            let q = top.target
            // A stale wake: ageing was turned off or its period changed and a new sweep was armed.
            guard top.at == queues[q].ageingDue else { continue }
            queues[q].ageingDue = .max
            age(q, &out)
        }
    }

    /// The time op `op`'s current wait began (see the header).
    func waitingSince(_ op: Int32) -> Int64 {
        let i = Int(op)
        return max(ops.cold[i].submittedAt, ops.cold[i].readyAt, ops.cold[i].dispatchedAt, agedAt[op] ?? 0)
    }

    /// One sweep of queue `q`: raises what is owed, arms the next sweep.
    mutating func age(_ q: QueueIndex, _ out: inout [Action]) {
        guard let period = queues[q].fairness.ageingMicros else { return }
        let top = Int8(OperationPriority.veryHigh.rawValue)
        var next = now + period
        for op in queues[q].members {
            let i = Int(op)
            guard ops.hot[i].state == .ready, ops.hot[i].priority < top else { continue }
            let due = waitingSince(op) + period
            if due > now { next = min(next, due); continue }
            let p = min(top, ops.hot[i].priority + 4)
            if journaling { out.append(.journal(.priorityChanged(id: ops.ids[i], priority: Int(p), inherit: false))) }
            reprioritise(op, p)
        }
        let at = max(next, now + max(1, period / 8))
        queues[q].ageingDue = at
        timers.queueAgeing.insert(TargetDeadline(at: at, target: q))
    }
}
