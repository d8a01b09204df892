/// What the coordinator holds for peers that do not read fast enough (PROTOCOL.md §13, "Slow readers").
///
/// The ROUTER's send high-water mark (`socketHighWaterMark` messages per peer) bounds what libzmq queues
/// for a peer; a message that finds that pipe full waits here, in order, and everything after it for the
/// same peer too, until the peer reads. A client's backlog is bounded in bytes: past its budget — its own
/// (`perClient`), or its share of `total` while many clients are behind at once — the loop ends its
/// WATCH stream (its queued events are dropped and it is told `watch too slow: resubscribe`) and, if what
/// is left is still over, drops the replies it does not read. Workers' messages are bounded by their
/// credit, so they are never dropped here. A pure value: the loop sends and tells it what happened.
struct OutputBacklog {
    /// Messages libzmq holds per peer before a send finds its pipe full.
    static let socketHighWaterMark: Int32 = 16

    enum Kind: Equatable {
        /// An EVENT of a WATCH stream: dropped when the stream ends for being too slow.
        case event
        /// A reply, an ERROR, the slow-stream notice.
        case reply
        /// Anything to a worker.
        case worker
    }

    struct Item {
        var frames: [[UInt8]]
        var bytes: Int
        var kind: Kind
    }

    private struct Queue {
        var items: [Item] = []
        var head = 0
        var bytes = 0
        let isClient: Bool
        /// When to try again after the pipe was found full; 0 until the first failed try (then every pass).
        var retryAt: Int64 = 0
        var backoff: Int64 = 0

        var isEmpty: Bool { head == items.count }
    }

    let perClient: Int
    let total: Int
    private var queues: [[UInt8]: Queue] = [:]
    /// Peers whose stream was ended for slowness and that have not sent WATCH since: EVENTs of the old
    /// stream still on their way (this pass's, or held for the journal) are not sent after the notice.
    private(set) var endedStreams: Set<[UInt8]> = []
    /// Bytes queued for clients (workers' are not budgeted).
    private(set) var clientBytes = 0
    private var clientQueues = 0
    /// Queues not yet found blocked since they began or last moved: tried every pass.
    private(set) var freshQueues = 0
    /// Bytes dropped (events of ended streams, replies nobody read, peers gone) since the loop last asked.
    private(set) var droppedBytes = 0

    /// `perClient`: `--client-output-bytes`; `total`: what all clients together may hold.
    init(perClient: Int, total: Int) {
        self.perClient = perClient
        self.total = max(total, perClient)
    }

    var isEmpty: Bool { queues.isEmpty }
    var peerCount: Int { queues.count }

    /// Whether `routing` has messages waiting: then a new one goes behind them, never past them.
    func holds(_ routing: [UInt8]) -> Bool { !queues.isEmpty && queues[routing] != nil }

    func queuedBytes(of routing: [UInt8]) -> Int { queues[routing]?.bytes ?? 0 }

    enum Verdict: Equatable {
        case queued
        /// The client's backlog is over its budget: end its stream (`endStream`).
        case overBudget
    }

    /// Queues a message for `routing` (its pipe is full, or it already has a backlog).
    mutating func add(_ frames: [[UInt8]], kind: Kind, to routing: [UInt8]) -> Verdict {
        let bytes = frames.reduce(0) { $0 + $1.count }
        let isClient = kind != .worker
        var q = queues[routing] ?? {
            if isClient { clientQueues += 1 }
            freshQueues += 1
            return Queue(isClient: isClient)
        }()
        q.items.append(Item(frames: frames, bytes: bytes, kind: kind))
        q.bytes += bytes
        if q.isClient { clientBytes += bytes }
        let over = q.isClient && Self.isOver(q.bytes, perClient: perClient, total: total, clientBytes: clientBytes, clients: clientQueues)
        queues[routing] = q
        return over ? .overBudget : .queued
    }

    /// Over its own budget, or over its share while all clients together hold more than `total`.
    private static func isOver(_ bytes: Int, perClient: Int, total: Int, clientBytes: Int, clients: Int) -> Bool {
        bytes > perClient || (clientBytes > total && bytes > total / max(clients, 1))
    }

