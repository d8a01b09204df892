@testable import DistributedOperationQueue
import Testing

/// The connection thread's shared state, without a thread or a socket.
@Suite struct EngineStateTests {
    @Test func requestsAreRefusedBeforeTheStartAndAfterTheStop() {
        var s = EngineState(run: "r")
        #expect(s.enqueue { _ in { _ in } } == nil, "not started")
        s.starting()
        #expect(s.enqueue { _ in { _ in } } == 1, "queued while it connects")
        #expect(s.started(error: nil).isEmpty && s.phase == .running)
        let first = s.stop(), second = s.stop()
        #expect(first, "the first stop waits for the thread")
        #expect(!second, "later ones do not")
        #expect(s.enqueue { _ in { _ in } } == nil)
        let (commands, stop) = s.takeCommands()
        #expect(commands.count == 1 && stop, "what was queued before the stop is still carried out")
        #expect(s.ended().commands.isEmpty && s.phase == .ended)
    }

    @Test func aFailedStartEndsEverything() {
        var s = EngineState(run: "r")
        s.starting()
        _ = s.started(error: "no answer")
        #expect(s.startError == .some("no answer") && s.phase == .ended)
        #expect(s.enqueue { _ in { _ in } } == nil)
        let waits = s.stop()
        #expect(!waits, "no thread to wait for")
    }

    @Test func parkedOperationsAreReleasedOnceReady() {
        var s = EngineState(run: "r")
        let a = RemoteOperation(kind: "noop"), b = RemoteOperation(kind: "noop")
        let engine = Engine(endpoint: "tcp://127.0.0.1:1", fetchResults: false)
        let queue = RemoteOperationQueue(name: "q", coordinator: RemoteCoordinator(engine: engine))
        s.park([a, b], in: queue)
        let ready = s.takeParked { $0 === a }
        #expect(ready.count == 1 && ready[0].op === a)
        let again = s.unpark(a), other = s.unpark(b)
        #expect(!again, "taken already")
        #expect(other && s.parked.isEmpty)
    }
}
