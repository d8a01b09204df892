@testable import DistributedOperationQueue
import Testing

/// A `RemoteOperation`'s state value, without sockets: each transition and the action it returns.
@Suite struct OperationStateTests {
    /// An engine that was never started: nothing is sent through it here.
    let engine = Engine(endpoint: "tcp://127.0.0.1:1", fetchResults: false)

    @Test func addedSentFinishedDeliversTheFinishAndTheCompletionOnce() {
        var s = OperationState()
        s.completion = {}
        #expect(s.claim(queue: "q", owner: nil, id: "a") == nil)
        s.sent(engine: engine, coordinator: nil)
        let running = s.update(state: .executing, authoritative: true, cancelled: false, outcome: nil,
                               fraction: 0.5, worker: "w1", attempt: 1)
        #expect(running.yield && !running.finished && running.fraction == 0.5)
        #expect(s.snapshot.state == .executing && s.worker == "w1" && s.attempt == 1)

        let done = s.update(state: .finished, authoritative: true, cancelled: false, outcome: .succeeded([1]),
                            fraction: nil, worker: "", attempt: 0)
        #expect(done.finished && done.snapshot.outcome == .succeeded([1]))
        // A second finished event (or a late status record) changes nothing and delivers nothing.
        let again = s.update(state: .finished, authoritative: false, cancelled: false, outcome: .failed("x"),
                             fraction: nil, worker: "", attempt: 0)
        #expect(!again.finished && !again.yield && s.snapshot.outcome == .succeeded([1]))

        #expect(s.takeCompletion() != nil)
        #expect(s.takeCompletion() == nil, "the completion block is handed out once")
        #expect(!s.finishedDelivered)
        _ = s.delivered()
        #expect(s.finishedDelivered && s.delivered().isEmpty)
    }

    @Test func statusRecordsOnlyMoveForwardEventsMayMoveBack() {
        var s = OperationState()
        _ = s.update(state: .executing, authoritative: true, cancelled: false, outcome: nil, fraction: nil, worker: "", attempt: 1)
        _ = s.update(state: .ready, authoritative: false, cancelled: false, outcome: nil, fraction: nil, worker: "", attempt: 0)
        #expect(s.snapshot.state == .executing)
        _ = s.update(state: .pending, authoritative: true, cancelled: false, outcome: nil, fraction: nil, worker: "", attempt: 0)
        #expect(s.snapshot.state == .pending, "a failed attempt waits to be retried")
    }

    @Test func cancelBeforeSendNeedsNoRequestAndFinishesLocally() {
        var s = OperationState()
        guard case .cancelled(_, let snapshot, let engine, let parkedOn) = s.cancel() else {
            Issue.record("a pending operation is cancelled"); return
        }
        #expect(snapshot.isCancelled && engine == nil && parkedOn == nil)
        guard case .none = s.cancel() else { Issue.record("cancelling twice does nothing more"); return }
        let done = s.finishLocally(reason: "cancelled before it was added to a queue")
        #expect(done.finished && s.local)
        #expect(s.snapshot.outcome == .cancelled("cancelled before it was added to a queue"))
        #expect(s.claim(queue: "q", owner: nil, id: "a") == .alreadyFinished("a"))
    }

    @Test func cancelAfterSendAsksForCancelOps() {
        var s = OperationState()
        _ = s.claim(queue: "q", owner: nil, id: "a")
        s.sent(engine: engine, coordinator: nil)
        guard case .cancelled(_, _, let target, _) = s.cancel() else { Issue.record("cancelled"); return }
        #expect(target === engine)
    }

    @Test func claimedOnceAndDependenciesFixedAfterwards() throws {
        var s = OperationState()
        let d = RemoteOperation(kind: "noop", name: "d")
        try s.changeDependencies(of: "a", dependency: "d") { $0.append(d) }
        #expect(s.claim(queue: "q", owner: nil, id: "a") == nil)
        #expect(s.claim(queue: "r", owner: nil, id: "a") == .alreadyAdded("a", queue: "q"))
        #expect(throws: RemoteOperationError.dependencyAfterSubmit("a", dependency: "d")) {
            try s.changeDependencies(of: "a", dependency: "d") { $0.removeAll() }
        }
        s.unclaim()
        #expect(s.queue == nil)
    }

    @Test func streamsEndAtFinished() {
        var s = OperationState()
        let (stream, continuation) = AsyncStream<RemoteOperation.Snapshot>.makeStream()
        _ = stream
        #expect(s.addStream(continuation) != nil)
        let done = s.update(state: .finished, authoritative: true, cancelled: false, outcome: .failed("f"),
                            fraction: nil, worker: "", attempt: 0)
        #expect(done.streams.count == 1 && s.streams.isEmpty)
        #expect(s.addStream(continuation) == nil, "a finished operation's stream ends at once")
    }

    @Test func asyncWaitersAreResumedOnce() async {
        let op = RemoteOperation(kind: "noop")
        // The waiter is kept, then handed out by `delivered()` exactly once.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            #expect(op.fields.withLock { $0.addWaiter(c) })
            let waiters = op.fields.withLock { $0.delivered() }
            #expect(waiters.count == 1)
            #expect(op.fields.withLock { $0.delivered() }.isEmpty)
            for w in waiters { w.resume() }
        }
        await op.waitUntilFinished()   // delivered: returns at once
        #expect(op.waitUntilFinished(timeout: .milliseconds(1)))
    }

    @Test func priorityIsSentOnlyForAnUnfinishedSentOperation() {
        var s = OperationState()
        #expect(s.setPriority(.high) == nil && s.priority == .high)
        s.sent(engine: engine, coordinator: nil)
        #expect(s.setPriority(.low) === engine)
        _ = s.update(state: .finished, authoritative: true, cancelled: false, outcome: .succeeded([]), fraction: nil, worker: "", attempt: 0)
        #expect(s.setPriority(.veryHigh) == nil)
    }
}
