import HeapModule

// Every deadline the core waits for, one heap per kind, each typed by what it targets (an op's
// attempt, a worker, a queue, a concurrency key). Entries are never removed early: the code that
// fires one checks it is still current (the attempt, the armed time) and skips stale ones.

/// Something due at `at` (µs).
protocol Deadline: Comparable {
    var at: Int64 { get }
}

/// A deadline of a worker, queue or concurrency key.
struct TargetDeadline<Target: TableHandle>: Deadline, Sendable {
    // `target` first: with `at` first the layout and order equal `ReadyEntry`'s, and the compiler merges
    // their heap code into one shared function, which costs the ready heaps a call per sift (measured).
    var target: Target
    var at: Int64
    @inline(__always) init(at: Int64, target: Target) { self.at = at; self.target = target }
    @inline(__always) static func < (a: Self, b: Self) -> Bool { a.at < b.at }
}

/// An attempt's deadline (its timeout, or the end of its retry delay): part and attempt name the
/// attempt, so one that was replaced since is recognised and skipped.
struct AttemptDeadline: Deadline, Sendable {
    var at: Int64
    var op: OpIndex
    var part: UInt16
    var attempt: UInt16
    @inline(__always) static func < (a: Self, b: Self) -> Bool { a.at < b.at }
}

struct Timers: Sendable {
    /// Started attempts of ops with a timeout: when each runs out (A4, Retries.swift).
    var attemptTimeouts = Heap<AttemptDeadline>()
    /// Failed attempts waiting out their retry delay (A4, Retries.swift).
    var retryDelays = Heap<AttemptDeadline>()
    /// When each live worker's liveness is checked next (Workers.swift).
    var workerLiveness = Heap<TargetDeadline<WorkerIndex>>()
    /// Rate-limited queues and when they may dispatch again (FairShare.swift).
    var queueRates = Heap<TargetDeadline<QueueIndex>>()
    /// Concurrency keys under a per-key rate with ops waiting for a token, and when the next is due
    /// (FairShare.swift); an entry whose time is not its key's `rateWakeAt` is stale.
    var keyRates = Heap<TargetDeadline<ConcurrencyKeyIndex>>()
    /// Queues with ageing and when they are swept next (Ageing.swift); stale unless it is the queue's `ageingDue`.
    var queueAgeing = Heap<TargetDeadline<QueueIndex>>()

    /// The earliest deadline of all; .max when none is armed.
    @inline(__always) var earliestDue: Int64 {
        var due = Int64.max
        if let t = attemptTimeouts.min { due = t.at }
        if let t = retryDelays.min, t.at < due { due = t.at }
        if let t = workerLiveness.min, t.at < due { due = t.at }
        if let t = queueRates.min, t.at < due { due = t.at }
        if let t = keyRates.min, t.at < due { due = t.at }
        if let t = queueAgeing.min, t.at < due { due = t.at }
        return due
    }

    /// Compaction renumbered the ops (`remap[old]`, −1 for a dropped op): attempt deadlines follow
    /// their op; those of dropped ops go.
    mutating func renumberOps(_ remap: OpRemap) {
        func renumbered(_ h: Heap<AttemptDeadline>) -> Heap<AttemptDeadline> {
            Heap(h.unordered.compactMap { e in
                let op = remap[e.op.raw]
                guard op >= 0 else { return nil }
                var e = e
                e.op = OpIndex(raw: op)
                return e
            })
        }
        attemptTimeouts = renumbered(attemptTimeouts)
        retryDelays = renumbered(retryDelays)
    }
}

extension Heap where Element: Deadline {
    /// The earliest entry if it is due at `now`, taken off the heap.
    @inline(__always) mutating func popDue(_ now: Int64) -> Element? {
        guard let top = self.min, top.at <= now else { return nil }
        return popMin()
    }
}
