import HeapModule
import DequeModule

// The dispatch rule: QoS levels high→low; round-robin of queues within a level; in a queue, parts of
// already-running ops first, then the best ready op (priority, then FIFO) among lanes whose placement
// class has a worker with credit. Never over a queue limit or a worker's credit.

extension Scheduler {
    mutating func pump(_ out: inout [Action]) {
        if recovery.hold != nil { return }   // after recovery, until the workers that were connected are back (Recovery.swift)
        var level = 4
        while level >= 0 {
            while workers.totalCredit > 0, let q = rings[level].first {
                rings[level].removeFirst()
                if tryDispatchOne(q, level, &out) {
                    rings[level].append(q)
                } else {
                    queues[q].inRing &= ~(UInt8(1) << UInt8(level))
                }
            }
            if workers.totalCredit == 0 { return }
            level -= 1
        }
    }

    /// Starts one part from queue `q` at QoS `level`; false when nothing there can start now
    /// (the queue is then re-activated by resume, a freed limit slot, new ready ops or new credit).
    mutating func tryDispatchOne(_ q: QueueIndex, _ level: Int, _ out: inout [Action]) -> Bool {
        if queues[q].suspended { return false }
        let atLimit = queues[q].atLimit
        // A queue over its rate starts no new op (parts of running ops still go); a tick brings it back.
        let rateAllows = queues[q].fairness.rate == nil || admitByRate(q)
        let sharing = shareTables[q].isSharing
        var bestLane = -1
        var bestKey = Int64.min
        var bestPass = Int64.max
        var bestShare = 0
        var partialOp: Int32 = -1
        var blockedByCredit = false
        let laneList = queues[q].lanesByQos[level]
        for l32 in laneList {
            let l = Int(l32)
            if heapsEmpty(l) && lanes[l].partials.isEmpty { continue }
            if workers.classes[Int(lanes[l].cls)].credit <= 0 {
                if cleanPartials(l) != nil || (!atLimit && rateAllows && cleanHead(l) != nil) { blockedByCredit = true }
                continue
            }
            if let p = cleanPartials(l) { partialOp = p; bestLane = l; break }
            if atLimit || !rateAllows { continue }
            if sharing {
                guard let h = sharedHead(l) else { continue }
                if bestLane < 0 || Scheduler.goesFirst(h.entry.key, h.pass, before: bestKey, bestPass) {
                    bestKey = h.entry.key; bestPass = h.pass; bestShare = h.slot; bestLane = l
                }
            } else {
                guard let e = cleanHeap(l) else { continue }
                if e.key > bestKey { bestKey = e.key; bestLane = l }
            }
        }
        if bestLane < 0 {
            if blockedByCredit {
                for l32 in laneList where !(heapsEmpty(Int(l32)) && lanes[Int(l32)].partials.isEmpty) {
                    workers.park(q, onClass: Int(lanes[Int(l32)].cls))
                }
            }
            return false
        }
        let op: Int32
        if partialOp >= 0 {
            op = partialOp
        } else {
            op = sharing ? takeHead(bestLane, share: bestShare) : lanes[bestLane].heap.popMax()!.op
            // Its concurrency key full: it waits (or a cancel strategy acts); the queue may start another.
            guard !ops.hot[Int(op)].concurrencyKey.isKey || admitByKey(op, &out) else {
                if sharing { settleShare(bestLane, share: bestShare, dispatched: false) }
                return true
            }
            if sharing { settleShare(bestLane, share: bestShare, dispatched: true) }
            if queues[q].fairness.rate != nil { chargeRate(q) }
            transition(op, to: .dispatched, nil)   // dispatchPart records the part's dispatch
        }
        dispatchPart(op, cls: lanes[bestLane].cls, &out)
        let i = Int(op)
        if ops.hot[i].waitingParts > 0 && ops.hot[i].flags & Flag.inPartials == 0 { pushPartial(op) }
        return true
    }

    mutating func dispatchPart(_ op: Int32, cls: Int32, _ out: inout [Action]) {
        let i = Int(op)
        let w = workers.pickWorker(Int(cls))
        var part = 0
        if ops.hot[i].parts > 1 {
            guard let waiting = ops.multi[op].status.firstIndex(of: .waiting) else {
                preconditionFailure("\(ops.ids[i]): dispatched with no part waiting (waitingParts \(ops.hot[i].waitingParts))")
            }
            part = waiting
            ops.multi[op].status[part] = .dispatched
        }
        ops.cold[i].dispatchedAt = now
        metrics.dispatched &+= 1
        if ops.hot[i].attempt == 1 {
            metrics.queueWait.add(now - (ops.cold[i].readyAt != 0 ? ops.cold[i].readyAt : ops.cold[i].submittedAt))
        }
        ops.hot[i].waitingParts -= 1
        ops.hot[i].inflightParts += 1
        workers.takeCredit(w, 1)
        workers[w].dispatched += 1
        let attempt = ops.hot[i].attempt
        inflightSet(op, part, w, attempt)
        let wid = workers[w].id
        record(op, .dispatched, part: part, extra: w.raw)
        var inputs: [(String, [UInt8])] = []
        let dc = Int(ops.cold[i].depCount)
        if dc > 0 {
            inputs.reserveCapacity(dc)
            let s = Int(ops.cold[i].depStart)
            // A dependency's run is never evicted before its dependents finish (pins, Runs.swift;
            // `validate` checks it), so every succeeded dependency's result is still here.
            for d in ops.depList[s..<s + dc] where ops.hot[Int(d)].outcome == .succeeded {
                inputs.append((inputName(d, of: op), ops.results.isEmpty ? [] : ops.results[d] ?? []))
            }
        }
        let laneQoS = lanes[Int(ops.hot[i].lane)].qos
        out.append(.dispatch(Dispatch(worker: wid, op: ops.ids[i], name: ops.names.isEmpty ? nil : ops.names[op], part: part, parts: Int(ops.hot[i].parts),
                                      attempt: Int(attempt), kind: workers.kindNames[Int(workers.classes[Int(cls)].kind)],
                                      payload: ops.payloads[i], inputs: inputs, priority: Int(ops.hot[i].priority),
                                      qos: OperationQoS(rank: Int(laneQoS))!, token: UInt64(i))))
        if !watchers.isEmpty {
            publish(op, .dispatched(part: part, attempt: Int(attempt), worker: wid), &out)
        }
    }

    /// A dependency as `op` sees it: by its bare id in the same run, as "RUN/OP" from another run
    /// (handler inputs, and the reasons of cancelled dependents).
    func inputName(_ d: Int32, of op: Int32) -> String {
        let key = ops.ids[Int(d)]
        guard ops.hot[Int(d)].run == ops.hot[Int(op)].run, let (_, bare) = RunNames.split(key) else { return key }
        return String(bare)
    }
}
