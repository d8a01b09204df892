import Foundation
import SchedulerCore
import WireProtocol

// Replies built from the core's read-only queries (STATUS, WHY, WORKERS, WAIT) and the wire form of
// published state changes. Nothing here changes the core.

extension CoordinatorShell {
    static let defaultStatusLimit = 1000

    func statusReply(_ s: WireStatus) -> Result<WireStatusReply, LookupFailure> {
        let core = self.core    // one copy for the reply, not one per query (see waitReply)
        var r = WireStatusReply()
        let run = s.run.isEmpty ? nil : s.run
        r.nowUs = now
        r.fenced = UInt64(core.fencing.total)
        r.totalOperations = UInt64(core.totalOperations)
        let facts = facts()
        r.coordinatorRssBytes = facts.residentBytes
        r.coordinatorCpuUs = facts.cpuMicros
        r.security = security
        r.authFailures = authFailures
        r.standbys = facts.standbys
        if !r.standbys.isEmpty { r.replication = facts.replicationSyncing ? "sync" : "async" }
        let names = s.queue.isEmpty ? core.queueNames : [s.queue]
        r.queues = names.compactMap { name in
            core.queueCounts(name).map { c in
                var q = Self.wireCounts(c)
                if let f = core.fairnessStatus(name) { FairnessSummary.fill(&q, f) }
                return q
            }
        }
        if !s.queue.isEmpty && r.queues.isEmpty { r.notFound = [s.queue] }
        r.unplaceable = core.unplaceableReady().map(WireCoreMapping.unplaceable)
        var ids = s.opIds
        var keys: [String?] = []
        if ids.isEmpty && s.ops {
            let limit = min(Int(s.limit == 0 ? UInt32(Self.defaultStatusLimit) : s.limit), WireLimits.maxBatchRecords)
            var filter = OpFilter(run: run, queue: s.queue.isEmpty ? nil : s.queue)
            if !s.states.isEmpty { filter.states = Set(s.states.compactMap(OpState.init(wire:))) }
            if !s.worker.isEmpty { filter.workers = workerIDs(named: s.worker) }
            let page: OpPage
            switch core.operationIDs(after: s.after.isEmpty ? nil : s.after, limit: limit, filter: filter) {
            case .success(let p): page = p
            case .failure(.unknownQueue): page = OpPage()   // named in not_found above, as before runs
            case .failure(let f): return .failure(f)
            }
            ids = page.ids
            keys = page.ids
            r.nextAfter = page.next ?? ""
            r.matched = UInt64(page.matched)
        } else {
            if let run, let f = core.runLookupFailure(run) { return .failure(f) }
            keys = ids.map { ref in if case .success(let op) = core.resolve(ref, in: run) { core.key(of: op) } else { nil } }
        }
        // Every reply stays within the frame limit it imposes on others (PROTOCOL.md §10): at the budget
        // a listing stops (next_after says where to go on) and named ids are left out (`omitted`).
        // Built in local arrays and set once: StatusReply keeps its fields in a shared storage object whose
        // generated accessors are get/set only, so `r.ops.append` copied the whole list every time
        // (quadratic: 0.4 s of loop for one 8,192-op page; BENCHMARKS.md "Instructions per op").
        var ops: [WireOpStatus] = []
        ops.reserveCapacity(ids.count)
        var notFound: [String] = []
        var used = 0
        for (k, id) in ids.enumerated() {
            guard let key = keys[k], let st = core.status(key) else { notFound.append(id); continue }
            var o = opStatus(st, withResult: s.withResults)
            if s.withSpec { addSpec(&o, key: key, kind: st.kind) }
            let size = Self.sizeBound(o)
            if used + size > WireLimits.replyBudget && !ops.isEmpty {
                if s.opIds.isEmpty { r.nextAfter = keys[k - 1] ?? "" } else { r.omitted = Array(ids[k...]) }
                break
            }
            used += size
            ops.append(o)
        }
        r.ops = ops
        r.notFound += notFound
        return .success(r)
    }

