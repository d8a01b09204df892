// Recovery (A5; docs/ARCHITECTURE.md, "Journal and recovery"). The shell replays the journal's records
// into a fresh core (`Event.restore`, each with the time it was made), then says `Event.recovered`.
// Replay goes through the same paths as the original requests, with no worker connected, so nothing is
// dispatched while it runs; what was dispatched or running when the coordinator stopped comes back
// ready. Then dispatch is held until the workers that were connected have re-registered, or the
// liveness bound has passed: their HELLO says which attempts they hold and which they finished while
// the coordinator was away, and those are taken back (reattached) instead of running again.

/// A part named in workers' claims (HELLO `running` and `finished`).
private struct ClaimedPart: Hashable {
    var op: String
    var part: Int
    init(_ p: HeldPart) { op = p.op; part = p.part }
}

/// Where recovery from the journal stands (`Scheduler.recovery`).
struct RecoveryState {
    /// Replaying the journal: nothing is journalled, stories record nothing, no worker is connected.
    var replaying = false
    /// After replay, dispatch held for the workers that were connected (nil: not holding).
    var hold: RecoveryHold?
    /// Worker sessions by name as the journal told them (while replaying).
    var journalWorkers: Set<String> = []
    /// Sessions of before the restart, by id, as `workerSession` records named them (History.swift).
    var restoredWorkers: [UInt64: WorkerIndex] = [:]
    /// When replay ended (0: never replayed); stories of replayed ops end there (Story.swift).
    var recoveredAt: Int64 = 0
}

/// Dispatch held after recovery, for the workers that were connected (by name).
struct RecoveryHold {
    var until: Int64
    var awaited: Set<String>
    /// Workers that re-registered holding attempts, taken back when the hold ends.
    var claims: [(worker: WorkerIndex, hello: WorkerHello)] = []

    /// Where worker `w`'s claim lists the running attempt `ref` names: (its claim, its place in the
    /// claim's running list); nil when it holds no such claim.
    func heldAttempt(_ w: WorkerIndex, _ ref: PartRef) -> (claim: Int, running: Int)? {
        guard let c = claims.firstIndex(where: { $0.worker == w }),
              let k = claims[c].hello.running.firstIndex(where: { $0.op == ref.op && $0.part == ref.part && $0.attempt == ref.attempt })
        else { return nil }
        return (c, k)
    }
}

extension Scheduler {
    /// One journal record, applied as the original request was (its reply goes nowhere).
    mutating func restore(_ record: JournalRecord, _ out: inout [Action]) {
        recovery.replaying = true
        let ref = ClientRef(client: .max, request: 0)
        switch record {
        case .submitted(let run, let submitter, let specs, let qs, let key):
            noteRunName(run)
            let req = run.isEmpty ? RunRequest.unnamed : RunRequest(name: run, mode: .createOrAppend, submitter: submitter)
            submit(ref, specs, qs, req, key: key, &out)
        case .cancelRequested(let ids, let cascade, let reason):
            cancelRequest(ref, ids, cascade, reason, nil, &out)
        case .cancelAll(let queue, let reason):
            cancelAllRequest(ref, queue, reason, &out)
        case .cancelRun(let run, let reason):
            cancelRun(ref, run, reason, &out)
        case .queueSettings(let spec):
            applyQueueSettings(spec)
        case .priorityChanged(let id, let priority, let inherit):
            setPriority(ref, id, priority, inherit, nil, &out)
        case .finished(let id, let outcome, let at, let history):
            guard let op = lookup(id) else { return }
            if ops.hot[Int(op)].state != .finished {
                finishOp(op, outcome, at: at, &out)
            } else if ops.hot[Int(op)].outcome == outcome.kind {
                // Finished already by replay (a dependency's cancel reached it first): the record's text wins.
                releaseBytes(op)
                switch outcome {
                case .succeeded(let bytes): ops.results[op] = bytes.isEmpty ? nil : bytes
                case .failed(let text), .cancelled(let text): ops.reasons[op] = text
                }
                holdBytes(op)
            } else {
                return
            }
            if let history {
                releaseBytes(op)
                applyHistory(op, history)
                holdBytes(op)
            }
        case .resultsEvicted(let run):
            if let slot = runs.slot(named: run) { evictResults(slot) }
        case .workerSession(let id, let name, let owner):
            restoreWorkerSession(id: id, name: name, owner: owner)
        case .workerJoined(let name):
            recovery.journalWorkers.insert(name)
        case .workerLeft(let name):
            recovery.journalWorkers.remove(name)
        case .runNumber(let next):
            nextRunNumber = max(nextRunNumber, next)
        case .evictedRun(let name, let finishedAt, let evictedAt):
            replayEviction(name, finishedAt: finishedAt, evictedAt: evictedAt)
        case .submissionKey(let run, let key, let count):
            guard let slot = runs.slot(named: run) else { return }
            submissionKeys[key.key] = AppliedSubmission(digest: key.digest, slot: slot, count: count)
            runs[slot].submissionKeys.append(key.key)
        }
    }

