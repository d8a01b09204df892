import Foundation
import OpClient

/// Everything of an `Engine` (a `RemoteCoordinator`'s connection thread) that changes, under its one
/// lock: its phase, the requests waiting for the thread and their replies, the operations it follows,
/// those waiting in the client for a dependency, and the run. No I/O.
struct EngineState {
    typealias Command = @Sendable (CoordinatorConnection?) -> Void

    enum Phase: Equatable {
        /// No thread yet: requests are refused (`closed`).
        case idle
        /// The thread connects; requests queue up.
        case starting
        case running
        /// The thread has returned (after a failed start or a stop).
        case ended
    }
    var phase = Phase.idle
    /// `close()` was called (or the start failed): no request is accepted any more.
    var stopRequested = false
    /// The start's outcome, once known (nil: connected).
    var startError: String??
    /// Async `RemoteCoordinator.connect` calls waiting for the start.
    var startWaiters: [CheckedContinuation<Void, any Error>] = []
    var commands: [Command] = []
    /// Replies of `Engine.perform` by request token, taken by the waiting caller.
    var replies: [UInt64: Result<any Sendable, any Error>] = [:]
    var nextToken: UInt64 = 0
    /// The run this client's operations join (docs/GRAPHS.md, "Runs").
    var run: String
    /// Unfinished submitted operations by id.
    var table: [String: RemoteOperation] = [:]
    /// Operations added before one of their dependencies, each with its queue (kept alive meanwhile).
    var parked: [(op: RemoteOperation, queue: RemoteOperationQueue)] = []

    init(run: String) { self.run = run }

    // MARK: life cycle

    mutating func starting() { phase = .starting }

    /// The thread connected (`error` nil) or gave up; returns the async start waiters to resume.
    mutating func started(error: String?) -> [CheckedContinuation<Void, any Error>] {
        startError = .some(error)
        if error != nil { stopRequested = true; phase = .ended } else if phase == .starting { phase = .running }
        defer { startWaiters = [] }
        return startWaiters
    }

    /// An async wait for the start: false when it is known already (nothing kept).
    mutating func addStartWaiter(_ c: CheckedContinuation<Void, any Error>) -> Bool {
        if startError != nil { return false }
        startWaiters.append(c)
        return true
    }

    /// `close()`: true the first time while a thread is running, which the caller then waits for.
    mutating func stop() -> Bool {
        defer { stopRequested = true }
        return !stopRequested && (phase == .starting || phase == .running)
    }

    /// The thread returned; the requests it will not carry out (answered with `closed`) and the
    /// operations it followed (they stop holding the coordinator).
    mutating func ended() -> (commands: [Command], unfinished: [RemoteOperation]) {
        phase = .ended
        stopRequested = true
        defer { commands = []; table = [:] }
        return (commands, Array(table.values))
    }

    // MARK: requests

    /// Queues a request for the thread; nil (refused) once stopped. Returns its reply token.
    mutating func enqueue(_ make: (UInt64) -> Command) -> UInt64? {
        guard !stopRequested, phase == .starting || phase == .running else { return nil }
        nextToken += 1
        commands.append(make(nextToken))
        return nextToken
    }

    /// The thread takes every queued request, and whether to stop after them.
    mutating func takeCommands() -> (commands: [Command], stop: Bool) {
        defer { commands = [] }
        return (commands, stopRequested)
    }

    mutating func reply(_ token: UInt64, _ r: Result<any Sendable, any Error>) { replies[token] = r }

    // MARK: operations

    mutating func register(_ ops: [RemoteOperation]) { for o in ops { table[o.id] = o } }
    mutating func unregister(_ ops: [RemoteOperation]) { for o in ops { table[o.id] = nil } }

    mutating func park(_ ops: [RemoteOperation], in queue: RemoteOperationQueue) {
        for op in ops { parked.append((op, queue)) }
    }

    /// Takes `op` out of the waiting list; false when it was not (any more) in it.
    mutating func unpark(_ op: RemoteOperation) -> Bool {
        guard let i = parked.firstIndex(where: { $0.op === op }) else { return false }
        parked.remove(at: i)
        return true
    }

    /// Takes the waiting operations that can be sent now.
    mutating func takeParked(where ready: (RemoteOperation) -> Bool) -> [(op: RemoteOperation, queue: RemoteOperationQueue)] {
        let round = parked.filter { ready($0.op) }
        parked.removeAll { e in round.contains { $0.op === e.op } }
        return round
    }
}
