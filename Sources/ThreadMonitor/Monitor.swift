import Glibc

/// A pthread mutex with one condition variable on the monotonic clock: what a thread that must wait
/// for another with a deadline sleeps on (the journal's writer and its waiters, a ZeroMQ context
/// waiting for its sockets to close). Synchronization's Mutex has no condition variable, and
/// Foundation's NSCondition waits on wall time (and the ZeroMQ module uses no Foundation).
public final class Monitor: @unchecked Sendable {
    // Heap-allocated: pthread objects must not move, and `&property` gives no stable address.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        mutex.initialize(to: pthread_mutex_t())
        cond.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Call with the lock held.
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Call with the lock held; returns at `deadline` (`monotonicNanos()`) at the latest. Wakes may be
    /// spurious: callers loop on their condition and the deadline.
    public func wait(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(cond, mutex, &ts)
    }

    public func broadcast() { pthread_cond_broadcast(cond) }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of `Monitor.wait(until:)`'s deadlines.
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
