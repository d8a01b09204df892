@testable import SchedulerCore

/// Crash mode of the simulation (A5): the journal is every `.journal` record the core emitted, with
/// its time (`journalLog`, as the disk would hold it), replaced now and then by a snapshot
/// (`takeSnapshot`). At seeded moments the coordinator "crashes": a fresh core replays the log, must
/// hold every acknowledged op with the same outcome, dependencies, priority and queue settings, and
/// takes over; the live workers re-register with what they hold (some of it finished while the
/// coordinator was away), silent ones never come back, and the last keyed batch is sent again as a
/// client whose reply was lost would. The run then goes on under the model's usual checks: every op
/// finishes exactly once, nothing is dispatched before its dependencies finished, FIFO, limits.
extension Simulation {
    mutating func takeSnapshot() {
        snapshotCount += 1
        journalLog = s.snapshotRecords()
        tail.everythingDurable()
    }

    /// What a crash cut from the journal (`loseTails`).
    struct LostTail {
        var records: [JournalRecord]
        /// Keyed batches submitted in the lost steps: their clients got no reply and send them again.
        var resend: [LostTailModel.Submit]
        var finishes: Set<String> {
            Set(records.compactMap { if case .finished(let id, _, _, _) = $0 { return id } else { return nil } })
        }
    }

    mutating func crashAndRecover() {
        crashCount += 1
        tail.strict = !tail.everRelaxed
        let lost = loseTails ? loseTail() : nil
        let before = s.durableOps()
        let queuesBefore = s.durableQueues()
        var r = Scheduler(config: s.config)
        var replayStimulus: UInt64 = 0
        for (at, record) in journalLog {
            replayStimulus += 1
            _ = r.handle(Input(stimulus: replayStimulus, now: at, .restore(record)))
        }
        stimulus += 1
        let recoveredOut = r.handle(Input(stimulus: stimulus, now: now, .recovered))
        let after = r.durableOps()
        if let lost {
            checkRecovered(before: before, after: after, lost: lost)
        } else {
            checkRecovered(before: before, after: after, recovered: r)
            if r.durableQueues() != queuesBefore { fail("crash \(crashCount): queues \(r.durableQueues()) ≠ \(queuesBefore)") }
        }
        if !r.validate().isEmpty { fail("crash \(crashCount): recovered core invalid: \(r.validate().prefix(3))") }
        s = r
        // A lost queue change is as if it was never asked for (its client got no reply): the model's limits follow the core.
        if lost != nil { for q in s.durableQueues() where limits[q.name] != nil { limits[q.name] = q.maxConcurrent } }
        for a in recoveredOut { if case .journal(let rec) = a { journalLog.append((now, rec)) } }
        for a in recoveredOut { observe(a) }
        // The model's finishes are the recovered core's: the lost ones are undone, and ops the recovery
        // finished (pending cancels) are finished for the model too.
        if let lost { undoFinishes(lost.finishes) }
        for (key, a) in after {
            guard let i = specIndex[key] else { continue }
            if a.outcome == nil && finished[i] > 0 { fail("crash \(crashCount): \(key) finished, recovered unfinished") }
            guard let outcome = a.outcome, finished[i] == 0 else { continue }
            finished[i] = 1
            finishedCount += 1
            outcomes[i] = outcome.kind
        }
        // What is dispatched or ready now is what the recovered core says (the model's view was the old core's).
        for q in queueNames { running[q] = []; ready[q] = [] }
        openWaits.removeAll()
        runWaits.removeAll()
        tail.everythingDurable()
        tail.crashed()
        send(.watch(ClientRef(client: 9, request: 0), queue: nil))
        if let k = watchedRun { send(.watch(ClientRef(client: 10, request: 0), queue: nil, run: plans[k].name)) }
        rejoinWorkers()
        if let lost { resendLostSubmits(lost, acknowledged: before) }
        for (i, key) in keys.enumerated() where finished[i] == 0 {
            guard let st = s.status(key) else { continue }
            if st.state == .ready { ready[specs[i].queue, default: []].insert(key) }
            if st.state == .dispatched || st.state == .executing { running[specs[i].queue, default: []].insert(key) }
        }
        resendKeyedBatch()
    }

