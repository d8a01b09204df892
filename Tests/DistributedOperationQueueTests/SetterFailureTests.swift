@testable import DistributedOperationQueue
import Testing

/// A setter whose request fails (here: a coordinator object whose connection is closed) is not silent:
/// the throwing form throws, the property form keeps the error in `lastError`.
@Suite struct SetterFailureTests {
    /// A queue on a connection that was never opened: every request throws `closed`.
    func closedQueue() -> RemoteOperationQueue {
        RemoteOperationQueue(name: "q", coordinator: RemoteCoordinator(engine: Engine(endpoint: "tcp://127.0.0.1:1", fetchResults: false)))
    }

    @Test func throwingSettersThrow() {
        let q = closedQueue()
        #expect(throws: RemoteOperationError.closed) { try q.setSuspended(true) }
        #expect(throws: RemoteOperationError.closed) { try q.setMaxConcurrentOperationCount(2) }
        #expect(throws: RemoteOperationError.closed) { try q.cancelAllOperationsOrThrow() }
    }

    @Test func propertySettersRecordTheFailure() {
        let q = closedQueue()
        #expect(q.lastError == nil)
        q.isSuspended = true
        #expect(q.lastError == .closed)
        let r = closedQueue()
        r.maxConcurrentOperationCount = -5
        #expect(r.lastError == .invalidValue("maxConcurrentOperationCount must be -1 or ≥ 0, got -5"))
        #expect(r.maxConcurrentOperationCount == -1, "an invalid value changes nothing")
        let c = closedQueue()
        c.cancelAllOperations()
        #expect(c.lastError == .closed)
    }

    @Test func operationPriorityFailureIsRecorded() {
        let engine = Engine(endpoint: "tcp://127.0.0.1:1", fetchResults: false)
        let op = RemoteOperation(kind: "noop")
        op.fields.withLock { $0.sent(engine: engine, coordinator: nil) }
        op.queuePriority = .high
        #expect(op.queuePriority == .high && op.lastError == .closed)
        #expect(throws: RemoteOperationError.closed) { try op.setQueuePriority(.low) }
    }
}