    /// Workers whose id ("w3") or name is `text` (a worker keeps its id across reconnects).
    func workerIDs(named text: String) -> Set<UInt64> {
        Set(core.workerSnapshot(includeLost: true).filter { WorkerName.text($0.id) == text || $0.name == text }.map(\.id))
    }

    func runsReply(_ q: WireRuns) -> Result<WireRunsReply, LookupFailure> {
        let limit = min(Int(q.limit == 0 ? UInt32(Self.defaultStatusLimit) : q.limit), WireLimits.maxBatchRecords)
        switch core.runInfos(after: q.after.isEmpty ? nil : q.after, limit: limit, only: q.runs.isEmpty ? nil : q.runs) {
        case .failure(let f): return .failure(f)
        case .success(let page):
            var r = WireRunsReply()
            r.nowUs = now
            r.runs = page.runs.map(Self.wireRun)
            r.nextAfter = page.next ?? ""
            let counts = core.runCounts
            r.retained = UInt64(counts.retained)
            r.evicted = UInt64(counts.evicted)
            r.retainedBytes = UInt64(max(0, core.retainedBytes))
            r.retainBytes = UInt64(max(0, core.config.retainBytes))
            return .success(r)
        }
    }

    static func wireRun(_ i: RunInfo) -> WireRunInfo {
        var w = WireRunInfo()
        w.id = i.name
        w.submitter = i.submitter
        w.submittedUs = i.submittedAt
        w.finishedUs = i.finishedAt ?? 0
        w.total = UInt64(i.total)
        w.pending = UInt64(i.pending)
        w.ready = UInt64(i.ready)
        w.dispatched = UInt64(i.dispatched)
        w.executing = UInt64(i.executing)
        w.succeeded = UInt64(i.succeeded)
        w.failed = UInt64(i.failed)
        w.cancelled = UInt64(i.cancelled)
        w.evictAtUs = i.evictAt ?? 0
        w.resultsEvicted = i.resultsEvicted
        w.bytes = UInt64(max(0, i.bytes))
        return w
    }

    /// An upper bound of an op record's encoded size, for the reply budget.
    static func sizeBound(_ o: WireOpStatus) -> Int {
        var n = 160 + o.id.utf8.count + o.name.utf8.count + o.queue.utf8.count + o.workerID.utf8.count + o.error.utf8.count
        switch o.outcome.result {
        case .succeeded(let d)?: n += d.count
        case .failed(let t)?, .cancelled(let t)?: n += t.utf8.count
        case nil: break
        }
        for e in o.attemptErrors { n += 6 + e.utf8.count }
        n += o.kind.utf8.count
        for d in o.after { n += 6 + d.utf8.count }
        return n
    }

    /// A finished op's outcome (the result's bytes only `withResult`): what WAIT lists per op, without
    /// the rest of an OpStatus (worker names, keys, times), which cost a WAIT naming every op of a
    /// large run more than running them (docs/BENCHMARKS.md, "Instructions per op").
    func outcome(_ st: OpStatus, withResult: Bool) -> WireOutcome {
        var o = WireOutcome()
        switch st.outcome {
        case .succeeded: o.succeeded = withResult ? Data(core.result(st.id) ?? []) : Data()
        case .failed: o.failed = st.errorText ?? ""
        case .cancelled: o.cancelled = st.errorText ?? ""
        case .none: break
        }
        return o
    }