    /// Every acknowledged op is there with the same outcome, dependencies, priority and queue.
    private mutating func checkRecovered(before: [String: DurableOp], after: [String: DurableOp], recovered r: Scheduler) {
        let cancelsPending = before.values.contains { $0.cancelRequested }
        // Only a run evicted by age (at the real time, which replay leaves to the end) may go, and with it
        // its ops from their dependents' lists (`durableOps()` lists retained dependencies only).
        func evictedByAge(_ key: String) -> Bool {
            guard let (run, _) = RunNames.split(key), case .evictedRun? = r.runLookupFailure(String(run)) else { return false }
            return true
        }
        for (key, var d) in before {
            guard let a = after[key] else {
                if evictedByAge(key) { continue }
                fail("crash \(crashCount): acknowledged op \(key) lost in recovery"); continue
            }
            d.dependencies.removeAll { after[$0] == nil && evictedByAge($0) }
            if d.cancelRequested {
                // Cancelled while it ran: after recovery it is not running, so the cancel finishes it.
                if case .cancelled? = a.outcome { continue }
                fail("crash \(crashCount): \(key) had a cancel pending, recovered as \(String(describing: a.outcome))"); continue
            }
            if d.outcome == nil, case .cancelled(let why)? = a.outcome, why.hasPrefix("dependency "), cancelsPending {
                continue   // a dependent of one of those, under policy `succeeded` or a cascade
            }
            var same = a
            if d.outcome != nil { same.priority = d.priority }   // a finished op's priority no longer matters
            if same != d { fail("crash \(crashCount): \(key) recovered as \(a), was \(d)") }
        }
        for key in after.keys where before[key] == nil { fail("crash \(crashCount): \(key) appeared in recovery") }
    }

    /// After a lost tail: an op is missing only if its batch was lost (sent again below), and an outcome
    /// differs only if its record was lost (a worker reports it again, or it is decided again).
    private mutating func checkRecovered(before: [String: DurableOp], after: [String: DurableOp], lost: LostTail) {
        let resent = Set(lost.resend.flatMap { $0.ops.map(\.id) })
        let lostFinishes = lost.finishes
        for (key, d) in before {
            guard let a = after[key] else {
                if !resent.contains(key) { fail("crash \(crashCount): op \(key) lost with a tail that did not hold its batch") }
                continue
            }
            guard let outcome = d.outcome, !lostFinishes.contains(key), !d.cancelRequested else { continue }
            if a.outcome != outcome { fail("crash \(crashCount): \(key) finished \(outcome), recovered \(String(describing: a.outcome))") }
        }
        for key in after.keys where before[key] == nil { fail("crash \(crashCount): \(key) appeared in recovery") }
    }

    /// Cuts the journal at a step boundary within the last `LostTailModel.window` steps (nil: nothing lost).
    /// With `strictCuts` only where every lost record can be derived again.
    private mutating func loseTail() -> LostTail? {
        var lose = rng.int(LostTailModel.window)
        while lose > 0 {
            defer { lose -= 1 }
            guard let cut = tail.cut(losing: lose), cut.journalCount < journalLog.count else { continue }
            let records = journalLog[cut.journalCount...].map(\.record)
            // A finish reported by a worker that does not come back is lost for good: it runs again, legitimately.
            let reporters = Set(tail.reports(since: cut.firstLost).map(\.worker))
            let back = reporters.allSatisfy { alive.contains($0) && !silent.contains($0) }
            // A multi-part op's parts run again after a crash (by design), and so do its dependents.
            let multiPart = records.contains {
                if case .finished(let id, _, _, _) = $0 { return specIndex[id].map { specs[$0].parts > 1 } ?? false }
                return false
            }
            // A final failure comes back as a failed attempt of an op whose retries were not journalled: it
            // may be retried (ARCHITECTURE.md, "What a lost tail can still run again").
            let failure = records.contains { if case .finished(_, .failed, _, _) = $0 { return true }; return false }
            let strict = cut.rederivable && back && !multiPart && !failure
            if !strict && tail.strictCuts { continue }
            journalLog.removeLast(journalLog.count - cut.journalCount)
            // What a relaxed crash changed stays changed: later crashes are not held to the strict rule either.
            if !strict { tail.everRelaxed = true; tail.relaxedCrashes += 1 }
            tail.strict = !tail.everRelaxed
            tail.tailsLost += 1
            tail.recordsLost += records.count
            let lost = LostTail(records: records, resend: tail.submits(since: cut.firstLost))
            tail.finishesLost += lost.finishes.count
            return lost
        }
        return nil
    }

    /// The model had seen these finish; the recovered core has not (their records were lost).
    private mutating func undoFinishes(_ ids: Set<String>) {
        for id in ids {
            guard let i = specIndex[id], finished[i] > 0 else { continue }
            finished[i] -= 1
            if finished[i] == 0 { finishedCount -= 1; outcomes[i] = .none }
        }
    }