    /// A replayed generated name "r-N" is not generated again.
    private mutating func noteRunName(_ run: String) {
        guard run.hasPrefix("r-"), let n = Int(run.dropFirst(2)) else { return }
        nextRunNumber = max(nextRunNumber, n + 1)
    }

    /// Replay is over: hold dispatch for the workers that were connected, if anything is left to run.
    mutating func recovered(_ out: inout [Action]) {
        recovery.replaying = false
        recovery.recoveredAt = now
        let unfinished = queues.reduce(0) { $0 + Int($1.unfinished) }
        if !recovery.journalWorkers.isEmpty && unfinished > 0 {
            // A worker notices the old coordinator's silence one liveness bound after it stopped, then
            // reconnects after at most a second while it holds work (and may have tried a coordinator
            // that died again): two bounds and three seconds cover that.
            recovery.hold = RecoveryHold(until: now &+ 2 * config.livenessBoundMicros &+ 3_000_000, awaited: recovery.journalWorkers)
        } else {
            for name in recovery.journalWorkers where config.journal { out.append(.journal(.workerLeft(name: name))) }
        }
        recovery.journalWorkers = []
    }

    /// Records are emitted unless this core runs without a journal, or is replaying one (nothing to write again).
    var journaling: Bool { @inline(__always) get { config.journal && !recovery.replaying } }

    /// Whether dispatch is held after recovery (status shows it).
    public var isHoldingForWorkers: Bool { recovery.hold != nil }
    /// Until when, at the latest (nil: not held).
    public var holdingUntil: Int64? { recovery.hold?.until }

    /// A worker joined (workerJoined has registered it): its attempts are taken back now, or when the
    /// hold ends.
    mutating func workerClaims(_ w: WorkerIndex, _ h: WorkerHello, _ out: inout [Action]) {
        let holds = !h.running.isEmpty || !h.finished.isEmpty
        guard recovery.hold != nil else {
            if holds { takeBack([(w, h)], &out) }
            return
        }
        recovery.hold?.awaited.remove(h.name)
        if holds { recovery.hold?.claims.append((w, h)) }
        if recovery.hold?.awaited.isEmpty == true { endHold(&out) }
    }

    /// The hold ends (all awaited workers are back, or its time is up): attempts are taken back, then
    /// dispatch resumes (`pump` at the end of `handle`). Workers that did not come back are recorded as
    /// gone, so the next recovery does not wait for them.
    mutating func endHold(_ out: inout [Action]) {
        guard let h = recovery.hold else { return }
        recovery.hold = nil
        if config.journal { for name in h.awaited { out.append(.journal(.workerLeft(name: name))) } }
        takeBack(h.claims, &out)
    }

