// Everything the core asks the shell to do.

public struct Dispatch: Sendable, Equatable {
    public var worker: UInt64
    public var op: String
    /// The display name when one was given that differs from the id; `nil` otherwise (the worker
    /// shows the op id then), so an op without a name costs no bytes on the wire.
    public var name: String?
    public var part: Int
    public var parts: Int
    public var attempt: Int
    public var kind: String
    public var payload: [UInt8]
    /// (dependency id, result bytes) of every dependency that succeeded.
    public var inputs: [(String, [UInt8])]
    public var priority: Int
    public var qos: OperationQoS
    /// The op's row: the worker echoes it in STARTED and FINISHED (PROTOCOL.md 1.10) and the shell hands it
    /// back in `PartRef.token`, so a report finds its op without an id lookup (checked against the id).
    public var token: UInt64

    public init(worker: UInt64, op: String, name: String? = nil, part: Int, parts: Int, attempt: Int, kind: String,
                payload: [UInt8], inputs: [(String, [UInt8])], priority: Int, qos: OperationQoS, token: UInt64 = 0) {
        self.worker = worker; self.op = op; self.name = name; self.part = part; self.parts = parts; self.attempt = attempt
        self.kind = kind; self.payload = payload; self.inputs = inputs; self.priority = priority; self.qos = qos
        self.token = token
    }

