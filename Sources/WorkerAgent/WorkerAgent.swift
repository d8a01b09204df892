import Foundation
import Logging
import OpClient
import OpSpec
import Synchronization
import WireProtocol
import WorkerRuntime
import ZeroMQ

/// The worker process minus argument parsing: connects a DEALER to the coordinator, registers, runs
/// dispatched parts in a `LocalOperationQueue`, reports, heartbeats, and reconnects with backoff.
///
/// Threads: `run` owns the socket on the calling thread. Handlers run on Swift's cooperative pool and
/// report through the local queue's event sink, which appends to `events` and wakes the socket thread
/// through an eventfd (`Waker`), so the socket is touched by one thread only.
public final class WorkerAgent: Sendable {
    public let config: WorkerConfig
    let logger: Logger
    let context: Context
    let waker: Waker
    let events = EventInbox()
    let stopping = Atomic<Bool>(false)
    let queue: LocalOperationQueue
    /// The coordinators it may register with (`--connect a,b`) and the one in use (issue 29).
    let endpoints: Mutex<CoordinatorEndpoints>
    /// (1.9) The highest leadership epoch seen, across sessions: lower ones are fenced.
    let fence = Mutex(EpochFence())

    public init(config: WorkerConfig, registry: HandlerRegistry = HandlerRegistry(), logger: Logger) throws {
        self.config = config
        self.logger = logger
        endpoints = Mutex(CoordinatorEndpoints(config.connect))
        context = try Context()
        let waker = try Waker()
        self.waker = waker
        let events = self.events
        queue = LocalOperationQueue(slots: config.slots, registry: registry, logger: logger) { event in
            // One eventfd write per batch the socket thread takes, not per event (two per part): a
            // non-empty inbox already has its wake pending, or is between the drain and the take.
            if events.append(event) { waker.wake() }
        }
    }

    /// Handler kinds this worker announces.
    public var kinds: [String] { queue.registry.kinds }

    /// Runs sessions until `stop()`. Throws only if the coordinator rejects this worker (REJECT),
    /// which retrying would not fix. Parts outlive a session that is lost (PROTOCOL.md §7.4); they are
    /// cancelled when the worker stops or is rejected.
    public func run() throws {
        var machine = SessionMachine(config: config, kinds: kinds)
        defer {
            // Stopped between sessions (or a session threw): nothing will report these parts.
            let keys = machine.abandon()
            if !keys.isEmpty { cancelLocally(keys, reason: "worker shutting down") }
        }
        while !stopping.load(ordering: .relaxed) {
            let session = try WorkerSession(agent: self)
            let end = try session.run(&machine)
            session.close()
            switch end {
            case .stopped:
                return
            case .rejected(let reason):
                throw WorkerError.rejected(reason)
            case .reconnect(let wait):
                pause(milliseconds: nextEndpoint(after: session, wait: wait))
            }
        }
    }

    /// Where the next session goes, and how long to wait first: to the leader a standby named (at once),
    /// else, with several coordinators, the next of the list (at most 200 ms later: one is being elected).
    private func nextEndpoint(after session: WorkerSession, wait: Int) -> Int {
        endpoints.withLock { e in
            guard e.isSeveral || session.redirect != nil else { return wait }
            let from = e.current
            let moved: Bool
            if let redirect = session.redirect { moved = e.redirect(to: redirect) } else { moved = e.unreachable() }
            if moved { logger.info("next coordinator: \(e.current) (was \(from))") }
            return moved ? 0 : min(wait, 200)
        }
    }

    /// Cancels these parts in the local queue (each (op, attempt) once).
    func cancelLocally(_ keys: [PartKey], reason: String) {
        var seen: Set<PartKey> = []
        for key in keys where seen.insert(PartKey(opID: key.opID, part: 0, attempt: key.attempt)).inserted {
            queue.cancel(opID: key.opID, attempt: key.attempt, reason: reason)
        }
    }

    /// Asks `run` to return after telling the coordinator; safe from any thread.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        waker.wake()
    }

    /// Sleeps for the backoff, but wakes at once on `stop()`.
    private func pause(milliseconds: Int) {
        let poller = Poller()
        _ = poller.add(waker)
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while !stopping.load(ordering: .relaxed), ContinuousClock.now < deadline {
            _ = try? poller.poll(timeout: deadline - ContinuousClock.now)
            waker.drain()   // events of parts that go on: the next session takes them from the buffer
        }
    }
}

/// Where handler threads leave events for the socket thread. Each event is stamped where it happens,
/// with the monotonic clock, under the lock, so stamps follow the events' order and are strictly
/// increasing (the coordinator shows them as the op's started/finished times).
final class EventInbox: Sendable {
    private struct Inbox {
        var events: [(event: WorkerEvent, at: Int64)] = []
        var lastStamp: Int64 = 0
    }
    private let inbox = Mutex(Inbox())

    /// Appends `event`; true when the inbox was empty, so the socket thread must be woken. The socket
    /// thread drains its wake before it takes (`WorkerSession.run`), so an event appended to a non-empty
    /// inbox is taken with those before it.
    @discardableResult
    func append(_ event: WorkerEvent) -> Bool {
        inbox.withLock { box in
            let at = max(WorkerSession.now(), box.lastStamp + 1)
            box.lastStamp = at
            box.events.append((event, at))
            return box.events.count == 1
        }
    }

    /// Everything appended since the last call, in order. (Drain the waker first: see `append`.)
    func take() -> [(event: WorkerEvent, at: Int64)] {
        inbox.withLock { box in
            let taken = box.events
            box.events.removeAll(keepingCapacity: true)
            return taken
        }
    }
}

public enum WorkerError: Error, CustomStringConvertible {
    case rejected(String)
    public var description: String {
        switch self {
        case .rejected(let why): "the coordinator rejected this worker: \(why)"
        }
    }
}
