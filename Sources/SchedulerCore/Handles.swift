// Typed handles: the core's tables are addressed by dense Int32 indices, and an op's index, a worker's,
// a run's slot and a queue's used to be the same type — a timer's target was an op or a worker
// depending on which heap held it. Each kind of index is its own type here, a struct around the same
// Int32 (no cost: same size, inlined), so mixing them up does not compile.
// Public API keeps plain Int32 op indices (`resolve`, `key(of:)`); handles are wrapped at that edge.

/// A dense index into one of the core's tables.
protocol TableHandle: Hashable, Comparable, Sendable, CustomStringConvertible {
    var raw: Int32 { get }
    init(raw: Int32)
}

extension TableHandle {
    @inline(__always) init(_ index: Int) { self.init(raw: Int32(truncatingIfNeeded: index)) }
    /// As an array index.
    @inline(__always) var index: Int { Int(raw) }
    @inline(__always) static func < (a: Self, b: Self) -> Bool { a.raw < b.raw }
    var description: String { "\(raw)" }
}

/// An op's row in `OpStore` (renumbered by `compact`, Eviction.swift).
struct OpIndex: TableHandle {
    var raw: Int32
    @inline(__always) init(raw: Int32) { self.raw = raw }
}

/// A worker's place in `WorkerPool` (never reused: a lost worker keeps its place).
struct WorkerIndex: TableHandle {
    var raw: Int32
    @inline(__always) init(raw: Int32) { self.raw = raw }
    /// No worker: a part nobody holds (`OpHot.holder`, `MultiPart.worker`), or an op never dispatched
    /// (`OpCold.lastWorker`).
    @inline(__always) static var nobody: WorkerIndex { WorkerIndex(raw: -1) }   // (computed: a constant, no global)
    /// `OpCold.lastWorker` of an op replayed from the journal that names no session known here.
    @inline(__always) static var unknown: WorkerIndex { WorkerIndex(raw: -2) }
    /// Names a worker (not one of the markers above).
    @inline(__always) var isWorker: Bool { raw >= 0 }
}

/// A run's slot in `RunTable` (reused after the run is evicted).
struct RunSlot: TableHandle {
    var raw: Int32
    @inline(__always) init(raw: Int32) { self.raw = raw }
}

/// A queue's place in `Scheduler.queues` (queues are never removed).
struct QueueIndex: TableHandle {
    var raw: Int32
    @inline(__always) init(raw: Int32) { self.raw = raw }
}

/// A concurrency key's place in `Scheduler.concurrencyKeys` (renumbered by compaction, FairShareCompaction.swift).
struct ConcurrencyKeyIndex: TableHandle {
    var raw: Int32
    @inline(__always) init(raw: Int32) { self.raw = raw }
    /// An op without a concurrency key (`OpHot.concurrencyKey`; a marker, not an optional: the record stays 56 bytes).
    @inline(__always) static var noKey: ConcurrencyKeyIndex { ConcurrencyKeyIndex(raw: -1) }
    /// Names a key (not `noKey`).
    @inline(__always) var isKey: Bool { raw >= 0 }
}

// Typed access to the tables held as plain arrays (zero-cost: the same element access).

extension Array where Element == WorkerState {
    subscript(_ w: WorkerIndex) -> WorkerState {
        @inline(__always) get { self[w.index] }
        @inline(__always) _modify { yield &self[w.index] }
    }
}

extension Array where Element == QueueState {
    subscript(_ q: QueueIndex) -> QueueState {
        @inline(__always) get { self[q.index] }
        @inline(__always) _modify { yield &self[q.index] }
    }
}

extension Array where Element == ShareTable {
    subscript(_ q: QueueIndex) -> ShareTable {
        @inline(__always) get { self[q.index] }
        @inline(__always) _modify { yield &self[q.index] }
    }
}

extension Array where Element == ConcurrencyKey {
    subscript(_ k: ConcurrencyKeyIndex) -> ConcurrencyKey {
        @inline(__always) get { self[k.index] }
        @inline(__always) _modify { yield &self[k.index] }
    }
}

extension PagedColumn {
    /// The column's row for op `op`.
    subscript(_ op: OpIndex) -> Element {
        @inline(__always) get { self[op.index] }
        @inline(__always) _modify { yield &self[op.index] }
    }
}
