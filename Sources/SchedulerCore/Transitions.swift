// The operation state machine (S1, docs/SEMANTICS.md) as one table, the way dask's scheduler keeps its
// transitions table: every change of an op's state goes through `transition`, which checks the pair
// against the table (an impossible pair traps), moves the queue's and lane's counters and appends the
// story entry. docs/ARCHITECTURE.md shows the same table.
//
//   submit ─▶ pending ── last prerequisite ──▶ ready ◀──── retry delay passed ──── delayed
//                          finished              │  ▲                                  ▲
//                               sent to a worker │  │ worker lost, a loss retry left   │
//                                                ▼  │                                  │
//                                            dispatched ──────── attempt failed ───────┤
//                                                │  ▲                                  │
//                                        STARTED │  │ (worker lost, as above)          │
//                                                ▼  │                                  │
//                                            executing ────── failed or timed out ─────┘
//
//   Every state but finished also moves to finished: cancelled, an outcome with no retry left, a worker
//   lost with no loss retry left, or (pending) a dependency that did not succeed under `succeeded`.
//   `transitions` below lists each edge with its reason.
//
// `delayed` holds no queue place and no worker; its one retry timer (Timers.swift) moves it on. A
// single-part op's one part is its state (`PartStatus(singlePart:)`, Parts.swift).

extension OpState {
    /// Every state change the core makes: what causes it, and the function that makes it and does its
    /// work (dask keeps one function per edge; here one function enters each state, whatever it comes
    /// from, and reads the old state where the work differs). A test checks that `transition(_:to:)`
    /// is called only from the functions listed for that state, and docs/ARCHITECTURE.md's table.
    public static let transitions: [(from: OpState, to: OpState, cause: String, by: [String])] = [
        (.pending, .ready, "its last open prerequisite finished", ["makeReady"]),
        (.pending, .finished, "cancelled; or a dependency did not succeed under policy `succeeded`", ["finishOp"]),
        (.ready, .dispatched, "sent to a worker that has credit; or, after recovery, a worker's claim taken back", ["tryDispatchOne", "reattach"]),
        (.ready, .finished, "cancelled", ["finishOp"]),
        (.dispatched, .executing, "the worker said STARTED: its handler runs", ["partStarted"]),
        (.dispatched, .ready, "its worker was lost before it started: dispatched again (loss retry)", ["makeReady"]),
        (.dispatched, .delayed, "the attempt failed before it started: waits out its retry delay", ["requeuePart"]),
        (.dispatched, .finished, "the worker reported an outcome; or cancelled, or its worker lost, with no retry left", ["finishOp"]),
        (.executing, .ready, "its worker was lost: dispatched again (loss retry)", ["makeReady"]),
        (.executing, .delayed, "the attempt failed or timed out: waits out its retry delay", ["requeuePart"]),
        (.executing, .finished, "succeeded, failed or timed out with no retry left, cancelled, or worker lost with no loss retry left", ["finishOp"]),
        (.delayed, .ready, "its retry delay passed", ["makeReady"]),
        (.delayed, .finished, "cancelled", ["finishOp"]),
    ]

    /// `transitions` as bits (bit from × 6 + to; six bits per `from`, pending's lowest), a literal so
    /// the hot path reads a constant (a test checks it against the table).
    static let allowedMask: UInt64 = 0b010010_000000_110010_111010_010100_010010

    @inline(__always) func canMove(to new: OpState) -> Bool {
        Self.allowedMask & (1 << (UInt64(rawValue) &* 6 &+ UInt64(new.rawValue))) != 0
    }

    /// Dispatched and executing ops hold one of their queue's `maxConcurrent` places.
    var occupiesQueue: Bool { self == .dispatched || self == .executing }
}

extension Scheduler {
    /// Moves `op` to `new`: checks the pair, keeps the per-queue and per-lane counters, re-activates
    /// the queue when this frees one of its places, and records `code` in the op's story (nil: the
    /// caller records a more specific entry itself).
    @inline(__always)
    mutating func transition(_ op: Int32, to new: OpState, _ code: StoryCode?, part: Int = 0, extra: Int32 = 0,
                             at: Int64? = nil) {
        let i = Int(op)
        let old = ops.hot[i].state
        if !old.canMove(to: new) { impossibleTransition(op, old, new) }
        let l = Int(ops.hot[i].lane)
        let q = lanes[l].queue
        // Only leaving dispatched/executing for another state can free one of the queue's places.
        let freesPlace = old.occupiesQueue && !new.occupiesQueue
        let wasAtLimit = freesPlace && queues[q].atLimit
        queues[q].count(leaving: old, entering: new)
        if old == .ready { lanes[l].readyCount -= 1 } else if new == .ready { lanes[l].readyCount += 1 }
        ops.hot[i].state = new
        // A concurrency key's holders (FairShare.swift); share counts are counted when asked for.
        if ops.hot[i].concurrencyKey.isKey { keyedTransition(op, old, new) }
        if wasAtLimit && !queues[q].atLimit { activateAll(q) }
        if let code { record(op, code, part: part, extra: extra, at: at ?? now) }
    }

    /// An impossible pair is a bug in the core: stop, naming it (kept out of line: the hot path only tests a bit).
    @inline(never)
    func impossibleTransition(_ op: Int32, _ old: OpState, _ new: OpState) -> Never {
        fatalError("impossible transition of \(ops.ids[Int(op)]): \(old) → \(new)")
    }

    /// Ready-heap key: the max runs first. Priority level, then submission order (S6: FIFO among
    /// equal priority, whatever order the ops became ready in), then a push counter that only makes
    /// each push's key unique, so an older heap entry of the same op is recognised as stale.
    @inline(__always) mutating func readyKey(_ op: Int32, _ priority: Int8) -> Int64 {
        nextSeq &+= 1
        let level = Int64((Int(priority) + 8) / 4)              // −8, −4, 0, 4, 8 → 0…4
        let order = Int64(UInt32.max) - Int64(UInt32(bitPattern: op))
        return level << 59 | order << 27 | (nextSeq & (1 << 27 - 1))
    }
}
