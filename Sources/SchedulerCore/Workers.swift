import HeapModule
import DequeModule

// Worker registry: join, credits, liveness, loss (re-queue in-flight parts or fail them).

extension Scheduler {
    mutating func workerJoined(_ h: WorkerHello, _ out: inout [Action]) {
        for old in h.replaces {
            guard let w = workerIndex[old], workers[w].alive else { continue }
            loseWorker(w, "replaced by a new session of worker '\(h.name)'", &out)
        }
        if workerIndex[h.worker] != nil || h.slots < 0 || (h.credit ?? 0) < 0 || (h.prefetch ?? 0) < 0 {
            out.append(.disconnectWorker(worker: h.worker, reason: workerIndex[h.worker] != nil
                ? "worker id \(h.worker) already used" : "negative slots, credit or prefetch"))
            return
        }
        // Only tags and kinds that ops use are interned; the others wait as names (see WorkerState).
        var mask: UInt64 = 0
        for t in h.tags { if let b = tagBits[t] { mask |= 1 << UInt64(b) } }
        let kinds = Set(h.kinds.compactMap { kindIndex[$0] })
        let w = WorkerIndex(workers.count)
        let capacity = h.slots + min(h.prefetch ?? h.slots, config.maxPrefetch)
        workers.append(WorkerState(id: h.worker, name: h.name, owner: h.owner, slots: h.slots, capacity: capacity, tags: mask, kinds: kinds,
                                   tagNames: Set(h.tags), kindNames: Set(h.kinds), lastSeen: now))
        workerIndex[h.worker] = w
        liveWorkers += 1
        metrics.workersJoined &+= 1
        for c in classes.indices where capable(workers[w], classes[c]) {
            classes[c].capable.append(w)
            workers[w].classes.append(Int32(c))
        }
        timers.workerLiveness.insert(TargetDeadline(at: now &+ config.livenessBoundMicros, target: w))
        if journaling {
            out.append(.journal(.workerSession(id: h.worker, name: h.name, owner: h.owner)))
            out.append(.journal(.workerJoined(name: h.name)))
        }
        giveCredit(w, h.credit ?? h.slots)
        workerClaims(w, h, &out)
    }

    /// Index of a live worker after refreshing its last-seen time; nil (and counted) otherwise.
    mutating func liveWorker(_ id: UInt64) -> WorkerIndex? {
        guard let w = workerIndex[id] else { fencing.unknownWorker += 1; return nil }
        guard workers[w].alive else { fencing.lostWorker += 1; return nil }
        workers[w].lastSeen = now
        return w
    }

    /// Moves every live worker's last-seen time forward by a pause of the coordinator's own (never past
    /// `now`): its messages may be waiting unread in the socket. O(workers), once per pause over budget.
    mutating func excuseSilence(_ micros: Int64) {
        guard micros > 0 else { return }
        for i in workers.indices where workers[i].alive {
            workers[i].lastSeen = min(now, workers[i].lastSeen &+ micros)
        }
    }

    mutating func creditGrant(_ id: UInt64, _ n: Int) {
        guard let w = liveWorker(id), n > 0 else { return }
        giveCredit(w, n)
    }

    /// Adds credit, never beyond what the worker may hold (`capacity` − parts it holds): extra credit
    /// from a greedy or buggy worker is ignored.
    mutating func giveCredit(_ w: WorkerIndex, _ grant: Int) {
        let n = min(grant, workers[w].capacity - workers[w].inflightCount - workers[w].credit)
        guard n > 0 else { return }
        let wasZero = workers[w].credit == 0
        workers[w].credit += n
        totalCredit += n
        if wasZero { workers[w].creditEpoch &+= 1 }
        let ep = workers[w].creditEpoch
        for c32 in workers[w].classes {
            let c = Int(c32)
            let before = classes[c].credit
            classes[c].credit += n
            if wasZero { classes[c].rr.append((w, ep)) }
            if before <= 0 && !classes[c].parked.isEmpty {
                let parked = classes[c].parked
                classes[c].parked.removeAll(keepingCapacity: true)
                for q in parked { activateAll(q) }
            }
        }
    }

