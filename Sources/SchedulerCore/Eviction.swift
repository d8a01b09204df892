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
            ops.forgetEvicted(op)
        }
        deadOps += r.ops.count
        retainedBytes -= r.bytes
        finishedRunCount -= 1
        rememberEvicted(r.name, finishedAt: r.finishedAt, evictedAt: now)
        for k in r.submissionKeys { submissionKeys[k] = nil }
        watchers.runEvicted(slot)
        runs.remove(slot)
    }

    /// An evicted run's name is remembered (to say "evicted", not "unknown"), the oldest forgotten first.
    mutating func rememberEvicted(_ name: String, finishedAt: Int64, evictedAt: Int64) {
        evictedRuns.remember(name, EvictedRun(finishedAt: finishedAt, evictedAt: evictedAt), limit: config.evictedRunsRemembered)
    }

    /// Drops the evicted ops' rows: the op store renumbers the rest (in order) and every table that
    /// stores op indices applies its `OpRemap`.
    mutating func compact() {
        let remap = ops.compactEvicted()
        waits.renumberOps(remap); crossRunDeps = remap.rekeyed(crossRunDeps); cancelAskedAt = remap.rekeyed(cancelAskedAt)

        // The id table stores index + 1 per slot: rewritten in place.
        idTable.remap { remap[$0] }

        // Share slots and concurrency keys that no live op names are dropped (FairShareCompaction.swift).
        let slotRemaps = compactShareSlots()
        compactConcurrencyKeys()

        // Ready heaps: live entries get keys with their new index (same order: renumbering is monotonic),
        // in their share's new slot.
        for l in lanes.indices {
            let slotRemap = slotRemaps[lanes[l].queue.index]
            var rebuilt: [[ReadyEntry]] = [[]]
            for (s, old) in lanes[l].entriesBySlot.enumerated() {
                // A dropped slot has no live op, so no live entry.
                let ns = slotRemap.isEmpty ? s : Int(slotRemap[s])
                guard ns >= 0 else { continue }
                var entries: [ReadyEntry] = []
                for e in old {
                    let op = remap[e.op]
                    guard op >= 0, ops.hot[Int(op)].heapKey == e.key, ops.hot[Int(op)].state == .ready else { continue }
                    let key = readyKey(op, ops.hot[Int(op)].priority)
                    ops.hot[Int(op)].heapKey = key
                    entries.append(ReadyEntry(key: key, op: op))
                }
                while rebuilt.count <= ns { rebuilt.append([]) }
                rebuilt[ns] = entries
            }
            lanes[l].fronts = Heap()
            if isSharing(lane: l) {
                lanes[l].heap = Heap()
                lanes[l].shares = rebuilt.map(ShareQueue.init)
                for s in rebuilt.indices where !rebuilt[s].isEmpty { pushFront(l, s) }
            } else {
                // A queue left with one share slot stops sharing (`compactShareSlots`): its ops are slot 0's.
                precondition(rebuilt.dropFirst().allSatisfy(\.isEmpty), "lane \(l): entries of share slots above 0 in a lane that does not share")
                lanes[l].heap = Heap(rebuilt[0])
                lanes[l].shares = []
            }
            lanes[l].partials = remap.renumbered(lanes[l].partials)
        }
        // Concurrency keys hold unfinished ops only (never evicted): renumbered in place.
        for k in concurrencyKeys.indices {
            concurrencyKeys[k].holders = concurrencyKeys[k].holders.map { remap.kept($0) }
            concurrencyKeys[k].waiting = remap.renumbered(concurrencyKeys[k].waiting)
        }
        opShares = remap.rekeyed(opShares)
        agedAt = remap.rekeyed(agedAt)
        for q in queues.indices {
            queues[q].members = remap.renumbered(queues[q].members)
            queues[q].barrier = remap[queues[q].barrier]
        }
        for e in epochs.indices {
            epochs[e].closer = remap[epochs[e].closer]
            epochs[e].opener = remap[epochs[e].opener]
        }
        for w in workers.indices {
            workers[w].held = workers[w].held.compactMap { key in
                let op = remap[Int32(key >> 16)]
                return op >= 0 ? partKey(op, Int(key & 0xFFFF)) : nil
            }
        }
        timers.renumberOps(remap)
        runs.renumberOps(remap)
        story.renumberOps(remap)
        deadOps = 0
        compactions += 1
    }
}
