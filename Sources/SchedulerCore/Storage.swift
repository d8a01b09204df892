import HeapModule
import DequeModule

// Internal storage: dense Int32 indices, struct-of-arrays for ops, no class per op.

/// Op flag bits.
enum Flag {
    static let cancelled: UInt8 = 1      // isCancelled (cancel requested or finished cancelled)
    static let cascade: UInt8 = 2        // cancellation cascades to dependents
    static let barrier: UInt8 = 4
    static let policySucceeded: UInt8 = 8
    static let inPartials: UInt8 = 16    // listed in its lane's partials deque
    // 32 and 64 are free (they were a single-part op's "started" and "retry delay": its state says both).
    /// Its run was evicted: a dead row, forgotten by every table, until `compact` drops it.
    static let evicted: UInt8 = 128
}

/// Where one part of an op stands. A multi-part op keeps one per part (`MultiPart.status`); a
/// single-part op's one part is its state (`init(singlePart:)`), so the two can never disagree.
enum PartStatus: UInt8 {
    case waiting        // to be dispatched (or, single-part, its prerequisites to finish)
    case dispatched     // on a worker, not started
    case running        // its handler runs
    case done
    case delayed        // a failed attempt waits out its retry delay

    /// The part of a single-part op in `state`.
    @inline(__always) init(singlePart state: OpState) {
        switch state {
        case .pending, .ready: self = .waiting
        case .dispatched: self = .dispatched
        case .executing: self = .running
        case .finished: self = .done
        case .delayed: self = .delayed
        }
    }
}

/// Why a part went back to be dispatched again (story entries).
enum RequeueReason: Int32 {
    case workerLost = 1
    case failed = 2
    case timedOut = 3
    case notStarted = 4

    var text: String {
        switch self {
        case .workerLost: "worker lost"
        case .failed: "failed, retrying"
        case .timedOut: "timed out, retrying"
        case .notStarted: "not started in time, taken back"
        }
    }
}

/// The fields touched on every transition, kept together (one cache line per op): at 1M ops, random
/// access to a dozen separate columns per event cost more than the struct-of-arrays saved.
struct OpHot {
    var heapKey: Int64 = 0
    var lane: Int32
    var unfinishedDeps: Int32 = 0
    var firstOut: Int32 = -1           // dependents list head (into edges), -1 none
    var epoch: Int32 = 0
    var storyHead: Int32 = -1
    var holder = WorkerIndex.nobody    // worker holding the (single) part
    var run = RunSlot(raw: 0)          // its run (RunTable.swift)
    var parts: UInt16
    var partsLeft: UInt16              // parts not finished
    var waitingParts: UInt16           // parts waiting for dispatch
    var inflightParts: UInt16 = 0
    var attempt: UInt16 = 1
    var failures: UInt16 = 0           // failed or timed-out attempts so far
    var failRetriesLeft: UInt16
    var lossRetriesLeft: UInt16
    var priority: Int8
    var state: OpState = .pending
    var flags: UInt8
    var outcome: OutcomeKind = .none
    /// Its share key's slot in its queue's `ShareTable` (A11); 0 while the queue has one share.
    var share: Int32 = 0
    /// Its concurrency key (`Scheduler.concurrencyKeys`), or `.noKey`.
    var concurrencyKey = ConcurrencyKeyIndex.noKey

    /// Finished with `outcome` (`Scheduler.finishOp`): nothing waits for dispatch or a retry any more.
    /// One write of the record: each paged write checks uniqueness.
    @inline(__always) mutating func settle(_ outcome: OutcomeKind) {
        self.outcome = outcome
        if outcome == .cancelled { flags |= Flag.cancelled }
        waitingParts = 0
    }
}

/// The colder per-op fields, in one column (a submit appends one element, not eight; each field is
/// read or written a few times in an op's life).
struct OpCold {
    var submittedAt: Int64
    var readyAt: Int64 = 0
    var dispatchedAt: Int64 = 0
    var startedAt: Int64 = 0
    var finishedAt: Int64 = 0
    /// Its dependencies: `OpStore.depList[depStart ..< depStart + depCount]` (set when it is wired).
    var depStart: Int32 = 0
    var depCount: Int32 = 0
    /// The worker that last held a part (status; whose claims are taken back), `.nobody` before the
    /// first dispatch, or `.unknown` for ops replayed from the journal whose worker session is not known.
    var lastWorker: WorkerIndex

