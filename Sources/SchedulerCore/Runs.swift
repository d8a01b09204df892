import DequeModule

// Runs (docs/SEMANTICS.md, "Runs"): every op belongs to the run it was submitted in, and its id is
// unique within that run. The core keys an op as "RUN/OP", so one id table serves every run; the
// unnamed run "" (the core's own default, for embedding and tests) keys its ops by the bare id.
// Finished runs are evicted after the retention period or beyond the retained count (Eviction.swift).

/// What a SUBMIT says about its run.
public struct RunRequest: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        /// A new run: `name` must not be retained or remembered as evicted.
        case create
        /// Ops join the named run, which must be retained (later batches of one file, an API client's run).
        case append
        /// Join the run if it is retained, else create it.
        case createOrAppend
    }
    /// nil: a new run named by the core ("r-1", "r-2", …).
    public var name: String?
    public var mode: Mode
    /// Who and where, as the client says ("user@host"); shown by `runs`.
    public var submitter: String
    /// Only the run's own submitter may append to it (a key that is not an admin's, PROTOCOL.md §12).
    public var appendOwnRunOnly: Bool
    public init(name: String?, mode: Mode, submitter: String = "", appendOwnRunOnly: Bool = false) {
        self.name = name; self.mode = mode; self.submitter = submitter; self.appendOwnRunOnly = appendOwnRunOnly
    }
    /// The unnamed run: ops keep their bare ids (the core's behaviour before runs).
    public static let unnamed = RunRequest(name: "", mode: .createOrAppend)
    /// A new run with a name chosen by the core.
    public static func new(submitter: String = "") -> RunRequest { RunRequest(name: nil, mode: .create, submitter: submitter) }
}

/// A batch applied under a submission key: what a retry with the same key is told (A5).
struct AppliedSubmission {
    var digest: UInt64
    var slot: RunSlot
    var count: Int
}

/// A run that was evicted: enough to say so when it is asked for.
struct EvictedRun {
    var finishedAt: Int64
    var evictedAt: Int64
}

/// Evicted runs by name, the newest `SchedulerConfig.evictedRunsRemembered` of them, so that naming one
/// says "evicted", not "unknown".
struct EvictedRunNames: Sendable {
    private var byName: [String: EvictedRun] = [:]
    /// Remembered names, oldest first (snapshots write them in this order).
    private(set) var order = Deque<String>()
    /// Runs evicted so far, remembered or not.
    private(set) var total = 0

    subscript(_ name: String) -> EvictedRun? { byName[name] }

    /// `name` was evicted; beyond `limit` names the oldest is forgotten.
    mutating func remember(_ name: String, _ run: EvictedRun, limit: Int) {
        total += 1
        byName[name] = run
        order.append(name)
        if order.count > limit { byName[order.removeFirst()] = nil }
    }
}

/// One run as `runs` shows it.
public struct RunInfo: Sendable, Equatable {
    public var name: String
    public var submitter: String
    public var submittedAt: Int64
    public var finishedAt: Int64?
    public var total: Int
    public var pending: Int
    public var ready: Int
    public var dispatched: Int
    public var executing: Int
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    /// When a finished run is evicted at the latest (its retention period), nil while unfinished.
    public var evictAt: Int64?
    /// Its results were evicted to stay within `--retain-bytes` (status, outcomes and times are kept).
    public var resultsEvicted: Bool = false
    /// What its finished ops hold in memory (results, texts, metadata; counted against `--retain-bytes`).
    public var bytes: Int = 0
    public var unfinished: Int { pending + ready + dispatched + executing }
}

/// Why a reference to an op or run names nothing.
public enum LookupFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownOperation(String)
    case unknownRun(String)
    case unknownQueue(String)
    /// The run finished at `finishedAt` and was evicted at `evictedAt` (its ops are forgotten).
    case evictedRun(String, finishedAt: Int64, evictedAt: Int64, now: Int64)

    public var description: String {
        switch self {
        case .unknownOperation(let id): return "unknown operation \(id)"
        case .unknownRun(let r): return "unknown run \(r)"
        case .unknownQueue(let q): return "unknown queue \(q)"
        case .evictedRun(let r, let f, let e, let now):
            return "run \(r) finished \(RunNames.ago(now - f)) ago and was evicted \(RunNames.ago(now - e)) ago (its operations are no longer kept)"
        }
    }
}

extension SubmitProblem: Error {}

