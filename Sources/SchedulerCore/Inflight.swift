// Who holds each dispatched part. Single-part ops keep it in a column (no hashing on the hot path);
// multi-part ops in their side record. Each worker lists its parts lazily (stale keys skipped, compacted).

// The non-mutating helpers that mutating code calls once per op (`inflightGet`, `isStarted`) are
// always inlined: a call to a non-mutating method from a mutating one passes `self` by value, and for
// a struct the size of `Scheduler` that is a memcpy of the whole struct per call (callgrind: 76–100
// instructions each, three to four per op; docs/BENCHMARKS.md).

extension Scheduler {
    @inline(__always)
    func inflightGet(_ op: Int32, _ part: Int) -> Inflight? {
        let i = Int(op)
        if ops.hot[i].parts == 1 {
            let w = ops.hot[i].holder
            return w.isWorker ? Inflight(worker: w, attempt: ops.hot[i].attempt) : nil
        }
        guard let m = ops.multi.record(of: op), m.worker[part].isWorker else { return nil }
        return Inflight(worker: m.worker[part], attempt: m.attempt[part])
    }

    mutating func inflightSet(_ op: Int32, _ part: Int, _ w: WorkerIndex, _ attempt: UInt16) {
        let i = Int(op)
        ops.cold[i].lastWorker = w
        if ops.hot[i].parts == 1 {
            ops.hot[i].holder = w
        } else {
            ops.multi[op].worker[part] = w
            ops.multi[op].attempt[part] = attempt
        }
        workers[w].held.append(partKey(op, part))
        workers[w].inflightCount += 1
    }

    /// Removes and returns the record (nil if the part is not in flight). The caller sets a multi-part
    /// op's part status next (done, waiting, retry delay).
    @discardableResult
    mutating func inflightClear(_ op: Int32, _ part: Int) -> Inflight? {
        guard let f = inflightGet(op, part) else { return nil }
        let i = Int(op)
        let w = f.worker
        if isStarted(op, part) { workers[w].running -= 1 }
        if ops.hot[i].parts == 1 {
            ops.hot[i].holder = .nobody
            ops.hot[i].flags &= ~Flag.attemptStarted
        } else {
            ops.multi[op].worker[part] = .nobody
            ops.multi[op].status[part] = .waiting
        }
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
