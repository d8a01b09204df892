import Glibc

/// A pthread mutex with one condition variable on the monotonic clock: what the writer thread sleeps on
/// (Synchronization's Mutex has no condition variable, and Foundation's NSCondition waits on wall time).
final class Monitor: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
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

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Call with the lock held.
    func wait() { pthread_cond_wait(cond, mutex) }

    /// Call with the lock held; returns at `deadline` (monotonic ns) at the latest.
    func wait(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(cond, mutex, &ts)
    }

    func broadcast() { pthread_cond_broadcast(cond) }
}

func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func wallMicros() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

extension Duration {
    var nanoseconds: UInt64 {
        let (s, atto) = components
        return UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto) / 1_000_000_000)
    }
}

/// Starts a joinable thread named `name` (at most 15 bytes: what `top -H` shows) running `body`;
/// pthread_create's error number if it cannot.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) -> Result<pthread_t, ThreadError> {
    final class Box {
        let body: @Sendable () -> Void
        let name: String
        init(_ body: @escaping @Sendable () -> Void, _ name: String) { self.body = body; self.name = name }
    }
    let context = Unmanaged.passRetained(Box(body, name)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { context in
        let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
        nameThisThread(box.name)
        box.body()
        return nil
    }, context)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        return .failure(ThreadError(errno: rc))
    }
    return .success(thread)
}

struct ThreadError: Error { var errno: Int32 }

/// pthread_setname_np is not in Swift's Glibc module (it needs _GNU_SOURCE); this is what it does.
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
