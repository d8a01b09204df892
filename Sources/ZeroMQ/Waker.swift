import CZeroMQ
import Glibc

/// An eventfd that any thread can signal to wake a `Poller` blocked on another thread.
///
/// Typical use: a worker thread polls its DEALER socket and a `Waker`; handler threads append results to
/// a locked queue and call `wake()`; the worker drains the waker and the queue, then sends. Several
/// `wake()`s before the poller runs collapse into one wake-up. `Sendable`: `wake()` is a single
/// `write(2)` and is safe from any thread; `drain()` belongs to the polling thread.
/// The descriptor is closed in `deinit`, i.e. when the last reference (including a `Poller`'s) is gone,
/// so no thread can write to a recycled descriptor.
public final class Waker: Sendable {
    /// The eventfd; readable while at least one wake is pending.
    public let fileDescriptor: Int32

    public init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard fd >= 0 else {
            let e = czmq_errno()
            throw ZMQError(errno: e, message: String(cString: strerror(e)), operation: "eventfd")
        }
        fileDescriptor = fd
    }

    deinit { Glibc.close(fileDescriptor) }

    /// Makes the descriptor readable. Never blocks (a saturated counter is already readable).
    public func wake() {
        var one: UInt64 = 1
        while write(fileDescriptor, &one, 8) < 0 && czmq_errno() == EINTR {}
    }

    /// Resets the descriptor; returns how many wakes were pending (0 if none).
    @discardableResult
    public func drain() -> UInt64 {
        var count: UInt64 = 0
        while true {
            if read(fileDescriptor, &count, 8) == 8 { return count }
            if czmq_errno() != EINTR { return 0 }  // EAGAIN: nothing pending
        }
    }
}
