import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import Testing
import WireProtocol

/// Fair share from the Swift API (A11): `RemoteOperationQueue.fairness` reaches the coordinator (with the
/// first SUBMIT for a queue it does not have yet, by QUEUE after), and an operation's `share` and
/// `concurrencyKey` travel in SUBMIT.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct FairnessAPITests {
    @Test func queueFairnessAndOperationKeysReachTheCoordinator() throws {
        let local = try LocalCluster()
        defer { local.stop() }
        try local.startWorker("w", slots: 2)
        let remote = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "fair", coordinator: remote)
        let keyed = QueueFairness(share: .key, weights: ["a": 2], keyLimit: 1)
        q.fairness = keyed   // the coordinator has no queue "fair" yet: sent with the first SUBMIT
        #expect(q.lastError == nil && q.fairness == keyed)

        let op = RemoteOperation(kind: "noop", share: "a", concurrencyKey: "k")
        let other = RemoteOperation(kind: "noop")
        other.share = "b"
        other.concurrencyKey = "k"
        #expect(other.share == "b" && other.concurrencyKey == "k")
        try q.addOperations([op, other], waitUntilFinished: true)
        #expect(op.outcome == .succeeded([]) && other.outcome == .succeeded([]))
        func settings() throws -> WireQueueFairness {
            try #require(try local.statusReply().queues.first { $0.name == "fair" }).fairness
        }
        #expect(try settings() == WireQueueFairness(keyed))

        // An existing queue: QUEUE.
        let rated = QueueFairness(rate: RateLimit(perSecond: 10, burst: 2))
        try q.setFairness(rated)
        #expect(try settings() == WireQueueFairness(rated))
        q.fairness = QueueFairness(keyLimit: -1)
        #expect(q.lastError == .invalidValue("keyLimit must be ≥ 0 (0 = none), got -1") && q.fairness == rated, "nothing changes")

        // The keys travel in SUBMIT: one over the id limit is refused, naming the field.
        let tooLong = RemoteOperation(kind: "noop", concurrencyKey: String(repeating: "k", count: WireLimits.maxIDLength + 1))
        #expect { try q.addOperation(tooLong) } throws: { "\($0)".contains("concurrency_key") }
    }
}