    /// Clients whose keyed batches were lost with the tail got no reply: they send them again, in order.
    private mutating func resendLostSubmits(_ lost: LostTail, acknowledged before: [String: DurableOp]) {
        for b in lost.resend {
            let out = send(.submit(ref(), ops: b.ops, queues: b.queues, key: b.key))
            guard out.contains(where: { if case .reply(_, .accepted) = $0 { return true }; return false }) else {
                return fail("crash \(crashCount): lost batch \(b.key.key) sent again not accepted: \(out.prefix(2))")
            }
            tail.submitsResent += 1
            tail.submitted(steps, ops: b.ops, queues: b.queues, key: b.key)   // the next crash may lose it again
        }
        for key in before.keys where s.status(key) == nil { fail("crash \(crashCount): acknowledged op \(key) missing after resends") }
    }

    /// Live workers re-register (a new session each) with the attempts they hold; some finished while
    /// the coordinator was away. Silent ones are gone for good.
    private mutating func rejoinWorkers() {
        let old = alive.sorted()
        alive = []
        for w in old {
            let parts = held.removeValue(forKey: w) ?? []
            let startedHere = startedParts.removeValue(forKey: w) ?? []
            let cancelledHere = tail.cancelledOnWorker.removeValue(forKey: w) ?? []
            credit[w] = 0
            if silent.contains(w) { continue }
            var hello = hellos[w]!
            let nw = nextWorker
            nextWorker += 1
            hello.worker = nw
            // The finishes it reported lately are listed again (HeldParts keeps them): the journal may not have them.
            hello.finished = tail.reports(of: w)
            tail.reReported += hello.finished.count
            var away: [FinishedPart] = []
            var kept: [Dispatch] = []
            for d in parts where !cancelledHere.contains(partName(d)) {
                let started = startedHere.contains(partName(d)) ? now - 50 : nil
                let part = HeldPart(op: d.op, part: d.part, attempt: d.attempt, startedAt: started)
                if rng.chance(0.3) {
                    finishedAway += 1
                    away.append(FinishedPart(part: part, outcome: .succeeded([]), at: now - 10))
                } else {
                    hello.running.append(part)
                    var moved = d
                    moved.worker = nw
                    kept.append(moved)
                }
            }
            hellos[nw] = WorkerHello(worker: nw, name: hello.name, slots: hello.slots, tags: hello.tags, kinds: hello.kinds)
            alive.insert(nw)
            slots[nw] = hello.slots
            credit[nw] = hello.slots
            held[nw] = kept
            startedParts[nw] = Set(kept.filter { startedHere.contains(partName($0)) }.map { partName($0) })
            hello.finished += away
            takenBack += hello.running.count
            tail.rename(worker: w, to: nw, at: steps + 1)
            for f in hello.finished {
                guard case .succeeded = f.outcome, let i = specIndex[f.part.op], specs[i].parts == 1 else { continue }
                // An op whose batch was lost with the tail is unknown until its client sends it again: it was
                // never acknowledged, and runs again (dispatch does not wait for the disk; ARCHITECTURE.md).
                if s.status(f.part.op) == nil { tail.unacknowledgedRunAgain += 1; continue }
                tail.claimedFinished[f.part.op] = nw
            }
            send(.workerJoined(hello))
            for f in away { tail.reported(steps, worker: nw, f) }
        }
    }

    /// A client whose reply was lost in the crash sends its keyed batch again: acknowledged, not applied
    /// twice; the same key with other content is refused.
    private mutating func resendKeyedBatch() {
        guard let (ops, qs, key) = lastKeyed else { return }
        let count = s.totalOperations
        let out = send(.submit(ref(), ops: ops, queues: qs, key: key))
        guard out.contains(where: { if case .reply(_, .acceptedBefore(ops.count, _)) = $0 { return true }; return false }) else {
            return fail("crash \(crashCount): retried batch \(key.key) not acknowledged as applied: \(out.prefix(2))")
        }
        duplicatesAcked += 1
        var other = key
        other.digest &+= 1
        let refused = send(.submit(ref(), ops: ops, queues: qs, key: other))
        guard refused.contains(where: { if case .reply(_, .rejected([.submissionKeyReused(key.key)])) = $0 { return true }; return false }) else {
            return fail("crash \(crashCount): reused key \(key.key) with other content not refused: \(refused.prefix(2))")
        }
        if s.totalOperations != count { fail("crash \(crashCount): a retried batch changed the op count") }
    }
}
