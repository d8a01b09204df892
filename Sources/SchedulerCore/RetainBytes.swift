// Retention by bytes (issue 25 finding 3): what finished ops hold — results, error texts, attempt errors,
// ids and a fixed share for their columns and table entries — is counted per run and in total
// (`retainedBytes`). Beyond 75 % of `config.retainBytes` the oldest finished runs lose their results first
// (their ops, outcomes, times and errors stay: status says the result was evicted), then are evicted whole,
// down to 65 % (so the next few finishes do not start the walk again). The other quarter is for what is in
// flight (SchedulerConfig.retainBytes), so the budget bounds the process's memory, not only this count. Runs pinned by
// another run's unfinished dependents are not in the eviction order and keep their results (inputs).
// Finished ops of unfinished runs count too, but wait for their run to finish before they can go.

extension Scheduler {
    /// Columns, hot record, id table and run list entries of one op, roughly (MemoryLayout of OpHot is
    /// 48, ten 8-byte columns, the id table's slot, the run's list, dictionary entries when texts exist).
    static let opOverheadBytes = 160

    /// What finished op `op` holds now.
    func heldBytes(_ op: Int32) -> Int {
        var n = Self.opOverheadBytes + ops.ids[Int(op)].utf8.count
        if !ops.results.isEmpty, let r = ops.results[op] { n += r.count }
        if !ops.reasons.isEmpty, let t = ops.reasons[op] { n += t.utf8.count + 16 }
        if !ops.attemptErrors.isEmpty, let es = ops.attemptErrors[op] { for e in es { n += e.utf8.count + 16 } }
        return n
    }

    /// A finished op's bytes join its run's and the total.
    mutating func holdBytes(_ op: Int32) {
        let n = heldBytes(op)
        runs[ops.hot[Int(op)].run].bytes += n
        retainedBytes += n
    }

    /// The same as `holdBytes(op)` as `finishOp` stores `outcome`, without looking the texts up again.
    @inline(__always)
    mutating func holdBytes(_ op: Int32, _ outcome: Outcome) {
        var n = Self.opOverheadBytes + ops.ids[Int(op)].utf8.count
        switch outcome {
        case .succeeded(let bytes): n += bytes.count
        case .failed(let text), .cancelled(let text): n += text.utf8.count + 16
        }
        if !ops.attemptErrors.isEmpty, let es = ops.attemptErrors[op] { for e in es { n += e.utf8.count + 16 } }
        runs[ops.hot[Int(op)].run].bytes += n
        retainedBytes += n
    }

    /// Before a finished op's texts change (replay): its bytes leave the counts.
    mutating func releaseBytes(_ op: Int32) {
        let n = heldBytes(op)
        runs[ops.hot[Int(op)].run].bytes -= n
        retainedBytes -= n
    }

    /// Over budget: results of the oldest finished runs go first, then the oldest runs whole.
    mutating func evictForBytes(_ out: inout [Action]) {
        let target = config.retainLowWater
        var k = 0
        while retainedBytes > target && k < finishedRuns.count {
            let f = finishedRuns[k]
            k += 1
            guard let r = runs.retained(f.slot), r.number == f.number, r.finishedAt == f.at, !r.resultsEvicted, r.pins == 0 else { continue }
            evictResults(f.slot)
            if journaling { out.append(.journal(.resultsEvicted(run: r.name))) }
        }
        while retainedBytes > target, let f = finishedRuns.first {
            finishedRuns.removeFirst()
            guard let r = runs.retained(f.slot), r.number == f.number, r.finishedAt == f.at, r.pins == 0 else { continue }
            evictRun(f.slot)
            if journaling { out.append(.journal(.evictedRun(name: r.name, finishedAt: r.finishedAt, evictedAt: now))) }
        }
    }

    /// Drops the results of a finished run's ops (status keeps the rest and says so).
    mutating func evictResults(_ slot: RunSlot) {
        guard runs[slot].finishedAt != 0, !runs[slot].resultsEvicted else { return }
        var freed = 0
        for op in runs[slot].ops {
            if let r = ops.results.removeValue(forKey: op) { freed += r.count }
        }
        runs[slot].bytes -= freed
        runs[slot].resultsEvicted = true
        retainedBytes -= freed
    }

    /// Whether op `op`'s result was evicted (its run's results were).
    func resultEvicted(_ op: Int32) -> Bool { runs.retained(ops.hot[Int(op)].run)?.resultsEvicted ?? false }
}
