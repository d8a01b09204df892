import HeapModule
import DequeModule

// Bounded history: a finished run is evicted once it is older than `retainMicros`, or when more than
// `retainRuns` finished runs are held. Eviction forgets the run's ops at once (ids, results, texts);
// their rows stay as dead rows until `compact` renumbers the live ops into fresh columns (a copying
// collection, in submission order, so index order stays submission order). Compaction runs when dead
// rows outnumber live ones, so its cost is amortised over the evictions that made it necessary.

extension Scheduler {
    /// Evicts every finished run past its retention or beyond the retained count; compacts when
    /// dead rows dominate. Called after inputs (ticks included), never while replaying: each eviction is
    /// journalled (`evictedRun`) and replay evicts exactly where the record says, because what made the
    /// original evict (a tick's time, the order pins came and went) is not in the journal.
    mutating func evictRuns(_ out: inout [Action]) {
        while let f = finishedRuns.first {
            guard let r = runs.retained(f.slot), r.number == f.number, r.finishedAt == f.at else {
                finishedRuns.removeFirst()   // stale: evicted already, or reopened
                continue
            }
            guard finishedRunCount > config.retainRuns || now &- f.at >= config.retainMicros else { break }
            finishedRuns.removeFirst()
            // Pinned by another run's unfinished dependents: queued again when they are done.
            if r.pins > 0 { continue }
            evictRun(f.slot)
            if journaling { out.append(.journal(.evictedRun(name: r.name, finishedAt: r.finishedAt, evictedAt: now))) }
        }
        if retainedBytes > config.retainHighWater { evictForBytes(&out) }
        compactIfMostlyDead()
    }

    /// Replay of a journalled eviction: the run goes now if it is here and finished (as it was then);
    /// a name only (a snapshot's, or a run this replay never had) is remembered.
    mutating func replayEviction(_ name: String, finishedAt: Int64, evictedAt: Int64) {
        guard let slot = runs.slot(named: name), runs[slot].finishedAt != 0 else {
            return rememberEvicted(name, finishedAt: finishedAt, evictedAt: evictedAt)
        }
        evictRun(slot)
        compactIfMostlyDead()
    }

    private mutating func compactIfMostlyDead() {
        if deadOps >= config.compactMinimum && deadOps >= ops.count - deadOps { compact() }
    }

    /// When the oldest finished run is due for eviction by age (for the tick).
    var nextEviction: Int64? {
        guard let f = finishedRuns.first else { return nil }
        return f.at &+ config.retainMicros
    }

    mutating func evictRun(_ slot: RunSlot) {
        let r = runs[slot]
        let keys = IdKeys(ids: ops.ids, batch: nil, base: 0)
        for op in r.ops {
            let i = Int(op)
            idTable.remove(ops.ids[i], keys)
            let q = queueOf(op)
            switch ops.hot[i].outcome {   // queue counts cover retained ops
            case .succeeded: queues[q].succeeded -= 1
            case .failed: queues[q].failed -= 1
            case .cancelled: queues[q].cancelled -= 1
            case .none: preconditionFailure("evicting unfinished op \(ops.ids[i])")
            }
            ops.hot[i].flags |= Flag.evicted
            ops.payloads[i] = []
            if !names.isEmpty { names[op] = nil }
            if !results.isEmpty { results[op] = nil }
            if !reasons.isEmpty { reasons[op] = nil }
            if !attemptErrors.isEmpty { attemptErrors[op] = nil }
        }
        deadOps += r.ops.count
        retainedBytes -= r.bytes
        finishedRunCount -= 1
        rememberEvicted(r.name, finishedAt: r.finishedAt, evictedAt: now)
        for k in r.submissionKeys { submissionKeys[k] = nil }
        for g in watchers.indices where watchers[g].run == .run(slot) { watchers[g].run = .evicted }
        runs.remove(slot)
    }

    /// An evicted run's name is remembered (to say "evicted", not "unknown"), the oldest forgotten first.
    mutating func rememberEvicted(_ name: String, finishedAt: Int64, evictedAt: Int64) {
        evictedRuns.remember(name, EvictedRun(finishedAt: finishedAt, evictedAt: evictedAt), limit: config.evictedRunsRemembered)
    }

