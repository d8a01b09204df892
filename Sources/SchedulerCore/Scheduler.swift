import HeapModule
import DequeModule

/// Counts of worker messages ignored because they name a stale attempt, a lost/unknown worker or an unknown op.
public struct FencingCounters: Sendable, Equatable {
    public var staleAttempt = 0
    public var unknownWorker = 0
    public var lostWorker = 0
    public var unknownOp = 0
    public var total: Int { staleAttempt + unknownWorker + lostWorker + unknownOp }
    /// Attempts a (re-)registering worker listed that were not dispatched to its owner, or that it could
    /// not have been sent (tags, kinds, `key:` pins): refused, never taken back (Recovery.swift). Not
    /// in `total`: these are not late reports but claims no honest worker makes.
    public var refusedClaim = 0
}

/// The coordinator's whole state as a pure, deterministic state machine.
/// Feed `Input`s to `handle`; carry out the returned `Action`s. Queries never mutate.
/// Rule numbers in this module's comments (S1–S17, A1–A10) are those of docs/SEMANTICS.md.
public struct Scheduler: Sendable {
    public let config: SchedulerConfig
    /// Everything kept per op: columns, dependency lists, side tables (OpStore.swift).
    var ops = OpStore()
    var idTable = IdTable()

    var queues: [QueueState] = []
    var queueIndex: [String: QueueIndex] = [:]
    var lanes: [Lane] = []
    var laneIndex: [UInt64: Int32] = [:]
    var epochs: [Epoch] = []
    var rings: [Deque<QueueIndex>] = Array(repeating: Deque(), count: 5)

    /// Workers, their credit and the placement classes (WorkerPool.swift).
    var workers = WorkerPool()

    /// Every deadline, one heap per kind of target (Timers.swift).
    var timers = Timers()
    /// Ready ops' latest priority change in a queue with ageing: where their wait restarts (Ageing.swift).
    var agedAt: [Int32: Int64] = [:]
    /// Each queue's share keys, by queue index (FairShare.swift); kept apart from `queues` because the
    /// per-dispatch writes to a share's turn copied the whole queue state when it lived inside it.
    var shareTables: [ShareTable] = []
    /// Share slots by (queue, share key name) (FairShare.swift).
    var shareIndex: [QueueScopedName: Int32] = [:]
    var concurrencyKeys: [ConcurrencyKey] = []
    var concurrencyKeyIndex: [QueueScopedName: ConcurrencyKeyIndex] = [:]
    /// Share keys ops named themselves (`OperationSpec.share`), for `key` mode and re-sharing.
    var opShares: [Int32: String] = [:]
    /// A queue's keyLimit was lowered at some time: holders may then exceed it until they finish (validate).
    var keyLimitLowered = false
    var requestedTick: Int64 = .max

    /// Open waits (S12) and watchers (A9), Waits.swift.
    var waits = WaitTable()
    var watchers = WatchGroups()

    /// Retained runs by slot and by name (RunTable.swift).
    var runs = RunTable()
    var runCounter: Int64 = 1
    var nextRunNumber = 1                  // for generated names r-1, r-2, …
    var finishedRunCount = 0               // retained named runs with no unfinished op
    var finishedRuns = Deque<(slot: RunSlot, number: Int64, at: Int64)>()   // eviction order
    var evictedRuns = EvictedRunNames()
    var deadOps = 0
    /// Bytes finished ops of retained runs hold (RetainBytes.swift), against `config.retainBytes`.
    public internal(set) var retainedBytes = 0
    var crossRunDeps: [Int32: [RunSlot]] = [:]   // op → other runs it depends on (pins)
    public internal(set) var compactions = 0
    /// Submission keys of retained runs' batches (A5).
    var submissionKeys: [String: AppliedSubmission] = [:]
    /// Where recovery stands: replaying, holding dispatch for the workers that were connected (Recovery.swift).
    var recovery = RecoveryState()

    /// Every op's transitions, in one bounded ring (Story.swift).
    var story: StoryRing
    /// The ready heaps' push counter (`readyKey`).
    var nextSeq: Int64 = 0
    public internal(set) var fencing = FencingCounters()
    public internal(set) var metrics: SchedulerMetrics
    /// Running ops whose cancellation was asked, and when (for the cancel-latency samples).
    var cancelAskedAt: [Int32: Int64] = [:]

