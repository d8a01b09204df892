import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import OpClient
import WireProtocol

/// The integration tests' `LocalCluster` with the shape these tests use: a coordinator and `workers`
/// workers started at once, without prefetch so priorities stay exact.
final class Cluster: @unchecked Sendable {
    let local: LocalCluster
    var endpoint: String { local.endpoint }
    var dir: URL { local.dir }

    init(workers: Int = 2, slots: Int = 2) throws {
        local = try LocalCluster(heartbeatMs: 200)
        for i in 0..<workers { _ = try local.startWorker("w\(i)", slots: slots, prefetch: 0) }
    }

    /// Starts one more worker and waits (bounded) until the coordinator lists it.
    func startWorker(name: String, slots: Int = 1, tags: [String]) throws {
        _ = try local.startWorker(name, slots: slots, prefetch: 0, tags: tags)
    }

    func logs() -> String { local.logs() }

    /// `ClusterTestSupport.waitUntil` with the cluster's logs in its error.
    func waitUntil(_ what: String, timeout: Double = unpromisedWaitBound, interval: Duration = .milliseconds(5),
                   _ condition: () throws -> Bool) throws {
        try local.waitUntil(what, timeout: timeout, interval: interval, condition)
    }

    func stop() { _ = local.stop() }

    func coordinator() throws -> RemoteCoordinator { try RemoteCoordinator(endpoint: endpoint, timeout: .seconds(5)) }
}

/// Values appended from completion blocks and other threads.
final class Recorder<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ x: T) { lock.lock(); items.append(x); lock.unlock() }
    var values: [T] { lock.lock(); defer { lock.unlock() }; return items }
}

/// A `sleep` operation of `ms` milliseconds.
func sleeper(_ ms: Int, _ name: String, priority: OperationPriority = .normal) -> RemoteOperation {
    RemoteOperation(kind: "sleep", payload: "\(ms)", name: name, queuePriority: priority)
}
