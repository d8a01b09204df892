/// The leader's bookkeeping of the standbys that follow its journal (issue 29; docs/ARCHITECTURE.md
/// "Hot standby"). A pure value: times and the journal's durable position are passed in; the loop
/// asks it what to send to whom and tells it what was sent and acknowledged.
///
/// Per standby: the next record to send, what it acknowledged as received (flow control: at most
/// `window` messages in flight, so a standby that does not read never fills the leader's memory or
/// pipe) and as durable (sync mode), and whether it is *in sync* — caught up once and acknowledging
/// in time. Only standbys in sync hold clients' acknowledgements back (`replicated`); one that does not
/// acknowledge within the sync timeout is dropped out of sync (`expire`), and comes back in once it has
/// caught up again.
struct FollowerBook {
    enum Phase: Equatable {
        /// Sending the leader's newest snapshot; the stream goes on at `recordsAfter`.
        case snapshot(number: Int, recordsAfter: UInt64, offset: Int, total: Int)
        /// Sending records from `next` (from the feed or from disk).
        case streaming
        /// It needs a snapshot and there is none yet: one was requested.
        case awaitingSnapshot
    }

    struct Follower: Equatable {
        var id: UInt64
        var name: String
        var routing: [UInt8]
        var phase: Phase
        /// The next record it is to be sent.
        var next: UInt64
        /// What it said it holds durably.
        var durable: UInt64
        var sent: UInt64 = 0
        var received: UInt64 = 0
        /// The leader's durable position when everything up to it had been sent to it: once its durable
        /// position reaches this, it is in sync.
        var caughtUpAt: UInt64?
        var inSync = false
        var lastHeard: Int64
        var lastSent: Int64
        /// Records sent and not yet acknowledged durable: (end of the message's records, when sent).
        var unacked: [(end: UInt64, at: Int64)] = []

        static func == (a: Follower, b: Follower) -> Bool {
            a.id == b.id && a.phase == b.phase && a.next == b.next && a.durable == b.durable && a.sent == b.sent
                && a.received == b.received && a.caughtUpAt == b.caughtUpAt && a.inSync == b.inSync
        }

        var state: String {
            switch phase {
            case .snapshot, .awaitingSnapshot: "snapshot"
            case .streaming: inSync ? "sync" : (caughtUpAt != nil ? "live" : "catching-up")
            }
        }
    }

    /// Messages in flight to one standby before it must acknowledge.
    let window: UInt64
    private(set) var followers: [Follower] = []
    private var nextID: UInt64 = 1
    /// How long standbys took from a record's sending to acknowledging it durable (µs), the latest.
    private(set) var ackLatencies: [Int64] = []
    static let latenciesKept = 10_000

    init(window: UInt64 = 8) { self.window = window }

    var isEmpty: Bool { followers.isEmpty }
    var anyInSync: Bool { followers.contains { $0.inSync } }

    func index(of routing: [UInt8]) -> Int? { followers.firstIndex { $0.routing == routing } }

    /// FOLLOW from `routing`: a standby named `name` holding `from` records starts (or restarts) its
    /// stream. `durable`: the leader's durable records; `oldest`: the first record the leader can still
    /// read from its segments (nil: unknown, try). A standby ahead of the leader (it holds records the
    /// leader never made durable: another history) or behind what the segments hold gets the snapshot
    /// (`needsSnapshot` true; the caller then calls `startSnapshot`). Replaces a standby of the same name.
    /// `diverged`: its last record is not this journal's record there (another history).
    mutating func follow(routing: [UInt8], name: String, from: UInt64, durable: UInt64, diverged: Bool = false,
                         now: Int64) -> (id: UInt64, needsSnapshot: Bool) {
        followers.removeAll { $0.name == name || $0.routing == routing }
        let id = nextID
        nextID += 1
        let ahead = from > durable || diverged
        followers.append(Follower(id: id, name: name, routing: routing, phase: .streaming, next: from, durable: ahead ? 0 : from,
                                  lastHeard: now, lastSent: now))
        return (id, ahead)
    }

    mutating func awaitSnapshot(_ id: UInt64) {
        update(id) {
            $0.phase = .awaitingSnapshot
            $0.durable = 0
            $0.caughtUpAt = nil
            $0.inSync = false
            $0.unacked.removeAll()
        }
    }

