// S12 waits (count-down, no scanning) and A9 watchers (publish only while someone watches).

extension Scheduler {
    /// Every reference resolved (`resolve`), or one text naming every one that is not.
    func resolveAll(_ refs: [String], in run: String?) -> Result<[Int32], LookupFailures> {
        var found: [Int32] = []
        var failures: [LookupFailure] = []
        for r in refs {
            switch resolve(r, in: run) {
            case .success(let op): found.append(op)
            case .failure(let f): failures.append(f)
            }
        }
        if failures.isEmpty { return .success(found) }
        let unknownOps = failures.compactMap { if case .unknownOperation(let id) = $0 { id } else { nil } }
        var lines = failures.filter { if case .unknownOperation = $0 { false } else { true } }.map(\.description)
        if !unknownOps.isEmpty { lines.insert("unknown operation(s): " + unknownOps.joined(separator: ", "), at: 0) }
        return .failure(LookupFailures(text: lines.joined(separator: "; ")))
    }

    mutating func waitOps(_ ref: ClientRef, _ ids: [String], _ run: String?, _ out: inout [Action]) {
        let found: [Int32]
        switch resolveAll(ids, in: run) {
        case .success(let f): found = f
        case .failure(let f): out.append(.reply(ref, .error(.notFound(f.text)))); return
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
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        let wid = nextWait
        nextWait &+= 1
        waits[wid] = WaitRecord(ref: ref, queue: q, remaining: 0)
        if queues[q].unfinished == 0 { finishWait(wid, &out) } else { queues[q].waiters.append(wid) }
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
        if let queue = rec.queue {
            let q = queues[queue]
            rec.summary = WaitSummary(succeeded: Int(q.succeeded), failed: Int(q.failed), cancelled: Int(q.cancelled))
        } else if let slot = rec.run, let r = runs.retained(slot) {
            rec.summary = WaitSummary(succeeded: Int(r.succeeded), failed: Int(r.failed), cancelled: Int(r.cancelled))
        }
        out.append(.reply(rec.ref, .waitDone(rec.summary)))
    }

    mutating func watch(_ ref: ClientRef, _ name: String?, _ runName: String?, withResults: Bool, progress: Bool,
                        _ out: inout [Action]) {
        var filter: QueueIndex?, runFilter = WatchGroup.RunScope.any
        if let name {
            guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
            filter = q
        }
        if let runName {
            guard let r = runs.slot(named: runName) else { out.append(.reply(ref, .error(.notFound("\(runFailure(runName))")))); return }
            runFilter = .run(r)
        }
        unwatch(ref.client)
        let form = WatchGroup.Form(withResults: withResults, progress: progress)
        let stream: UInt64
        if let g = watchers.firstIndex(where: { $0.queue == filter && $0.run == runFilter && $0.form == form }) {
            watchers[g].clients.append(ref.client)
            stream = watchers[g].stream
        } else {
            nextWatchStream += 1
            stream = nextWatchStream
            watchers.append(WatchGroup(stream: stream, queue: filter, run: runFilter, form: form, clients: [ref.client]))
        }
        out.append(.reply(ref, .watching(stream: stream)))
    }

    mutating func unwatch(_ client: UInt64) {
        for g in watchers.indices { watchers[g].clients.removeAll { $0 == client } }
        watchers.removeAll { $0.clients.isEmpty }
    }

    /// `at`: when it happened (default: this input's time). One action per group of watchers with the
    /// same filters and form, naming them all: thousands of watchers of every queue cost one action per
    /// event, not thousands (the group's list is shared, not copied), and the shell makes one stream of it.
    func publish(_ op: Int32, _ t: OpEvent.Transition, at: Int64? = nil, _ out: inout [Action]) {
        let q = queueOf(op)
        let ev = OpEvent(op: ops.ids[Int(op)], queue: queues[q].name, at: at ?? now, transition: t)
        let r = ops.hot[Int(op)].run
        let isProgress = if case .progress = t { true } else { false }
        for g in watchers where (g.queue == nil || g.queue == q) && (g.run == .any || g.run == .run(r)) && (g.form.progress || !isProgress) {
            out.append(.publish(PublishedEvent(stream: g.stream, watchers: g.clients, withResult: g.form.withResults, event: ev)))
        }
    }
}

/// Watchers with the same filters (queue, run scope) and the same form: one event stream (`stream`,
/// never reused) that the shell numbers and encodes once.
struct WatchGroup {
    /// What the watchers asked for beside the filters: the result in FINISHED events, progress events.
    struct Form: Equatable {
        var withResults: Bool
        var progress: Bool
    }

    /// Which runs' ops a group watches.
    enum RunScope: Equatable {
        case any
        case run(RunSlot)
        /// The run it watched was evicted: it matches nothing (the slot may be reused).
        case evicted
    }

    var stream: UInt64
    var queue: QueueIndex?            // nil: every queue
    var run: RunScope
    var form: Form
    var clients: [UInt64]
}