    /// One write for both (a paged write checks uniqueness once).
    @inline(__always) mutating func setDependencies(start: Int32, count: Int32) {
        depStart = start
        depCount = count
    }
}

/// Ready-heap entry; the max is the next to run: higher priority, then earlier arrival.
struct ReadyEntry: Comparable {
    var key: Int64
    var op: Int32
    static func < (a: ReadyEntry, b: ReadyEntry) -> Bool { a.key < b.key }
    static func == (a: ReadyEntry, b: ReadyEntry) -> Bool { a.key == b.key && a.op == b.op }
}

/// Ready ops of one (queue, QoS, placement class), a queue per share key while its queue shares
/// (FairShare.swift). Stale heap entries are skipped lazily.
struct Lane {
    let queue: QueueIndex
    let qos: UInt8                // OperationQoS.rank
    let cls: Int32
    /// The lane's ready heap while its queue has one share key (the per-op path reads it directly, as
    /// before fair share). Empty while the queue shares: its entries moved to `shares[0]`.
    var heap = Heap<ReadyEntry>()
    /// While the queue has several share keys: one queue per share slot, and one current entry in
    /// `fronts` per non-empty one, the best share first (ShareFront).
    var shares: [ShareQueue] = []
    var fronts = Heap<ShareFront>()
    /// Every entry (stale ones included) by share slot, slot 0 first (queries, validation, compaction).
    var entriesBySlot: [[ReadyEntry]] {
        var slots = shares.map(\.unordered)
        if slots.isEmpty { slots = [[]] }
        slots[0] += heap.unordered
        return slots
    }
    /// Its queue has several share keys (`ShareTable.isSharing`), kept here for the per-op paths.
    var sharing = false
    /// Ops of this lane in state ready (the heap may also hold stale entries).
    var readyCount: Int32 = 0
    /// Executing ops with parts still to dispatch (multi-part, retried parts); exempt from the queue limit.
    var partials = Deque<Int32>()
}

struct QueueState {
    var name: String
    var maxConcurrent: Int32
    var qos: OperationQoS
    var suspended: Bool
    var fairness = QueueFairness.default
    /// Rate limit (GCRA): the theoretical time of the next dispatch, µs; see `RateLimit`.
    var rateTheoreticalAt: Double = 0
    /// When this queue's next ageing sweep is due (`Timers.queueAgeing`); .max = none armed (Ageing.swift).
    var ageingDue: Int64 = .max
    var pending: Int32 = 0        // pending or delayed (a retry delay): the wire has one state for both
    var ready: Int32 = 0
    var dispatched: Int32 = 0     // on workers, none started yet
    var executing: Int32 = 0      // a handler ran or runs (a part said STARTED)
    var succeeded: Int32 = 0
    var failed: Int32 = 0
    var cancelled: Int32 = 0
    var lanesByQos: [[Int32]] = Array(repeating: [], count: 5)
    var inRing: UInt8 = 0         // bit per QoS level
    var currentEpoch: Int32
    var barrier: Int32 = -1       // last barrier op
    var members: [Int32] = []     // ops of this queue (finished ones pruned on cancelAll)
    var waiters: [Int32] = []     // wait ids for "whole queue"
    var unfinished: Int32 { pending + ready + dispatched + executing }
    /// Ops that hold one of the queue's `maxConcurrent` places: dispatched or executing.
    var occupying: Int32 { dispatched + executing }
    var atLimit: Bool { maxConcurrent >= 0 && occupying >= maxConcurrent }

    /// An op of the queue moved from `old` to `new` (`Scheduler.transition`; one write of the queue's
    /// state). Finished ops are counted by outcome in `finishOp`.
    @inline(__always) mutating func count(leaving old: OpState, entering new: OpState) {
        switch old {
        case .pending, .delayed: pending -= 1
        case .ready: ready -= 1
        case .dispatched: dispatched -= 1
        case .executing: executing -= 1
        case .finished: break
        }
        switch new {
        case .pending, .delayed: pending += 1
        case .ready: ready += 1
        case .dispatched: dispatched += 1
        case .executing: executing += 1
        case .finished: break
        }
    }
}

/// Ops between two barriers of a queue; the closing barrier waits until `unfinished` is 0.
struct Epoch {
    var unfinished: Int32
    var closer: Int32 = -1
    var opener: Int32 = -1    // the barrier that began it
    /// The following epoch, which counts this one as a member until it drains
    /// (so a later barrier waits for everything before it even if a barrier in between was cancelled).
    var next: Int32 = -1
}

