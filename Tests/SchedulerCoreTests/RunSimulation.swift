@testable import SchedulerCore

// The run mode of the simulation (Simulation(runs: true)): submitting runs, and the model's checks of
// retention, eviction and compaction.

extension Simulation {
    /// The reply to request `r` among `out`.
    func reply(to r: ClientRef, in out: [Action]) -> Reply? {
        for a in out { if case .reply(let ref, let rep) = a, ref == r { return rep } }
        return nil
    }

    /// Submits the next run as one batch. Dependencies on earlier runs are kept only while those runs
    /// are retained. Now and then a deliberately bad submit comes first (rejected whole, the run is not
    /// created; the run is submitted at a later step).
    mutating func submitRun() {
        guard runsSubmitted < plans.count else { return }
        let k = runsSubmitted, p = plans[k]
        var batch: [OperationSpec] = []
        var evictedDep: (Int, String)?
        var cross = 0
        for i in p.first..<p.first + p.count {
            var o = specs[i]
            var kept: [Int] = []
            for d in deps[i] {
                let rd = runOf[d]
                if rd == k {
                    o.after.append(specs[d].id); kept.append(d)
                } else if s.runInfo(plans[rd].name) != nil {
                    o.after.append(keys[d]); kept.append(d); cross += 1
                } else {
                    guard case .evictedRun? = s.runLookupFailure(plans[rd].name) else {
                        return fail("run \(plans[rd].name) neither retained nor evicted: \(String(describing: s.runLookupFailure(plans[rd].name)))")
                    }
                    droppedDeps += 1
                    if evictedDep == nil { evictedDep = (i - p.first, keys[d]) }
                }
            }
            deps[i] = kept
            batch.append(o)
        }
        // (A rejected batch adds no op: checkRuns compares the live ops with the submitted runs'.)
        let request = RunRequest(name: p.name, mode: .create)
        func notCreated(_ sim: inout Simulation, _ what: String) {
            if sim.s.runInfo(p.name) != nil { sim.fail("\(what) left run \(p.name) behind") }
            guard case .unknownRun(p.name)? = sim.s.runLookupFailure(p.name) else {
                return sim.fail("\(what): run \(p.name) is \(String(describing: sim.s.runLookupFailure(p.name)))")
            }
        }
        if let (j, dk) = evictedDep, rng.chance(0.3) {
            // A dependency on an evicted run: rejected, naming it.
            var bad = batch
            bad[j].after.append(dk)
            let r = ref()
            let rep = reply(to: r, in: send(.submit(r, ops: bad, queues: [], run: request)))
            let named: Bool
            if case .rejected(let ps)? = rep {
                named = ps.contains { if case .unavailableDependency(bad[j].id, dk, let why) = $0 { return why.contains("evicted") } else { return false } }
            } else { named = false }
            if !named { fail("dependency \(dk) on an evicted run: \(String(describing: rep))") }
            notCreated(&self, "batch with a dependency on an evicted run")
            rejectedRuns += 1
            return
        }
        if rng.chance(0.04) {
            // A cycle through a fresh id: rejected whole.
            let tag = steps
            let cyc = [OperationSpec(id: "bad\(tag)", after: ["bad\(tag)x"]), OperationSpec(id: "bad\(tag)x", after: ["bad\(tag)"])]
            let r = ref()
            let rep = reply(to: r, in: send(.submit(r, ops: batch + cyc, queues: [], run: request)))
            guard case .rejected(let ps)? = rep, ps.contains(where: { if case .cycle = $0 { return true } else { return false } }) else {
                return fail("bad run batch: \(String(describing: rep))")
            }
            notCreated(&self, "rejected run batch")
            rejectedRuns += 1
            return
        }
        if let old = evicted.min(), rng.chance(0.05) {
            // A new run may not take an evicted run's name.
            let r = ref()
            let rep = reply(to: r, in: send(.submit(r, ops: batch, queues: [], run: RunRequest(name: plans[old].name, mode: .create))))
            guard case .rejected(let ps)? = rep, ps == ps.filter({ if case .invalidRun(plans[old].name, _) = $0 { return true } else { return false } }), !ps.isEmpty else {
                return fail("run named like evicted \(plans[old].name): \(String(describing: rep))")
            }
            rejectedRuns += 1
            return
        }
        let qs = drawQueueSettings(for: batch)
        submitted += p.count
        runsSubmitted += 1
        crossRunDeps += cross
        let r = ref()
        let rep = reply(to: r, in: send(.submit(r, ops: batch, queues: qs, run: request)))
        guard case .accepted(p.count, _, p.name)? = rep else { return fail("run \(p.name) not accepted: \(String(describing: rep))") }
    }

