import Dispatch
import Foundation
import OpClient
@_exported import struct ZeroMQ.CurveClientKeys
@_exported import enum OpClient.ClientKeys
import ZeroMQ
@_exported import OpSpec
import Synchronization
import WireProtocol

/// A connection to an `opcoord` shared by any number of `RemoteOperationQueue`s.
///
/// One background thread owns the socket (a `CoordinatorConnection`) with a WATCH subscription; it
/// carries out every request in the order they were made and turns EVENTs into operation state.
/// Completion blocks run on one serial queue, in the order operations finished. Usable from any thread
/// and from async code.
public final class RemoteCoordinator: Sendable {
    let engine: Engine
    /// The embedded worker of this client's closures (`LocalOperation`), started by the first one.
    let closureHost: ClosureHost
    private let warningSink = Mutex<@Sendable (String) -> Void>(RemoteCoordinator.standardErrorWarning)

    /// Where warnings go: that typed operations were added that no connected worker offers the kind of
    /// (they wait until such a worker joins; `opctl submit` warns the same way). Default: standard
    /// error, as "opqueue: warning: …". Called on the thread that added the operations.
    public var warningHandler: @Sendable (String) -> Void {
        get { warningSink.withLock { $0 } }
        set { warningSink.withLock { $0 = newValue } }
    }

    @Sendable static func standardErrorWarning(_ text: String) {
        FileHandle.standardError.write(Data("opqueue: warning: \(text)\n".utf8))
    }

    func warn(_ text: String) { warningHandler(text) }

    /// Connects and subscribes to events; throws when the coordinator does not answer within `timeout`.
    ///
    /// Blocks the calling thread while the connection thread connects: until the coordinator has answered
    /// the WATCH request, at most about `timeout` (10 s by default) when nothing answers; then it throws
    /// `RemoteOperationError.connection`. From async code, `connect(…)` waits without blocking a thread.
    ///
    /// `fetchResults`: fetch each succeeded operation's result bytes before it is reported finished
    /// (one STATUS per batch of events in which some of this client's operations succeeded); turn off when
    /// results are not needed. `curve`: this client's keys for a coordinator with keys (PROTOCOL.md §12),
    /// e.g. `try ClientKeys.resolve(key: "alice.key", coordinatorKey: "coordinator.key.pub")`; nil uses
    /// `$OPQ_KEY` and `$OPQ_COORDINATOR_KEY` when they are set, else no keys.
    public init(endpoint: String = CoordinatorConnection.defaultEndpoint, timeout: Duration = .seconds(10),
                fetchResults: Bool = true, curve: CurveClientKeys? = nil) throws {
        let keys = try curve ?? ClientKeys.resolve(key: nil, coordinatorKey: nil)
        engine = Engine(endpoint: endpoint, fetchResults: fetchResults)
        closureHost = ClosureHost(engine: engine, curve: keys)
        engine.start(timeout: timeout, curve: keys)
        try engine.waitStarted()
    }

    /// `init(endpoint:timeout:fetchResults:curve:)` without blocking the caller's thread: suspends until
    /// the coordinator has answered (at most about `timeout`), then returns the connected coordinator.
    public static func connect(endpoint: String = CoordinatorConnection.defaultEndpoint, timeout: Duration = .seconds(10),
                               fetchResults: Bool = true, curve: CurveClientKeys? = nil) async throws -> RemoteCoordinator {
        let keys = try curve ?? ClientKeys.resolve(key: nil, coordinatorKey: nil)
        let engine = Engine(endpoint: endpoint, fetchResults: fetchResults)
        engine.start(timeout: timeout, curve: keys)
        try await engine.started()
        return RemoteCoordinator(engine: engine, curve: keys)
    }

    /// Around an engine (started, or never started: then every request throws `closed`; tests use that).
    init(engine: Engine, curve: CurveClientKeys? = nil) {
        self.engine = engine
        closureHost = ClosureHost(engine: engine, curve: curve)
    }

