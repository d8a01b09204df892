import WireProtocol

/// What one pass of the loop will send to workers, coalesced per worker: all dispatches for a worker
/// become one DISPATCH (or a few, split at the protocol's batch limits), likewise CANCEL. This is where
/// batching happens on the coordinator side: the more work arrives per wake-up, the fewer messages.
/// (Events to watchers: `EventStreams`.)
struct Outbox {
    struct Batch {
        var worker: UInt64
        var message: Message
    }

    private var dispatches: [UInt64: [WireDispatchRecord]] = [:]
    private var cancels: [UInt64: [WireCancelRecord]] = [:]

    mutating func dispatch(_ record: WireDispatchRecord, to worker: UInt64) {
        dispatches[worker, default: []].append(record)
    }

    mutating func cancel(op: String, attempt: Int, reason: String, on worker: UInt64) {
        var r = WireCancelRecord()
        r.opID = op
        r.attempt = UInt32(attempt)
        r.reason = reason
        // A multi-part op yields one cancel per part; the wire names (op, attempt) once.
        if cancels[worker]?.contains(where: { $0.opID == op && $0.attempt == r.attempt }) == true { return }
        cancels[worker, default: []].append(r)
    }

    /// Empties the outbox into messages within the protocol's limits (`Batcher` cuts them).
    mutating func drain() -> [Batch] {
        var out: [Batch] = []
        for (w, var records) in dispatches {
            while let m = Batcher.message(draining: &records) { out.append(Batch(worker: w, message: m)) }
        }
        for (w, var records) in cancels {
            while let m = Batcher.message(draining: &records) { out.append(Batch(worker: w, message: m)) }
        }
        dispatches.removeAll(keepingCapacity: true)
        cancels.removeAll(keepingCapacity: true)
        return out
    }
}
