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
        /// EVENT messages come as their body, assembled from events encoded once (`eventBodies`); their
        /// `message` is an empty EVENT that only says what they are.
        var body: [UInt8]? = nil
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
        // Each event is encoded once, without its sequence number; each watcher's EVENT bodies are its
        // events' bytes, each behind its own number. Thousands of watchers of every queue get the same
        // events: encoding them per watcher was most of what a watcher cost.
        let encoded = eventTable.map { EventBody(event: $0) }
        let placeholder = Message.event(WireEvents())
        for (c, indices) in events {
            let request = watchRequestID(c)
            var body: [UInt8] = []
            for i in indices {
                let e = encoded[Int(i)]
                // Smaller messages than the protocol allows: libzmq holds a peer's messages by count
                // (OutputBacklog.socketHighWaterMark), so their size is what bounds its bytes.
                if !body.isEmpty && body.count + e.bytes.count + 24 > Self.eventMessageBytes {
                    out.append(Batch(peer: .client(c), message: placeholder, requestID: request, body: body))
                    body = []
                }
                e.append(sequence: nextSequence(c), to: &body)
            }
            if !body.isEmpty { out.append(Batch(peer: .client(c), message: placeholder, requestID: request, body: body)) }
        }
        events.removeAll(keepingCapacity: true)
        eventTable.removeAll(keepingCapacity: eventTable.capacity < 1 << 16)
        return out
    }
}

/// One event's bytes without its `sequence` (field 1), to be written as an entry of `Events.events`
/// (field 1) behind a sequence number: the same bytes protobuf writes (fields in number order, so the
/// sequence first), built with a copy instead of an encode per watcher.
struct EventBody {
    let bytes: [UInt8]

    init(event: WireEvent) {
        var e = event
        e.sequence = 0   // not written (proto3 default); each watcher's number goes in front
        // An Events of this one event is [0x0A, its length as a varint, the event]: keep the event.
        let whole = WireCodec.body(of: .event(WireEvents.with { $0.events = [e] }))
        var start = 1
        while whole[start] & 0x80 != 0 { start += 1 }
        bytes = Array(whole[(start + 1)...])
    }

    func append(sequence: UInt64, to out: inout [UInt8]) {
        out.append(0x0A)                                               // Events.events, length-delimited
        appendVarint(UInt64(1 + Self.varintSize(sequence) + bytes.count), to: &out)
        out.append(0x08)                                               // Event.sequence, varint
        appendVarint(sequence, to: &out)
        out.append(contentsOf: bytes)
    }

    static func varintSize(_ v: UInt64) -> Int {
        var n = 1, v = v
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }

    private func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        out.append(UInt8(v))
    }
}
