// S12 waits (count-down, no scanning) and A9 watchers (publish only while someone watches).

extension Scheduler {
    mutating func waitOps(_ ref: ClientRef, _ ids: [String], _ out: inout [Action]) {
        var found: [Int32] = []
        var unknown: [String] = []
        for id in ids { if let op = lookup(id) { found.append(op) } else { unknown.append(id) } }
        if !unknown.isEmpty {
            out.append(.reply(ref, .error("unknown operation(s): " + unknown.joined(separator: ", ")))); return
        }
        var rec = WaitRecord(ref: ref, remaining: 0)
        var open: [Int32] = []
        for op in found {
            switch ops.hot[Int(op)].outcome {
            case .none: rec.remaining += 1; open.append(op)
            case .succeeded: rec.summary.succeeded += 1
            case .failed: rec.summary.failed += 1
            case .cancelled: rec.summary.cancelled += 1
            }
        }
        if rec.remaining == 0 { out.append(.reply(ref, .waitDone(rec.summary))); return }
        let wid = nextWait
        nextWait &+= 1
        waits[wid] = rec
        for op in open { opWaiters[op, default: []].append(wid) }
    }

    mutating func waitQueue(_ ref: ClientRef, _ name: String, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error("unknown queue \(name)"))); return }
        let wid = nextWait
        nextWait &+= 1
        waits[wid] = WaitRecord(ref: ref, queue: q, remaining: 0)
        if queues[Int(q)].unfinished == 0 { finishWait(wid, &out) } else { queues[Int(q)].waiters.append(wid) }
    }

    mutating func waitCountDown(_ wid: Int32, _ kind: OutcomeKind, _ out: inout [Action]) {
        guard var rec = waits[wid] else { return }
        switch kind {
        case .succeeded: rec.summary.succeeded += 1
        case .failed: rec.summary.failed += 1
        case .cancelled: rec.summary.cancelled += 1
        case .none: break
        }
        rec.remaining -= 1
        if rec.remaining <= 0 {
            waits[wid] = nil
            out.append(.reply(rec.ref, .waitDone(rec.summary)))
        } else {
            waits[wid] = rec
        }
    }

    mutating func finishWait(_ wid: Int32, _ out: inout [Action]) {
        guard var rec = waits.removeValue(forKey: wid) else { return }
        if rec.queue >= 0 {
            let q = queues[Int(rec.queue)]
            rec.summary = WaitSummary(succeeded: Int(q.succeeded), failed: Int(q.failed), cancelled: Int(q.cancelled))
        }
        out.append(.reply(rec.ref, .waitDone(rec.summary)))
    }

    mutating func watch(_ ref: ClientRef, _ name: String?, _ out: inout [Action]) {
        var filter: Int32 = -1
        if let name {
            guard let q = queueIndex[name] else { out.append(.reply(ref, .error("unknown queue \(name)"))); return }
            filter = q
        }
        watchers.removeAll { $0.client == ref.client }
        watchers.append((ref.client, filter))
        out.append(.reply(ref, .ok))
    }

    /// `at`: when it happened (default: this input's time).
    func publish(_ op: Int32, _ t: OpEvent.Transition, at: Int64? = nil, _ out: inout [Action]) {
        let q = queueOf(op)
        let ev = OpEvent(op: ops.ids[Int(op)], queue: queues[Int(q)].name, at: at ?? now, transition: t)
        for w in watchers where w.queue < 0 || w.queue == q { out.append(.publish(watcher: w.client, ev)) }
    }
}
