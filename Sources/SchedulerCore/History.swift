// Finished ops' history in the journal (docs/DEPLOY.md, "What survives what"): the worker, times, attempts
// and attempt errors that status shows ride in the op's finish record (`OpHistory`), and the worker
// sessions they name in `workerSession` records, so a restart restores them. Stories and output tails
// are not journalled; a replayed op's story is rebuilt from these columns (Story.swift).

extension Scheduler {
    /// What the finish record of `op` keeps of how it ran.
    func history(of op: Int32) -> OpHistory {
        let i = Int(op)
        let w = ops.cold[i].lastWorker
        return OpHistory(worker: w.isWorker ? workers[w].id : 0, readyAt: ops.cold[i].readyAt, dispatchedAt: ops.cold[i].dispatchedAt,
                         startedAt: ops.cold[i].startedAt, attempts: Int(ops.hot[i].attempt),
                         attemptErrors: ops.attemptErrors.isEmpty ? [] : ops.attemptErrors[op] ?? [])
    }

    /// Replay: a worker session of before the restart, held as a worker that is never alive (not in
    /// `WorkerPool.byID`: a new session may reuse its id and must not be refused or fenced for it).
    mutating func restoreWorkerSession(id: UInt64, name: String, owner: String) {
        guard recovery.restoredWorkers[id] == nil else { return }
        var w = WorkerState(id: id, name: name, owner: owner, slots: 0, capacity: 0, tags: 0, kinds: [], tagNames: [],
                            kindNames: [], lastSeen: now)
        w.alive = false
        w.restored = true
        w.lostReason = "connected before the coordinator restarted"
        recovery.restoredWorkers[id] = workers.restore(w)
    }

    /// Replay: a finished op's history as its finish record kept it.
    mutating func applyHistory(_ op: Int32, _ h: OpHistory) {
        let i = Int(op)
        if h.worker != 0 { ops.cold[i].lastWorker = recovery.restoredWorkers[h.worker] ?? workers.byID[h.worker] ?? WorkerIndex.unknown }
        ops.cold[i].readyAt = h.readyAt
        ops.cold[i].dispatchedAt = h.dispatchedAt
        ops.cold[i].startedAt = h.startedAt
        ops.hot[i].attempt = UInt16(clamping: max(1, h.attempts))
        ops.attemptErrors[op] = h.attemptErrors.isEmpty ? nil : h.attemptErrors
    }

    /// Every worker session this core knows (live, lost, or from before a restart), oldest first: the
    /// shell gives each worker its number again after a restart.
    public func journalledWorkerSessions() -> [(id: UInt64, name: String, owner: String)] {
        workers.map { ($0.id, $0.name, $0.owner) }
    }

    /// Snapshot: every session as a `workerSession` record (retained ops name some; the shell numbers
    /// workers by all of them). One small record per session ever seen.
    func workerSessionRecords() -> [JournalRecord] {
        var seen: Set<UInt64> = []
        return workers.compactMap { w in seen.insert(w.id).inserted ? .workerSession(id: w.id, name: w.name, owner: w.owner) : nil }
    }
}