    /// Renumbers the live ops into fresh columns and rewrites every stored op index.
    mutating func compact() {
        let n = ops.count
        var remap = [Int32](repeating: -1, count: n)
        var live = 0
        for i in 0..<n where ops.hot[i].flags & Flag.evicted == 0 {
            remap[i] = Int32(live)
            live += 1
        }
        @inline(__always) func m(_ op: Int32) -> Int32 { op < 0 ? -1 : remap[Int(op)] }

        // Columns, dependency lists and dependents lists.
        var t = OpTable()
        t.reserve(live)
        var deps: [Int32] = []
        var lists = DependentLists()
        deps.reserveCapacity(live)
        for i in 0..<n where remap[i] >= 0 {
            var h = ops.hot[i]
            // Dependents lists: kept in order, each edge of its kind.
            var e = h.firstOut
            var head: Int32 = -1, tail: Int32 = -1
            while e >= 0 {
                let edge = dependents.edges[Int(e)]
                let to = m(edge.dependent)
                if to >= 0 { lists.append(edge.to(to), head: &head, tail: &tail) }
                e = dependents.next[Int(e)]
            }
            h.firstOut = head
            t.hot.append(h)
            t.ids.append(ops.ids[i])
            t.payloads.append(ops.payloads[i])
            var c = ops.cold[i]
            let s = Int(c.depStart)
            c.depStart = Int32(deps.count)
            for d in depList[s..<s + Int(c.depCount)] where remap[Int(d)] >= 0 { deps.append(remap[Int(d)]) }
            c.depCount = Int32(deps.count) - c.depStart
            t.cold.append(c)
        }
        ops = t
        depList = deps
        dependents = lists

        // Side tables keyed by op.
        func rekey<V>(_ d: [Int32: V]) -> [Int32: V] {
            var r: [Int32: V] = [:]
            r.reserveCapacity(d.count)
            for (k, v) in d where remap[Int(k)] >= 0 { r[remap[Int(k)]] = v }
            return r
        }
        names = rekey(names); timeouts = rekey(timeouts); results = rekey(results); reasons = rekey(reasons)
        attemptErrors = rekey(attemptErrors); retryDelays = rekey(retryDelays); multi.renumberOps(remap)
        opWaiters = rekey(opWaiters); crossRunDeps = rekey(crossRunDeps); cancelAskedAt = rekey(cancelAskedAt)

        // The id table stores index + 1 per slot: rewritten in place.
        idTable.remap { remap[Int($0)] }

        // Share slots and concurrency keys that no live op names are dropped (FairShareCompaction.swift).
        let slotRemaps = compactShareSlots()
        compactConcurrencyKeys()

        // Ready heaps: live entries get keys with their new index (same order: renumbering is monotonic),
        // in their share's new slot.
        for l in lanes.indices {
            let slotRemap = slotRemaps[lanes[l].queue.index]
            var rebuilt: [Heap<ReadyEntry>] = [Heap()]
            for (s, old) in lanes[l].allHeaps.enumerated() {
                // A dropped slot has no live op, so no live entry.
                let ns = slotRemap.isEmpty ? s : Int(slotRemap[s])
                guard ns >= 0 else { continue }
                var entries: [ReadyEntry] = []
                for e in old.unordered {
                    let j = Int(e.op)
                    guard remap[j] >= 0, ops.hot[Int(remap[j])].heapKey == e.key,
                          ops.hot[Int(remap[j])].state == .ready else { continue }
                    let nop = remap[j]
                    let key = readyKey(nop, ops.hot[Int(nop)].priority)
                    ops.hot[Int(nop)].heapKey = key
                    entries.append(ReadyEntry(key: key, op: nop))
                }
                while rebuilt.count <= ns { rebuilt.append(Heap()) }
                rebuilt[ns] = Heap(entries)
            }
            lanes[l].heap = rebuilt[0]
            lanes[l].otherHeaps = Array(rebuilt.dropFirst())
            lanes[l].fronts = Heap()
            lanes[l].frontVersion = [UInt32](repeating: 0, count: rebuilt.count)
            if isSharing(lane: l) { for (s, h) in rebuilt.enumerated() where !h.isEmpty { pushFront(l, s) } }
            lanes[l].partials = Deque(lanes[l].partials.compactMap { remap[Int($0)] >= 0 ? remap[Int($0)] : nil })
        }
        // Concurrency keys hold unfinished ops only (never evicted): renumbered in place.
        for k in concurrencyKeys.indices {
            concurrencyKeys[k].holders = concurrencyKeys[k].holders.map { remap[Int($0)] }
            concurrencyKeys[k].waiting = Deque(concurrencyKeys[k].waiting.compactMap { remap[Int($0)] >= 0 ? remap[Int($0)] : nil })
        }
        opShares = rekey(opShares)
        agedAt = rekey(agedAt)
        for q in queues.indices {
            queues[q].members = queues[q].members.compactMap { remap[Int($0)] >= 0 ? remap[Int($0)] : nil }
            queues[q].barrier = m(queues[q].barrier)
        }
        for e in epochs.indices {
            epochs[e].closer = m(epochs[e].closer)
            epochs[e].opener = m(epochs[e].opener)
        }
        for w in workers.indices {
            workers[w].held = workers[w].held.compactMap { key in
                let op = remap[Int(key >> 16)]
                return op >= 0 ? partKey(op, Int(key & 0xFFFF)) : nil
            }
        }
        timers.renumberOps(remap)
        runs.renumberOps(remap)
        for i in story.indices { story[i].op = m(story[i].op) }
        deadOps = 0
        compactions += 1
    }
}
