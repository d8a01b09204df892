import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import Testing

// Suites C (OperationQueueCompatibilityTests) and D (DistributedAdditionsTests) through typed
// operations, where the behaviour applies. These typed operations take the built-in kinds (their
// JSON input is what the built-in handler reads), so plain `opworker`s serve them.

/// `sleep`'s payload as JSON: `{"milliseconds": N}`; no output.
struct Sleep: DistributedOperation {
    static let kind = "sleep"
    var milliseconds: Int
    func main(_ context: OperationContext) async throws { try await Task.sleep(for: .milliseconds(milliseconds)) }
}

/// `echo` returns its payload, the encoded input: the output is the input again.
struct Echo: DistributedOperation, Equatable {
    static let kind = "echo"
    var text: String
    func main(_ context: OperationContext) async throws -> Echo { self }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct TypedCompatibilityTests {
    let cluster: Cluster
    let coordinator: RemoteCoordinator

    init() throws {
        cluster = try Cluster(workers: 2, slots: 2)
        coordinator = try cluster.coordinator()
    }

    func queue(_ name: String, max: Int = -1, suspended: Bool = false) throws -> RemoteOperationQueue {
        let q = RemoteOperationQueue(name: name, coordinator: coordinator)
        if max != -1 { try q.setMaxConcurrentOperationCount(max) }
        if suspended { try q.setSuspended(true) }
        return q
    }

    func recording(_ ops: [RemoteOperation], into r: Recorder<String>) {
        for op in ops {
            let n = op.name
            op.completionBlock = { r.append(n) }
        }
    }

    // MARK: C

    @Test func priorityOrderOnASerialQueue() async throws {
        let q = try queue("priorities", max: 1, suspended: true)
        let r = Recorder<String>()
        let ops = [OperationPriority.veryLow, .low, .normal, .high, .veryHigh].map {
            TypedRemoteOperation(Echo(text: $0.name), name: $0.name, queuePriority: $0)
        }
        recording(ops, into: r)
        try await q.addOperations(ops)
        q.isSuspended = false
        await q.waitUntilAllOperationsAreFinished()
        #expect(r.values == ["veryHigh", "high", "normal", "low", "veryLow"])
        for op in ops { #expect(try await op.value.text == op.name) }
    }

    @Test func dependenciesOrderTypedAndBytesOperations() async throws {
        let q = try queue("deps")
        let r = Recorder<String>()
        let a = TypedRemoteOperation(Sleep(milliseconds: 150), name: "a")
        let b = RemoteOperation(kind: "noop", name: "b")
        let c = TypedRemoteOperation(Echo(text: "c"), name: "c")
        try b.addDependency(a)
        try c.addDependency(b)
        recording([a, b, c], into: r)
        try await q.addOperations([c, b, a], waitUntilFinished: true)
        #expect(r.values == ["a", "b", "c"])
    }

    @Test func completionBlockRunsBeforeValueReturns() async throws {
        let r = Recorder<String>()
        let op = TypedRemoteOperation(Echo(text: "x"))
        op.completionBlock = { r.append("completion") }
        try queue("completion").addOperation(op)
        #expect(try await op.value == Echo(text: "x"))
        #expect(r.values == ["completion"])
    }

    @Test func cancelBeforeStartAndCancelAll() async throws {
        let q = try queue("cancel", suspended: true)
        let one = TypedRemoteOperation(Sleep(milliseconds: 10_000), name: "one")
        let rest = (0..<3).map { TypedRemoteOperation(Sleep(milliseconds: 10_000), name: "r\($0)") }
        try await q.addOperations([one] + rest)
        one.cancel()
        await #expect(throws: RemoteOperationError.self) { try await one.value }
        #expect(one.isCancelled && one.isFinished)
        q.cancelAllOperations()
        for op in rest {
            do { try await op.value; Issue.record("not cancelled") } catch RemoteOperationError.cancelled {}
        }
        #expect(q.operationCount == 0)
    }

    @Test func stateChangesEndAtFinished() async throws {
        let op = TypedRemoteOperation(Sleep(milliseconds: 100))
        try queue("stream").addOperation(op)
        var last: RemoteOperation.Snapshot?
        for await s in op.stateChanges { last = s }
        #expect(last?.state == .finished && last?.outcome?.isSucceeded == true)
        try await op.value
    }

    // MARK: D

    @Test func retriesAndTimeoutOfATypedOperation() async throws {
        let slow = TypedRemoteOperation(Sleep(milliseconds: 5_000), retries: 1, timeout: 0.3, retryDelay: 0)
        try queue("timeout").addOperation(slow)
        do {
            try await slow.value
            Issue.record("no error")
        } catch RemoteOperationError.failed(let message, let attempt, let worker) {
            #expect(message == "timed out after 2 attempts (limit 300ms each)" && attempt == 2 && worker != nil)
        }
    }

    @Test func requiredTagsWaitForAWorkerThatHasThem() async throws {
        let warnings = Recorder<String>()
        coordinator.warningHandler = { warnings.append($0) }
        let op = TypedRemoteOperation(Echo(text: "gpu"), requiredTags: ["gpu"])
        try queue("tags").addOperation(op)
        #expect(warnings.values.count == 1 && warnings.values.first?.contains("has tag gpu") == true, "\(warnings.values)")
        try cluster.startWorker(name: "gpu", tags: ["gpu"])
        #expect(try await op.value.text == "gpu")
    }
}