/// Every reference of a request that names nothing, as one text.
struct LookupFailures: Error { let text: String }

public enum RunNames {
    /// Run names: 1–64 of letters, digits, `.`, `_`, `-`, not starting with `.` or `-` (no `/`: it
    /// separates run and op in "RUN/OP").
    public static func problem(_ name: String) -> String? {
        let u = name.utf8
        if u.isEmpty { return "a run name must not be empty" }
        if u.count > 64 { return "run name \(name.prefix(64))… is longer than 64 bytes" }
        for (i, b) in u.enumerated() {
            let alnum = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            if alnum || b == 0x5F { continue }
            if (b == 0x2E || b == 0x2D) && i > 0 { continue }
            return "run name \(name) may hold only letters, digits, '.', '_' and '-' (not first)"
        }
        return nil
    }

    /// "RUN/OP" → (RUN, OP); nil for a bare id.
    public static func split(_ ref: String) -> (run: Substring, op: Substring)? {
        guard let n = slashOffset(ref) else { return nil }
        let slash = ref.utf8.index(ref.utf8.startIndex, offsetBy: n)
        return (ref[..<slash], ref[ref.index(after: slash)...])
    }

    /// Byte offset of the first '/' in `s`. The bytes are read in place: stepping through a
    /// `String.UTF8View` costs some 35 instructions a byte, and every id and dependency of a submit
    /// is looked at.
    @inline(__always) static func slashOffset(_ s: String) -> Int? {
        if let inPlace = s.utf8.withContiguousStorageIfAvailable({ $0.firstIndex(of: 0x2F) }) { return inPlace }
        return s.utf8.firstIndex(of: 0x2F).map { s.utf8.distance(from: s.utf8.startIndex, to: $0) }
    }

    /// The core's key of op `op` in run `run` ("" = the unnamed run).
    @inline(__always) public static func key(run: String, op: String) -> String {
        run.isEmpty ? op : run + "/" + op
    }

    /// "3h04m", "12m05s", "4.2s": a compact duration for messages.
    static func ago(_ micros: Int64) -> String {
        let s = max(micros, 0) / 1_000_000
        if s >= 3600 { return "\(s / 3600)h\(pad(s % 3600 / 60))m" }
        if s >= 60 { return "\(s / 60)m\(pad(s % 60))s" }
        return "\(s).\(max(micros, 0) % 1_000_000 / 100_000)s"
    }
    private static func pad(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
}

extension Scheduler {
    /// Opens the run a submit names; nil with the reason when it cannot be used.
    mutating func openRun(_ req: RunRequest) -> Result<RunSlot, SubmitProblem> {
        if let name = req.name {
            if !name.isEmpty, let p = RunNames.problem(name) { return .failure(.invalidRun(name: name, reason: p)) }
            if let slot = runs.slot(named: name) {
                if req.mode == .create { return .failure(.invalidRun(name: name, reason: "run \(name) exists; choose another name, or append to it")) }
                let owner = runs[slot].submitter
                if req.appendOwnRunOnly && owner != req.submitter {
                    return .failure(.invalidRun(name: name, reason: "run \(name) was submitted by '\(owner)': only its submitter or an admin may add operations to it"))
                }
                return .success(slot)
            }
            if let gone = evictedRuns[name] {
                let why = LookupFailure.evictedRun(name, finishedAt: gone.finishedAt, evictedAt: gone.evictedAt, now: now)
                return .failure(.invalidRun(name: name, reason: "\(why)"))
            }
            if req.mode == .append { return .failure(.invalidRun(name: name, reason: "unknown run \(name)")) }
            return .success(createRun(name, req.submitter))
        }
        var name: String
        repeat {
            name = "r-\(nextRunNumber)"
            nextRunNumber += 1
        } while runs.slot(named: name) != nil || evictedRuns[name] != nil
        return .success(createRun(name, req.submitter))
    }

    private mutating func createRun(_ name: String, _ submitter: String) -> RunSlot {
        let run = RunState(number: runCounter, name: name, submitter: submitter, submittedAt: now)
        runCounter += 1
        return runs.add(run)
    }

    /// A retained run that was finished gets ops again (an API client's run): unfinished once more.
    mutating func reopenRun(_ slot: RunSlot) {
        if runs[slot].finishedAt != 0 {
            runs[slot].finishedAt = 0
            if !runs[slot].name.isEmpty { finishedRunCount -= 1 }
        }
    }

