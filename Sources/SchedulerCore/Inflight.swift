// Who holds each dispatched part (kept by `OpStore`, Parts.swift), and each worker's list of the parts it
// holds, kept lazily (stale keys skipped, compacted).

// The non-mutating helpers that mutating code calls once per op (`inflightGet`, `isStarted`) are
// always inlined: a call to a non-mutating method from a mutating one passes `self` by value, and for
// a struct the size of `Scheduler` that is a memcpy of the whole struct per call (callgrind: 76–100
// instructions each, three to four per op; docs/BENCHMARKS.md).

extension Scheduler {
    @inline(__always)
    func inflightGet(_ op: Int32, _ part: Int) -> Inflight? { ops.inflight(op, part) }

    mutating func inflightSet(_ op: Int32, _ part: Int, _ w: WorkerIndex, _ attempt: UInt16) {
        ops.setInflight(op, part, w, attempt)
        workers[w].held.append(partKey(op, part))
        workers[w].inflightCount += 1
    }

    /// Removes and returns the record (nil if the part is not in flight). The caller moves the part on
    /// next (done, waiting, a retry delay; a single-part op by its transition).
    @discardableResult
    mutating func inflightClear(_ op: Int32, _ part: Int) -> Inflight? {
        guard let f = ops.inflight(op, part) else { return nil }
        let w = f.worker
        if isStarted(op, part) { workers[w].running -= 1 }
        ops.clearInflight(op, part)
        workers[w].inflightCount -= 1
        if workers[w].held.count > 2 * workers[w].inflightCount + 64 { compactHeld(f.worker) }
        return f
    }

    mutating func compactHeld(_ w: WorkerIndex) {
        // Duplicates of a live key may survive; loss handling skips a part once it is cleared.
        let kept = workers[w].held.filter { key in
            inflightGet(Int32(truncatingIfNeeded: key >> 16), Int(key & 0xFFFF))?.worker == w
        }
        workers[w].held = kept
    }
}
