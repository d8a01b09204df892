import WireProtocol

/// What one pass of the loop will send, coalesced per peer: all dispatches for a worker become one
/// DISPATCH (or a few, split at the protocol's batch limits), likewise CANCEL and EVENT. This is where
/// batching happens on the coordinator side: the more work arrives per wake-up, the fewer messages.
struct Outbox {
    enum Peer: Hashable { case worker(UInt64), client(UInt64) }

    struct Batch {
        var peer: Peer
        var message: Message
        var requestID: UInt32
    }

    private var dispatches: [UInt64: [WireDispatchRecord]] = [:]
    private var cancels: [UInt64: [WireCancelRecord]] = [:]
    private var events: [UInt64: [WireEvent]] = [:]

    var isEmpty: Bool { dispatches.isEmpty && cancels.isEmpty && events.isEmpty }

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

    mutating func event(_ event: WireEvent, to watcher: UInt64) {
        events[watcher, default: []].append(event)
    }

    /// Empties the outbox into messages no larger than the protocol's limits.
    /// `nextSequence` numbers each watcher's events; `watchRequestID` is the WATCH request they answer.
    mutating func drain(watchRequestID: (UInt64) -> UInt32, nextSequence: (UInt64) -> UInt64) -> [Batch] {
        var out: [Batch] = []
        for (w, records) in dispatches {
            for chunk in Self.chunks(records, size: { $0.payload.count + $0.inputs.reduce(0) { $0 + $1.result.count + $1.dependencyID.utf8.count } }) {
                var d = WireDispatch()
                d.records = Array(chunk)
                out.append(Batch(peer: .worker(w), message: .dispatch(d), requestID: 0))
            }
        }
        for (w, records) in cancels {
            for chunk in Self.chunks(records, size: { $0.reason.utf8.count }) {
                var c = WireCancel()
                c.records = Array(chunk)
                out.append(Batch(peer: .worker(w), message: .cancel(c), requestID: 0))
            }
        }
        for (c, list) in events {
            var numbered = list
            for i in numbered.indices { numbered[i].sequence = nextSequence(c) }
            for chunk in Self.chunks(numbered, size: { e in
                if case .succeeded(let d)? = e.outcome.result { return d.count }
                return 0
            }) {
                var m = WireEvents()
                m.events = Array(chunk)
                out.append(Batch(peer: .client(c), message: .event(m), requestID: watchRequestID(c)))
            }
        }
        dispatches.removeAll(keepingCapacity: true)
        cancels.removeAll(keepingCapacity: true)
        events.removeAll(keepingCapacity: true)
        return out
    }

    /// Splits `records` so each chunk has at most `maxBatchRecords` records and about
    /// `batchBodyBudget` bytes (`size` estimates a record's variable part; 128 bytes cover the rest).
    static func chunks<R>(_ records: [R], size: (R) -> Int) -> [ArraySlice<R>] {
        var result: [ArraySlice<R>] = []
        var start = 0
        var bytes = 0
        for (i, r) in records.enumerated() {
            let s = size(r) + 128
            if i > start && (i - start >= WireLimits.maxBatchRecords || bytes + s > WireLimits.batchBodyBudget) {
                result.append(records[start..<i])
                start = i
                bytes = 0
            }
            bytes += s
        }
        if start < records.count { result.append(records[start...]) }
        return result
    }
}
