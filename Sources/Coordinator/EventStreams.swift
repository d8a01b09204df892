import WireProtocol

/// The coordinator's side of WATCH streams (PROTOCOL.md §5.22). Watchers with the same filters and
/// form share one stream (the core's `WatchGroup`, named by `PublishedEvent.stream`): its events are
/// numbered once and encoded once, and each EVENT body is the same bytes for every watcher of the
/// stream (only the header, with the watcher's request id, differs). With thousands of watchers of
/// everything, what a flush costs is one send per watcher, not an encoding per (event, watcher) —
/// that was most of the loop's time and the peak of its memory (docs/BENCHMARKS.md, "slow-readers").
///
/// A body goes to the watchers the stream had when its events were published: the core's list comes
/// with every event, and a change of it closes the body being filled, so a watcher never gets events
/// from before it joined or after it left.
struct EventStreams {
    /// One EVENT body of `stream`, for `watchers`.
    struct Delivery {
        var stream: UInt64
        var watchers: [UInt64]
        var body: [UInt8]
    }

    private struct Stream {
        var nextSequence: UInt64 = 1
        /// The watchers the body being filled is for.
        var watchers: [UInt64] = []
        var body: [UInt8] = []
        /// Watchers the shell counts in it (`joined`/`left`): at 0 the stream is forgotten once empty.
        var members = 0
    }

    /// Bytes of one EVENT body (a single larger event, a big result, goes alone): libzmq holds a peer's
    /// messages by count (OutputBacklog.socketHighWaterMark), so their size is what bounds its bytes.
    static let messageBytes = 64 << 10

    private var streams: [UInt64: Stream] = [:]
    private var closed: [Delivery] = []
    /// Streams whose body has events.
    private var filling: Set<UInt64> = []

    /// A watcher joined `stream` (the core's reply to its WATCH).
    mutating func joined(_ stream: UInt64) { streams[stream, default: Stream()].members += 1 }

    /// A watcher left `stream`; a stream nobody is in is forgotten once what it has is sent.
    mutating func left(_ stream: UInt64) {
        guard var s = streams[stream] else { return }
        s.members -= 1
        if s.members <= 0 && s.body.isEmpty { streams[stream] = nil } else { streams[stream] = s }
    }

    /// Appends `event` to `stream`'s events for `watchers` (the core's list now).
    mutating func add(_ event: EventBody, stream: UInt64, watchers: [UInt64]) {
        var s = streams.removeValue(forKey: stream) ?? Stream()
        // Array == is a pointer compare while the core has not changed its list.
        if s.watchers != watchers {
            close(&s, stream)
            s.watchers = watchers
        }
        if !s.body.isEmpty && s.body.count + event.bytes.count + 24 > Self.messageBytes { close(&s, stream) }
        event.append(sequence: s.nextSequence, to: &s.body)
        s.nextSequence += 1
        filling.insert(stream)
        streams[stream] = s
    }

    /// Watchers with events waiting (the loop sends to many at most every few ms).
    var waitingWatchers: Int {
        var n = closed.reduce(0) { $0 + $1.watchers.count }
        for id in filling { n += streams[id]?.watchers.count ?? 0 }
        return n
    }

    var isEmpty: Bool { closed.isEmpty && filling.isEmpty }

    /// Every body with events, in the order they were filled per stream.
    mutating func drain() -> [Delivery] {
        // In stream order, so a pass's bodies leave in the same order every time (a few streams).
        for id in filling.sorted() {
            guard var s = streams.removeValue(forKey: id) else { continue }
            close(&s, id)
            if s.members > 0 { streams[id] = s }
        }
        filling.removeAll(keepingCapacity: true)
        defer { closed.removeAll(keepingCapacity: closed.capacity < 1 << 12) }
        return closed
    }

    private mutating func close(_ s: inout Stream, _ id: UInt64) {
        guard !s.body.isEmpty else { return }
        if !s.watchers.isEmpty { closed.append(Delivery(stream: id, watchers: s.watchers, body: s.body)) }
        s.body = []
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