    public static func == (a: Dispatch, b: Dispatch) -> Bool {
        a.worker == b.worker && a.op == b.op && a.name == b.name && a.part == b.part && a.parts == b.parts && a.attempt == b.attempt
            && a.kind == b.kind && a.payload == b.payload && a.priority == b.priority && a.qos == b.qos
            && a.inputs.count == b.inputs.count
            && zip(a.inputs, b.inputs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}

public enum SubmitProblem: Sendable, Equatable, CustomStringConvertible {
    case emptyId(index: Int)
    case duplicateId(String)
    case unknownDependency(op: String, dependency: String)
    case cycle([String])
    case invalidPriority(op: String, Int)
    case invalidParts(op: String, Int)
    case invalidRetries(op: String, Int)
    case invalidTimeout(op: String)
    case invalidRetryDelay(op: String)
    case emptyKind(op: String)
    case invalidQueue(name: String, reason: String)
    case tooManyTags(String)
    case invalidId(op: String, reason: String)
    case invalidRun(name: String, reason: String)
    /// A dependency "RUN/OP" names a run that is not retained.
    case unavailableDependency(op: String, dependency: String, reason: String)
    /// The submission key was applied already with other content.
    case submissionKeyReused(String)

    public var description: String {
        switch self {
        case .emptyId(let i): return "op #\(i): empty id"
        case .duplicateId(let id): return "duplicate id \(id)"
        case .unknownDependency(let op, let d): return "\(op): unknown dependency \(d)"
        case .cycle(let ids): return "cycle: " + (ids + [ids.first ?? ""]).joined(separator: " -> ")
        case .invalidPriority(let op, let p): return "\(op): invalid priority \(p) (use -8, -4, 0, 4, 8)"
        case .invalidParts(let op, let n): return "\(op): parts must be 1...65535, got \(n)"
        case .invalidRetries(let op, let n): return "\(op): retries must be 0...65535, got \(n)"
        case .invalidTimeout(let op): return "\(op): timeout must be > 0"
        case .invalidRetryDelay(let op): return "\(op): retry delays must be ≥ 0"
        case .emptyKind(let op): return "\(op): empty kind"
        case .invalidQueue(let n, let r): return "queue \(n): \(r)"
        case .tooManyTags(let t): return "tag \(t): more than 64 distinct tags"
        case .invalidId(let op, let r): return "\(op): \(r)"
        case .invalidRun(_, let r): return r
        case .unavailableDependency(let op, let d, let r): return "\(op): dependency \(d): \(r)"
        case .submissionKeyReused(let k): return "submission key \(k) was used for a different submission; use a new key for new content"
        }
    }
}

public struct WaitSummary: Sendable, Equatable {
    public var succeeded: Int
    public var failed: Int
    public var cancelled: Int
    public init(succeeded: Int, failed: Int, cancelled: Int) {
        self.succeeded = succeeded; self.failed = failed; self.cancelled = cancelled
    }
}

/// Accepted ops that no live worker can run now (they wait: a worker may join later). One per
/// placement class (kind + required tags).
public struct Unplaceable: Sendable, Equatable {
    public var kind: String
    public var requires: [String]
    /// Required tags that no live worker with the kind has.
    public var missingTags: [String]
    /// No live worker has the kind at all.
    public var noWorkerKind: Bool
    /// The first few of the ops (`Unplaceable.sampleSize`), in submission order.
    public var ops: [String]
    public var count: Int
    public static let sampleSize = 10
}

public enum Reply: Sendable, Equatable {
    /// `unplaceable`: accepted ops that no live worker can run (a warning, not an error).
    case accepted(count: Int, unplaceable: [Unplaceable] = [], run: String = "")
    /// A retried SUBMIT whose key and content were applied already: acknowledged again, not applied (A5).
    case acceptedBefore(count: Int, run: String)
    case rejected([SubmitProblem])
    case ok
    /// A WATCH took effect: the client's events come in `stream`, shared by every watcher with the same
    /// filters and form (`PublishedEvent.stream`).
    case watching(stream: UInt64)
    /// Done, but a cascade or a priority inheritance left `leftAlone` ops alone: they are in queues
    /// outside the caller's scope.
    case okOutsideScope(leftAlone: Int)
    /// The request was refused; the cause says why (the shell turns it into a wire error code).
    case error(ReplyError)
    case waitDone(WaitSummary)
}

/// Why the core refused a request, typed so the shell picks the wire error code from the cause and not
/// from the text.
public enum ReplyError: Sendable, Equatable, CustomStringConvertible {
    /// An op, run or queue the request names is not there (unknown, or evicted: the text says which).
    case notFound(String)
    /// A value the request gives is out of range.
    case invalid(String)

    public var description: String {
        switch self {
        case .notFound(let text), .invalid(let text): return text
        }
    }
}

/// The KVO analogue: one op transition, sent to each matching watcher.
public struct OpEvent: Sendable, Equatable {
    public enum Transition: Sendable, Equatable {
        case ready
        /// Sent to a worker (prefetched there until a slot frees).
        case dispatched(part: Int, attempt: Int, worker: UInt64)
        /// The worker started its handler (STARTED); `isExecuting` from here on.
        case executing(part: Int, attempt: Int, worker: UInt64)
        case progress(part: Int, fraction: Double, message: String = "")
        /// A failed (or timed-out) attempt; the next one is dispatched after `until` (back to pending).
        case retrying(part: Int, failedAttempt: Int, error: String, until: Int64)
        /// isCancelled became true while the op was in `state` (it may finish in the same step).
        case cancelled(state: OpState)
        case finished(Outcome)
    }
    public var op: String
    public var queue: String
    public var at: Int64
    public var transition: Transition
}

/// An event for one stream of watchers: those with the same filters and form (a WATCH's reply names
/// its stream). The shell numbers a stream's events once and sends the same bytes to each of its
/// watchers: thousands of watchers of everything cost one encoding per event, not thousands.
public struct PublishedEvent: Sendable, Equatable {
    public var stream: UInt64
    /// The stream's watchers now (the core's list, shared, not copied).
    public var watchers: [UInt64]
    /// FINISHED events carry the result (the shell adds it).
    public var withResult: Bool
    public var event: OpEvent
}

/// A submission key (A5: a SUBMIT retried after a lost reply is applied once): the client's key and a
/// digest of the request's content, computed by the shell.
public struct SubmissionKey: Sendable, Hashable {
    public var key: String
    public var digest: UInt64
    public init(key: String, digest: UInt64) { self.key = key; self.digest = digest }
}

/// What the journal keeps (A5): every change a client asked for and every outcome, in the order the
/// core made them. Replaying the records (`Event.restore`, each with the time it was made) into a new
/// core rebuilds every op, run, queue setting and outcome (docs/ARCHITECTURE.md, "Journal and
/// recovery"). A snapshot is the same vocabulary: the records that rebuild the live state
/// (`Scheduler.snapshotRecords`).
public enum JournalRecord: Sendable, Equatable {
    /// An accepted batch: its ops joined `run` ("" = the unnamed run), created with `submitter`.
    case submitted(run: String, submitter: String, ops: [OperationSpec], queues: [QueueSpec], key: SubmissionKey?)
    case cancelRequested(ids: [String], cascade: Bool, reason: String)
    case cancelAll(queue: String, reason: String)
    case cancelRun(run: String, reason: String)
    case queueSettings(QueueSpec)
    case priorityChanged(id: String, priority: Int, inherit: Bool)
    /// `at`: when the op finished (the worker's time on the coordinator's timeline). `history`: what status
    /// shows of how it ran (nil in records written before history was journalled).
    case finished(id: String, outcome: Outcome, at: Int64, history: OpHistory? = nil)
    /// Worker sessions by name: who held work when the coordinator stopped (recovery waits for them).
    case workerJoined(name: String)
    /// A worker session's identity (its id, name and owner), written when it joins and by snapshots for
    /// sessions that finished retained ops: a finish record's `history` names the session by id.
    case workerSession(id: UInt64, name: String, owner: String)
    case workerLeft(name: String)
    /// A finished run was evicted (its ops forgotten; a snapshot lists the names it still remembers).
    case evictedRun(name: String, finishedAt: Int64, evictedAt: Int64)
    /// A finished run's results were dropped for `SchedulerConfig.retainBytes` (its ops are kept).
    case resultsEvicted(run: String)
    // Written by snapshots only:
    /// The next generated run number ("r-N").
    case runNumber(next: Int)
    /// A submission key of a retained run's batch and the count its reply said.
    case submissionKey(run: String, key: SubmissionKey, count: Int)
}

/// What status shows of how a finished op ran, journalled in its finish record so that it survives a
/// restart (docs/DEPLOY.md, "What survives what"). Times are 0 when it never happened.
public struct OpHistory: Sendable, Equatable {
    /// The session (`WorkerHello.worker`) that last held a part, 0 none; named by a `workerSession` record.
    public var worker: UInt64
    public var readyAt: Int64
    public var dispatchedAt: Int64
    public var startedAt: Int64
    public var attempts: Int
    /// Failed attempts' errors, oldest first (as status lists them).
    public var attemptErrors: [String]
    public init(worker: UInt64, readyAt: Int64, dispatchedAt: Int64, startedAt: Int64, attempts: Int, attemptErrors: [String]) {
        self.worker = worker; self.readyAt = readyAt; self.dispatchedAt = dispatchedAt; self.startedAt = startedAt
        self.attempts = attempts; self.attemptErrors = attemptErrors
    }
}

public enum Action: Sendable, Equatable {
    case dispatch(Dispatch)
    case cancelOnWorker(worker: UInt64, op: String, part: Int, attempt: Int, reason: String)
    case reply(ClientRef, Reply)
    /// An event for a stream of watchers (one action per group of watchers with the same filters and
    /// form; PublishedEvent).
    case publish(PublishedEvent)
    case journal(JournalRecord)
    /// Call `handle(tick)` at (or after) this time.
    case scheduleTick(at: Int64)
    /// The core declared the worker lost (silent); the shell should drop its connection.
    case disconnectWorker(worker: UInt64, reason: String)
    /// A (re-)registering worker listed `count` attempts it may not claim (`Scheduler.claimRefusal`): they
    /// were not taken back. The shell logs it with the worker's key; `example` names one and why.
    case refusedClaims(worker: UInt64, count: Int, example: String)
}
