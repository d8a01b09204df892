@testable import DistributedOperationQueue
import Testing
import WireProtocol

/// A `RemoteOperationQueue`'s state value, without sockets; waiters are plain numbers here.
@Suite struct QueueStateTests {
    @Test func idleWaitersAreResumedOnceWhenTheLastOperationFinishes() {
        var s = QueueState<Int>()
        let a = RemoteOperation(kind: "noop"), b = RemoteOperation(kind: "noop")
        #expect(s.track([a, b]) == 200)
        #expect(s.addIdleWaiter(1) && s.addIdleWaiter(2))
        let first = s.finished(a)
        #expect(first.units == 100 && !first.idle && first.waiters.isEmpty)
        let last = s.finished(b)
        #expect(last.idle && last.waiters == [1, 2])
        let again = s.finished(b)
        #expect(again.units == 0 && again.waiters.isEmpty, "a second finish is a no-op")
        let kept = s.addIdleWaiter(3)
        #expect(!kept, "idle already: resume at once, nothing kept")
        #expect(s.idleWaiters.isEmpty)
    }

    @Test func progressCountsEachOperationsHundredUnitsOnce() {
        var s = QueueState<Int>()
        let a = RemoteOperation(kind: "noop")
        _ = s.track([a])
        #expect(s.progressed(a, fraction: 0.5) == 49)
        #expect(s.progressed(a, fraction: 0.4) == 0, "progress never moves back")
        #expect(s.finished(a).units == 51)
        #expect(s.progressed(a, fraction: 0.9) == 0)
    }

    @Test func operationsKeepTheOrderTheyWereAdded() {
        var s = QueueState<Int>()
        let ops = (0..<5).map { RemoteOperation(kind: "noop", name: "\($0)") }
        _ = s.track(ops)
        _ = s.finished(ops[2])
        #expect(s.operations.map(\.name) == ["0", "1", "3", "4"])
    }

    @Test func settingsMadeBeforeTheQueueExistsAreSentOnceItIsKnown() {
        var s = QueueState<Int>()
        #expect(s.learned(nil, name: "q") == nil && s.known == false)
        s.suspended = true
        s.unsentSettings = true
        var remote = WireQueueCounts()
        remote.name = "q"
        remote.maxConcurrent = 7
        let unsent = s.learned(remote, name: "q")
        #expect(unsent?.suspended == true && unsent?.maxConcurrent == -1 && !s.unsentSettings)
        var t = QueueState<Int>()
        #expect(t.learned(remote, name: "q") == nil && t.maxConcurrent == 7, "an existing queue's settings are read")
    }

    @Test func invalidSettingsAreRefusedAndAnExistingQueueKeepsItsQoS() throws {
        #expect(throws: RemoteOperationError.self) { try QueueState<Int>.validate(maxConcurrent: -5) }
        try QueueState<Int>.validate(maxConcurrent: -1)
        var s = QueueState<Int>()
        try s.setQoS(.utility)
        s.submitted()
        #expect(throws: RemoteOperationError.self) { try s.setQoS(.background) }
        #expect(s.qos == .utility)
    }

    @Test func aFailureIsKept() {
        var s = QueueState<Int>()
        #expect(s.lastError == nil)
        s.failed(.closed)
        #expect(s.lastError == .closed)
    }
}
