// The retained runs (Runs.swift has what they mean; Eviction.swift when they go).

struct RunState {
    let number: Int64            // creation order, never reused
    let name: String
    let submitter: String
    let submittedAt: Int64
    var finishedAt: Int64 = 0    // 0 while it has unfinished ops (or none yet)
    var ops: [Int32] = []        // its ops in submission order (op indices)
    var unfinished: Int32 = 0
    var succeeded: Int32 = 0
    var failed: Int32 = 0
    var cancelled: Int32 = 0
    var waiters: [Int32] = []    // wait ids for the whole run
    /// Unfinished ops of other runs that depend on ops of this one: it is not evicted while any is
    /// left, so their inputs (this run's results) still reach them.
    var pins: Int32 = 0
    /// Submission keys of its batches (forgotten with the run).
    var submissionKeys: [String] = []
    /// What its finished ops hold (`Scheduler.heldBytes`), and whether their results were evicted.
    var bytes = 0
    var resultsEvicted = false

    /// One of its ops finished with `kind` (one access to the table per op); true when it was the last open one.
    @inline(__always) mutating func opFinished(_ kind: OutcomeKind) -> Bool {
        unfinished -= 1
        switch kind {
        case .succeeded: succeeded += 1
        case .failed: failed += 1
        case .cancelled: cancelled += 1
        case .none: break
        }
        return unfinished == 0
    }
}


/// Retained runs by slot, and their slots by name. A slot is reused once its run is evicted (or
/// dropped with a rejected batch). Slots held by live ops, waits and pins always name a retained run
/// (a run is not evicted while it has unfinished ops or pins, and eviction forgets its ops):
/// `subscript` assumes so. Slots kept across evictions (the eviction order, submission keys, a
/// whole-run wait of an evicted run) are checked with `retained`.
struct RunTable: Sendable {
    private var slots: [RunState?] = []
    private var freeSlots: [RunSlot] = []
    /// Retained runs' slots by name.
    private(set) var slotsByName: [String: RunSlot] = [:]

    /// The retained run in `slot`.
    subscript(_ slot: RunSlot) -> RunState {
        @inline(__always) get {
            guard let run = slots[slot.index] else { Self.notRetained(slot) }
            return run
        }
        @inline(__always) _modify {
            if slots[slot.index] == nil { Self.notRetained(slot) }
            yield &slots[slot.index]!
        }
    }

    @inline(never) private static func notRetained(_ slot: RunSlot) -> Never {
        preconditionFailure("run slot \(slot) holds no retained run")
    }

    /// The run in `slot` if one is retained there (it may be another run than the one the slot was taken for).
    func retained(_ slot: RunSlot) -> RunState? { slots[slot.index] }

    /// The retained run named `name`'s slot.
    func slot(named name: String) -> RunSlot? { slotsByName[name] }

    /// Retained runs with their slots, in slot order.
    var all: some Sequence<(slot: RunSlot, run: RunState)> {
        slots.lazy.enumerated().compactMap { k, run in run.map { (RunSlot(k), $0) } }
    }

    /// Retains `run` in a free slot (the last freed first) or a new one.
    mutating func add(_ run: RunState) -> RunSlot {
        let slot: RunSlot
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot.index] = run
        } else {
            slot = RunSlot(slots.count)
            slots.append(run)
        }
        slotsByName[run.name] = slot
        return slot
    }

    /// Forgets the run in `slot` (evicted, or dropped with its rejected batch); the slot is free again.
    mutating func remove(_ slot: RunSlot) {
        slotsByName[self[slot].name] = nil
        slots[slot.index] = nil
        freeSlots.append(slot)
    }

    /// Compaction renumbered the ops (`remap[old]`; retained runs hold live ops only).
    mutating func renumberOps(_ remap: OpRemap) {
        for k in slots.indices {
            guard let ops = slots[k]?.ops else { continue }
            slots[k]?.ops = ops.map { remap.kept($0) }
        }
    }
}
