import Logging
import OpSpec
import Synchronization

/// The worker's local operation queue. It holds only parts that are ready (the coordinator
/// resolves dependencies), runs at most `slots` at once, and starts waiting parts by priority,
/// then QoS, then arrival. Every event goes to the `eventSink` given at init.
///
/// Why not Foundation's `OperationQueue`: handlers are `async`, and an `Operation` can only
/// wrap them by blocking a thread per running part or by a hand-written asynchronous
/// `Operation` subclass with KVO state; cancel by (op id, attempt) needs our own index anyway;
/// and measured on this machine (opbench `worker` suite, 100,000 noop parts, 1 slot, release)
/// this scheduler — one lock, a binary heap, one Swift task per running part and no task at
/// all for handlers that answer synchronously (noop, echo, fail) — beats `OperationQueue`
/// running the same empty blocks. See docs/HANDLERS.md for the figures.
///
/// Contract with the caller (the worker's socket thread):
/// - every submitted part gets exactly one `finished` event; `started` precedes it only if a
///   handler was invoked (not for a part cancelled while waiting, nor an unknown or refused kind);
/// - a part's `finished` is emitted before its slot is released, so in the sink's order the
///   number of started-but-unfinished parts never exceeds `slots`;
/// - the sink is called from many threads, never under the queue's lock, and must not block;
///   it is also called synchronously inside `submit` and `cancel` (unknown kinds, parts
///   cancelled while waiting, and inline handlers such as `noop` finish right there), so it must
///   not take a lock that the caller of `submit`/`cancel` holds.
public final class LocalOperationQueue: Sendable {
    public let slots: Int
    public let registry: HandlerRegistry
    private let logger: Logger
    private let eventSink: @Sendable (WorkerEvent) -> Void

    private struct Waiting {
        var part: DispatchedPart
        var seq: UInt64
        var handler: any OperationHandler
    }

    private struct State {
        var heap = PartHeap()
        var waiting: [PartKey: Waiting] = [:]
        var running: [PartKey: OperationContext] = [:]
        var nextSeq: UInt64 = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []

        var isIdle: Bool { waiting.isEmpty && running.isEmpty }
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - slots: how many parts run at once (≥ 1).
    ///   - eventSink: receives started / progress / finished; called from arbitrary threads.
    public init(slots: Int, registry: HandlerRegistry = HandlerRegistry(), logger: Logger? = nil,
                eventSink: @escaping @Sendable (WorkerEvent) -> Void) {
        self.slots = max(1, slots)
        self.registry = registry
        self.logger = logger ?? Logger(label: "opqueue.worker.queue")
        self.eventSink = eventSink
    }

    /// Parts waiting for a slot.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }
    /// Parts whose handler is running.
    public var runningCount: Int { state.withLock { $0.running.count } }
    /// Slots not taken by running or waiting parts: the credits a worker can grant.
    public var freeSlots: Int { state.withLock { max(0, slots - $0.running.count - $0.waiting.count) } }

    /// Queues one ready part. A key already waiting or running here is ignored (logged).
    public func submit(_ part: DispatchedPart) {
        submit(contentsOf: CollectionOfOne(part))
    }

    /// Queues a batch, then starts as many as slots allow, so the batch is ordered by priority
    /// among itself and everything already waiting.
    public func submit(contentsOf parts: some Sequence<DispatchedPart>) {
        var unknown: [DispatchedPart] = []
        state.withLock { state in
            state.waiting.reserveCapacity(state.waiting.count + parts.underestimatedCount)
            for part in parts {
                guard let handler = registry.handler(for: part.kind) else {
                    unknown.append(part)
                    continue
                }
                if state.waiting[part.key] != nil || state.running[part.key] != nil {
                    logger.warning("ignoring duplicate dispatch of \(part.key)")
                    continue
                }
                let seq = state.nextSeq
                state.nextSeq += 1
                state.waiting[part.key] = Waiting(part: part, seq: seq, handler: handler)
                state.heap.insert(PartHeap.Entry(priority: Int8(part.priority.rawValue), qos: Int8(part.qos.rank),
                                                 seq: seq, key: part.key))
            }
        }
        for part in unknown {
            let why = registry.refusal(for: part.kind)
                ?? "unknown handler kind \"\(part.kind)\"; this worker has: \(registry.kinds.joined(separator: ", "))"
            eventSink(.finished(part.key, .failed(why)))
        }
        pump()
    }

