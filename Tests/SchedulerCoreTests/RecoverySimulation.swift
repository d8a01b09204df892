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
    }

    mutating func crashAndRecover() {
        crashCount += 1
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
        let cancelsPending = before.values.contains { $0.cancelRequested }
        for (key, d) in before {
            guard let a = after[key] else {
                // Only a run evicted by age (at the real time, which replay leaves to the end) may go.
                if let (run, _) = RunNames.split(key), case .evictedRun? = r.runLookupFailure(String(run)) { continue }
                fail("crash \(crashCount): acknowledged op \(key) lost in recovery"); continue
            }
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
        if r.durableQueues() != queuesBefore { fail("crash \(crashCount): queues \(r.durableQueues()) ≠ \(queuesBefore)") }
        if !r.validate().isEmpty { fail("crash \(crashCount): recovered core invalid: \(r.validate().prefix(3))") }
        s = r
        for a in recoveredOut { if case .journal(let rec) = a { journalLog.append((now, rec)) } }
        for a in recoveredOut { observe(a) }
        // Ops the recovery finished (pending cancels) finished for the model too.
        for (key, a) in after where before[key]?.outcome == nil && a.outcome != nil {
            guard let i = specIndex[key] else { continue }
            finished[i] += 1
            if finished[i] == 1 { finishedCount += 1 }
            outcomes[i] = a.outcome!.kind
            running[specs[i].queue, default: []].remove(key)
            ready[specs[i].queue, default: []].remove(key)
        }
        // What is dispatched or ready now is what the recovered core says (the model's view was the old core's).
        for q in queueNames { running[q] = []; ready[q] = [] }
        openWaits.removeAll()
        runWaits.removeAll()
        send(.watch(ClientRef(client: 9, request: 0), queue: nil))
        if let k = watchedRun { send(.watch(ClientRef(client: 10, request: 0), queue: nil, run: plans[k].name)) }
        rejoinWorkers()
        for (i, key) in keys.enumerated() where finished[i] == 0 {
            guard let st = s.status(key) else { continue }
            if st.state == .ready { ready[specs[i].queue, default: []].insert(key) }
            if st.state == .dispatched || st.state == .executing { running[specs[i].queue, default: []].insert(key) }
        }
        resendKeyedBatch()
    }

    /// Live workers re-register (a new session each) with the attempts they hold; some finished while
    /// the coordinator was away. Silent ones are gone for good.
    private mutating func rejoinWorkers() {
        let old = alive.sorted()
        alive = []
        for w in old {
            let parts = held.removeValue(forKey: w) ?? []
            let startedHere = startedParts.removeValue(forKey: w) ?? []
            credit[w] = 0
            if silent.contains(w) { continue }
            var hello = hellos[w]!
            let nw = nextWorker
            nextWorker += 1
            hello.worker = nw
            var kept: [Dispatch] = []
            for d in parts {
                let started = startedHere.contains(partName(d)) ? now - 50 : nil
                let part = HeldPart(op: d.op, part: d.part, attempt: d.attempt, startedAt: started)
                if rng.chance(0.3) {
                    finishedAway += 1
                    hello.finished.append(FinishedPart(part: part, outcome: .succeeded([]), at: now - 10))
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
            takenBack += hello.running.count
            send(.workerJoined(hello))
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