/// (kind, required tags): ops of one class can run on the same workers.
struct PlacementClass {
    let kind: Int32
    let requires: UInt64
    var capable: [WorkerIndex] = []
    var credit: Int = 0
    /// Round-robin of capable workers with credit; (worker, creditEpoch), stale entries skipped.
    var rr = Deque<(WorkerIndex, UInt32)>()
    /// Queues that found this class without credit; woken when credit appears.
    var parked: [QueueIndex] = []
}

struct WorkerState {
    let id: UInt64
    let name: String
    /// Its key's name with keys, else its name (`WorkerHello.owner`).
    let owner: String
    let slots: Int
    /// Most parts it may hold (dispatched and unfinished): slots + its capped prefetch.
    let capacity: Int
    /// Its tags and kinds as bits/indices of those the core has interned (tags and kinds ops use); the
    /// names themselves are kept until it is lost, so a tag or kind an op uses later is matched then.
    /// A peer's HELLO therefore never grows the core's tag bits or kind table.
    var tags: UInt64
    var kinds: Set<Int32>
    var tagNames: Set<String>
    var kindNames: Set<String>
    var credit: Int = 0
    var creditEpoch: UInt32 = 0
    var alive = true
    var lastSeen: Int64
    var held: [UInt64] = []      // partKeys dispatched here; may hold stale keys (see Inflight.swift)
    var inflightCount = 0        // parts dispatched here and not finished (prefetched ones too)
    var running = 0              // of those, parts whose handler runs (STARTED)
    var classes: [Int32] = []
    var dispatched: Int = 0
    var lostReason: String?
    /// A session named by the journal, connected before a restart: never alive here, held only so that
    /// restored ops can name the worker that ran them (History.swift).
    var restored = false
}

struct Inflight { var worker: WorkerIndex; var attempt: UInt16 }

/// Per-part bookkeeping of ops with parts > 1.
struct MultiPart {
    var status: [PartStatus]
    var results: [[UInt8]]
    var worker: [WorkerIndex]       // .nobody: not in flight
    var attempt: [UInt16]

    init(parts: Int) {
        status = Array(repeating: .waiting, count: parts)
        results = Array(repeating: [], count: parts)
        worker = Array(repeating: .nobody, count: parts)
        attempt = Array(repeating: 0, count: parts)
    }
}

/// The `MultiPart` records of unfinished multi-part ops, by op: made at submit, dropped when the op
/// finishes (a single-part op keeps its part in `OpHot`).
struct MultiPartTable: Sendable {
    private var byOp: [Int32: MultiPart] = [:]

    var isEmpty: Bool { byOp.isEmpty }

    /// Op `op`'s record: `op` has parts > 1 and has not finished.
    subscript(_ op: Int32) -> MultiPart {
        get {
            guard let record = byOp[op] else { Self.noRecord(op) }
            return record
        }
        _modify {
            if byOp[op] == nil { Self.noRecord(op) }
            yield &byOp[op]!
        }
    }

    @inline(never) private static func noRecord(_ op: Int32) -> Never {
        preconditionFailure("op \(op) has no multi-part record (single-part, or finished)")
    }

    /// Op `op`'s record if it has one (none for a single-part or finished op).
    func record(of op: Int32) -> MultiPart? { byOp[op] }

    mutating func add(_ op: Int32, parts: Int) { byOp[op] = MultiPart(parts: parts) }

    mutating func remove(_ op: Int32) { byOp[op] = nil }

    /// Ops that have a record (validation).
    var ops: [Int32] { Array(byOp.keys) }

    /// Compaction renumbered the ops; finished ops have no record left.
    mutating func renumberOps(_ remap: OpRemap) { byOp = remap.rekeyed(byOp) }
}

struct WaitRecord {
    var ref: ClientRef
    var queue: QueueIndex?            // a whole-queue wait: that queue
    var run: RunSlot?                 // a whole-run wait: that run
    var remaining: Int32
    var summary = WaitSummary(succeeded: 0, failed: 0, cancelled: 0)
}

/// Retry delay settings of an op whose settings differ from the defaults.
struct RetryDelay {
    var base: Int64
    var max: Int64
}

@inline(__always) func partKey(_ op: Int32, _ part: Int) -> UInt64 { UInt64(UInt32(op)) << 16 | UInt64(part) }
