@testable import Coordinator
import Testing

/// `LoopPulse`: how long the loop went without reading, and the pause it excuses, without sockets.
struct LoopPulseTests {
    @Test func holdsWithinBudgetExcuseNothingAndHoldsOverBudgetExcuseOnlyTheExcess() {
        var p = LoopPulse(budget: 20_000, now: 0)
        #expect(p.reading(at: 5_000) == 0)
        #expect(p.reading(at: 25_000) == 0, "exactly the budget is within it")
        #expect(p.overBudget == 0)
        #expect(p.reading(at: 1_525_000) == 1_480_000, "a 1.5 s hold excuses 1.5 s minus the budget")
        #expect(p.overBudget == 1)
        #expect(p.takeLongest() == 1_500_000)
        #expect(p.takeLongest() == 0, "a new window starts")
    }

    @Test func timeSpentWaitingInPollIsListeningNotHolding() {
        var p = LoopPulse(budget: 20_000, now: 0)
        #expect(p.reading(at: 1_000) == 0)      // about to poll
        p.woke(at: 5_000_000)                   // poll returned 5 s later: the loop listened all along
        #expect(p.reading(at: 5_010_000) == 0, "10 ms of work after the wake-up")
        #expect(p.overBudget == 0)
        #expect(p.takeLongest() == 10_000)
    }
}

/// Before an input the loop cannot slice, every worker not sent to within the budget hears a HEARTBEAT.
struct LongInputHeartbeatTests {
    @Test func onlyWorkersNotSentToWithinTheBudgetAreListed() {
        var links = WorkerLinks(heartbeatInterval: 1_000_000)
        for (id, name) in [(1 as UInt64, "a"), (2, "b")] {
            links.opened(id, info: WorkerLinks.Info(name: name, tags: [], kinds: ["noop"], connectedAt: 0), clock: WorkerClock(), now: 0)
        }
        links.sent(to: 2, now: 2_890_000)
        #expect(links.notSentTo(since: 2_900_000 - 20_000) == [1])
        links.markLost(1)
        #expect(links.notSentTo(since: 3_000_000).sorted() == [2], "a lost session gets nothing")
    }
}