    /// Finished attempts first, in the order they finished (a dependent's finished attempt then finds its
    /// prerequisites finished), then the ones still held. Credit is trimmed to what each worker may hold.
    private mutating func takeBack(_ claims: [(worker: WorkerIndex, hello: WorkerHello)], _ out: inout [Action]) {
        // One claim per part counts. Workers list the finishes they reported lately again (the journal may
        // not have them), so an earlier attempt's finish comes back beside what followed it: a failure
        // beside the retry a worker now runs, or beside a later attempt's finish. Those were acted on before
        // the crash (the retry exists because of them); applying them again would spend a retry twice or
        // refuse the running retry. Attempt numbers restart after a recovery, so the order is told by what
        // a worker does now (a part still running there is newer than any finish of it) and, among
        // finishes, by when they finished.
        var running: Set<ClaimedPart> = []
        var latest: [ClaimedPart: (at: Int64, attempt: Int)] = [:]
        for c in claims where workers[c.worker].alive {
            for p in c.hello.running { running.insert(ClaimedPart(p)) }
            for f in c.hello.finished {
                let k = ClaimedPart(f.part), at = f.at ?? 0
                if let l = latest[k], (l.at, l.attempt) >= (at, f.part.attempt) { continue }
                latest[k] = (at, f.part.attempt)
            }
        }
        var finished: [(worker: WorkerIndex, part: FinishedPart)] = []
        for c in claims where workers[c.worker].alive {
            for f in c.hello.finished {
                let k = ClaimedPart(f.part)
                guard !running.contains(k), let l = latest[k], l.at == (f.at ?? 0), l.attempt == f.part.attempt else {
                    fencing.staleAttempt += 1
                    continue
                }
                latest[k] = nil   // the same finish listed twice counts once
                finished.append((c.worker, f))
            }
        }
        finished.sort { ($0.part.at ?? 0) < ($1.part.at ?? 0) }
        // A finish that reached the workers (so its dependents were dispatched: a hop does not wait for the
        // disk) but not the journal comes back together with its dependents' attempts, which may even be
        // stamped earlier (workers' clocks are placed on ours with some error). An attempt whose op still
        // waits for prerequisites is tried again once the others' outcomes are in and released, until a
        // pass changes nothing; what then still waits is stale.
        // Claims refused as no honest worker would make them (`claimRefusal`), per worker, for the log.
        var refused: [WorkerIndex: (count: Int, example: String)] = [:]
        var pending = finished
        while !pending.isEmpty {
            var waiting: [(worker: WorkerIndex, part: FinishedPart)] = []
            for (w, f) in pending {
                guard workers[w].alive else { continue }
                guard let op = lookup(f.part.op) else { fencing.staleAttempt += 1; continue }
                if ops.hot[Int(op)].state == .pending { waiting.append((w, f)); continue }
                let refusedBefore = fencing.refusedClaim
                guard reattach(op, w, f.part, &refused, &out) else {
                    if fencing.refusedClaim == refusedBefore { fencing.staleAttempt += 1 }   // a refused claim is not a late report
                    continue
                }
                partFinished(PartRef(worker: workers[w].id, op: f.part.op, part: f.part.part, attempt: f.part.attempt,
                                     token: UInt64(op), at: f.at), f.outcome, 0, &out)
            }
            drainReleases(&out)   // dependents of what finished are ready now, for their own claims below
            if waiting.count == pending.count {
                fencing.staleAttempt += waiting.count
                break
            }
            pending = waiting
        }
        for c in claims where workers[c.worker].alive {
            let id = workers[c.worker].id
            for p in c.hello.running {
                if let op = lookup(p.op), reattach(op, c.worker, p, &refused, &out) { continue }
                out.append(.cancelOnWorker(worker: id, op: p.op, part: p.part, attempt: p.attempt,
                                           reason: "not taken back by the coordinator: \(notTakenBack(p, by: c.worker))"))
            }
            trimCredit(c.worker)
        }
        for (w, r) in refused.sorted(by: { $0.key < $1.key }) {
            out.append(.refusedClaims(worker: workers[w].id, count: r.count, example: r.example))
        }
    }

    /// Why an attempt a worker holds is not taken back (it is cancelled there).
    private func notTakenBack(_ p: HeldPart, by w: WorkerIndex) -> String {
        guard let op = lookup(p.op) else { return "unknown operation (never recorded, or its run was evicted)" }
        let i = Int(op)
        if let refusal = claimRefusal(op, by: w) { return refusal }
        if ops.hot[i].state == .finished { return "the operation has finished" }
        if ops.hot[i].parts > 1 { return "parts of multi-part operations run again" }
        if ops.hot[i].state == .pending { return "its dependencies have not finished" }
        if ops.hot[i].state == .delayed { return "it waits out a retry delay after a failed attempt" }
        return "another attempt holds it"
    }

