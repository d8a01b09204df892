@testable import Coordinator
import Foundation
import Testing
import WireProtocol

/// Issue 23 (7): what the coordinator holds for peers that do not read, and when a client is over its
/// budget. Pure: no sockets.
struct OutputBacklogTests {
    let a: [UInt8] = [0, 1], b: [UInt8] = [0, 2], w: [UInt8] = [0, 9]

    func frames(_ n: Int, _ tag: UInt8 = 7) -> [[UInt8]] { [[0, 1], [UInt8](repeating: tag, count: n - 2)] }

    @Test func messagesWaitInOrderAndLeaveWhenSent() {
        var q = OutputBacklog(perClient: 1000, total: 8000)
        #expect(q.isEmpty && !q.holds(a))
        #expect(q.add(frames(100, 1), kind: .reply, to: a) == .queued)
        #expect(q.add(frames(100, 2), kind: .event, to: a) == .queued)
        #expect(q.holds(a) && !q.holds(b) && q.queuedBytes(of: a) == 200 && q.clientBytes == 200)
        #expect(q.first(of: a)?.frames[1].first == 1)
        q.sentFirst(of: a)
        #expect(q.first(of: a)?.frames[1].first == 2 && q.clientBytes == 100)
        q.sentFirst(of: a)
        #expect(q.isEmpty && q.clientBytes == 0 && q.freshQueues == 0)
    }