    deinit {
        closureHost.stop()
        engine.stop()
    }

    /// How many of this client's closures (`LocalOperation`) run at once: the slots of the embedded
    /// worker that runs them. Default: the number of cores, at most 4. Takes effect when the first
    /// closure is added (which starts that worker).
    public var closureSlots: Int {
        get { closureHost.slots.withLock { $0 } }
        set { closureHost.slots.withLock { $0 = max(1, newValue) } }
    }

    public var endpoint: String { engine.endpoint }

    /// Stops the background thread; later requests throw `RemoteOperationError.closed`. This client's
    /// closures that have not finished are cancelled first ("cancelled: the process of this closure closed
    /// its connection"): nothing else could run them.
    public func close() {
        if closureHost.isStarted {
            let ids = ClosureTable.unfinished(on: engine).map(\.id)
            if !ids.isEmpty {
                var c = WireCancelOps()
                c.opIds = ids
                c.run = engine.run
                c.reason = "the process of this closure closed its connection"
                try? engine.ack(.cancelOps(c))
            }
            closureHost.stop()
        }
        engine.stop()
    }
}

/// The background thread and the state shared with it (one `EngineState` under one lock).
final class Engine: Sendable {
    typealias Command = EngineState.Command

    let endpoint: String
    let fetchResults: Bool
    let state = StateLock(EngineState(run: Batcher.uniqueRunName(prefix: "api-")))
    /// Completion blocks, waiter wake-ups and queue bookkeeping, in finish order.
    let callbacks = DispatchQueue(label: "opqueue.remote.callbacks")
    private let threadName = "opqueue.remote-\(UUID().uuidString.prefix(8))"

    /// The run this client's operations join (docs/GRAPHS.md, "Runs"): one per coordinator connection,
    /// created by its first submit. Ids are unique within it; other runs' events are ignored.
    var run: String { state.withLock { $0.run } }

    /// The coordinator evicted this client's run (it finished and outlived the retention while the
    /// client was idle): later operations go to a new run. Nothing of the old one is unfinished.
    func startNewRun() { state.withLock { $0.run = Batcher.uniqueRunName(prefix: "api-") } }

    /// Not started: requests throw `closed` until `start`.
    init(endpoint: String, fetchResults: Bool) {
        self.endpoint = endpoint
        self.fetchResults = fetchResults
    }

    /// Starts the connection thread; `waitStarted` or `started` tell how the connect went.
    func start(timeout: Duration, curve: CurveClientKeys?) {
        state.withLock { $0.starting() }
        let endpoint = endpoint
        let thread = Thread { [self] in
            let connection: CoordinatorConnection
            do {
                connection = try CoordinatorConnection(endpoint: endpoint, timeout: timeout, curve: curve)
                try connection.watch(progress: true)
            } catch {
                let text = "\(error)"
                let waiters = state.withLock { $0.started(error: text) }
                for w in waiters { w.resume(throwing: RemoteOperationError.connection(text)) }
                _ = state.withLock { $0.ended() }
                return
            }
            let waiters = state.withLock { $0.started(error: nil) }
            for w in waiters { w.resume() }
            run(connection)
        }
        thread.name = threadName
        thread.start()
    }

    /// Blocks until the thread has connected (the connection's own timeout bounds this); throws if it could not.
    func waitStarted() throws {
        let error = state.wait { $0.startError }!
        if let error { throw RemoteOperationError.connection(error) }
    }