    func opStatus(_ st: OpStatus, withResult: Bool) -> WireOpStatus {
        var o = WireOpStatus()
        (o.run, o.id) = core.runAndOp(of: st.id)
        o.name = st.name
        o.queue = st.queue
        o.state = st.state.wire
        o.cancelled = st.isCancelled
        if st.state == .finished { o.outcome = outcome(st, withResult: withResult) }
        if let w = st.workers.first ?? st.lastWorker {
            o.workerID = WorkerName.text(w)
            o.workerSession = WorkerName.session(w)
            if let access = access {
                // A session of before a restart: the key its journalled owner names ("key:NAME").
                let journalled = st.workers.isEmpty ? st.lastWorkerOwner.flatMap { owner in
                    owner.hasPrefix(Principal.pinTagPrefix) ? String(owner.dropFirst(Principal.pinTagPrefix.count)) : nil
                } : nil
                o.workerKey = access.keyNameOfWorker[WorkerName.number(w)] ?? journalled ?? ""
            }
        }
        o.attempts = UInt32(st.attempts)
        o.resultSize = UInt64(st.resultSize)
        o.error = st.errorText ?? ""
        o.submittedUs = st.submittedAt
        o.readyUs = st.readyAt ?? 0
        o.dispatchedUs = st.dispatchedAt ?? 0
        o.startedUs = st.startedAt ?? 0
        o.attemptErrors = st.attemptErrors
        o.finishedUs = st.finishedAt ?? 0
        o.priority = Int32(st.priority)
        o.parts = UInt32(st.parts)
        o.partsDone = UInt32(st.partsFinished)
        o.resultEvicted = st.resultEvicted
        return o
    }

    /// STATUS `with_spec`: the handler kind and the dependencies, named relative to the op's run.
    func addSpec(_ o: inout WireOpStatus, key: String, kind: String) {
        o.kind = kind
        o.after = core.dependencies(of: key).map { dep in
            let (run, op) = core.runAndOp(of: dep)
            return run == o.run ? op : dep
        }
    }

    static func wireCounts(_ c: QueueCounts) -> WireQueueCounts {
        var q = WireQueueCounts()
        q.name = c.name
        q.pending = UInt64(c.pending)
        q.ready = UInt64(c.ready)
        q.dispatched = UInt64(c.dispatched)
        q.executing = UInt64(c.executing)
        q.finished = UInt64(c.finished)
        q.failed = UInt64(c.failed)
        q.cancelled = UInt64(c.cancelled)
        q.suspended = c.suspended
        q.maxConcurrent = Int32(c.maxConcurrent)
        q.qos = c.qos.wire
        return q
    }

    func whyReply(_ ref: String, run: String) -> Message {
        let id: String
        switch core.resolve(ref, in: run.isEmpty ? nil : run) {
        case .success(let op): id = core.key(of: op)
        case .failure(let f):
            var e = WireErrorReply()
            e.code = .notFound
            e.message = "\(f)"
            e.opID = ref
            return .error(e)
        }
        guard let st = core.status(id) else { preconditionFailure("resolved op \(id) has no status") }
        var r = WireWhyReply()
        (r.run, r.opID) = core.runAndOp(of: id)
        r.state = st.state.wire
        r.cancelled = st.isCancelled
        switch core.why(id) {
        case .unknownOperation: r.reasons = ["unknown operation"]
        case .finished(let k): r.reasons = ["finished: \(k)" + (st.errorText.map { " (\($0))" } ?? "")]
        case .running(let ws): r.reasons = ["running on \(ws.map(WorkerName.text).joined(separator: ", "))"]
        case .dispatched(let ws):
            r.reasons = ["dispatched to \(ws.map(WorkerName.text).joined(separator: ", ")); waiting there for a free slot"]
        case .retrying(let n, let until, let last):
            let wait = max(0, until - now)
            r.reasons = ["attempt \(n) failed" + (last.map { " (\($0))" } ?? "") + "; the next attempt is dispatched in \(wait / 1000) ms"]
        case .cancelling(let ws): r.reasons = ["cancelled; waiting for \(ws.map(WorkerName.text).joined(separator: ", ")) to stop it"]
        case .waitingForDependencies(let deps):
            r.waitingOn = deps
            r.reasons = ["waiting for \(deps.count) unfinished dependenc\(deps.count == 1 ? "y" : "ies"): \(deps.prefix(20).joined(separator: ", "))"]
        case .heldByBarrier(let b): r.reasons = ["held back by barrier \(b), which must finish first"]
        case .barrierWaitingForEarlier(let q, let n): r.reasons = ["barrier of queue \(q): waiting for \(n) operation(s) added before it"]
        case .queueSuspended(let q): r.reasons = ["queue \(q) is suspended (opctl resume \(q))"]
        case .queueAtLimit(let q, let limit, let ahead):
            r.reasons = ["queue \(q) is at its limit of \(limit) running operation(s); \(ahead) ready operation(s) go first"]
        case .noWorkerWith(let kind, let tags):
            r.reasons = ["no connected worker can run it: needs kind '\(kind)'" + (tags.isEmpty ? "" : " and tags \(tags.joined(separator: ","))")]
        case .noFreeCredit(let n, let ahead):
            r.reasons = ["all \(n) capable worker(s) are busy (no free slot); \(ahead) ready operation(s) go first"]
        case .dispatchPending: r.reasons = ["ready; being dispatched"]
        case .heldByConcurrencyKey(let key, let limit, let holders):
            r.reasons = ["concurrency key \(key) is at its limit of \(limit): waiting for \(holders.prefix(20).joined(separator: ", ")) to finish"]
        case .rateLimited(let q, let at):
            r.reasons = ["queue \(q) is at its rate limit: next token in \((max(0, at - now) + 999) / 1000) ms"]
        case .keyRateLimited(let key, let at):
            r.reasons = ["concurrency key \(key) is at its rate limit: next token in \((max(0, at - now) + 999) / 1000) ms"]
        case .waitingForTurn(let share, let shares, let n, let ahead):
            r.reasons = ["all \(n) capable worker(s) are busy (no free slot); \(shares) share keys take turns, this one is \(share); \(ahead) ready operation(s) of its share go first"]
        }
        return .whyReply(r)
    }