    /// Cancels a whole run, or one op by "RUN/OP" or by its bare id in the run's context.
    mutating func runCancel() {
        guard runsSubmitted > 0 else { return }
        let k = rng.int(runsSubmitted), p = plans[k]
        let gone = s.runInfo(p.name) == nil
        let r = ref()
        let out: [Action]
        var targets: [Int]
        let j = rng.int(p.count)
        switch rng.int(10) {
        case 0:
            out = send(.cancelRun(r, run: p.name, reason: "sim cancelRun"))
            targets = Array(p.first..<p.first + p.count)
        case 1...3:
            out = send(.cancel(r, ids: ["o\(j)"], cascade: rng.chance(0.3), run: p.name))
            targets = [p.first + j]
        default:
            out = send(.cancel(r, ids: [keys[p.first + j]], cascade: rng.chance(0.3)))
            targets = [p.first + j]
        }
        let rep = reply(to: r, in: out)
        if gone {
            guard case .error(.notFound(let text))? = rep, text.contains("evicted") else { return fail("cancel in evicted run \(p.name): \(String(describing: rep))") }
            return
        }
        guard rep == .ok else { return fail("cancel in \(p.name): \(String(describing: rep))") }
        for i in targets where finished[i] == 0 && s.status(keys[i])?.isCancelled != true {
            fail("\(keys[i]) neither finished nor cancelling after cancel")
        }
    }

    /// A wait for a whole run, for ops by key, or a watch scoped to a run.
    mutating func runWait() {
        guard runsSubmitted > 0 else { return }
        let k = rng.int(runsSubmitted), p = plans[k]
        let gone = s.runInfo(p.name) == nil
        switch rng.int(10) {
        case 0:
            let r = ClientRef(client: 10, request: UInt64(steps))
            let before = watchedRun
            if !gone { watchedRun = k }
            let rep = reply(to: r, in: send(.watch(r, queue: nil, run: p.name)))
            if gone {
                watchedRun = before
                guard case .error(.notFound(let text))? = rep, text.contains("evicted") else { return fail("watch of evicted \(p.name): \(String(describing: rep))") }
            } else if case .watching? = rep {} else {
                fail("watch of \(p.name): \(String(describing: rep))")
            }
        case 1...5:
            let r = ref()
            openWaits.insert(r.request)
            runWaits[r.request] = k
            let rep = reply(to: r, in: send(.waitRun(r, run: p.name)))
            if gone {
                openWaits.remove(r.request); runWaits[r.request] = nil
                guard case .error(.notFound(let text))? = rep, text.contains("evicted") else { return fail("wait for evicted \(p.name): \(String(describing: rep))") }
            } else if let rep, !(rep.isWaitDone) {
                fail("wait for run \(p.name): \(rep)")
            }
        default:
            let picks = (0..<1 + rng.int(5)).map { _ in rng.int(submitted) }
            let anyGone = picks.contains { s.runInfo(plans[runOf[$0]].name) == nil }
            let r = ref()
            openWaits.insert(r.request)
            let rep = reply(to: r, in: send(.wait(r, ids: picks.map { keys[$0] })))
            if anyGone {
                openWaits.remove(r.request)
                guard case .error(.notFound(let text))? = rep, text.contains("evicted") else { return fail("wait naming evicted ops: \(String(describing: rep))") }
            } else if let rep, !(rep.isWaitDone) {
                fail("wait for \(picks.map { keys[$0] }): \(rep)")
            }
        }
    }

    /// Whether an op of another run that has not finished (in the model) depends on an op of run `k`.
    func pinned(_ k: Int) -> Bool {
        for i in specs.indices where runOf[i] != k && finished[i] == 0 && i < submitted {
            if deps[i].contains(where: { runOf[$0] == k }) { return true }
        }
        return false
    }