    @Test func aClientOverItsBudgetHasItsStreamEndedAndItsEventsDropped() {
        var q = OutputBacklog(perClient: 1000, total: 8000)
        _ = q.add(frames(300), kind: .reply, to: a)
        for _ in 0..<2 { #expect(q.add(frames(300), kind: .event, to: a) == .queued) }
        #expect(q.add(frames(300), kind: .event, to: a) == .overBudget)
        let notice = frames(40, 9)
        #expect(q.endStream(of: a, notice: notice) == false, "the reply alone is within budget")
        // The reply stays, the events go, the notice follows the reply.
        #expect(q.queuedBytes(of: a) == 340 && q.clientBytes == 340)
        #expect(q.takeDropped() == 900)
        // Events of the ended stream still on their way are not sent after the notice, until a new WATCH.
        #expect(q.discardsEvents(for: a) && !q.discardsEvents(for: b))
        q.sentFirst(of: a)
        #expect(q.first(of: a)?.frames == notice)
        q.sentFirst(of: a)
        #expect(q.isEmpty && q.clientBytes == 0)
        #expect(q.discardsEvents(for: a), "also once the notice went out")
        q.streamReopened(a)
        #expect(!q.discardsEvents(for: a))
        _ = q.endStream(of: b, notice: nil)
        #expect(!q.discardsEvents(for: b), "no queue, no stream ended")
        _ = q.add(frames(100), kind: .event, to: b)
        _ = q.endStream(of: b, notice: nil)
        q.forgetEndedStreams { $0 == b }
        #expect(!q.discardsEvents(for: b), "a peer that is gone")
    }

    @Test func repliesAloneOverTheBudgetAreReportedForDropping() {
        var q = OutputBacklog(perClient: 1000, total: 8000)
        for _ in 0..<3 { _ = q.add(frames(300), kind: .reply, to: a) }
        #expect(q.add(frames(300), kind: .reply, to: a) == .overBudget)
        #expect(q.endStream(of: a, notice: nil) == true)
        q.drop(a)
        #expect(q.isEmpty && q.clientBytes == 0 && q.takeDropped() == 1200)
    }

    /// Many slow clients at once: each is held to its share of the total, far below its own budget.
    @Test func manySlowClientsShareTheTotal() {
        var q = OutputBacklog(perClient: 1000, total: 2000)
        var over = 0
        for i in 0..<10 {
            let r: [UInt8] = [1, UInt8(i)]
            for _ in 0..<3 where q.add(frames(100), kind: .event, to: r) == .overBudget { over += 1 }
        }
        // 10 clients × 300 bytes = 3000 > 2000: each past 2000/10 = 200 bytes once the total is passed.
        #expect(over > 0)
        #expect(q.clientBytes == 3000 && q.peerCount == 10)
        for i in 0..<10 { _ = q.endStream(of: [1, UInt8(i)], notice: nil) }
        #expect(q.clientBytes == 0)
    }

    @Test func workersAreNotBudgetedAndBlockedPeersBackOff() {
        var q = OutputBacklog(perClient: 1000, total: 2000)
        for _ in 0..<50 { #expect(q.add(frames(100), kind: .worker, to: w) == .queued) }
        #expect(q.clientBytes == 0 && q.queuedBytes(of: w) == 5000)
        #expect(q.freshQueues == 1 && q.due(now: 0).due == [w])
        q.blocked(w, now: 0)
        #expect(q.freshQueues == 0 && q.due(now: 500).due.isEmpty && q.due(now: 500).next == 1_000)
        for _ in 0..<20 { q.blocked(w, now: 0) }
        #expect(q.due(now: 1_000).due == [w], "a worker is tried again every millisecond")
        // A client backs off, doubling, up to 1 s.
        _ = q.add(frames(100), kind: .reply, to: a)
        q.blocked(a, now: 0)
        q.blocked(a, now: 1_000)
        #expect(!q.due(now: 2_999).due.contains(a) && q.due(now: 3_000).due.contains(a))
        for _ in 0..<20 { q.blocked(a, now: 0) }
        #expect(!q.due(now: 999_999).due.contains(a) && q.due(now: 1_000_000).due.contains(a), "back-off stops at 1 s")
        q.drop(a)
        q.sentFirst(of: w)
        #expect(q.freshQueues == 1 && q.due(now: 0).due == [w], "a peer that moved is tried every pass again")
        q.drop(w)
        #expect(q.isEmpty && q.freshQueues == 0)
    }
}

/// What libzmq holds for a peer is bounded by count (16 messages), so EVENT messages are kept small:
/// a stream's events leave in bodies of at most 64 KiB (one larger event alone). Watchers of one stream
/// share its bodies (`EventStreams`).
struct EventMessageSizeTests {
    @Test func eventsLeaveInMessagesOfAtMost64KiB() {
        var streams = EventStreams()
        streams.joined(1)
        var big = WireEvent()
        big.opID = "big"
        big.state = .finished
        big.outcome.result = .succeeded(Data(repeating: 1, count: 100_000))
        for i in 0..<2_000 {
            var e = WireEvent()
            e.opID = "op\(i)"
            e.state = .ready
            streams.add(EventBody(event: e), stream: 1, watchers: [7])
            if i == 1_000 { streams.add(EventBody(event: big), stream: 1, watchers: [7]) }
        }
        let deliveries = streams.drain()
        var seen: [UInt64] = []
        for d in deliveries {
            guard let m = Self.events(d.body) else { Issue.record("not an EVENT body"); continue }
            #expect(d.watchers == [7] && d.stream == 1)
            #expect(d.body.count <= EventStreams.messageBytes || m.events.count == 1, "\(d.body.count) bytes in \(m.events.count) events")
            seen += m.events.map(\.sequence)
        }
        #expect(deliveries.count > 2)
        #expect(seen == Array(1...2_001), "every event once, in order, numbered")
        #expect(streams.isEmpty && streams.drain().isEmpty)
    }

    /// An EVENT body's events, decoded as a client decodes them.
    static func events(_ body: [UInt8]) -> WireEvents? {
        guard case .success(let envelope) = WireCodec.decode([Header(command: .event, requestID: 9).bytes, body]),
              case .event(let m) = envelope.message else { return nil }
        return m
    }

    /// The bytes assembled from events encoded once are exactly what protobuf writes for the same
    /// events (fields in number order: the sequence first), whatever the sequence's size.
    @Test func anAssembledEventBodyIsTheEncodingOfTheSameEvents() {
        var e = WireEvent()
        e.opID = "r-1/a"
        e.run = "r-1"
        e.state = .finished
        e.outcome.result = .succeeded(Data(repeating: 7, count: 300))
        e.workerID = "w3"
        e.timestampUs = 1_700_000_000_000_000
        let body = EventBody(event: e)
        for sequence: UInt64 in [1, 127, 128, 300, 1 << 40] {
            var assembled: [UInt8] = []
            body.append(sequence: sequence, to: &assembled)
            body.append(sequence: sequence + 1, to: &assembled)
            var a = e, b = e
            a.sequence = sequence
            b.sequence = sequence + 1
            #expect(assembled == WireCodec.body(of: .event(WireEvents.with { $0.events = [a, b] })), "sequence \(sequence)")
        }
    }

    private func event(_ id: String) -> EventBody {
        var e = WireEvent()
        e.opID = id
        e.state = .ready
        return EventBody(event: e)
    }

    private func content(_ deliveries: [EventStreams.Delivery]) -> [String] {
        deliveries.map { d in "\(d.watchers): " + (Self.events(d.body)?.events.map { "\($0.opID)#\($0.sequence)" } ?? []).joined(separator: " ") }
    }

    /// One body per stream for all its watchers; a change of watchers closes the body, so each watcher
    /// gets exactly the events published while it was in the stream; numbers go on across flushes.
    @Test func aStreamsBodyIsSharedAndCutWhenItsWatchersChange() {
        var streams = EventStreams()
        streams.joined(1)
        streams.joined(1)
        streams.joined(1)
        streams.add(event("a"), stream: 1, watchers: [1, 2, 3])
        streams.add(event("b"), stream: 1, watchers: [1, 2, 3])
        streams.add(event("c"), stream: 1, watchers: [1, 2])
        #expect(streams.waitingWatchers == 5)
        #expect(content(streams.drain()) == ["[1, 2, 3]: a#1 b#2", "[1, 2]: c#3"])
        streams.add(event("d"), stream: 1, watchers: [1, 2])
        #expect(content(streams.drain()) == ["[1, 2]: d#4"], "numbers go on across flushes")
    }

    /// A stream nobody is in is forgotten once what it had is sent (the core never names it again).
    @Test func aStreamNobodyIsInIsForgotten() {
        var streams = EventStreams()
        streams.joined(4)
        streams.add(event("a"), stream: 4, watchers: [1])
        streams.left(4)
        #expect(content(streams.drain()) == ["[1]: a#1"], "what was published while it was in goes out")
        streams.add(event("b"), stream: 4, watchers: [1])
        #expect(content(streams.drain()) == ["[1]: b#1"], "a forgotten stream counts from 1 again")
        #expect(streams.isEmpty)
    }
}
