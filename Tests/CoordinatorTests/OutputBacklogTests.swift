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
/// a watcher's events leave in messages of at most 64 KiB (one larger event alone).
struct EventMessageSizeTests {
    @Test func eventsLeaveInMessagesOfAtMost64KiB() {
        var outbox = Outbox()
        var big = WireEvent()
        big.opID = "big"
        big.state = .finished
        big.outcome.result = .succeeded(Data(repeating: 1, count: 100_000))
        for i in 0..<2_000 {
            var e = WireEvent()
            e.opID = "op\(i)"
            e.state = .ready
            outbox.event(outbox.add(e), to: 7)
            if i == 1_000 { outbox.event(outbox.add(big), to: 7) }
        }
        var sequence: UInt64 = 0
        let batches = outbox.drain(watchRequestID: { _ in 9 }, nextSequence: { _ in sequence += 1; return sequence })
        var seen: [UInt64] = []
        for b in batches {
            guard let m = Self.events(b) else { Issue.record("not an EVENT"); continue }
            #expect(b.requestID == 9)
            let bytes = b.body?.count ?? 0
            #expect(bytes <= Outbox.eventMessageBytes || m.events.count == 1, "\(bytes) bytes in \(m.events.count) events")
            seen += m.events.map(\.sequence)
        }
        #expect(batches.count > 2)
        #expect(seen == Array(1...2_001), "every event once, in order, numbered")
    }

    /// An EVENT batch's events, decoded from the body the outbox assembled (as a client decodes them).
    static func events(_ b: Outbox.Batch) -> WireEvents? {
        guard case .event = b.message, let body = b.body,
              case .success(let envelope) = WireCodec.decode([Header(command: .event, requestID: b.requestID).bytes, body]),
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

    /// One event to many watchers is kept once; each watcher's copy still gets its own numbers.
    @Test func anEventToManyWatchersIsKeptOnceAndNumberedPerWatcher() {
        var outbox = Outbox()
        var a = WireEvent()
        a.opID = "a"
        a.state = .ready
        var b = WireEvent()
        b.opID = "b"
        b.state = .ready
        let ia = outbox.add(a)
        outbox.event(ia, to: 1)
        outbox.event(ia, to: 2)
        outbox.event(ia, to: 3)
        outbox.event(outbox.add(b), to: 1)
        var next: [UInt64: UInt64] = [1: 10]
        let batches = outbox.drain(watchRequestID: { _ in 0 }, nextSequence: { c in next[c, default: 0] += 1; return next[c]! })
        var got: [UInt64: [String]] = [:]
        for batch in batches {
            guard case .client(let c) = batch.peer, let m = Self.events(batch) else { continue }
            got[c, default: []] += m.events.map { "\($0.opID)#\($0.sequence)" }
        }
        #expect(got == [1: ["a#11", "b#12"], 2: ["a#1"], 3: ["a#1"]])
    }
}