    func workersReply() -> WireWorkersReply {
        var r = WireWorkersReply()
        r.workers = core.workerSnapshot().map { w in
            var i = WireWorkerInfo()
            i.workerID = WorkerName.text(w.id)
            i.name = w.name
            i.slots = UInt32(w.slots)
            i.inFlight = UInt32(w.inFlight)
            i.running = UInt32(w.running)
            i.session = WorkerName.session(w.id)
            i.credit = UInt32(max(0, w.credit))
            i.lastSeenUs = w.lastSeen
            if let info = workerLinks.info[w.id] {
                i.tags = info.tags
                i.kinds = info.kinds
                i.connectedUs = info.connectedAt
            }
            i.keyName = access?.keyNameOfWorker[WorkerName.number(w.id)] ?? ""
            return i
        }
        r.security = security
        return r
    }

    /// How peers are admitted (status and WORKERS say it, so an insecure coordinator is never a surprise).
    var security: String { config.access != nil ? "curve" : config.insecure ? "insecure" : "loopback" }

    /// Refused handshakes (ZAP) and requests refused for their key.
    var authFailures: UInt64 {
        (config.access?.authFailures.load(ordering: .relaxed) ?? 0) + (access?.denied ?? 0)
    }

    func waitReply(_ w: WaitRequest, timedOut: Bool) -> WireWaitReply {
        // One copy of the core for the whole reply: called on `self.core` in this loop, each query copied
        // the whole Scheduler (≈ 1,900 instructions, twice per op named: callgrind, BENCHMARKS.md).
        let core = self.core
        var r = WireWaitReply()
        r.timedOut = timedOut
        var allFinished = true
        let ids = w.queue.isEmpty ? w.ids : []
        var used = 0
        let context = w.run.isEmpty ? nil : w.run
        for ref in ids {
            guard case .success(let op) = core.resolve(ref, in: context) else { r.notFound.append(ref); continue }
            let id = core.key(of: op)
            guard let st = core.status(id) else { r.notFound.append(ref); continue }
            guard st.state == .finished else { r.pending.append(id); allFinished = false; continue }
            var o = WireOpOutcome()
            (o.run, o.opID) = core.runAndOp(of: id)
            o.outcome = outcome(st, withResult: w.withResults)
            // Results past the reply budget are left out (and named): fetch them with STATUS.
            if case .succeeded(let d)? = o.outcome.result, !d.isEmpty {
                if used + d.count > WireLimits.replyBudget {
                    o.outcome.succeeded = Data()
                    r.resultsOmitted.append(id)
                } else {
                    used += d.count
                }
            }
            used += 64 + id.utf8.count
            r.outcomes.append(o)
        }
        if w.ids.isEmpty {
            // A whole run or a whole queue: its counts (for a queue, over its retained history).
            let counts = w.queue.isEmpty
                ? core.runInfo(w.run).map { ($0.succeeded, $0.failed, $0.cancelled, $0.unfinished) }
                : core.queueCounts(w.queue).map { ($0.succeeded, $0.failed, $0.cancelled, $0.operationCount) }
            if let (ok, failed, cancelled, open) = counts {
                allFinished = open == 0
                r.succeededCount = UInt64(ok)
                r.failedCount = UInt64(failed)
                r.cancelledCount = UInt64(cancelled)
                r.pendingCount = UInt64(open)
            } else {
                r.notFound = [w.queue.isEmpty ? w.run : w.queue]
            }
        } else {
            for o in r.outcomes {
                switch o.outcome.result {
                case .succeeded?: r.succeededCount += 1
                case .failed?: r.failedCount += 1
                case .cancelled?: r.cancelledCount += 1
                case nil: break
                }
            }
            r.pendingCount = UInt64(r.pending.count)
        }
        r.finished = allFinished && r.notFound.isEmpty
        return r
    }

