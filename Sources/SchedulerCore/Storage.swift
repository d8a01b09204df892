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
    static let timerArmed: UInt8 = 32
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
    var holder: Int32 = -1             // worker holding the (single) part, -1 none
    var parts: UInt16
    var partsLeft: UInt16              // parts not finished
    var waitingParts: UInt16           // parts waiting for dispatch
    var inflightParts: UInt16 = 0
    var attempt: UInt16 = 1
    var failRetriesLeft: UInt16
    var lossRetriesLeft: UInt16
    var priority: Int8
    var state: OpState = .pending
    var flags: UInt8
    var outcome: OutcomeKind = .none
}

/// Per-op columns: the hot record plus colder columns. Rarely used fields live in side dictionaries
/// (names, timeouts, results, errors, multi-part).
struct OpTable {
    var hot: [OpHot] = []
    var ids: [String] = []
    var payloads: [[UInt8]] = []
    var depStart: [Int32] = []         // into Scheduler.depList
    var depCount: [Int32] = []
    var submittedAt: [Int64] = []
    var readyAt: [Int64] = []
    var startedAt: [Int64] = []
    var finishedAt: [Int64] = []
    var lastWorker: [Int32] = []       // worker index that last held a part, -1 none (for status)

    var count: Int { ids.count }

    mutating func reserve(_ n: Int) {
        hot.reserveCapacity(n); ids.reserveCapacity(n); payloads.reserveCapacity(n)
        depStart.reserveCapacity(n); depCount.reserveCapacity(n); submittedAt.reserveCapacity(n)
        readyAt.reserveCapacity(n); startedAt.reserveCapacity(n); finishedAt.reserveCapacity(n)
        lastWorker.reserveCapacity(n)
    }
}

/// Ready-heap entry; the max is the next to run: higher priority, then earlier arrival.
struct ReadyEntry: Comparable {
    var key: Int64
    var op: Int32
    static func < (a: ReadyEntry, b: ReadyEntry) -> Bool { a.key < b.key }
    static func == (a: ReadyEntry, b: ReadyEntry) -> Bool { a.key == b.key && a.op == b.op }
}

/// Ready ops of one (queue, QoS, placement class). Stale heap entries are skipped lazily.
struct Lane {
    let queue: Int32
    let qos: UInt8
    let cls: Int32
    var heap = Heap<ReadyEntry>()
    /// Executing ops with parts still to dispatch (multi-part, retried parts); exempt from the queue limit.
    var partials = Deque<Int32>()
}

struct QueueState {
    var name: String
    var maxConcurrent: Int32
    var qos: QoS
    var suspended: Bool
    var running: Int32 = 0        // ops with a part dispatched and not finished
    var pending: Int32 = 0
    var ready: Int32 = 0
    var succeeded: Int32 = 0
    var failed: Int32 = 0
    var cancelled: Int32 = 0
    var lanesByQos: [[Int32]] = Array(repeating: [], count: 5)
    var inRing: UInt8 = 0         // bit per QoS level
    var currentEpoch: Int32
    var barrier: Int32 = -1       // last barrier op
    var members: [Int32] = []     // ops of this queue (finished ones pruned on cancelAll)
    var waiters: [Int32] = []     // wait ids for "whole queue"
    var unfinished: Int32 { pending + ready + running }
    var atLimit: Bool { maxConcurrent >= 0 && running >= maxConcurrent }
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
    var capable: [Int32] = []
    var credit: Int = 0
    /// Round-robin of capable workers with credit; (worker, creditEpoch), stale entries skipped.
    var rr = Deque<(Int32, UInt32)>()
    /// Queues that found this class without credit; woken when credit appears.
    var parked: [Int32] = []
}

struct WorkerState {
    let id: UInt64
    let name: String
    let slots: Int
    let tags: UInt64
    let kinds: Set<Int32>
    var credit: Int = 0
    var creditEpoch: UInt32 = 0
    var alive = true
    var lastSeen: Int64
    var held: [UInt64] = []      // partKeys dispatched here; may hold stale keys (see Inflight.swift)
    var inflightCount = 0
    var classes: [Int32] = []
    var dispatched: Int = 0
    var lostReason: String?
}

struct Inflight { var worker: Int32; var attempt: UInt16 }

/// Per-part bookkeeping of ops with parts > 1.
struct MultiPart {
    var status: [UInt8]      // 0 waiting, 1 in flight, 2 done
    var results: [[UInt8]]
    var worker: [Int32]
    var attempt: [UInt16]
}

struct WaitRecord {
    var ref: ClientRef
    var queue: Int32 = -1
    var remaining: Int32
    var summary = WaitSummary(succeeded: 0, failed: 0, cancelled: 0)
}

struct TimerEntry: Comparable {
    var at: Int64
    var target: Int32
    static func < (a: TimerEntry, b: TimerEntry) -> Bool { a.at < b.at }
}

@inline(__always) func partKey(_ op: Int32, _ part: Int) -> UInt64 { UInt64(UInt32(op)) << 16 | UInt64(part) }
