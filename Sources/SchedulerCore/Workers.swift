import HeapModule
import DequeModule

// Worker registry: join, credits, liveness, loss (re-queue in-flight parts or fail them).

extension Scheduler {
    mutating func workerJoined(_ h: WorkerHello, _ out: inout [Action]) {
        for old in h.replaces {
            guard let w = workers.byID[old], workers[w].alive else { continue }
            loseWorker(w, "replaced by a new session of worker '\(h.name)'", &out)
        }
        if workers.byID[h.worker] != nil || h.slots < 0 || (h.credit ?? 0) < 0 || (h.prefetch ?? 0) < 0 {
            out.append(.disconnectWorker(worker: h.worker, reason: workers.byID[h.worker] != nil
                ? "worker id \(h.worker) already used" : "negative slots, credit or prefetch"))
            return
        }
        let w = workers.join(h, capacity: h.slots + min(h.prefetch ?? h.slots, config.maxPrefetch), at: now)
        metrics.workersJoined &+= 1
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
        guard let w = workers.byID[id] else { fencing.unknownWorker += 1; return nil }
        guard workers[w].alive else { fencing.lostWorker += 1; return nil }
        workers[w].lastSeen = now
        return w
    }

    /// Moves every live worker's last-seen time forward by a pause of the coordinator's own (never past
    /// `now`): its messages may be waiting unread in the socket. O(workers), once per pause over budget.
    mutating func excuseSilence(_ micros: Int64) {
        guard micros > 0 else { return }
        workers.excuseSilence(micros, now: now)
    }

    mutating func creditGrant(_ id: UInt64, _ n: Int) {
        guard let w = liveWorker(id), n > 0 else { return }
        giveCredit(w, n)
    }

    /// Adds credit (`WorkerPool.giveCredit`); queues parked on a class that had none go back on their rings.
    @inline(__always)
    mutating func giveCredit(_ w: WorkerIndex, _ grant: Int) {
        if workers.giveCredit(w, grant) { for q in workers.takeUnparked() { activateAll(q) } }
    }

    mutating func workerLostInput(_ id: UInt64, _ reason: String, _ out: inout [Action]) {
        guard let w = workers.byID[id] else { fencing.unknownWorker += 1; return }
        guard workers[w].alive else { return }
        loseWorker(w, reason, &out)
    }

    /// Every in-flight part goes back to its lane with attempt+1 until the op's loss-retry limit,
    /// then the op fails with "worker lost". Nothing is dropped.
    mutating func loseWorker(_ w: WorkerIndex, _ reason: String, _ out: inout [Action]) {
        let keys = workers.lose(w, reason)   // dispatch order: deterministic
        metrics.workersLost &+= 1
        if journaling { out.append(.journal(.workerLeft(name: workers[w].name))) }
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
