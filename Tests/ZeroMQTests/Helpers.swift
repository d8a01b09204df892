import Foundation
import Testing
import ZeroMQ

/// Longest any test waits for a message that should arrive (ms). Receives give up after it and fail.
let patienceMs: Int32 = 3000

/// A socket whose blocking receives give up after `patienceMs`, so a broken test fails instead of hanging.
func makeSocket(_ ctx: Context, _ type: SocketType) throws -> Socket {
    let s = try Socket(ctx, type: type)
    try s.set(.receiveTimeout, patienceMs)
    try s.set(.sendTimeout, patienceMs)
    return s
}

/// Binds to a free loopback port (or a unique inproc name) and returns the endpoint to connect to.
func bindAnywhere(_ s: Socket, tcp: Bool) throws -> String {
    if tcp {
        try s.bind("tcp://127.0.0.1:*")
        return try s.lastEndpoint()
    }
    let name = "inproc://test-\(UUID().uuidString)"
    try s.bind(name)
    return name
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Runs `body` on a new thread; `join` waits for it with a bound and reports whether it finished.
final class TestThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    init(_ body: @escaping @Sendable () -> Void) {
        let t = Thread { [done] in
            body()
            done.signal()
        }
        t.start()
    }
    func join(seconds: Double = 5) -> Bool { done.wait(timeout: .now() + seconds) == .success }
}

/// Monotonic milliseconds since `start`.
func elapsedMs(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}