    /// Ends `routing`'s stream for slowness: drops its queued EVENTs (not its replies), refuses the
    /// stream's later ones while the notice waits, and queues `notice` (exempt from the budget).
    /// Returns whether what is left (replies) is still over budget.
    mutating func endStream(of routing: [UInt8], notice: [[UInt8]]?) -> Bool {
        guard var q = queues[routing] else { return false }
        var kept: [Item] = []
        var freed = 0
        for item in q.items[q.head...] {
            if item.kind == .event { freed += item.bytes } else { kept.append(item) }
        }
        if let notice { kept.append(Item(frames: notice, bytes: notice.reduce(0) { $0 + $1.count }, kind: .reply)) }
        let keptBytes = kept.reduce(0) { $0 + $1.bytes }
        droppedBytes += freed
        if q.isClient { clientBytes += keptBytes - q.bytes }
        q.items = kept
        q.head = 0
        q.bytes = keptBytes
        queues[routing] = q
        endedStreams.insert(routing)
        return q.isClient && q.bytes > perClient
    }

    /// Whether an EVENT for `routing` belongs to a stream ended for slowness (then it is not sent).
    func discardsEvents(for routing: [UInt8]) -> Bool { !endedStreams.isEmpty && endedStreams.contains(routing) }

    /// `routing` sent WATCH: its new stream's events go out again.
    mutating func streamReopened(_ routing: [UInt8]) {
        if !endedStreams.isEmpty { endedStreams.remove(routing) }
    }

    /// Forgets ended streams of peers no longer known (`isKnown` false).
    mutating func forgetEndedStreams(where gone: ([UInt8]) -> Bool) {
        if !endedStreams.isEmpty { endedStreams = endedStreams.filter { !gone($0) } }
    }

    /// Forgets everything queued for `routing` (it is gone, or does not read its replies).
    mutating func drop(_ routing: [UInt8]) {
        guard let q = queues.removeValue(forKey: routing) else { return }
        droppedBytes += q.bytes
        if q.isClient { clientBytes -= q.bytes; clientQueues -= 1 }
        if q.backoff == 0 { freshQueues -= 1 }
    }

    /// The peers to try now: those whose pipe was never found full since they queued (every pass), and
    /// those whose back-off has passed; and when the next back-off ends.
    func due(now: Int64) -> (due: [[UInt8]], next: Int64) {
        var due: [[UInt8]] = [], next = Int64.max
        for (routing, q) in queues {
            if q.retryAt <= now { due.append(routing) } else { next = min(next, q.retryAt) }
        }
        return (due, next)
    }

    /// The oldest message waiting for `routing`.
    func first(of routing: [UInt8]) -> Item? {
        guard let q = queues[routing], !q.isEmpty else { return nil }
        return q.items[q.head]
    }

    /// The oldest message for `routing` was sent; a peer whose backlog empties is forgotten.
    mutating func sentFirst(of routing: [UInt8]) {
        guard var q = queues[routing], !q.isEmpty else { return }
        let bytes = q.items[q.head].bytes
        q.head += 1
        q.bytes -= bytes
        if q.isClient { clientBytes -= bytes }
        if q.backoff != 0 { freshQueues += 1 }
        q.backoff = 0
        q.retryAt = 0
        if q.isEmpty {
            queues[routing] = nil
            if q.isClient { clientQueues -= 1 }
            freshQueues -= 1
            return
        }
        if q.head > 64 && q.head * 2 > q.items.count {   // compact now and then
            q.items.removeFirst(q.head)
            q.head = 0
        }
        queues[routing] = q
    }

    /// `routing`'s pipe is still full: try again later — a client backing off from 1 ms to 1 s (thousands
    /// that never read cost a try a second each), a worker in 1 ms (it is busy, and must not run dry).
    mutating func blocked(_ routing: [UInt8], now: Int64) {
        guard var q = queues[routing] else { return }
        if q.backoff == 0 { freshQueues -= 1 }
        q.backoff = q.isClient ? min(max(q.backoff * 2, 1_000), 1_000_000) : 1_000
        q.retryAt = now + q.backoff
        queues[routing] = q
    }

    /// Reads and resets `droppedBytes`.
    mutating func takeDropped() -> Int {
        defer { droppedBytes = 0 }
        return droppedBytes
    }
}