    /// After every step: retained runs agree with the model, evicted ones are forgotten, and the op
    /// table holds only retained runs' ops plus a bounded number of dead rows.
    mutating func checkRuns() {
        var live = 0, finishedRetained = 0, newest = -1
        for k in 0..<runsSubmitted where !evicted.contains(k) {
            let p = plans[k]
            guard let info = s.runInfo(p.name) else {
                evicted.insert(k)
                checkEvicted(k)
                continue
            }
            newest = k
            live += p.count
            if info.total != p.count { fail("run \(p.name): total \(info.total) ≠ \(p.count)") }
            if let f = info.finishedAt {
                if !pinned(k) { finishedRetained += 1 }   // pinned runs are kept beyond the count too
                // A run that unfinished ops of other runs depend on is kept for them (pinned).
                if now &- f >= s.config.retainMicros && !pinned(k) {
                    fail("run \(p.name) finished at \(f), still retained at \(now) (retention \(s.config.retainMicros) µs)")
                }
                let c = counts(k)
                if c.open > 0 { fail("run \(p.name) finished with \(c.open) ops open in the model") }
                if (info.succeeded, info.failed, info.cancelled) != (c.ok, c.failed, c.cancelled) {
                    fail("run \(p.name): counts \(info.succeeded)/\(info.failed)/\(info.cancelled) ≠ model \(c.ok)/\(c.failed)/\(c.cancelled)")
                }
            }
        }
        if finishedRetained > s.config.retainRuns { fail("\(finishedRetained) finished runs retained (retainRuns \(s.config.retainRuns))") }
        if s.totalOperations != live { fail("\(s.totalOperations) live ops, retained runs hold \(live)") }
        let dead = s.ops.count - live
        if dead >= max(s.config.compactMinimum, live) { fail("\(dead) dead rows next to \(live) live ones not compacted") }
        // A bare id names the newest retained run that has it (every run has "o0").
        if newest >= 0 {
            switch s.resolve("o0") {
            case .success(let op):
                if s.key(of: op) != keys[plans[newest].first] { fail("o0 resolves to \(s.key(of: op)), expected \(keys[plans[newest].first])") }
            case .failure(let f): fail("o0 not resolved: \(f)")
            }
        }
        for (k, sum) in runWaitsDone {
            let c = counts(k)
            if c.open > 0 { fail("wait for run \(plans[k].name) answered with \(c.open) ops open") }
            if sum != WaitSummary(succeeded: c.ok, failed: c.failed, cancelled: c.cancelled) {
                fail("wait for run \(plans[k].name): \(sum) ≠ model \(c.ok)/\(c.failed)/\(c.cancelled)")
            }
        }
        runWaitsDone = []
    }

    func counts(_ k: Int) -> (open: Int, ok: Int, failed: Int, cancelled: Int) {
        var c = (open: 0, ok: 0, failed: 0, cancelled: 0)
        for i in plans[k].first..<plans[k].first + plans[k].count {
            switch outcomes[i] {
            case .none: c.open += 1
            case .succeeded: c.ok += 1
            case .failed: c.failed += 1
            case .cancelled: c.cancelled += 1
            }
        }
        return c
    }

    /// Run `k` was just found evicted: it had finished, and nothing of it can be named any more.
    mutating func checkEvicted(_ k: Int) {
        let p = plans[k]
        for i in p.first..<p.first + p.count where finished[i] != 1 {
            fail("run \(p.name) evicted while \(keys[i]) finished \(finished[i]) times")
        }
        guard case .evictedRun(p.name, _, _, _)? = s.runLookupFailure(p.name) else {
            return fail("evicted run \(p.name): lookup says \(String(describing: s.runLookupFailure(p.name)))")
        }
        for i in [p.first, p.first + p.count - 1] {
            if case .failure(.evictedRun) = s.resolve(keys[i]) {} else { fail("resolve \(keys[i]) after eviction: \(s.resolve(keys[i]))") }
            if case .failure(.evictedRun) = s.resolve(specs[i].id, in: p.name) {} else { fail("resolve \(specs[i].id) in evicted \(p.name): \(s.resolve(specs[i].id, in: p.name))") }
            if case .success(let op) = s.resolve(specs[i].id), s.key(of: op) == keys[i] { fail("bare \(specs[i].id) still resolves to evicted \(keys[i])") }
            if s.lookup(keys[i]) != nil { fail("\(keys[i]) still in the id table after eviction") }
            if s.status(keys[i]) != nil { fail("status of evicted \(keys[i])") }
        }
    }

    /// The end: everything finished. The finished runs kept are within `retainRuns`; past the
    /// retention period every run is evicted and the table compacted.
    mutating func finishRuns() {
        checkRuns()
        if s.totalOperations > s.config.retainRuns * 30 { fail("\(s.totalOperations) ops kept after the drain") }
        now += s.config.retainMicros
        send(.tick)
        if violation != nil { return }
        if evicted.count != plans.count { fail("\(plans.count - evicted.count) runs retained past their retention") }
        if s.totalOperations != 0 || s.runCounts.retained != 0 { fail("\(s.totalOperations) ops, \(s.runCounts.retained) runs kept after every run's retention") }
        if case .success(let page) = s.runInfos(limit: 10), !page.runs.isEmpty { fail("runInfos lists \(page.runs.map(\.name))") }
    }
}

extension Reply {
    var isWaitDone: Bool { if case .waitDone = self { return true } else { return false } }
}
