import Foundation
import Logging
import Synchronization
import OpClient
import WireProtocol
import WorkerAgent
import WorkerRuntime
import ZeroMQ

/// A client's embedded worker for its closures (`LocalOperation`): a `WorkerAgent` in this process,
/// on a thread of its own with its own DEALER and the client's keys, offering only
/// `LocalOperation.kind`. Started by the first closure added through the coordinator; ordinary
/// operations never start it.
final class ClosureHost: Sendable {
    private struct State {
        var agent: WorkerAgent?
        /// Registration started (once).
        var started = false
        var registered = false
        /// Why the worker could not register or stopped (REJECT, bad configuration).
        var failure: String?
        var threadEnded = false
    }

    private let engine: Engine
    private let curve: CurveClientKeys?
    private let state = StateLock(State())
    /// Closures run at once in this process (the embedded worker's slots). Set before the first closure.
    let slots: StateLock<Int>
    /// Shown by `opctl workers`; numbered, as each coordinator connection of the process has its own.
    let workerName = "closures of \(ProcessInfo.processInfo.hostName.prefix(64)):\(getpid()) #\(ClosureHost.counter.wrappingAdd(1, ordering: .relaxed).newValue)"
    private static let counter = Atomic<Int>(0)

    init(engine: Engine, curve: CurveClientKeys?) {
        self.engine = engine
        self.curve = curve
        slots = StateLock(max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)))
    }

    var isStarted: Bool { state.withLock { $0.started } }

    /// Starts the embedded worker if needed and blocks until the coordinator lists it (at most `timeout`);
    /// throws why it could not register (a key without the `worker` role, no answer).
    func ensureRegistered(timeout: Duration = .seconds(10)) throws {
        let start = state.withLock { s -> Bool in
            if s.started { return false }
            s.started = true
            return true
        }
        if start { try startAgent() }
        let deadline = ContinuousClock.now + timeout
        while true {
            let (registered, failure) = state.withLock { ($0.registered, $0.failure) }
            if registered { return }
            if let failure { throw RemoteOperationError.connection(failure) }
            if ContinuousClock.now >= deadline {
                throw RemoteOperationError.connection("the embedded worker that runs this client's closures did not register with \(engine.endpoint) within \(timeout)")
            }
            // Only the thread that started it polls the coordinator; others wait for its answer.
            if start {
                if try listed() { state.withLock { $0.registered = true }; return }
                _ = state.wait(until: Duration.milliseconds(10).deadline) { $0.failure }
            } else {
                _ = state.wait(until: Duration.milliseconds(50).deadline) { $0.registered || $0.failure != nil ? () : nil }
            }
        }
    }

    /// Whether the coordinator lists this embedded worker.
    private func listed() throws -> Bool {
        let name = workerName
        return try engine.perform { connection in
            guard case .workersReply(let r) = try connection.request(.workers) else { return false }
            return r.workers.contains { $0.name == name }
        }
    }

    private func startAgent() throws {
        var config = WorkerConfig(connect: engine.endpoint, name: workerName, slots: slots.withLock { $0 }, prefetch: 0)
        config.curve = curve
        var registry = HandlerRegistry(builtins: false)
        registry.register(kind: ClosureTable.kind) { context in
            let id = String(decoding: context.payload, as: UTF8.self)
            guard let op = ClosureTable.operation(id) else {
                throw HandlerError("the closure of '\(id)' is no longer in this process")
            }
            try await op.run(context)
            return []
        }
        var logger = Logger(label: "opqueue.closures") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .error
        let agent: WorkerAgent
        do {
            agent = try WorkerAgent(config: config, registry: registry, logger: logger)
        } catch {
            state.withLock { $0.failure = "cannot start the embedded worker for this client's closures: \(error)"; $0.threadEnded = true }
            throw RemoteOperationError.connection("cannot start the embedded worker for this client's closures: \(error)")
        }
        state.withLock { $0.agent = agent }
        let keyed = curve != nil
        let thread = Thread { [state] in
            var failure: String?
            do {
                try agent.run()
            } catch WorkerError.rejected(let reason) {
                failure = "the coordinator refused the embedded worker that runs this client's closures: \(reason)"
                    + (keyed ? " (closures need this client's key to have the 'worker' role as well as 'submit')" : "")
            } catch {
                failure = "the embedded worker that runs this client's closures stopped: \(error)"
            }
            state.withLock { s in
                if s.failure == nil { s.failure = failure ?? "the embedded worker that runs this client's closures has stopped" }
                s.threadEnded = true
            }
        }
        thread.name = "opqueue.closures"
        thread.start()
    }

    /// Stops the embedded worker (it says DISCONNECT) and waits for its thread.
    func stop() {
        guard let agent = state.withLock({ $0.agent }) else { return }
        agent.stop()
        _ = state.wait(until: Duration.seconds(5).deadline) { $0.threadEnded ? () : nil }
    }
}
