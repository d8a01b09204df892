import ClusterTestSupport
import DistributedOperationQueue
import Foundation

/// A coordinator, one `typed-test-worker` ("typed": opworker plus TypedTestOperations, two slots,
/// no prefetch) and a client connection, as real processes on loopback.
final class TypedCluster: @unchecked Sendable {
    let local: LocalCluster
    let coordinator: RemoteCoordinator
    static let workerName = "typed"
    /// The coordinator's id of that worker (what `lastRun.worker` and `.failed(worker:)` name).
    let workerID: String

    /// `workerArgs`: more options for the typed worker (opworker's, e.g. `--allow-kinds`).
    init(workerArgs: [String] = []) throws {
        let local = try LocalCluster(heartbeatMs: 200)
        self.local = local
        do {
            workers.append(try Self.startTypedWorker(Self.workerName, in: local, extraArgs: workerArgs))
            workerID = try local.workerList().first { $0.name == Self.workerName }?.workerID ?? ""
            coordinator = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5), fetchResults: false)
        } catch {
            for p in workers { p.terminate() }
            local.stop()
            throw error
        }
    }

    /// Starts a typed test worker and waits (bounded) until the coordinator lists it.
    static func startTypedWorker(_ name: String, in local: LocalCluster, extraArgs: [String] = []) throws -> Process {
        let args = ["--connect", local.endpoint, "--name", name, "--slots", "2", "--prefetch", "0"] + extraArgs
        let p = try LocalCluster.launch("typed-test-worker", args, log: local.dir.appendingPathComponent("\(name).log"))
        do {
            try local.waitUntil("typed worker \(name) registered", timeout: 20) {
                guard p.isRunning else { throw ClusterError("typed-test-worker exited: \(local.logs())") }
                return try local.workerList().contains { $0.name == name }
            }
        } catch {
            p.terminate()
            throw error
        }
        return p
    }

    private var workers: [Process] = []

    func queue(_ name: String) -> RemoteOperationQueue { RemoteOperationQueue(name: name, coordinator: coordinator) }

    func waitUntil(_ what: String, _ condition: () throws -> Bool) throws { try local.waitUntil(what, condition) }

    deinit {
        coordinator.close()
        for p in workers where p.isRunning { p.terminate() }
        local.stop()
        for p in workers { p.waitUntilExit() }
    }
}

/// Values appended from other threads (warnings, completion blocks).
final class Collected<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ x: T) { lock.withLock { items.append(x) } }
    var values: [T] { lock.withLock { items } }
}
