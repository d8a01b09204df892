import Foundation

/// One object's state under its one lock (the pattern of swift-nio's `NIOAsyncSequenceProducer`): the
/// state is a value whose `mutating func`s return actions, performed by the caller after the lock.
/// The lock is a condition so that the API's blocking waits (`waitUntilFinished`, a request's reply,
/// the connection thread starting and ending) wait for a predicate over the same state, with no
/// semaphore, group or condition of their own.
final class StateLock<State>: @unchecked Sendable {
    private let condition = NSCondition()
    private var state: State
    /// Threads blocked in `wait`: they re-check their predicate after every change.
    private var waiting = 0

    init(_ state: State) { self.state = state }

    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        condition.lock()
        defer {
            if waiting > 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body(&state)
    }

    /// Blocks until `ready` returns a value or `deadline` passes (then `ready`'s last answer, nil).
    func wait<R>(until deadline: Date? = nil, _ ready: (inout State) -> R?) -> R? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let r = ready(&state) { return r }
            waiting += 1
            let inTime: Bool
            if let deadline { inTime = condition.wait(until: deadline) } else { condition.wait(); inTime = true }
            waiting -= 1
            if !inTime { return ready(&state) }
        }
    }
}

extension Duration {
    /// `now + self` as a `Date`, for `StateLock.wait(until:)`.
    var deadline: Date {
        Date().addingTimeInterval(Double(components.seconds) + Double(components.attoseconds) * 1e-18)
    }
}
