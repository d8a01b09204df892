// Everything the shell feeds into the core. Time and identity come from outside.

/// Routes a reply: an opaque client connection id and the client's request id.
public struct ClientRef: Sendable, Hashable {
    public var client: UInt64
    public var request: UInt64
    public init(client: UInt64, request: UInt64) { self.client = client; self.request = request }
}

/// Names one dispatched part as the worker echoes it back; checked against the in-flight record (fencing).
public struct PartRef: Sendable, Hashable {
    public var worker: UInt64
    public var op: String
    public var part: Int
    public var attempt: Int
    /// The op's row (`Dispatch.token`), when known: a worker echoes the DISPATCH's token in its reports
    /// (PROTOCOL.md 1.10), and recovery replays its own records. Checked against `op`, so a stale row (a
    /// restarted coordinator, a compaction since) or none (a 1.9 worker) only costs the id lookup.
    public var token: UInt64?
    /// When the worker says it happened (STARTED, FINISHED), already on the coordinator's timeline;
    /// nil = when the shell received it. The core keeps it between the part's dispatch and now.
    public var at: Int64?
    public init(worker: UInt64, op: String, part: Int, attempt: Int, token: UInt64? = nil, at: Int64? = nil) {
        self.worker = worker; self.op = op; self.part = part; self.attempt = attempt; self.token = token; self.at = at
    }
}

public struct WorkerHello: Sendable, Equatable {
    /// Chosen by the shell, unique and never reused (a reconnect is a new worker).
    public var worker: UInt64
    public var name: String
    public var slots: Int
    public var tags: [String]
    public var kinds: [String]
    /// Initial credit; nil = slots.
    public var credit: Int?
    /// Parts it wants beyond its slots (waiting locally); nil = slots. Capped by `SchedulerConfig.maxPrefetch`.
    public var prefetch: Int?
    /// A re-registering worker's attempts (A5): those it still holds, and those it finished while the
    /// coordinator was away (or just before). The core takes them back instead of running them again
    /// where it can, and cancels the others on the worker (Recovery.swift).
    public var running: [HeldPart]
    public var finished: [FinishedPart]
    /// Live sessions this one replaces (the same worker re-registering): lost in the same step, so
    /// what they held is taken back from `running` before anything can dispatch it again.
    public var replaces: [UInt64]
    /// Who runs it: the key's name with keys, else the worker's name. Its claims (`running`, `finished`)
    /// are taken back only for attempts dispatched to the same owner (Recovery.swift, PROTOCOL.md §12).
    public var owner: String
    public init(worker: UInt64, name: String, slots: Int, tags: [String] = [], kinds: [String], credit: Int? = nil,
                prefetch: Int? = nil, running: [HeldPart] = [], finished: [FinishedPart] = [], replaces: [UInt64] = [],
                owner: String? = nil) {
        self.worker = worker; self.name = name; self.slots = slots; self.tags = tags; self.kinds = kinds; self.credit = credit
        self.prefetch = prefetch; self.running = running; self.finished = finished; self.replaces = replaces
        self.owner = owner ?? name
    }
}

/// One attempt a worker holds: `startedAt` (coordinator timeline) when its handler runs, nil while it
/// waits for a slot there.
public struct HeldPart: Sendable, Equatable {
    public var op: String
    public var part: Int
    public var attempt: Int
    public var startedAt: Int64?
    public init(op: String, part: Int, attempt: Int, startedAt: Int64? = nil) {
        self.op = op; self.part = part; self.attempt = attempt; self.startedAt = startedAt
    }
}

/// An attempt a worker finished, with its outcome (`at`: when, on the coordinator's timeline).
public struct FinishedPart: Sendable, Equatable {
    public var part: HeldPart
    public var outcome: Outcome
    public var at: Int64?
    public init(part: HeldPart, outcome: Outcome, at: Int64? = nil) { self.part = part; self.outcome = outcome; self.at = at }
}