    /// Counts an op's outcome in its run; the run's last open op finishes the run.
    @inline(__always)
    mutating func runOpFinished(_ op: Int32, _ kind: OutcomeKind, at: Int64, _ out: inout [Action]) {
        let slot = ops.hot[Int(op)].run
        if runs[slot].opFinished(kind) { runFinished(slot, at: at, &out) }
    }

    private mutating func runFinished(_ slot: RunSlot, at: Int64, _ out: inout [Action]) {
        let run = runs[slot]
        runs[slot].finishedAt = max(at, 1)
        // The unnamed run is never evicted, so it takes none of `retainRuns`' places.
        if !run.name.isEmpty {
            finishedRunCount += 1
            queueForEviction(slot)
        }
        if !run.waiters.isEmpty {
            runs[slot].waiters = []
            for wid in run.waiters { finishWait(wid, &out) }
        }
    }

    /// Puts a finished, unpinned run in the eviction order. Kept in order of finishing time: that is
    /// when the worker says the last op finished, so a run may finish before one reported earlier
    /// (eviction looks at the first).
    mutating func queueForEviction(_ slot: RunSlot) {
        let run = runs[slot]
        guard run.pins == 0 else { return }   // queued when the last pin goes
        var k = finishedRuns.count
        while k > 0 && finishedRuns[k - 1].at > run.finishedAt { k -= 1 }
        finishedRuns.insert((slot, run.number, run.finishedAt), at: k)
    }

    /// An op of another run depends on `dep`'s run: pinned until that op finishes.
    mutating func pinDependencyRun(of op: Int32, _ dep: Int32) {
        let slot = ops.hot[Int(dep)].run
        guard slot != ops.hot[Int(op)].run, !runs[slot].name.isEmpty else { return }
        crossRunDeps[op, default: []].append(slot)
        runs[slot].pins += 1
    }

    /// `op` finished: the runs it depended on are no longer held for it.
    mutating func unpinDependencyRuns(of op: Int32) {
        guard let slots = crossRunDeps.removeValue(forKey: op) else { return }
        for slot in slots {
            runs[slot].pins -= 1
            if runs[slot].pins == 0 && runs[slot].finishedAt != 0 { queueForEviction(slot) }
        }
    }

    /// Resolves a client's reference to an op: "RUN/OP", or a bare "OP" in run `context`, or — with
    /// no context — in the newest retained run that has it.
    public func resolve(_ ref: String, in context: String? = nil) -> Result<Int32, LookupFailure> {
        if let (run, op) = RunNames.split(ref) {
            return resolve(run: String(run), op: String(op), whole: ref)
        }
        if let context, !context.isEmpty { return resolve(run: context, op: ref, whole: context + "/" + ref) }
        if let op = lookup(ref) { return .success(op) }   // the unnamed run
        var best: (number: Int64, op: Int32)?
        for (_, run) in runs.all {
            guard !run.name.isEmpty, run.number > best?.number ?? .min,
                  let op = lookup(run.name + "/" + ref) else { continue }
            best = (run.number, op)
        }
        if let best { return .success(best.op) }
        return .failure(.unknownOperation(ref))
    }

    private func resolve(run: String, op: String, whole: String) -> Result<Int32, LookupFailure> {
        if let i = lookup(whole) { return .success(i) }
        if runs.slot(named: run) != nil { return .failure(.unknownOperation(whole)) }
        return .failure(runFailure(run))
    }

    /// Why `run` is not retained.
    func runFailure(_ run: String) -> LookupFailure {
        if let gone = evictedRuns[run] {
            return .evictedRun(run, finishedAt: gone.finishedAt, evictedAt: gone.evictedAt, now: now)
        }
        return .unknownRun(run)
    }

    /// The run an op belongs to ("" = unnamed) and its id within the run.
    public func runAndOp(of key: String) -> (run: String, op: String) {
        guard let (r, o) = RunNames.split(key) else { return ("", key) }
        return (String(r), String(o))
    }

    /// Retained runs, newest first, from after `after` (a run name); `next` is the following page's cursor.
    public func runInfos(after: String? = nil, limit: Int, only: [String]? = nil) -> Result<(runs: [RunInfo], next: String?), LookupFailure> {
        var slots: [RunSlot]
        if let only {
            slots = []
            for name in only {
                guard let s = runs.slot(named: name) else { return .failure(runFailure(name)) }
                slots.append(s)
            }
        } else {
            slots = []
            for (slot, run) in runs.all where !(run.name.isEmpty && run.ops.isEmpty) { slots.append(slot) }
            slots.sort { runs[$0].number > runs[$1].number }
        }
        var start = 0
        if let after, let s = runs.slot(named: after), let k = slots.firstIndex(of: s) { start = k + 1 }
        let page = slots[min(start, slots.count)...].prefix(limit)
        let infos = page.map { runInfo($0) }
        let next = start + page.count < slots.count ? infos.last?.name : nil
        return .success((infos, next))
    }

