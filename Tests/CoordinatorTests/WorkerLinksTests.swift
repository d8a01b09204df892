@testable import Coordinator
import Testing

/// `WorkerLinks`: heartbeats to idle workers and the sessions the core declared lost, without sockets.
struct WorkerLinksTests {
    private func info(_ name: String, at: Int64) -> WorkerLinks.Info {
        WorkerLinks.Info(name: name, tags: ["t"], kinds: ["noop"], connectedAt: at)
    }

    @Test func eachWorkerHearsAHeartbeatAnIntervalAfterTheLastMessageItGot() {
        var links = WorkerLinks(heartbeatInterval: 1_600)    // slack 100
        #expect(links.idleWorkers(now: 0).isEmpty && links.nextHeartbeat == .max, "no session, no wake-up")
        links.opened(1, info: info("a", at: 0), clock: WorkerClock(), now: 0)
        links.opened(2, info: info("b", at: 0), clock: WorkerClock(), now: 300)
        #expect(links.nextHeartbeat == 1_600, "due an interval after its WELCOME")
        #expect(links.idleWorkers(now: 1_499).isEmpty, "not before the slack")
        links.sent(to: 1, now: 1_000)    // a DISPATCH went to worker 1
        #expect(links.idleWorkers(now: 1_500).isEmpty, "worker 1 was sent to since: not due")
        #expect(links.nextHeartbeat == 1_900, "worker 2's, an interval after it opened")
        #expect(links.idleWorkers(now: 1_800) == [2], "due within the slack: early by at most 1/16 interval")
        links.sent(to: 2, now: 1_800)    // the loop sent it the HEARTBEAT
        #expect(links.nextHeartbeat == 2_600, "worker 1's, moved by the DISPATCH")
        #expect(links.idleWorkers(now: 2_700) == [1], "a late loop sends it at once")
        links.sent(to: 1, now: 2_700)
        links.sent(to: 9, now: 2_700)    // a session we do not know stays unknown
        #expect(links.idleWorkers(now: 3_400) == [2])
        links.sent(to: 2, now: 3_400)
        #expect(links.nextHeartbeat == 4_300)
    }

    @Test func heartbeatsDueTogetherGoInOneWakeUp() {
        var links = WorkerLinks(heartbeatInterval: 1_600)
        for id in 1...5 as ClosedRange<UInt64> {
            links.opened(id, info: info("w\(id)", at: 0), clock: WorkerClock(), now: Int64(id) * 20)
        }
        #expect(links.idleWorkers(now: 1_590).sorted() == [1, 2, 3, 4], "due by 1,690: one wake-up for four")
        for id in 1...4 as ClosedRange<UInt64> { links.sent(to: id, now: 1_590) }
        #expect(links.nextHeartbeat == 1_700)
    }

    @Test func aLostSessionGetsNoHeartbeatIsFencedUntilForgottenAndKeepsNothingElse() {
        var links = WorkerLinks(heartbeatInterval: 1_000)
        var clock = WorkerClock()
        clock.observe(sent: 10, receivedAt: 110)
        links.opened(1, info: info("a", at: 5), clock: clock, now: 5)
        links.opened(2, info: info("b", at: 5), clock: WorkerClock(), now: 5)
        #expect(links.info[1]?.name == "a" && links.clocks[1] != nil && !links.isLost(1))
        // The core declared 1 lost: its HELLO details come back for the log line, and nothing is kept.
        #expect(links.markLost(1)?.name == "a")
        #expect(links.isLost(1), "its late messages are fenced and it is told to register again")
        #expect(links.info[1] == nil && links.clocks[1] == nil)
        links.update(clock, of: 1)
        #expect(links.clocks[1] == nil, "a clock moved by a late message is not stored for an ended session")
        links.sent(to: 1, now: 2_000)
        #expect(links.idleWorkers(now: 5_000) == [2], "a lost session gets no heartbeat")
        links.sent(to: 2, now: 5_000)
        #expect(links.nextHeartbeat == 6_000, "and no entry: the next wake-up is the live one's")
        // The peer table dropped its routing: it is no longer fenced here either.
        links.forgot(1)
        #expect(!links.isLost(1))
    }

    @Test func aWorkerThatSaysDisconnectLeavesNothingBehind() {
        var links = WorkerLinks(heartbeatInterval: 1_000)
        links.opened(3, info: info("c", at: 0), clock: WorkerClock(), now: 0)
        links.markLost(3)
        links.closed(3)    // a lost worker that says DISCONNECT (or a live one)
        #expect(!links.isLost(3) && links.info[3] == nil && links.clocks[3] == nil)
        links.opened(4, info: info("d", at: 0), clock: WorkerClock(), now: 0)
        links.closed(4)
        #expect(links.idleWorkers(now: 10_000).isEmpty)
        #expect(links.nextHeartbeat == .max, "nothing left to wake up for")
    }
}
