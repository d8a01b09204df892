import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import Testing
import WireProtocol

/// What the Swift API adds to OperationQueue (docs/SEMANTICS.md §2), on real processes.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DistributedAdditionsTests {
    let cluster: Cluster
    let coordinator: RemoteCoordinator

    init() throws {
        cluster = try Cluster(workers: 2, slots: 2)
        coordinator = try cluster.coordinator()
    }

    /// S1: `isExecuting` means the handler runs. A 1-slot worker with prefetch holds several operations;
    /// only one of them is executing at a time, the others are `dispatched`.
    @Test func isExecutingMeansTheHandlerRunsNotThatItWaitsOnAWorker() throws {
        let local = try LocalCluster(heartbeatMs: 200)
        defer { local.stop() }
        try local.startWorker("prefetching", slots: 1, prefetch: 3)
        let remote = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "prefetch", coordinator: remote)
        let ops = (0..<4).map { sleeper(250, "s\($0)") }
        try q.addOperations(ops, waitUntilFinished: false)
        var mostExecuting = 0, sawDispatched = false
        // Sampled every 2 ms while they run.
        try local.waitUntil("all four finished", interval: .milliseconds(2)) {
            mostExecuting = max(mostExecuting, ops.filter(\.isExecuting).count)
            if ops.contains(where: { $0.state == .dispatched }) { sawDispatched = true }
            return ops.allSatisfy(\.isFinished)
        }
        #expect(mostExecuting == 1, "one slot: at most one operation executes")
        #expect(sawDispatched, "prefetched operations are dispatched, not executing")
    }

    /// A10: a client's run that finished and was evicted while the client was idle does not make its
    /// next operations fail: they go to a new run.
    @Test func aClientWhoseRunWasEvictedGoesOnInANewRun() throws {
        let local = try LocalCluster(coordinatorArgs: ["--retain", "1s"])
        defer { local.stop() }
        try local.startWorker("w", slots: 1)
        let remote = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "evicted", coordinator: remote)
        let first = RemoteOperation(kind: "echo", payload: "one", name: "first")
        try q.addOperations([first], waitUntilFinished: true)
        #expect(first.outcome == .succeeded(Array("one".utf8)))
        // Idle past the retention: the client's run is evicted.
        try local.waitUntil("the client's finished run evicted", timeout: 20) {
            guard case .runsReply(let r) = try local.connect().request(.runs(WireRuns())) else { return false }
            return r.evicted == 1
        }
        let second = RemoteOperation(kind: "echo", payload: "two", name: "second")
        try q.addOperations([second], waitUntilFinished: true)
        #expect(second.outcome == .succeeded(Array("two".utf8)))
    }

    @Test func outcomesAndResultsReachTheClientAndDependents() throws {
        let q = RemoteOperationQueue(name: "outcomes", coordinator: coordinator)
        let a = RemoteOperation(kind: "echo", payload: "alpha", name: "a")
        let b = RemoteOperation(kind: "echo", payload: "beta", name: "b")
        let command = #"{"command": "cat \"$OPQ_INPUT_\#(a.id.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined())\" \"$OPQ_INPUTS_DIR\"/* | wc -c"}"#
        let join = RemoteOperation(kind: "shell", payload: Array(command.utf8), name: "join")
        try join.addDependency(a)
        try join.addDependency(b)
        let broken = RemoteOperation(kind: "fail", payload: "disk full", name: "broken")
        try q.addOperations([a, b, join, broken], waitUntilFinished: true)
        #expect(a.result == Array("alpha".utf8))
        #expect(String(decoding: join.result ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "14")
        #expect(broken.outcome == .failed("disk full"))
    }

    @Test func succeededPolicyCancelsTheDependentOfAFailure() throws {
        let q = RemoteOperationQueue(name: "policy", coordinator: coordinator)
        let broken = RemoteOperation(kind: "fail", payload: "no", name: "broken")
        let strict = RemoteOperation(kind: "noop", name: "strict", dependencyPolicy: .succeeded)
        let lenient = RemoteOperation(kind: "noop", name: "lenient")
        try strict.addDependency(broken)
        try lenient.addDependency(broken)
        try q.addOperations([broken, strict, lenient], waitUntilFinished: true)
        #expect(strict.outcome?.isCancelled == true)
        #expect(strict.outcome?.message?.contains(broken.id) == true, "\(String(describing: strict.outcome))")
        #expect(lenient.outcome?.isSucceeded == true, "the default policy is OperationQueue's: run after finished")
    }

    @Test func retriesAndTimeout() throws {
        let q = RemoteOperationQueue(name: "retries", coordinator: coordinator)
        let flaky = RemoteOperation(kind: "fail", payload: Array("boom".utf8), name: "flaky", retries: 2, retryDelay: 0.05)
        let slow = RemoteOperation(kind: "sleep", payload: Array("5000".utf8), name: "slow", retries: 1, timeout: 0.3,
                                   retryDelay: 0)
        try q.addOperations([flaky, slow], waitUntilFinished: false)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(flaky.outcome == .failed("failed after 3 attempts: boom") && flaky.lastRun.attempt == 3)
        #expect(slow.outcome == .failed("timed out after 2 attempts (limit 300ms each)") && slow.lastRun.attempt == 2)
    }

    @Test func stateChangesAsyncSequenceEndsAtFinished() async throws {
        let q = RemoteOperationQueue(name: "stream", coordinator: coordinator)
        let op = RemoteOperation(kind: "sleep", payload: Array("100".utf8), name: "watched")
        try q.addOperation(op)
        var last: RemoteOperation.Snapshot?
        for await s in op.stateChanges { last = s }
        #expect(last?.state == .finished && last?.outcome?.isSucceeded == true)
        await q.waitUntilAllOperationsAreFinished()
    }

    @Test func unreachableCoordinatorIsAClearError() throws {
        #expect(throws: RemoteOperationError.self) {
            _ = try RemoteCoordinator(endpoint: "tcp://127.0.0.1:1", timeout: .milliseconds(300))
        }
    }

    /// A setter whose request fails is not silent: with the coordinator gone, the throwing form throws
    /// and the property form keeps the error in `lastError` (each bounded by the 500 ms request timeout).
    @Test func failingSetterIsVisibleWhenTheCoordinatorIsGone() throws {
        let remote = try RemoteCoordinator(endpoint: cluster.endpoint, timeout: .milliseconds(500))
        let q = RemoteOperationQueue(name: "gone", coordinator: remote)
        try q.setSuspended(false)
        #expect(q.lastError == nil)
        cluster.stop()
        #expect(throws: RemoteOperationError.self) { try q.setSuspended(true) }
        #expect(q.lastError == nil, "the throwing form throws instead")
        q.maxConcurrentOperationCount = 3
        #expect(q.lastError != nil)
    }

    /// `connect` is the initializer without blocking a thread: it connects, or throws like it.
    @Test func asyncConnect() async throws {
        let remote = try await RemoteCoordinator.connect(endpoint: cluster.endpoint, timeout: .seconds(5))
        let op = try RemoteOperationQueue(name: "async", coordinator: remote).addOperation(kind: "noop")
        await op.waitUntilFinished()
        #expect(op.result != nil, "succeeded")
        await #expect(throws: RemoteOperationError.self) {
            _ = try await RemoteCoordinator.connect(endpoint: "tcp://127.0.0.1:1", timeout: .milliseconds(300))
        }
    }
}