    func publishedEvent(_ e: OpEvent, withResult: Bool) -> WireEvent {
        var w = WireEvent()
        (w.run, w.opID) = core.runAndOp(of: e.op)
        w.timestampUs = e.at
        switch e.transition {
        case .ready: w.state = .ready
        case .dispatched(_, let attempt, let worker):
            w.state = .dispatched
            w.attempt = UInt32(attempt)
            w.workerID = WorkerName.text(worker)
        case .executing(_, let attempt, let worker):
            w.state = .executing
            w.attempt = UInt32(attempt)
            w.workerID = WorkerName.text(worker)
        case .retrying(_, let failed, let error, let until):
            // Back to pending until its retry delay is over (PROTOCOL.md §5.17).
            w.state = .pending
            w.attempt = UInt32(failed)
            w.message = "attempt \(failed) failed: \(error); retrying in \(max(0, until - e.at) / 1000) ms"
        case .cancelled(let state):
            // The state when it was cancelled: a FINISHED event follows (at once, or when workers stop it).
            w.cancelled = true
            w.state = state.wire
        case .progress(_, let fraction, let message):
            w.state = .executing
            w.fraction = fraction
            w.message = message
        case .finished(let outcome):
            w.state = .finished
            if case .cancelled = outcome { w.cancelled = true }
            w.outcome = outcome.wire(withResult: withResult)
        }
        return w
    }
}

// MARK: LOGS and STORY (1.5)

extension CoordinatorShell {
    /// Keeps the output tails of one FINISHED record (only called for records that carry some), for a
    /// known operation; a repeated record of the same attempt and part is not kept twice.
    mutating func keepOutput(_ r: WireFinishedRecord, worker: UInt64, at: Int64) {
        guard case .success = core.resolve(r.opID) else { return }
        let outcome: String = switch r.outcome {
        case .succeeded?: "succeeded"
        case .failed?: "failed"
        case .cancelled?: "cancelled"
        case nil: ""
        }
        logStore.add(op: r.opID, LogStore.Entry(
            attempt: Int(r.attempt), part: Int(r.part), worker: WorkerName.text(worker), outcome: outcome,
            stdout: r.stdoutTail, stderr: r.stderrTail, stdoutDropped: r.stdoutDropped, stderrDropped: r.stderrDropped,
            finishedAt: at))
    }

    /// An ERROR NOT_FOUND for an op id that does not resolve (as WHY answers).
    private func lookupError(_ ref: String, _ f: LookupFailure) -> Message {
        var e = WireErrorReply()
        e.code = .notFound
        e.message = "\(f)"
        e.opID = ref
        return .error(e)
    }

