import CZeroMQ
import Glibc
import ThreadMonitor

/// A libzmq context: the I/O threads and the registry of sockets. Thread-safe and `Sendable`;
/// share one per process.
///
/// Shutdown order (see docs/TRANSPORT.md):
/// 1. `shutdown()` (any thread) makes every blocking call on this context's sockets fail with
///    `ZMQError.isTerminated`, so owners wake up;
/// 2. each owner `close()`s its sockets (linger is 0 by default, so pending messages are dropped at once);
/// 3. `terminate(timeout:)` waits, bounded, for the open-socket count to reach zero, then frees the context.
///
/// Every `Socket` holds a strong reference to its context, so if you simply drop everything the context's
/// `deinit` runs after the last socket is gone and terminates without waiting.
public final class Context: @unchecked Sendable {
    // @unchecked: the handle is only used through libzmq's thread-safe context calls; `state` guards the rest.
    let handle: UnsafeMutableRawPointer
    private let state = SocketCounter()

    /// - Parameters:
    ///   - ioThreads: libzmq I/O threads (1 is plenty below ~1 GB/s).
    ///   - maxSockets: libzmq's cap on sockets in this context (its default is 1023); a process that
    ///     simulates many workers needs more.
    public init(ioThreads: Int32 = 1, maxSockets: Int32? = nil) throws {
        guard let ctx = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        handle = ctx
        // BLOCKY=0 makes new sockets default to linger 0 as well (we also set it explicitly per socket).
        // On failure `deinit` runs (every stored property is set) and terminates the context.
        for (option, value) in [(ZMQ_IO_THREADS, ioThreads), (ZMQ_BLOCKY, 0)] where zmq_ctx_set(ctx, option, value) != 0 {
            throw ZMQError.last("zmq_ctx_set(\(option), \(value))")
        }
        if let maxSockets, zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, maxSockets) != 0 {
            throw ZMQError.last("zmq_ctx_set(ZMQ_MAX_SOCKETS, \(maxSockets))")
        }
    }

    /// Sockets created on this context and not yet closed.
    public var openSocketCount: Int { state.count }

    /// Whether `terminate` has completed.
    public var isTerminated: Bool { state.isTerminated }

    /// Wakes every blocking call on this context's sockets with ETERM; new sockets can no longer be created
    /// on it by libzmq. Safe from any thread, any number of times. Does not free anything.
    public func shutdown() {
        // Under the lock, so a concurrent `terminate` cannot free the context in between.
        state.unlessTerminated { _ = zmq_ctx_shutdown(handle) }
    }

    /// `shutdown()`, then waits up to `timeout` for every socket to be closed by its owner, then frees the
    /// context (`zmq_ctx_term`). Never hangs: if sockets remain open after `timeout` it throws (errno EBUSY)
    /// and leaves the context alive; the last socket's release then lets `deinit` finish the job.
    /// Calling it again after success does nothing.
    public func terminate(timeout: Duration = .seconds(5)) throws {
        shutdown()
        let remaining = state.waitForZeroAndMarkTerminated(timeoutNanos: timeout.nanoseconds)
        if remaining > 0 {
            throw ZMQError(errno: EBUSY, message: "\(remaining) socket(s) still open after \(timeout); close them on their owning threads first", operation: "zmq_ctx_term")
        }
        if remaining == 0 { termRetryingEINTR() }
        // remaining < 0: already terminated earlier.
    }

    deinit {
        // No socket can be alive here (each retains its context), so this cannot block on a socket.
        if state.markTerminatedIfIdle() { termRetryingEINTR() }
    }

    private func termRetryingEINTR() {
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// Registers a new socket; fails once the context is terminated.
    func socketOpened(_ create: () -> UnsafeMutableRawPointer?) throws -> UnsafeMutableRawPointer {
        try state.open(create)
    }

    func socketClosed() { state.closed() }

    /// A new socket of `type` on this context; same as `Socket(context, type:)`.
    public func socket(_ type: SocketType) throws -> Socket { try Socket(self, type: type) }
}

extension Duration {
    var nanoseconds: Int64 {
        let (s, atto) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : ns &+ atto / 1_000_000_000
    }
}

/// Open-socket count and termination flag, with a condition to wait for the count to drop to zero
/// (ThreadMonitor's `Monitor`, so the ZeroMQ module needs no Foundation).
private final class SocketCounter: @unchecked Sendable {
    private let monitor = Monitor()
    private var open = 0
    private var terminated = false

    var count: Int { monitor.withLock { open } }

    func unlessTerminated(_ body: () -> Void) {
        monitor.withLock { if !terminated { body() } }
    }
    var isTerminated: Bool { monitor.withLock { terminated } }

    func open(_ create: () -> UnsafeMutableRawPointer?) throws -> UnsafeMutableRawPointer {
        try monitor.withLock {
            if terminated { throw ZMQError(errno: ETERM, operation: "zmq_socket") }
            guard let s = create() else { throw ZMQError.last("zmq_socket") }
            open += 1
            return s
        }
    }

    func closed() {
        monitor.withLock {
            open -= 1
            if open == 0 { monitor.broadcast() }
        }
    }

    func markTerminatedIfIdle() -> Bool {
        monitor.withLock {
            guard !terminated, open == 0 else { return false }
            terminated = true
            return true
        }
    }

    /// Returns 0 and marks terminated when the count reached zero in time; the open count if it did not;
    /// -1 if already terminated.
    func waitForZeroAndMarkTerminated(timeoutNanos: Int64) -> Int {
        let deadline = monotonicNanos() + UInt64(max(0, min(timeoutNanos, Int64(365 * 86_400) * 1_000_000_000)))
        return monitor.withLock {
            if terminated { return -1 }
            while open > 0 && monotonicNanos() < deadline { monitor.wait(until: deadline) }
            if open > 0 { return open }
            terminated = true
            return 0
        }
    }
}
