import Glibc

// Thread helpers of the journal's writer and recovery threads (the Monitor they sleep on is
// ThreadMonitor's, shared with ZeroMQ).

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