    func logsReply(_ l: WireLogs) -> Message {
        let key: String
        switch core.resolve(l.opID, in: l.run.isEmpty ? nil : l.run) {
        case .success(let op): key = core.key(of: op)
        case .failure(let f): return lookupError(l.opID, f)
        }
        var r = WireLogsReply()
        (r.run, r.opID) = core.runAndOp(of: key)
        let (entries, evicted) = logStore.logs(op: key, attempt: l.attempt == 0 ? nil : Int(l.attempt))
        r.evicted = evicted
        // Within the reply budget: the newest attempts are the ones left out (and `evicted` says some are missing).
        var used = 0
        for e in entries {
            var a = WireAttemptLog()
            a.attempt = UInt32(e.attempt)
            a.part = UInt32(e.part)
            a.workerID = e.worker
            a.outcome = e.outcome
            a.stdout = e.stdout
            a.stderr = e.stderr
            a.stdoutDropped = e.stdoutDropped
            a.stderrDropped = e.stderrDropped
            a.finishedUs = e.finishedAt
            used += 96 + e.stdout.count + e.stderr.count + e.worker.utf8.count
            if used > WireLimits.replyBudget && !r.attempts.isEmpty { r.evicted = true; break }
            r.attempts.append(a)
        }
        return .logsReply(r)
    }

    func storyReply(_ s: WireStory) -> Message {
        let key: String
        switch core.resolve(s.opID, in: s.run.isEmpty ? nil : s.run) {
        case .success(let op): key = core.key(of: op)
        case .failure(let f): return lookupError(s.opID, f)
        }
        var r = WireStoryReply()
        (r.run, r.opID) = core.runAndOp(of: key)
        guard let (entries, truncated) = core.story(key) else { return .storyReply(r) }
        r.truncated = truncated
        r.entries = entries.map(Self.wireStoryEntry)
        return .storyReply(r)
    }

    static func outcomeName(_ k: OutcomeKind) -> String {
        switch k {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .none: ""
        }
    }

    /// The core's story entry in the wire's words (PROTOCOL.md §5.27). The core keeps no worker or
    /// attempt for some events; those fields stay empty.
    static func wireStoryEntry(_ e: StoryEntry) -> WireStoryEntry {
        var w = WireStoryEntry()
        w.stimulus = e.stimulus
        w.atUs = e.at
        switch e.event {
        case .submitted: w.event = "submitted"
        case .ready: w.event = "ready"
        case .dispatched(let part, let worker):
            w.event = "dispatched"
            w.part = UInt32(part)
            w.workerID = WorkerName.text(worker)
        case .started(let part, let attempt):
            w.event = "started"
            w.part = UInt32(part)
            w.attempt = UInt32(attempt)
        case .partFinished(let part, let outcome):
            w.event = "part_finished"
            w.part = UInt32(part)
            w.detail = outcomeName(outcome)
        case .requeued(let part, let reason):
            w.event = "requeued"
            w.part = UInt32(part)
            w.detail = reason
        case .retryDelay(let part, let ms):
            w.event = "retry_delay"
            w.part = UInt32(part)
            w.detail = "\(ms) ms"
        case .cancelRequested: w.event = "cancel_requested"
        case .timedOut(let part, let attempt):
            w.event = "timed_out"
            w.part = UInt32(part)
            w.attempt = UInt32(attempt)
        case .finished(let outcome):
            w.event = "finished"
            w.detail = outcomeName(outcome)
        case .priorityChanged(let p):
            w.event = "priority"
            w.detail = "\(p)"
        case .restarted:
            w.event = "restarted"
            w.detail = "coordinator restarted; entries before it are rebuilt from the journal"
        }
        return w
    }
}

extension WireFinishedRecord {
    /// Output tails (1.5) to keep: a noop's record has none, and costs nothing more.
    var carriesOutput: Bool { !stdoutTail.isEmpty || !stderrTail.isEmpty || stdoutDropped > 0 || stderrDropped > 0 }
}