    func runInfo(_ slot: RunSlot) -> RunInfo {
        let r = runs[slot]
        var info = RunInfo(name: r.name, submitter: r.submitter, submittedAt: r.submittedAt,
                           finishedAt: r.finishedAt == 0 ? nil : r.finishedAt, total: r.ops.count,
                           pending: 0, ready: 0, dispatched: 0, executing: 0,
                           succeeded: Int(r.succeeded), failed: Int(r.failed), cancelled: Int(r.cancelled), evictAt: nil,
                           resultsEvicted: r.resultsEvicted, bytes: r.bytes)
        if r.unfinished > 0 {
            // Live states are not counted per run on the hot path; a run with open ops is scanned.
            for op in r.ops {
                switch ops.hot[Int(op)].state {
                case .pending, .delayed: info.pending += 1
                case .ready: info.ready += 1
                case .dispatched: info.dispatched += 1
                case .executing: info.executing += 1
                case .finished: break
                }
            }
        } else if r.finishedAt != 0 && !r.name.isEmpty {
            info.evictAt = r.finishedAt &+ config.retainMicros
        }
        return info
    }

    /// A retained run by name.
    public func runInfo(_ name: String) -> RunInfo? { runs.slot(named: name).map(runInfo) }
    /// The queue of the op a client names, resolved as its request will be (`resolve`): access checks
    /// decide on the op the request acts on. nil when there is none (the request is refused as not found).
    public func queueName(ofRef ref: String, in context: String?) -> String? {
        guard case .success(let op) = resolve(ref, in: context) else { return nil }
        return queueName(of: op)
    }

    /// The queues `run`'s ops are in (access checks, PROTOCOL.md §12); nil for a run not retained. O(its ops).
    public func queueNames(ofRun name: String) -> Set<String>? {
        guard let r = runs.slot(named: name).map({ runs[$0] }) else { return nil }
        var lanesSeen = Set<UInt32>(), names = Set<String>()
        for op in r.ops where lanesSeen.insert(UInt32(ops.hot[Int(op)].lane)).inserted {
            names.insert(queues[lanes[Int(ops.hot[Int(op)].lane)].queue].name)
        }
        return names
    }


    /// Why a run is not retained (nil when it is).
    public func runLookupFailure(_ name: String) -> LookupFailure? { runs.slot(named: name) == nil ? runFailure(name) : nil }

    /// The core's key of an op ("RUN/OP").
    public func key(of op: Int32) -> String { ops.ids[Int(op)] }

    /// Runs retained now (the unnamed run counts once it has ops) and runs evicted so far.
    public var runCounts: (retained: Int, evicted: Int) {
        (runs.slotsByName.count - (runs.slot(named: "").map { runs[$0].ops.isEmpty ? 1 : 0 } ?? 0), evictedRuns.total)
    }

    /// WAIT for a whole run: answered when it has no unfinished op, with its outcome counts only.
    mutating func waitRun(_ ref: ClientRef, _ name: String, _ out: inout [Action]) {
        guard let slot = runs.slot(named: name) else { out.append(.reply(ref, .error(.notFound("\(runFailure(name))")))); return }
        let wid = waits.add(WaitRecord(ref: ref, run: slot, remaining: 0))
        if runs[slot].unfinished == 0 { finishWait(wid, &out) } else { runs[slot].waiters.append(wid) }
    }

    /// Cancels every unfinished op of a run (S4 per op).
    mutating func cancelRun(_ ref: ClientRef, _ name: String, _ reason: String, _ out: inout [Action]) {
        guard let slot = runs.slot(named: name) else { out.append(.reply(ref, .error(.notFound("\(runFailure(name))")))); return }
        if journaling { out.append(.journal(.cancelRun(run: name, reason: reason))) }
        for op in runs[slot].ops where ops.hot[Int(op)].state != .finished {
            cancelOp(op, reason, cascade: false, &out)
        }
        out.append(.reply(ref, .ok))
    }
}
