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
            let outcome = ops.hot[Int(op)].outcome
            if outcome == .none { rec.remaining += 1; open.append(op) } else { rec.summary.count(outcome) }
        }
        if rec.remaining == 0 { out.append(.reply(ref, .waitDone(rec.summary))); return }
        waits.add(rec, onOps: open)
    }

    mutating func waitQueue(_ ref: ClientRef, _ name: String, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        let wid = waits.add(WaitRecord(ref: ref, queue: q, remaining: 0))
        if queues[q].unfinished == 0 { finishWait(wid, &out) } else { queues[q].waiters.append(wid) }
    }

    /// One op that wait `wid` counts finished with `kind`; the last one answers the wait.
    mutating func waitCountDown(_ wid: Int32, _ kind: OutcomeKind, _ out: inout [Action]) {
        if let done = waits.countDown(wid, kind) { out.append(.reply(done.ref, .waitDone(done.summary))) }
    }

    mutating func finishWait(_ wid: Int32, _ out: inout [Action]) {
        guard var rec = waits.remove(wid) else { return }
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
        let stream = watchers.add(ref.client, queue: filter, run: runFilter,
                                  form: WatchGroup.Form(withResults: withResults, progress: progress))
        out.append(.reply(ref, .watching(stream: stream)))
    }

    mutating func unwatch(_ client: UInt64) { watchers.remove(client) }

    /// `at`: when it happened (default: this input's time). One action per group of watchers with the
    /// same filters and form, naming them all: thousands of watchers of every queue cost one action per
    /// event, not thousands (the group's list is shared, not copied), and the shell makes one stream of it.
    func publish(_ op: Int32, _ t: OpEvent.Transition, at: Int64? = nil, _ out: inout [Action]) {
        let q = queueOf(op)
        let ev = OpEvent(op: ops.ids[Int(op)], queue: queues[q].name, at: at ?? now, transition: t)
        let r = ops.hot[Int(op)].run
        let isProgress = if case .progress = t { true } else { false }
        for g in watchers.groups where (g.queue == nil || g.queue == q) && (g.run == .any || g.run == .run(r)) && (g.form.progress || !isProgress) {
            out.append(.publish(PublishedEvent(stream: g.stream, watchers: g.clients, withResult: g.form.withResults, event: ev)))
        }
    }
}

extension WaitSummary {
    /// One more op finished with `kind` (`.none`: not finished, not counted).
    mutating func count(_ kind: OutcomeKind) {
        switch kind {
        case .succeeded: succeeded += 1
        case .failed: failed += 1
        case .cancelled: cancelled += 1
        case .none: break
        }
    }
}

/// The open waits (S12), each counting down: by id, and the ids waiting for each op.
struct WaitTable {
    private var records: [Int32: WaitRecord] = [:]
    private var next: Int32 = 0
    /// Waits that count op by op, by op (whole-queue and whole-run waits are listed by their queue and run).
    private var byOp: [Int32: [Int32]] = [:]

    /// A new wait; its id.
    @discardableResult
    mutating func add(_ record: WaitRecord, onOps ops: [Int32] = []) -> Int32 {
        let wid = next
        next &+= 1
        records[wid] = record
        for op in ops { byOp[op, default: []].append(wid) }
        return wid
    }

    /// Wait `wid` counts one more op finished with `kind`; the wait, ended, when it was its last one.
    mutating func countDown(_ wid: Int32, _ kind: OutcomeKind) -> WaitRecord? {
        guard var record = records[wid] else { return nil }
        record.summary.count(kind)
        record.remaining -= 1
        if record.remaining > 0 { records[wid] = record; return nil }
        records[wid] = nil
        return record
    }

    /// Ends wait `wid` (nil: already answered).
    mutating func remove(_ wid: Int32) -> WaitRecord? { records.removeValue(forKey: wid) }

    /// The waits counting op `op`, taken off it (the op finished).
    @inline(__always) mutating func takeWaits(on op: Int32) -> [Int32]? {
        byOp.isEmpty ? nil : byOp.removeValue(forKey: op)
    }

    /// Compaction renumbered the ops (a waited op is unfinished, so never dropped).
    mutating func renumberOps(_ remap: OpRemap) { byOp = remap.rekeyed(byOp) }

    /// Ops some wait counts (validation: each is unfinished, and each of its waits is open).
    var waitsByOp: [Int32: [Int32]] { byOp }
    func isOpen(_ wid: Int32) -> Bool { records[wid] != nil }
}

/// The watchers (A9), in groups of the same filters and form; an event is published once per group.
struct WatchGroups {
    private(set) var groups: [WatchGroup] = []
    /// The last stream given (streams are never reused: a stale one names nothing).
    private var lastStream: UInt64 = 0

    /// Whether anyone watches: every publishing path asks this first.
    @inline(__always) var isEmpty: Bool { groups.isEmpty }

    /// Adds `client` to the group of these filters and form (made when none has them); its stream.
    mutating func add(_ client: UInt64, queue: QueueIndex?, run: WatchGroup.RunScope, form: WatchGroup.Form) -> UInt64 {
        if let g = groups.firstIndex(where: { $0.queue == queue && $0.run == run && $0.form == form }) {
            groups[g].clients.append(client)
            return groups[g].stream
        }
        lastStream += 1
        groups.append(WatchGroup(stream: lastStream, queue: queue, run: run, form: form, clients: [client]))
        return lastStream
    }

    /// `client` stops watching; groups left without watchers go.
    mutating func remove(_ client: UInt64) {
        for g in groups.indices { groups[g].clients.removeAll { $0 == client } }
        groups.removeAll { $0.clients.isEmpty }
    }

    /// Run `slot` was evicted: groups that watched it match nothing from now on (the slot may be reused).
    mutating func runEvicted(_ slot: RunSlot) {
        for g in groups.indices where groups[g].run == .run(slot) { groups[g].run = .evicted }
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