    mutating func startSnapshot(_ id: UInt64, number: Int, recordsAfter: UInt64, total: Int) {
        update(id) {
            $0.phase = .snapshot(number: number, recordsAfter: recordsAfter, offset: 0, total: total)
            $0.durable = 0   // what it holds is replaced: only its acknowledgements after the snapshot count
            $0.caughtUpAt = nil
            $0.inSync = false
            $0.unacked.removeAll()
        }
    }

    /// A piece of the snapshot went: `bytes` more; at its end the stream goes on after it.
    mutating func sentSnapshot(_ id: UInt64, bytes: Int, now: Int64) {
        update(id) {
            guard case .snapshot(let n, let after, let offset, let total) = $0.phase else { return }
            $0.sent += 1
            $0.lastSent = now
            if offset + bytes >= total {
                $0.phase = .streaming
                $0.next = after
            } else {
                $0.phase = .snapshot(number: n, recordsAfter: after, offset: offset + bytes, total: total)
            }
        }
    }

    /// Records up to `end` went to it.
    mutating func sentRecords(_ id: UInt64, through end: UInt64, now: Int64) {
        update(id) {
            $0.sent += 1
            $0.lastSent = now
            $0.next = end
            $0.unacked.append((end, now))
        }
    }

    mutating func sentHeartbeat(_ id: UInt64, now: Int64) { update(id) { $0.lastSent = now } }

    /// Whether another message may go to it now.
    func mayStream(_ f: Follower) -> Bool { f.sent - f.received < window }

    /// Everything durable was sent to it: remember the point (it is in sync once it holds it).
    mutating func caughtUp(_ id: UInt64, durable: UInt64) {
        update(id) { if $0.caughtUpAt == nil { $0.caughtUpAt = durable } }
    }

    /// REPLICA-ACK. Returns whether it came into sync with this acknowledgement.
    @discardableResult
    mutating func acknowledged(routing: [UInt8], received: UInt64, durable: UInt64, now: Int64) -> Bool {
        guard let i = index(of: routing) else { return false }
        var f = followers[i]
        f.lastHeard = now
        f.received = min(max(f.received, received), f.sent)
        if durable > f.durable { f.durable = durable }
        var k = 0
        while k < f.unacked.count && f.unacked[k].end <= f.durable {
            if ackLatencies.count >= Self.latenciesKept { ackLatencies.removeFirst(ackLatencies.count / 2) }
            ackLatencies.append(now - f.unacked[k].at)
            k += 1
        }
        if k > 0 { f.unacked.removeFirst(k) }
        var joined = false
        if !f.inSync, let point = f.caughtUpAt, f.durable >= point, f.phase == .streaming {
            f.inSync = true
            joined = true
        }
        followers[i] = f
        return joined
    }

    /// The records at least one standby in sync holds durably (nil: none is in sync).
    var replicated: UInt64? { followers.filter(\.inSync).map(\.durable).max() }

    /// Drops every standby out of sync (it did not acknowledge in time): it must catch up again.
    /// Returns their names.
    mutating func expireSync() -> [String] {
        var names: [String] = []
        for i in followers.indices where followers[i].inSync {
            followers[i].inSync = false
            followers[i].caughtUpAt = nil
            names.append(followers[i].name)
        }
        return names
    }

    /// Forgets standbys not heard from since `before`; returns them.
    mutating func forgetSilent(before: Int64) -> [Follower] {
        let gone = followers.filter { $0.lastHeard < before }
        followers.removeAll { $0.lastHeard < before }
        return gone
    }

    mutating func remove(routing: [UInt8]) { followers.removeAll { $0.routing == routing } }

    /// The oldest unacknowledged record's age per standby (µs, 0: none).
    func lagMicros(_ f: Follower, now: Int64) -> Int64 { f.unacked.first.map { now - $0.at } ?? 0 }

    /// Percentile `p` (0…1) of the kept acknowledgement latencies (µs).
    func ackLatency(percentile p: Double) -> Int64 {
        guard !ackLatencies.isEmpty else { return 0 }
        let sorted = ackLatencies.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    private mutating func update(_ id: UInt64, _ body: (inout Follower) -> Void) {
        guard let i = followers.firstIndex(where: { $0.id == id }) else { return }
        body(&followers[i])
    }
}