    /// Cancels the parts of `opID` (only those of `attempt`, when given). Waiting parts finish
    /// `cancelled(reason)` at once without running; running ones are cancelled cooperatively and
    /// finish when their handler returns. Returns how many parts were affected.
    @discardableResult
    public func cancel(opID: String, attempt: Int? = nil, reason: String) -> Int {
        let (dropped, running): ([PartKey], [OperationContext]) = state.withLock { state in
            let matches = { (key: PartKey) in key.opID == opID && (attempt == nil || key.attempt == attempt) }
            let dropped = state.waiting.keys.filter(matches)
            for key in dropped { state.waiting[key] = nil }  // its heap entry is skipped when popped
            return (dropped, state.running.filter { matches($0.key) }.map(\.value))
        }
        for key in dropped.sorted(by: { $0.part < $1.part }) { eventSink(.finished(key, .cancelled(reason))) }
        for context in running { context.cancel(reason: reason) }
        if !dropped.isEmpty { resumeIdleWaitersIfIdle() }
        return dropped.count + running.count
    }

    /// Cancels every waiting and running part.
    public func cancelAll(reason: String) {
        let (dropped, running): ([Waiting], [OperationContext]) = state.withLock { state in
            let dropped = state.waiting.values.sorted { $0.seq < $1.seq }
            state.waiting.removeAll()
            state.heap.removeAll()
            return (dropped, Array(state.running.values))
        }
        for waiting in dropped { eventSink(.finished(waiting.part.key, .cancelled(reason))) }
        for context in running { context.cancel(reason: reason) }
        resumeIdleWaitersIfIdle()
    }

    /// Returns when nothing is waiting or running (at once if so already).
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.isIdle { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Cancels everything and waits until every handler has returned.
    public func shutdown(reason: String = "worker shutting down") async {
        cancelAll(reason: reason)
        await waitUntilIdle()
    }

    // MARK: running

    /// Releases `released`'s slot (if given), then starts waiting parts while slots are free.
    /// Parts whose handler answers `runImmediately` run right here, in a loop (no task, no
    /// thread hop); the others get a task each.
    private func pump(releasing released: PartKey? = nil) {
        var released = released
        while true {
            let step: (context: OperationContext, handler: any OperationHandler)?
            let idleWaiters: [CheckedContinuation<Void, Never>]
            (step, idleWaiters) = state.withLock { state in
                if let key = released { state.running[key] = nil }
                guard state.running.count < slots else { return (nil, []) }
                while let entry = state.heap.popFirst() {
                    guard let waiting = state.waiting[entry.key], waiting.seq == entry.seq else { continue }  // cancelled
                    state.waiting[entry.key] = nil
                    let key = entry.key
                    let sink = eventSink
                    let context = OperationContext(part: waiting.part, logger: logger) { fraction, message in
                        sink(.progress(key, fraction: fraction, message: message))
                    }
                    state.running[key] = context
                    return ((context, waiting.handler), [])
                }
                guard state.isIdle, !state.idleWaiters.isEmpty else { return (nil, []) }
                defer { state.idleWaiters = [] }
                return (nil, state.idleWaiters)
            }
            for waiter in idleWaiters { waiter.resume() }
            guard let (context, handler) = step else { return }
            eventSink(.started(context.part.key))
            if let immediate = handler.runImmediately(context) {
                let outcome: OperationOutcome = switch immediate {
                case _ where context.isCancelled: .cancelled(context.cancellationReason ?? "cancelled")
                case .success(let result): .succeeded(result)
                case .failure(let error): .failed(Self.describe(error))
                }
                eventSink(.finished(context.part.key, outcome))
                released = context.part.key
                continue
            }
            released = nil
            let task = Task(priority: context.qos.taskPriority) {
                let outcome = await Self.run(handler, context)
                context.detach()
                // Report before releasing the slot (see the type's contract).
                self.eventSink(.finished(context.part.key, outcome, context.output))
                self.pump(releasing: context.part.key)
            }
            context.attach(task)
        }
    }

    private static func run(_ handler: any OperationHandler, _ context: OperationContext) async -> OperationOutcome {
        do {
            let result = try await withTaskCancellationHandler {
                try await handler.run(context)
            } onCancel: {
                context.cancel(reason: "task cancelled")
            }
            if let reason = context.cancellationReason { return .cancelled(reason) }
            return .succeeded(result)
        } catch {
            if let reason = context.cancellationReason { return .cancelled(reason) }
            if error is CancellationError { return .cancelled("cancelled") }
            return .failed(describe(error))
        }
    }

    static func describe(_ error: any Error) -> String {
        if let handlerError = error as? HandlerError { return handlerError.message }
        return String(describing: error)
    }

    private func resumeIdleWaitersIfIdle() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            guard state.isIdle else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension OperationQoS {
    /// Swift task priority for the handler of a part of this QoS.
    public var taskPriority: TaskPriority {
        switch self {
        case .userInteractive, .userInitiated: .high
        case .default: .medium
        case .utility: .utility
        case .background: .background
        }
    }
}