    /// Takes an attempt a worker holds back as this op's current one: ready → dispatched (→ executing
    /// when it started there). Only a single-part op that is ready and not cancelled qualifies.
    private mutating func reattach(_ op: Int32, _ w: WorkerIndex, _ p: HeldPart, _ refused: inout [WorkerIndex: (count: Int, example: String)],
                                   _ out: inout [Action]) -> Bool {
        let i = Int(op)
        guard ops.hot[i].parts == 1, p.part == 0, ops.hot[i].state == .ready, ops.hot[i].flags & Flag.cancelled == 0,
              p.attempt >= 1, p.attempt <= Int(UInt16.max) else { return false }
        if let why = claimRefusal(op, by: w) {
            fencing.refusedClaim += 1
            var tally = refused[w, default: (0, "")]
            tally.count += 1
            if tally.count == 1 { tally.example = "\(p.op) attempt \(p.attempt): \(why)" }
            refused[w] = tally
            return false
        }
        let attempt = UInt16(p.attempt)
        transition(op, to: .dispatched, nil)
        ops.cold[i].dispatchedAt = min(now, p.startedAt ?? now)
        ops.hot[i].waitingParts -= 1
        ops.hot[i].inflightParts += 1
        ops.hot[i].attempt = attempt
        workers[w].dispatched += 1
        inflightSet(op, 0, w, attempt)
        record(op, .dispatched, part: 0, extra: w.raw)
        let id = workers[w].id
        if !watchers.isEmpty { publish(op, .dispatched(part: 0, attempt: p.attempt, worker: id), &out) }
        if let started = p.startedAt {
            partStarted(PartRef(worker: id, op: p.op, part: 0, attempt: p.attempt, token: UInt64(op), at: started), &out)
        }
        return true
    }

    /// Why worker `w` may not claim op `op`, or nil when it may: a claim is checked like a dispatch would
    /// be (the worker could have been sent it: kind, required tags, `key:` pins), and it must come from the
    /// owner (key) the op was last dispatched to. Ops replayed from the journal have no recorded holder:
    /// after a restart any owner that could have been sent them may claim them — no more than it could
    /// do by being dispatched them and reporting what it likes.
    func claimRefusal(_ op: Int32, by w: WorkerIndex) -> String? {
        let i = Int(op)
        let worker = workers[w]
        guard WorkerPool.capable(worker, workers.classes[Int(lanes[Int(ops.hot[i].lane)].cls)]) else {
            return "this worker could not have been sent it (its kind, required tags or key pin do not match)"
        }
        let holder = ops.cold[i].lastWorker
        if holder == WorkerIndex.unknown { return nil }
        guard holder.isWorker else { return "it was never dispatched" }
        let owner = workers[holder].owner
        return owner == worker.owner ? nil : "it was dispatched to another worker ('\(owner)')"
    }

    /// Whether live worker `worker` may claim op `key` ("RUN/OP"): the shell keeps a claimed attempt's output
    /// only then.
    public func mayClaim(_ key: String, by worker: UInt64) -> Bool {
        guard let op = lookup(key), let w = workers.byID[worker], workers[w].alive else { return false }
        return claimRefusal(op, by: w) == nil
    }

    /// During the hold: a held attempt's STARTED updates its claim.
    mutating func claimStarted(_ w: WorkerIndex, _ ref: PartRef) -> Bool {
        guard let (c, k) = recovery.hold?.heldAttempt(w, ref) else { return false }
        recovery.hold?.claims[c].hello.running[k].startedAt = ref.at ?? now
        return true
    }

    /// During the hold: a held attempt's outcome moves its claim from running to finished.
    mutating func claimFinished(_ w: WorkerIndex, _ ref: PartRef, _ outcome: Outcome) -> Bool {
        guard let (c, k) = recovery.hold?.heldAttempt(w, ref), let p = recovery.hold?.claims[c].hello.running.remove(at: k) else { return false }
        recovery.hold?.claims[c].hello.finished.append(FinishedPart(part: p, outcome: outcome, at: ref.at ?? now))
        return true
    }

    /// Credit beyond what a worker may still take (capacity − parts it holds) is taken back.
    private mutating func trimCredit(_ w: WorkerIndex) {
        let excess = workers[w].credit - max(0, workers[w].capacity - workers[w].inflightCount)
        if excess > 0 { workers.takeCredit(w, excess) }
    }
}
