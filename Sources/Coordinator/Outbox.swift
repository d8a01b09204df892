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

    /// Bytes of one EVENT message (a single larger event, a big result, goes alone).
    static let eventMessageBytes = 64 << 10

    private var dispatches: [UInt64: [WireDispatchRecord]] = [:]
    private var cancels: [UInt64: [WireCancelRecord]] = [:]
    /// This pass's events, each once; every watcher's list names them by index (one event goes to every
    /// watcher of it: thousands of copies were most of a pass's memory with thousands of watchers).
    private var eventTable: [WireEvent] = []
    private var events: [UInt64: [Int32]] = [:]

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

    /// Keeps an event for this pass; `event(_:to:)` tells it to each of its watchers.
    mutating func add(_ event: WireEvent) -> Int32 {
        eventTable.append(event)
        return Int32(eventTable.count - 1)
    }

    mutating func event(_ index: Int32, to watcher: UInt64) {
        events[watcher, default: []].append(index)
    }

    /// Empties the outbox into messages within the protocol's limits (`Batcher` cuts them).
    /// `nextSequence` numbers each watcher's events; `watchRequestID` is the WATCH request they answer.
    /// Watchers with events waiting.
    var eventWatchers: Int { events.count }

    /// `withEvents` false: the events wait for a later drain (the loop sends events to many watchers at
    /// most every few ms: one message per watcher per pass was what thousands of watchers cost).
    mutating func drain(watchRequestID: (UInt64) -> UInt32, nextSequence: (UInt64) -> UInt64, withEvents: Bool = true) -> [Batch] {
        var out: [Batch] = []
        for (w, var records) in dispatches {
            while let m = Batcher.message(draining: &records) { out.append(Batch(peer: .worker(w), message: m, requestID: 0)) }
        }
        for (w, var records) in cancels {
            while let m = Batcher.message(draining: &records) { out.append(Batch(peer: .worker(w), message: m, requestID: 0)) }
        }
        dispatches.removeAll(keepingCapacity: true)
        cancels.removeAll(keepingCapacity: true)
        guard withEvents else { return out }
        for (c, indices) in events {
            var list = indices.map { eventTable[Int($0)] }
            for i in list.indices { list[i].sequence = nextSequence(c) }
            let request = watchRequestID(c)
            // Smaller messages than the protocol allows: libzmq holds a peer's messages by count
            // (OutputBacklog.socketHighWaterMark), so their size is what bounds its bytes.
            while !list.isEmpty {
                let part = Batcher.drain(&list, maxBytes: Self.eventMessageBytes)
                out.append(Batch(peer: .client(c), message: WireEvent.message(part, sentUs: 0), requestID: request))
            }
        }
        events.removeAll(keepingCapacity: true)
        eventTable.removeAll(keepingCapacity: eventTable.capacity < 1 << 16)
        return out
    }
}