    func started() async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let error = state.withLock { s -> String?? in s.addStartWaiter(c) ? nil : s.startError }
            switch error {
            case nil: break                        // kept: resumed by the thread
            case .some(nil): c.resume()
            case .some(.some(let text)): c.resume(throwing: RemoteOperationError.connection(text))
            }
        }
    }

    /// Ends the thread; waits for it unless called on it (the last reference to a queue can be dropped there).
    func stop() {
        guard state.withLock({ $0.stop() }) else { return }
        if Thread.current.name != threadName { _ = state.wait { $0.phase == .ended ? () : nil } }
    }

    /// Runs `body` on the connection thread and returns its result (blocking the caller).
    func perform<T: Sendable>(_ body: @escaping @Sendable (CoordinatorConnection) throws -> T) throws -> T {
        let token = state.withLock { s in
            s.enqueue { token in
                { [self] connection in
                    let r: Result<any Sendable, any Error> = if let connection { Result { try body(connection) } } else { .failure(RemoteOperationError.closed) }
                    state.withLock { $0.reply(token, r) }
                }
            }
        }
        guard let token else { throw RemoteOperationError.closed }
        switch state.wait({ $0.replies.removeValue(forKey: token) })! {
        case .success(let v): return v as! T
        case .failure(let e as RemoteOperationError): throw e
        case .failure(let e): throw RemoteOperationError.connection("\(e)")
        }
    }

    /// Sends `message` and expects an ACK.
    func ack(_ message: WireProtocol.Message) throws {
        try perform { connection in
            guard case .ack = try connection.request(message) else {
                throw RemoteOperationError.connection("no ACK for \(message.command)")
            }
        }
    }

    func park(_ ops: [RemoteOperation], in queue: RemoteOperationQueue) {
        guard !ops.isEmpty else { return }
        for op in ops { op.fields.withLock { $0.parkedOn = self } }
        state.withLock { $0.park(ops, in: queue) }
    }

    /// Takes `op` out of the waiting list; false when it was not (any more) in it.
    func unpark(_ op: RemoteOperation) -> Bool { state.withLock { $0.unpark(op) } }

    /// Sends every waiting operation whose dependencies are now all on the coordinator (in rounds, so a
    /// chain of waiting operations goes out in order). Called by the thread that added or cancelled.
    func releaseParked() {
        while true {
            let round = state.withLock { $0.takeParked { op in op.dependencies.allSatisfy(\.isSentOrLocal) } }
            if round.isEmpty { return }
            var groups: [(queue: RemoteOperationQueue, ops: [RemoteOperation])] = []
            for e in round {
                e.op.fields.withLock { $0.parkedOn = nil }
                if let i = groups.firstIndex(where: { $0.queue === e.queue }) { groups[i].ops.append(e.op) } else { groups.append((e.queue, [e.op])) }
            }
            for g in groups {
                do {
                    try g.queue.submit(g.ops)
                } catch {
                    for op in g.ops {
                        op.fields.withLock { $0.engine = self; $0.local = true }
                        op.update(state: .finished, authoritative: true, cancelled: false, outcome: .failed("could not be sent: \(error)"),
                                  fraction: nil, worker: "", attempt: 0)
                    }
                }
            }
        }
    }

    func register(_ ops: [RemoteOperation]) { state.withLock { $0.register(ops) } }
    func unregister(_ ops: [RemoteOperation]) { state.withLock { $0.unregister(ops) } }

    // MARK: the connection thread

    private func run(_ connection: CoordinatorConnection) {
        var lastSequence: UInt64 = 0
        var lastHeard = ContinuousClock.now
        // Lost connections caught up on: once the coordinator is back after one, the connection has made
        // the WATCH again (its events count from 1) and what is unfinished is re-read, as events of the
        // outage are lost.
        var losses = 0
        // Streams the coordinator ended as too slow (made again at once): events were lost, re-read.
        var restarts = 0
        // Given several coordinators (an --ha group), a link down this long goes on at the next endpoint:
        // the one lost may never come back (a leader killed or cut off); a standby there names the leader.
        var moves = EndpointMoves()
        while true {
            let (list, stopped) = state.withLock { $0.takeCommands() }
            for command in list { command(connection) }
            if stopped { break }
            do {
                let events = try connection.nextEvents(timeout: list.isEmpty ? .milliseconds(2) : .zero)
                let link = connection.link
                if moves.shouldMove(linkUp: link.isUp, at: .now), try connection.moveToNextEndpoint() { moves.moved(at: .now) }
                // A new endpoint's link has no losses yet: coming up there is a reconnection too.
                let arrived = link.isUp && moves.takeArrival()
                let reconnected = link.isUp && (link.losses != losses || arrived)
                if reconnected {
                    losses = link.losses
                    lastSequence = 0
                }
                let restarted = connection.watchRestarts != restarts
                if restarted {
                    restarts = connection.watchRestarts
                    lastSequence = 0
                }
                if !events.isEmpty {
                    lastHeard = .now
                    var gap = false
                    for e in events {
                        // Streams are shared (PROTOCOL.md §5.22): the first number of a subscription may be any.
                        if lastSequence != 0 && e.sequence != lastSequence + 1 { gap = true }
                        lastSequence = e.sequence
                    }
                    apply(events, connection)
                    if gap || reconnected || restarted { resync(connection, afterReconnect: reconnected) }
                } else if reconnected || restarted || (link.isUp && ContinuousClock.now - lastHeard > .seconds(2)) {
                    // Also a safety net for lost events. Not while the coordinator is away: nothing would answer.
                    lastHeard = .now
                    resync(connection, afterReconnect: reconnected)
                }
            } catch {
                usleep(10_000)
            }
        }
        // Anything queued after the stop is answered with `closed`. After `close()` no event arrives:
        // unfinished operations stop holding the coordinator (no lasting cycle), released after the lock.
        let (rest, unfinished) = state.withLock { $0.ended() }
        for command in rest { command(nil) }
        let held = unfinished.map { op in op.fields.withLock { f in defer { f.coordinator = nil }; return f.coordinator } }
        _ = held
    }

    /// The records of `ids` in this client's run; `notFound`: ids the coordinator does not know (all of
    /// a chunk when it does not know the run). A chunk whose STATUS failed otherwise is in neither.
    private func results(_ ids: [String], _ connection: CoordinatorConnection) -> (found: [String: WireOpStatus], notFound: [String]) {
        var out: [String: WireOpStatus] = [:]
        var notFound: [String] = []
        var todo = ids[...]
        while !todo.isEmpty {
            let chunk = Array(todo.prefix(4096))
            todo = todo.dropFirst(chunk.count)
            var s = WireStatus()
            s.opIds = chunk
            s.run = run
            s.ops = true
            s.withResults = true
            s.limit = UInt32(chunk.count)
            let r: WireStatusReply
            do {
                guard case .statusReply(let reply) = try connection.request(.status(s)) else { continue }
                r = reply
            } catch ClientError.server(.notFound, _) {
                notFound += chunk   // the run itself is unknown
                continue
            } catch {
                continue
            }
            for o in r.ops { out[o.id] = o }
            notFound += r.notFound
            // Left out at the reply's size budget (large results): asked for again.
            if !r.omitted.isEmpty && !r.ops.isEmpty { todo = r.omitted[...] + todo }
        }
        return (out, notFound)
    }

    private func apply(_ events: [WireEvent], _ connection: CoordinatorConnection) {
        let current = run
        let events = events.filter { $0.run == current }
        // This client's operations (the WATCH stream carries every client's), and those whose result to
        // fetch: as `fetchResults` says, unless the operation says (typed ones: whether they have an output).
        let fetchResults = fetchResults
        let (tracked, wanting) = state.withLock { s in
            var tracked = Set<String>(), wanting = Set<String>()
            for e in events {
                guard let op = s.table[e.opID] else { continue }
                tracked.insert(e.opID)
                if op.wantsResult ?? fetchResults { wanting.insert(e.opID) }
            }
            return (tracked, wanting)
        }
        guard !tracked.isEmpty else { return }
        var fetched: [String: WireOpStatus] = [:]
        if !wanting.isEmpty {
            let succeeded = events.filter {
                $0.state == .finished && wanting.contains($0.opID)
                    && { if case .succeeded? = $0.outcome.result { true } else { false } }($0)
            }.map(\.opID)
            if !succeeded.isEmpty { fetched = results(succeeded, connection).found }
        }
        for e in events {
            guard let op = state.withLock({ $0.table[e.opID] }) else { continue }
            var outcome: OperationOutcome?
            var state: RemoteOperation.State? = RemoteOperation.State(e.state)
            if e.state == .finished && !e.hasOutcome {
                state = nil               // the `cancelled` event of an op that finishes with the next event
            } else if e.state == .finished {
                outcome = Self.outcome(fetched[e.opID]?.outcome ?? e.outcome)
                self.state.withLock { $0.table[e.opID] = nil }
            }
            op.update(state: state, authoritative: true, cancelled: e.cancelled, outcome: outcome,
                      fraction: e.fraction > 0 ? e.fraction : nil, worker: e.workerID, attempt: Int(e.attempt))
        }
    }

    /// Re-reads every unfinished operation with STATUS. `afterReconnect`: an operation the coordinator
    /// does not know then was lost with it (it restarted without a journal): it finishes as failed, so
    /// nothing waits for it forever.
    private func resync(_ connection: CoordinatorConnection, afterReconnect: Bool = false) {
        let ids = state.withLock { Array($0.table.keys) }
        guard !ids.isEmpty else { return }
        let (found, notFound) = results(ids, connection)
        if afterReconnect {
            for id in notFound {
                guard let op = state.withLock({ $0.table.removeValue(forKey: id) }) else { continue }
                op.update(state: .finished, authoritative: true, cancelled: false,
                          outcome: .failed("the coordinator at \(endpoint) restarted and no longer knows this operation; its outcome is unknown"),
                          fraction: nil, worker: "", attempt: 0)
            }
        }
        for (id, s) in found {
            guard let op = state.withLock({ $0.table[id] }) else { continue }
            var outcome: OperationOutcome?
            if s.state == .finished {
                outcome = Self.outcome(s.outcome)
                state.withLock { $0.table[id] = nil }
            }
            op.update(state: RemoteOperation.State(s.state), authoritative: false, cancelled: s.cancelled, outcome: outcome,
                      fraction: nil, worker: s.workerID, attempt: Int(s.attempts))
        }
    }

    static func outcome(_ w: WireOutcome) -> OperationOutcome {
        switch w.result {
        case .succeeded(let d)?: .succeeded(Array(d))
        case .failed(let t)?: .failed(t)
        case .cancelled(let t)?: .cancelled(t)
        case nil: .failed("finished without an outcome")
        }
    }
}

/// When the API's connection thread leaves a coordinator whose link stays down for the next endpoint
/// (`CoordinatorConnection.moveToNextEndpoint`, a no-op with one endpoint): after `patience` down, then
/// again each `patience` while no endpoint comes up. Pure: the loop gives it the link's state and time.
struct EndpointMoves {
    static let patience: Duration = .seconds(1)
    private var downSince: ContinuousClock.Instant?
    private var arrived = false

    /// Whether to move now: the link has been down for `patience` (since it was last seen up or moved).
    mutating func shouldMove(linkUp: Bool, at now: ContinuousClock.Instant) -> Bool {
        guard !linkUp else { downSince = nil; return false }
        guard let since = downSince else { downSince = now; return false }
        return now - since >= Self.patience
    }

    mutating func moved(at now: ContinuousClock.Instant) {
        downSince = now
        arrived = true
    }

    /// True once after a move: the first time the link is up at the new endpoint, what was missed is re-read.
    mutating func takeArrival() -> Bool {
        defer { arrived = false }
        return arrived
    }
}
