import Foundation
import Synchronization
import WorkerRuntime

/// A closure that runs in this process as a member of the coordinator's graph: `BlockOperation`'s
/// counterpart. It can depend on remote and typed operations and they can depend on it; the coordinator
/// schedules it like any operation (dependencies, dependency policy, priority, the queue's limit and
/// suspension, cancellation, timeout, retries), and its completion block and waits behave as for the
/// others.
///
/// It runs on this client's embedded worker, which the coordinator (`RemoteCoordinator`) starts when
/// the first closure is added: it offers one kind that only this process has (`LocalOperation.kind`),
/// so no other worker is ever given it. Returning gives `succeeded` with an empty result; throwing gives
/// `failed` with the error's description (the error itself is kept in `error`). Inside, the context
/// tells `isCancelled` (also `Task.isCancelled`), the dependencies' results (`inputs`,
/// `output(of:)`), and takes `reportProgress`.
///
/// When this process goes away its closures cannot run anywhere: see "Closures" in docs/HANDLERS.md.
public final class LocalOperation: RemoteOperation, @unchecked Sendable {
    public typealias Block = @Sendable (OperationContext) async throws -> Void

    private let block: Block
    private let thrown = Mutex<(any Error)?>(nil)

    /// The kind of every closure of this process ("local-closure@HOST:PID#RANDOM"): what `opctl why`
    /// names for one that waits after its process has gone.
    public static var kind: String { ClosureTable.kind }

    public init(name: String? = nil, queuePriority: OperationPriority = .normal, qualityOfService: OperationQoS? = nil,
                dependencyPolicy: DependencyPolicy = .finished, retries: Int = 0, timeout: Double? = nil,
                _ block: @escaping Block) {
        self.block = block
        let id = RemoteOperation.generatedID()
        super.init(kind: ClosureTable.kind, payload: Array(id.utf8), name: name, id: id, queuePriority: queuePriority,
                   qualityOfService: qualityOfService, parts: 1, dependencyPolicy: dependencyPolicy, retries: retries,
                   timeout: timeout, requiredTags: [], barrier: false, wantsResult: false, runsInProcess: true)
        ClosureTable.insert(self)
    }

    /// A closure that needs no context (`BlockOperation { … }`).
    public convenience init(name: String? = nil, queuePriority: OperationPriority = .normal, qualityOfService: OperationQoS? = nil,
                            dependencyPolicy: DependencyPolicy = .finished, retries: Int = 0, timeout: Double? = nil,
                            _ block: @escaping @Sendable () async throws -> Void) {
        self.init(name: name, queuePriority: queuePriority, qualityOfService: qualityOfService,
                  dependencyPolicy: dependencyPolicy, retries: retries, timeout: timeout) { _ in try await block() }
    }

    override public var description: String { "LocalOperation(\(name), \(snapshot.state)\(isCancelled ? ", cancelled" : ""))" }

    /// What the closure threw on its last attempt, as thrown; nil when it did not throw (yet). The
    /// operation's failure text (`outcome`) is its description.
    public var error: (any Error)? { thrown.withLock { $0 } }

    /// Called by the embedded worker's handler.
    func run(_ context: OperationContext) async throws {
        do {
            try await block(context)
        } catch {
            thrown.withLock { $0 = error }
            throw error
        }
    }
}

extension RemoteOperationQueue {
    /// Adds a closure that runs in this process (`OperationQueue.addOperation(_:)`); returns its handle.
    @discardableResult
    public func addOperation(_ block: @escaping @Sendable () async throws -> Void) throws -> LocalOperation {
        let op = LocalOperation(block)
        try addOperation(op)
        return op
    }

    /// Adds a closure that sees its context (cancellation, dependency results, progress).
    @discardableResult
    public func addOperation(_ block: @escaping LocalOperation.Block) throws -> LocalOperation {
        let op = LocalOperation(block)
        try addOperation(op)
        return op
    }
}

/// This process's closures by operation id (the payload of each), weakly: an operation is kept alive
/// by its queue until it finishes; released ones are swept out as the table grows.
enum ClosureTable {
    static let kind: String = {
        let random = String(UInt32.random(in: .min ... .max), radix: 16)
        return "local-closure@\(ProcessInfo.processInfo.hostName.prefix(64)):\(getpid())#\(random)"
    }()

    private struct Entry { weak var op: LocalOperation? }
    private struct Table {
        var entries: [String: Entry] = [:]
        var sweepAt = 64
    }
    private static let table = Mutex(Table())

    static func insert(_ op: LocalOperation) {
        table.withLock { t in
            t.entries[op.id] = Entry(op: op)
            if t.entries.count >= t.sweepAt {
                t.entries = t.entries.filter { $0.value.op != nil }
                t.sweepAt = max(64, 2 * t.entries.count)
            }
        }
    }

    static func operation(_ id: String) -> LocalOperation? { table.withLock { $0.entries[id]?.op } }

    /// Unfinished closures sent through `engine` (to cancel when it closes).
    static func unfinished(on engine: Engine) -> [LocalOperation] {
        let all = table.withLock { $0.entries.values.compactMap(\.op) }
        return all.filter { op in op.fields.withLock { $0.engine === engine && $0.snapshot.state != .finished } }
    }
}
