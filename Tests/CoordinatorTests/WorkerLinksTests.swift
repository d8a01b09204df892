@testable import Coordinator
import Testing

/// `WorkerLinks`: heartbeats to idle workers and the sessions the core declared lost, without sockets.
struct WorkerLinksTests {
    private func info(_ name: String, at: Int64) -> WorkerLinks.Info {
        WorkerLinks.Info(name: name, tags: ["t"], kinds: ["noop"], connectedAt: at)
    }

    @Test func onlyWorkersSentNothingForAnIntervalGetAHeartbeatAtTheSweeps() {
        var links = WorkerLinks(heartbeatInterval: 1_000)
        #expect(links.idleWorkers(now: 0).isEmpty, "the first sweep runs at once, with no workers")
        #expect(links.nextSweep == 500, "sweeps twice per interval")
        links.opened(1, info: info("a", at: 0), clock: WorkerClock(), now: 0)
        links.opened(2, info: info("b", at: 0), clock: WorkerClock(), now: 0)
        #expect(links.idleWorkers(now: 499).isEmpty, "no sweep before it is due")
        #expect(links.idleWorkers(now: 500).isEmpty, "nobody idle for an interval yet")
        #expect(links.nextSweep == 1_000)
        links.sent(to: 2, now: 600)    // a DISPATCH went to worker 2
        #expect(links.idleWorkers(now: 1_000) == [1])
        links.sent(to: 1, now: 1_000)  // the loop sent it the HEARTBEAT
        #expect(links.idleWorkers(now: 1_600).sorted() == [2])
        links.sent(to: 2, now: 1_600)  // its HEARTBEAT
        links.sent(to: 9, now: 1_600)  // a session we do not know stays unknown
        #expect(links.idleWorkers(now: 2_100).sorted() == [1])
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
    }
}
