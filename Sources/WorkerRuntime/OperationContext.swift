import Logging
import OpSpec
import Synchronization

/// What a handler sees of the part it runs. Cancellation is wired both ways: `cancel(reason:)`
/// (the coordinator's CANCEL) cancels the Swift task running the handler, so `Task.sleep`,
/// `Task.checkCancellation()` and the like react at once; cancelling that task marks the
/// context cancelled.
public final class OperationContext: Sendable {
    public let part: DispatchedPart
    private let baseLogger: Logger

    /// Logger with `op`, `part` and `attempt` metadata (built on use: most parts never log,
    /// and metadata costs more than a whole noop part).
    public var logger: Logger {
        var logger = baseLogger
        logger[metadataKey: "op"] = "\(part.key.opID)"
        logger[metadataKey: "part"] = "\(part.key.part)"
        logger[metadataKey: "attempt"] = "\(part.key.attempt)"
        return logger
    }

    public var opID: String { part.key.opID }
    public var name: String { part.name }
    public var kind: String { part.kind }
    public var partIndex: Int { part.key.part }
    public var attempt: Int { part.key.attempt }
    public var payload: [UInt8] { part.payload }
    public var priority: OperationPriority { part.priority }
    public var qos: OperationQoS { part.qos }
    /// Dependency results in the operation's `after` order.
    public var inputList: [DispatchedPart.Input] { part.inputs }
    /// Dependency results by dependency id.
    public var inputs: [String: [UInt8]] {
        Dictionary(part.inputs.map { ($0.id, $0.result) }, uniquingKeysWith: { first, _ in first })
    }

    private struct State {
        var reason: String?
        var task: Task<Void, Never>?
        var handlers: [@Sendable (String) -> Void] = []
        var output: PartOutput?
    }
    private let state = Mutex(State())
    private let progressSink: @Sendable (Double?, String?) -> Void

    /// Made by the local queue; public so handlers can be tested on their own.
    public init(part: DispatchedPart, logger: Logger? = nil,
                progress: @escaping @Sendable (_ fraction: Double?, _ message: String?) -> Void = { _, _ in }) {
        self.part = part
        self.baseLogger = logger ?? Self.defaultLogger
        self.progressSink = progress
    }

    private static let defaultLogger = Logger(label: "opqueue.worker.op")

    public var isCancelled: Bool { state.withLock { $0.reason != nil } }
    /// Why it was cancelled (e.g. "cancelled by client", "timeout"), or `nil`.
    public var cancellationReason: String? { state.withLock { $0.reason } }

    /// Marks the part cancelled, cancels its task and runs the `onCancel` handlers once.
    /// Later calls keep the first reason.
    public func cancel(reason: String) {
        let (task, handlers): (Task<Void, Never>?, [@Sendable (String) -> Void]) = state.withLock { state in
            guard state.reason == nil else { return (nil, []) }
            state.reason = reason
            defer { state.handlers = [] }
            return (state.task, state.handlers)
        }
        // Outside the lock: cancelling the task runs its cancellation handler, which calls back here.
        task?.cancel()
        for handler in handlers { handler(reason) }
    }

    /// Runs `handler` when the part is cancelled (at once if it already is). For code that
    /// waits on something other than Swift concurrency (a child process, a socket).
    public func onCancel(_ handler: @escaping @Sendable (_ reason: String) -> Void) {
        let reason: String? = state.withLock { state in
            if state.reason == nil { state.handlers.append(handler) }
            return state.reason
        }
        if let reason { handler(reason) }
    }

    /// Throws `CancellationError` when cancelled.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Reports progress to the coordinator; `fraction` is clamped to 0...1.
    public func reportProgress(_ fraction: Double?, message: String? = nil) {
        let clamped = fraction.map { $0.isFinite ? min(1, max(0, $0)) : 0 }
        progressSink(clamped, message)
    }

    /// Keeps what the part wrote to stdout and stderr, to travel with its FINISHED (the shell handler
    /// calls it; a later call replaces an earlier one). Empty output is not kept.
    public func recordOutput(_ output: PartOutput) {
        state.withLock { $0.output = output.isEmpty ? nil : output }
    }

    /// What `recordOutput` kept, if anything.
    public var output: PartOutput? { state.withLock { $0.output } }

    /// The queue attaches the task that runs the handler, so a cancel can reach it.
    func attach(_ task: Task<Void, Never>) {
        let alreadyCancelled = state.withLock { state in
            state.task = task
            return state.reason != nil
        }
        if alreadyCancelled { task.cancel() }
    }

    /// Drops the task reference once the run is over (breaks the context ↔ task cycle).
    func detach() {
        state.withLock { $0.task = nil; $0.handlers = [] }
    }
}
