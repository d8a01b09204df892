@testable import Coordinator
import Testing

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
        // Events of the ended stream still on their way are not queued behind the notice.
        #expect(q.add(frames(300), kind: .event, to: a) == .discarded)
        #expect(q.queuedBytes(of: a) == 340)
        q.sentFirst(of: a)
        #expect(q.first(of: a)?.frames == notice)
        q.sentFirst(of: a)
        #expect(q.isEmpty && q.clientBytes == 0)
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
        q.blocked(w, now: 1_000)
        #expect(q.due(now: 2_999).due.isEmpty && q.due(now: 3_000).due == [w])
        for _ in 0..<20 { q.blocked(w, now: 0) }
        #expect(q.due(now: 999_999).due.isEmpty && q.due(now: 1_000_000).due == [w], "back-off stops at 1 s")
        q.sentFirst(of: w)
        #expect(q.freshQueues == 1 && q.due(now: 0).due == [w], "a peer that moved is tried every pass again")
        q.drop(w)
        #expect(q.isEmpty && q.freshQueues == 0)
    }
}
