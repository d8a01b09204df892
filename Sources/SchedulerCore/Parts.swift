// Every part of an op through one interface: its status and who holds its current attempt. A
// single-part op keeps its one part inline, so the common case hashes nothing: its status is the op's
// state (`PartStatus(singlePart:)`), its holder `OpHot.holder`, its attempt `OpHot.attempt`. A multi-part
// op keeps one `MultiPart` record (Storage.swift) until it finishes. Only this file tells the two apart
// for status and holders; submit, completion and compaction make and drop the records.

extension OpStore {
    /// Where part `part` of `op` stands. A finished multi-part op's parts are all `done` once its
    /// record is dropped.
    @inline(__always) func partStatus(_ op: Int32, _ part: Int) -> PartStatus {
        let i = Int(op)
        if hot[i].parts == 1 { return PartStatus(singlePart: hot[i].state) }
        return multi.record(of: op)?.status[part] ?? .done
    }

    /// A multi-part op's part moves to `status`. A single-part op's one part moves with the op's state,
    /// through `Scheduler.transition`, which the caller makes next: nothing to write here.
    @inline(__always) mutating func setPartStatus(_ op: Int32, _ part: Int, _ status: PartStatus) {
        if hot[Int(op)].parts > 1 { multi[op].status[part] = status }
    }

    /// The worker and attempt of the part's current dispatch, or nil when no worker holds it.
    @inline(__always) func inflight(_ op: Int32, _ part: Int) -> Inflight? {
        let i = Int(op)
        if hot[i].parts == 1 {
            let w = hot[i].holder
            return w.isWorker ? Inflight(worker: w, attempt: hot[i].attempt) : nil
        }
        guard let m = multi.record(of: op), m.worker[part].isWorker else { return nil }
        return Inflight(worker: m.worker[part], attempt: m.attempt[part])
    }

    /// Worker `w` holds the part's attempt `attempt` (a single-part op's attempt is `OpHot.attempt` already).
    @inline(__always) mutating func setInflight(_ op: Int32, _ part: Int, _ w: WorkerIndex, _ attempt: UInt16) {
        let i = Int(op)
        cold[i].lastWorker = w
        if hot[i].parts == 1 {
            hot[i].holder = w
        } else {
            multi[op].worker[part] = w
            multi[op].attempt[part] = attempt
        }
    }

    /// No worker holds the part any more; a multi-part op's part is `waiting` until the caller says
    /// otherwise (done, delayed), a single-part op's until its next transition.
    @inline(__always) mutating func clearInflight(_ op: Int32, _ part: Int) {
        if hot[Int(op)].parts == 1 {
            hot[Int(op)].holder = .nobody
        } else {
            multi[op].worker[part] = .nobody
            multi[op].status[part] = .waiting
        }
    }
}
