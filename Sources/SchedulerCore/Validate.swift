// Full invariant check (O(ops + edges + workers)); for tests and debugging, not the hot path.

extension Scheduler {
    /// Every broken invariant as text; empty when the state is consistent.
    public func validate() -> [String] {
        var bad: [String] = []
        func check(_ ok: Bool, _ msg: @autoclosure () -> String) { if !ok { bad.append(msg()) } }
        let n = ops.count
        // The op store's own structure first: the rest reads it.
        bad = ops.validate()
        if !bad.isEmpty { return bad }
        // Per-queue counters and epochs.
        var pending = [Int32](repeating: 0, count: queues.count), ready = pending, dispatched = pending, executing = pending
        var laneReady = [Int32](repeating: 0, count: lanes.count)
        var ok = pending, failed = pending, cancelled = pending
        var epochOpen = [Int32](repeating: 0, count: epochs.count)
        var implicitIn = [Int32](repeating: 0, count: n)
        func dead(_ i: Int) -> Bool { ops.hot[i].flags & Flag.evicted != 0 }
        for i in 0..<n where !dead(i) {
            var e = ops.hot[i].firstOut
            while e >= 0 {
                if ops.hot[i].state != .finished { implicitIn[Int(ops.dependents.edges[Int(e)].dependent)] += 1 }
                e = ops.dependents.next[Int(e)]
            }
        }
        for c in epochs where c.closer >= 0 { implicitIn[Int(c.closer)] += 1 }
        var validHeapEntries = [Int32](repeating: 0, count: n)
        for (l, lane) in lanes.enumerated() {
            let sharing = isSharing(lane: l)
            if sharing {
                check(lane.heap.isEmpty, "lane \(l): \(lane.heap.count) entries in its heap while it shares")
            } else {
                check(lane.shares.isEmpty && lane.fronts.isEmpty, "lane \(l): \(lane.shares.count) share queues without sharing")
            }
            for (s, entries) in lane.entriesBySlot.enumerated() {
                for e in entries {
                    let j = Int(e.op)
                    guard ops.hot[j].state == .ready && ops.hot[j].heapKey == e.key else { continue }
                    validHeapEntries[j] += 1
                    check(Int(ops.hot[j].share) == s && Int(ops.hot[j].lane) == l, "\(ops.ids[j]): in the heap of lane \(l) share \(s), not its own")
                }
                // With sharing, a share queue with entries has exactly one current front (FairShare.swift).
                if sharing {
                    let version = s < lane.shares.count ? lane.shares[s].frontVersion : 0
                    let current = lane.fronts.unordered.filter { Int($0.slot) == s && $0.version == version }.count
                    check(current == (entries.isEmpty ? 0 : 1) || (entries.isEmpty && current <= 1),
                          "lane \(l) share \(s): \(current) current fronts for \(entries.count) entries")
                }
            }
        }
        // Concurrency keys agree with the ops; no key over its limit unless the limit was lowered under
        // its holders (they finish; none is added).
        var keyHolders = [Int](repeating: 0, count: concurrencyKeys.count)
        for i in 0..<n where !dead(i) {
            let q = queueOf(Int32(i)).index
            check(Int(ops.hot[i].share) < shareTables[q].slots.count, "\(ops.ids[i]): share slot \(ops.hot[i].share) beyond its queue's \(shareTables[q].slots.count)")
            if ops.hot[i].state.occupiesQueue {
                let k = ops.hot[i].concurrencyKey
                if k.isKey {
                    keyHolders[k.index] += 1
                    check(concurrencyKeys[k].holders.contains(Int32(i)), "\(ops.ids[i]): holds key \(concurrencyKeys[k].name) unlisted")
                }
            }
            if ops.hot[i].heapKey == Scheduler.heldForKey && ops.hot[i].state == .ready {
                let k = ops.hot[i].concurrencyKey
                check(k.isKey && concurrencyKeys[k].waiting.contains(Int32(i)), "\(ops.ids[i]): held for a key it does not wait for")
            }
        }
        for (k, key) in concurrencyKeys.enumerated() {
            check(key.holders.count == keyHolders[k], "key \(key.name): \(key.holders.count) holders listed, \(keyHolders[k]) hold it")
            let limit = queues[key.queue].fairness.keyLimit
            if limit > 0 && key.holders.count > limit {
                check(keyLimitLowered, "key \(key.name): \(key.holders.count) holders over its limit \(limit)")
            }
            // Under a key rate, waiters of a key below its limit have a wake (or they would wait for ever).
            if key.rateWakeAt != .max {
                check(timers.keyRates.unordered.contains { $0.target == ConcurrencyKeyIndex(k) && $0.at == key.rateWakeAt }, "key \(key.name): its wake is not armed")
            }
            if queues[key.queue].fairness.keyRate != nil && (limit <= 0 || key.holders.count < limit) && hasLiveWaiter(ConcurrencyKeyIndex(k)) {
                check(key.rateWakeAt != .max, "key \(key.name): ops wait for a token, none is due")
            }
        }
        var inflightCount = [Int32](repeating: 0, count: n)
        var perWorker = [Int](repeating: 0, count: workers.count)
        var runningPerWorker = [Int](repeating: 0, count: workers.count)
        for op in 0..<n {
            for part in 0..<Int(ops.hot[op].parts) {
                guard let f = inflightGet(Int32(op), part) else { continue }
                inflightCount[op] += 1
                perWorker[f.worker.index] += 1
                if isStarted(Int32(op), part) { runningPerWorker[f.worker.index] += 1 }
                check(workers[f.worker].alive, "in-flight part of \(ops.ids[op]) on lost worker")
                check(workers[f.worker].held.contains(partKey(Int32(op), part)), "worker does not list in-flight part of \(ops.ids[op])")
            }
        }
        for (w, c) in perWorker.enumerated() {
            check(workers[w].inflightCount == c, "worker \(workers[w].id): inflightCount \(workers[w].inflightCount) ≠ \(c)")
            check(workers[w].running == runningPerWorker[w], "worker \(workers[w].id): running \(workers[w].running) ≠ \(runningPerWorker[w]) started parts")
        }
        // Whose retry delay runs, as "op attempt" (a delayed op waits for its current attempt's).
        let retryTimers = Set(timers.retryDelays.unordered.map { "\($0.op.raw) \($0.attempt)" })
        for i in 0..<n where !dead(i) {
            let q = queueOf(Int32(i)).index
            let id = ops.ids[i]
            let cancelledFlag = ops.hot[i].flags & Flag.cancelled != 0
            if ops.hot[i].state != .finished { epochOpen[Int(ops.hot[i].epoch)] += 1 }
            check(Int(ops.hot[i].inflightParts) == Int(inflightCount[i]), "\(id): inflightParts \(ops.hot[i].inflightParts) ≠ \(inflightCount[i])")
            switch ops.hot[i].state {
            case .pending:
                pending[q] += 1
                check(ops.hot[i].unfinishedDeps > 0, "\(id): pending with no unfinished prerequisite")
                check(ops.hot[i].unfinishedDeps == implicitIn[i], "\(id): unfinishedDeps \(ops.hot[i].unfinishedDeps) ≠ \(implicitIn[i]) open prerequisites")
                check(!cancelledFlag, "\(id): cancelled but still pending")
            case .delayed:
                pending[q] += 1
                check(ops.hot[i].parts == 1, "\(id): a multi-part op delayed (its parts are)")
                check(implicitIn[i] == 0 && ops.hot[i].unfinishedDeps == 0, "\(id): delayed with open prerequisites")
                check(!cancelledFlag, "\(id): cancelled but still delayed")
                check(ops.hot[i].waitingParts == 0 && ops.hot[i].inflightParts == 0, "\(id): delayed but waiting or in flight")
                check(retryTimers.contains("\(i) \(ops.hot[i].attempt)"),
                      "\(id): delayed with no retry timer for attempt \(ops.hot[i].attempt)")
            case .ready:
                ready[q] += 1
                laneReady[Int(ops.hot[i].lane)] += 1
                let held: Int32 = ops.hot[i].heapKey == Scheduler.heldForKey ? 1 : 0
                check(validHeapEntries[i] + held == 1, "\(id): ready with \(validHeapEntries[i]) heap entries (held for a key: \(held))")
                check(!cancelledFlag, "\(id): cancelled but still ready")
                check(implicitIn[i] == 0, "\(id): ready with open prerequisites")
            case .dispatched, .executing:
                if ops.hot[i].state == .dispatched { dispatched[q] += 1 } else { executing[q] += 1 }
                if ops.hot[i].parts == 1 {
                    check(ops.hot[i].holder.isWorker || cancelledFlag, "\(id): \(ops.hot[i].state) but on no worker")
                } else if ops.hot[i].state == .dispatched {
                    check(!ops.multi[Int32(i)].status.contains(.running), "\(id): dispatched with a running part")
                }
                if !cancelledFlag {
                    let s = Int(ops.cold[i].depStart)
                    for d in ops.depList[s..<s + Int(ops.cold[i].depCount)] {
                        check(ops.hot[Int(d)].state == .finished, "\(id): executing before dependency \(ops.ids[Int(d)]) finished")
                    }
                    let done = Int(ops.hot[i].parts) - Int(ops.hot[i].partsLeft)
                    let delayed = (0..<Int(ops.hot[i].parts)).filter { ops.partStatus(Int32(i), $0) == .delayed }.count
                    check(Int(ops.hot[i].waitingParts) + Int(ops.hot[i].inflightParts) + done + delayed == Int(ops.hot[i].parts),
                          "\(id): parts waiting \(ops.hot[i].waitingParts) + in flight \(ops.hot[i].inflightParts) + done \(done) + delayed \(delayed) ≠ \(ops.hot[i].parts)")
                    if ops.hot[i].waitingParts > 0 { check(ops.hot[i].flags & Flag.inPartials != 0, "\(id): waiting part not queued") }
                } else {
                    check(ops.hot[i].inflightParts > 0, "\(id): cancelling with nothing in flight")
                }
            case .finished:
                switch ops.hot[i].outcome {
                case .succeeded: ok[q] += 1
                case .failed: failed[q] += 1
                case .cancelled: cancelled[q] += 1
                case .none: bad.append("\(id): finished without outcome")
                }
                check(ops.hot[i].inflightParts == 0, "\(id): finished with parts in flight")
            }
            if ops.hot[i].state != .finished { check(ops.hot[i].outcome == .none, "\(id): outcome before finished") }
        }
        for (qi, s) in queues.enumerated() {
            check(s.pending == pending[qi] && s.ready == ready[qi] && s.dispatched == dispatched[qi] && s.executing == executing[qi],
                  "queue \(s.name): counts p/r/d/x \(s.pending)/\(s.ready)/\(s.dispatched)/\(s.executing) ≠ \(pending[qi])/\(ready[qi])/\(dispatched[qi])/\(executing[qi])")
            check(s.succeeded == ok[qi] && s.failed == failed[qi] && s.cancelled == cancelled[qi],
                  "queue \(s.name): finished counts differ")
            for level in 0..<5 {
                let inRing = rings[level].contains(QueueIndex(qi))
                check(inRing == (s.inRing & (1 << UInt8(level)) != 0), "queue \(s.name): ring flag at level \(level)")
            }
        }
        for (l, lane) in lanes.enumerated() {
            check(lane.readyCount == laneReady[l], "lane \(l): readyCount \(lane.readyCount) ≠ \(laneReady[l])")
        }
        for c in epochs where c.next >= 0 { epochOpen[Int(c.next)] += 1 }
        for (e, c) in epochs.enumerated() {
            check(c.unfinished == epochOpen[e], "epoch \(e): unfinished \(c.unfinished) ≠ \(epochOpen[e])")
        }
        // Runs: every live op is in exactly one retained run, whose counts agree.
        var inRuns = [Int32](repeating: 0, count: n)
        var finishedRetained = 0
        for (slot, r) in runs.all {
            check(runs.slot(named: r.name) == slot, "run \(r.name): not indexed at slot \(slot)")
            var open: Int32 = 0, succ: Int32 = 0, fail: Int32 = 0, canc: Int32 = 0
            var last: Int32 = -1
            for op in r.ops {
                let i = Int(op)
                check(!dead(i), "run \(r.name): evicted op \(ops.ids[i]) still listed")
                check(ops.hot[i].run == slot, "\(ops.ids[i]): run slot \(ops.hot[i].run) ≠ \(slot)")
                check(op > last, "run \(r.name): ops not in submission order")
                last = op
                inRuns[i] += 1
                switch ops.hot[i].outcome {
                case .none: open += 1
                case .succeeded: succ += 1
                case .failed: fail += 1
                case .cancelled: canc += 1
                }
            }
            check(r.unfinished == open && r.succeeded == succ && r.failed == fail && r.cancelled == canc,
                  "run \(r.name): counts open/ok/failed/cancelled \(r.unfinished)/\(r.succeeded)/\(r.failed)/\(r.cancelled) ≠ \(open)/\(succ)/\(fail)/\(canc)")
            check((r.finishedAt != 0) == (open == 0 && !r.ops.isEmpty), "run \(r.name): finishedAt \(r.finishedAt) with \(open) open")
            if r.finishedAt != 0 && !r.name.isEmpty { finishedRetained += 1 }
        }
        check(finishedRetained == finishedRunCount, "finished runs \(finishedRunCount) ≠ \(finishedRetained)")
        // Retention by bytes (RetainBytes.swift): each run's count is what its finished ops hold.
        var totalBytes = 0
        for (_, r) in runs.all {
            let held = r.ops.reduce(0) { ops.hot[Int($1)].state == .finished ? $0 + heldBytes($1) : $0 }
            check(r.bytes == held, "run \(r.name): bytes \(r.bytes) ≠ \(held) held")
            totalBytes += r.bytes
        }
        check(runs.slotsByName.count == runs.all.reduce(0) { n, _ in n + 1 }, "run names index \(runs.slotsByName.count) runs, not the retained ones")
        check(totalBytes == retainedBytes, "retained bytes \(retainedBytes) ≠ \(totalBytes)")
        var pins = [RunSlot: Int32]()
        for (op, rs) in crossRunDeps {
            check(ops.hot[Int(op)].state != .finished, "\(ops.ids[Int(op)]): finished but still pins runs")
            for r in rs { pins[r, default: 0] += 1 }
        }
        for (slot, r) in runs.all {
            check(r.pins == pins[slot, default: 0], "run \(r.name): pins \(r.pins) ≠ \(pins[slot, default: 0])")
        }
        var deadCount = 0
        for i in 0..<n {
            if dead(i) { deadCount += 1; continue }
            if ops.hot[i].state != .finished {
                let s = Int(ops.cold[i].depStart)
                for d in ops.depList[s..<s + Int(ops.cold[i].depCount)] where dead(Int(d)) {
                    bad.append("\(ops.ids[i]): unfinished, but its dependency's run was evicted (pins)")
                }
            }
            check(inRuns[i] == 1, "\(ops.ids[i]): listed in \(inRuns[i]) runs")
            check(lookup(ops.ids[i]) == Int32(i), "\(ops.ids[i]): id table does not find it")
        }
        check(deadCount == deadOps, "dead rows \(deadOps) ≠ \(deadCount)")
        check(idTable.count == n - deadCount, "id table holds \(idTable.count) keys for \(n - deadCount) live ops")
        // Workers and credit.
        var total = 0
        for w in workers {
            check(w.credit >= 0, "worker \(w.id): negative credit")
            check(!w.alive || w.credit + w.inflightCount <= w.capacity,
                  "worker \(w.id): credit \(w.credit) + held \(w.inflightCount) over its capacity \(w.capacity)")
            if w.alive { total += w.credit } else {
                check(w.credit == 0 && w.inflightCount == 0, "lost worker \(w.id) holds credit or parts")
            }
        }
        check(total == workers.totalCredit, "total credit \(workers.totalCredit) ≠ \(total)")
        for (ci, c) in workers.classes.enumerated() {
            let sum = c.capable.reduce(0) { $0 + (workers[$1].alive ? workers[$1].credit : 0) }
            check(sum == c.credit, "class \(ci): credit \(c.credit) ≠ \(sum)")
            for w in c.capable where workers[w].alive && workers[w].credit > 0 {
                check(c.rr.contains { $0.0 == w && $0.1 == workers[w].creditEpoch },
                      "class \(ci): worker \(workers[w].id) has credit but is not in the round-robin")
            }
        }
        // A wait counts an op until it finishes (then the op's entry goes): only unfinished ops are
        // waited on, each by open waits.
        for (op, wids) in waits.waitsByOp {
            check(op >= 0 && Int(op) < n && ops.hot[Int(op)].state != .finished, "op \(op) is waited on but finished or unknown")
            check(wids.allSatisfy(waits.isOpen), "op \(op) is counted by an answered wait")
        }
        return bad
    }
}