    // per-handle context
    var now: Int64 = 0
    var stimulus: UInt64 = 0
    var releaseQueue: [Int32] = []

    public init(config: SchedulerConfig = SchedulerConfig()) {
        self.config = config
        story = StoryRing(capacity: config.storyCapacity)
        metrics = SchedulerMetrics(sampleCapacity: config.metricsSampleCapacity)
        _ = ensureQueue(QueueSpec(name: "default"))
    }

    /// Pre-sizes the op columns (optional; avoids regrowth for known loads).
    public mutating func reserve(ops n: Int) {
        ops.reserve(n); idTable.reserve(n)
    }

    public mutating func handle(_ input: Input) -> [Action] {
        var out: [Action] = []
        handle(input, into: &out)
        return out
    }

    /// Appends the actions for `input` to a caller-owned buffer.
    public mutating func handle(_ input: Input, into out: inout [Action]) {
        now = input.now
        stimulus = input.stimulus
        switch input.event {
        case .submit(let ref, let specs, let qs, let run, let key, let unknown):
            submit(ref, specs, qs, run, key: key, unknownPriorities: unknown, &out)
        case .cancel(let ref, let ids, let cascade, let reason, let run, let scope):
            cancelRequest(ref, ids, cascade, reason, run, scope: scope, &out)
        case .cancelRun(let ref, let run, let reason): cancelRun(ref, run, reason, &out)
        case .cancelAll(let ref, let q, let reason): cancelAllRequest(ref, q, reason, &out)
        case .suspend(let ref, let q): setSuspended(ref, q, true, &out)
        case .resume(let ref, let q): setSuspended(ref, q, false, &out)
        case .setQueueLimit(let ref, let q, let n): setLimit(ref, q, n, &out)
        case .setQueueFairness(let ref, let q, let f): setFairness(ref, q, f, &out)
        case .setPriority(let ref, let id, let p, let inherit, let run, let scope):
            setPriority(ref, id, p, inherit, run, scope: scope, &out)
        case .wait(let ref, let ids, let run): waitOps(ref, ids, run, &out)
        case .waitQueue(let ref, let q): waitQueue(ref, q, &out)
        case .waitRun(let ref, let run): waitRun(ref, run, &out)
        case .watch(let ref, let q, let run, let withResults, let progress):
            watch(ref, q, run, withResults: withResults, progress: progress, &out)
        case .unwatch(let c): unwatch(c)
        case .workerJoined(let hello): workerJoined(hello, &out)
        case .credit(let w, let n): creditGrant(w, n)
        case .heartbeat(let w): _ = liveWorker(w)
        case .partStarted(let ref): partStarted(ref, &out)
        case .progress(let ref, let f, let message): progress(ref, f, message, &out)
        case .partFinished(let ref, let outcome, let grant): partFinished(ref, outcome, grant, &out)
        case .workerLost(let w, let reason): workerLostInput(w, reason, &out)
        case .tick: tick(&out)
        case .coordinatorPaused(let micros): excuseSilence(micros)
        case .restore(let record): restore(record, &out)
        case .recovered: recovered(&out)
        }
        drainReleases(&out)
        pump(&out)
        // Replay evicts where the journal's `evictedRun` records say, nothing else (Eviction.swift).
        if !recovery.replaying && (finishedRunCount > config.retainRuns || retainedBytes > config.retainHighWater
                          || (finishedRuns.first.map { now &- $0.at >= config.retainMicros } ?? false)) {
            evictRuns(&out)
        }
        armTick(&out)
    }

    /// Index of an accepted op by its key ("RUN/OP"; a bare id in the unnamed run).
    func lookup(_ id: String) -> Int32? { idTable.find(id, IdKeys(ids: ops.ids, batch: nil, base: 0)) }

    func queueName(ofOp op: Int32) -> String { queues[lanes[Int(ops.hot[Int(op)].lane)].queue].name }
    func queueOf(_ op: Int32) -> QueueIndex { lanes[Int(ops.hot[Int(op)].lane)].queue }
}