    mutating func takeCredit(_ w: WorkerIndex, _ n: Int) {
        workers[w].credit -= n
        totalCredit -= n
        for c in workers[w].classes { classes[Int(c)].credit -= n }
    }

    mutating func workerLostInput(_ id: UInt64, _ reason: String, _ out: inout [Action]) {
        guard let w = workerIndex[id] else { fencing.unknownWorker += 1; return }
        guard workers[w].alive else { return }
        loseWorker(w, reason, &out)
    }

    /// Every in-flight part goes back to its lane with attempt+1 until the op's loss-retry limit,
    /// then the op fails with "worker lost". Nothing is dropped.
    mutating func loseWorker(_ w: WorkerIndex, _ reason: String, _ out: inout [Action]) {
        takeCredit(w, workers[w].credit)
        workers[w].alive = false
        workers[w].lostReason = reason
        metrics.workersLost &+= 1
        if journaling { out.append(.journal(.workerLeft(name: workers[w].name))) }
        workers[w].tagNames = []     // what the peer sent is released with it
        workers[w].kindNames = []
        liveWorkers -= 1
        let keys = workers[w].held         // dispatch order: deterministic
        workers[w].held = []
        for key in keys {
            let op = Int32(truncatingIfNeeded: key >> 16)
            let part = Int(key & 0xFFFF)
            // Stale keys, and parts an earlier part's failure already took back, are skipped.
            guard inflightGet(op, part)?.worker == w else { continue }
            inflightClear(op, part)
            let i = Int(op)
            ops.hot[i].inflightParts -= 1
            if ops.hot[i].flags & Flag.cancelled != 0 {
                partDone(op, part, [])
                if ops.hot[i].inflightParts == 0 { finishOp(op, .cancelled(ops.reasons[op] ?? "cancelled"), &out) }
            } else if ops.hot[i].lossRetriesLeft > 0 {
                ops.hot[i].lossRetriesLeft -= 1
                requeuePart(op, part, why: .workerLost, delay: 0, &out)
            } else {
                finishOp(op, .failed("worker lost: \(reason)"), &out)
            }
        }
    }

    mutating func checkLiveness(_ out: inout [Action]) {
        let bound = config.livenessBoundMicros
        while let top = timers.workerLiveness.popDue(now) {
            let w = top.target
            guard workers[w].alive else { continue }
            let due = workers[w].lastSeen &+ bound
            if due <= now {
                let id = workers[w].id
                metrics.heartbeatLosses &+= 1
                loseWorker(w, "silent for \(now - workers[w].lastSeen) µs", &out)
                out.append(.disconnectWorker(worker: id, reason: "missed \(config.missedHeartbeats) heartbeats"))
            } else {
                takeBackUnstarted(w, &out)
                timers.workerLiveness.insert(TargetDeadline(at: min(due, now &+ bound), target: top.target))
            }
        }
    }

    /// Parts held by worker `w` that were dispatched longer than `startTimeoutMicros` ago and have not
    /// started go back to be dispatched again (attempt + 1, no retry used): a worker cannot sit on work.
    /// Its later report of them is fenced. O(parts it holds), at its liveness ticks.
    mutating func takeBackUnstarted(_ w: WorkerIndex, _ out: inout [Action]) {
        let bound = config.startTimeoutMicros
        guard bound > 0, workers[w].inflightCount > workers[w].running else { return }
        for key in workers[w].held {
            let op = Int32(truncatingIfNeeded: key >> 16)
            let part = Int(key & 0xFFFF)
            let i = Int(op)
            guard let f = inflightGet(op, part), f.worker == w, !isStarted(op, part),
                  ops.hot[i].flags & Flag.cancelled == 0, now - ops.cold[i].dispatchedAt >= bound else { continue }
            out.append(.cancelOnWorker(worker: workers[w].id, op: ops.ids[i], part: part, attempt: Int(f.attempt),
                                       reason: "not started within \(durationText(bound)); dispatched again"))
            inflightClear(op, part)
            ops.hot[i].inflightParts -= 1
            requeuePart(op, part, why: .notStarted, delay: 0, &out)
        }
    }
}