public enum Event: Sendable {
    // clients
    /// Op ids are unique within the run; `after` names ops of the same run ("OP") or "RUN/OP".
    /// `key`: the client's submission key; a batch whose key was applied already is acknowledged
    /// again (same content) or refused (other content), never applied twice (A5).
    /// `unknownPriorities`: index in `ops` → the priority given, an integer no `OperationPriority` has
    /// (the wire carries any; a spec cannot): listed as `invalidPriority` in its place among the problems.
    case submit(ClientRef, ops: [OperationSpec], queues: [QueueSpec], run: RunRequest = .unnamed, key: SubmissionKey? = nil,
                unknownPriorities: [Int: Int] = [:])
    /// `reason` becomes the outcome's text: cancelled(reason) (A1). Ids are "RUN/OP", or bare ids
    /// resolved in `run` (else in the newest retained run that has them). `scope`: the queues the caller
    /// may act on (nil: all); a cascade stops at dependents outside it (PROTOCOL.md §12).
    case cancel(ClientRef, ids: [String], cascade: Bool, reason: String = "cancelled", run: String? = nil, scope: QueueScope? = nil)
    /// Cancels every unfinished op of a run.
    case cancelRun(ClientRef, run: String, reason: String = "cancelled")
    case cancelAll(ClientRef, queue: String, reason: String = "cancelled")
    case suspend(ClientRef, queue: String)
    case resume(ClientRef, queue: String)
    case setQueueLimit(ClientRef, queue: String, maxConcurrent: Int)
    /// Fair share, concurrency keys and rate of a queue (A11); replaces the queue's current settings.
    case setQueueFairness(ClientRef, queue: String, QueueFairness)
    /// `scope` as for `cancel`: inheritance stops at dependencies outside it.
    case setPriority(ClientRef, id: String, priority: Int, inherit: Bool, run: String? = nil, scope: QueueScope? = nil)
    case wait(ClientRef, ids: [String], run: String? = nil)
    case waitQueue(ClientRef, queue: String)
    /// Until the run has no unfinished op; the reply counts its outcomes only.
    case waitRun(ClientRef, run: String)
    /// Events of one queue and/or one run (nil = any); `withResults`: FINISHED events carry the result
    /// (the shell adds it); `progress`: progress events too.
    case watch(ClientRef, queue: String?, run: String? = nil, withResults: Bool = false, progress: Bool = false)
    case unwatch(client: UInt64)
    // workers
    case workerJoined(WorkerHello)
    case credit(worker: UInt64, grant: Int)
    case heartbeat(worker: UInt64)
    case partStarted(PartRef)
    /// `message`: the worker's words with it ("3 of 10 files"), passed on to watchers.
    case progress(PartRef, fraction: Double, message: String = "")
    /// `grant` is the credit the worker returns with the report (applied even if the report is fenced).
    case partFinished(PartRef, Outcome, grant: Int)
    case workerLost(worker: UInt64, reason: String)
    // time
    case tick
    /// The shell did not read its socket for `micros` beyond its loop budget (a long input, a starved
    /// process): that time is not counted as any worker's silence (liveness counts only the time the
    /// coordinator was listening; docs/ARCHITECTURE.md, "A loop with a bound").
    case coordinatorPaused(micros: Int64)
    // recovery (A5; Recovery.swift)
    /// One journal record, replayed with the time it was made (`Input.now`).
    case restore(JournalRecord)
    /// Replay is complete: dispatching waits until the workers that were connected re-register (and
    /// say which attempts they hold), or two liveness bounds and three seconds pass, whichever is first.
    case recovered
}

public struct Input: Sendable {
    public var stimulus: UInt64
    public var now: Int64
    public var event: Event
    public init(stimulus: UInt64, now: Int64, _ event: Event) {
        self.stimulus = stimulus; self.now = now; self.event = event
    }
}
