import Logging
import WireProtocol
import WorkerRuntime

/// The worker's conversation with the coordinator (PROTOCOL.md §4.1, §7), across connections, as a pure
/// state machine: no sockets, clocks or threads; times are inputs (µs on the worker's monotonic clock).
/// The shell (`WorkerSession` for one connection, `WorkerAgent.run` between them) reads the socket, feeds
/// one input per event and performs the returned actions in order. What the worker holds (`HeldParts`)
/// lives here too: it outlives every connection and each HELLO lists it (§7.4).
///
/// An input the shell can never feed in the current state (a message with no connection open, anything
/// after the worker stopped) is a bug in the shell: it traps, naming the input and the state.
struct SessionMachine {
    /// Liveness of one connection (§7): any message counts as heard, any sent one as a heartbeat.
    struct Link: Equatable {
        /// Heartbeat interval (µs) and liveness: the config's until WELCOME announces the coordinator's.
        var heartbeat: Int64
        var liveness: Int64
        var lastReceived: Int64
        var lastSent: Int64
        /// The connection's transport answers: libzmq's own heartbeat (ZMTP PING/PONG, answered by the
        /// coordinator's I/O thread, not its loop) has kept it open since its handshake. The shell feeds
        /// it from the socket monitor (`transport(answering:)`).
        var transportAnswering = false
        /// The transport closed since the coordinator last sent us something. A handshake after a close
        /// is a new connection, possibly to another coordinator process (one restarted on the same port)
        /// that never heard our HELLO and ignores our heartbeats: only hearing from it again shows the
        /// coordinator is still ours, so until then its silence counts as before (`silenceLimit`).
        var closedSinceHeard = false
        /// Past the silence limit with the transport answering: the busy wait was logged.
        var waitingOnBusy = false
        /// Silence longer than this means the coordinator is dead.
        var silenceLimit: Int64 { heartbeat * liveness }
        /// A coordinator whose connection answers but which sends nothing is busy (its loop held by a
        /// long input, its machine starved), not gone: we wait this long before ending the session, so
        /// the coordinator's own stall does not cost a re-registration. A frozen or dead process stops
        /// answering PINGs and is left after `silenceLimit` as before.
        var busyLimit: Int64 { silenceLimit * SessionMachine.busyPatience }
        /// The silence after which `tick` ends the session.
        var effectiveLimit: Int64 { transportAnswering ? busyLimit : silenceLimit }
    }

    /// How many silence limits a worker waits for a coordinator whose connection answers.
    static let busyPatience: Int64 = 10

    enum State: Equatable {
        /// No connection: the shell opens one (after the pause of the last `.reconnect`), then feeds
        /// `connected`. `backoffMs`: the pause after that connection if it ends without WELCOME.
        case connecting(backoffMs: Int)
        /// HELLO sent; nothing else goes out until WELCOME (§4.1), so no heartbeat either.
        case awaitingWelcome(Link, backoffMs: Int)
        case registered(workerID: String, Link)
        /// REJECT, or the coordinator refuses our keys: retrying would not help.
        case rejected(reason: String)
        /// The worker's own shutdown.
        case stopped
    }

    enum Action: Equatable {
        case send(Message)
        /// DISPATCH: the parts go into the local queue.
        case submit([DispatchedPart])
        /// CANCEL of (op, attempt) in the local queue.
        case cancel(opID: String, attempt: Int, reason: String)
        /// Every part held was dropped (REJECT, shutdown): cancel them in the local queue.
        case cancelHeld([PartKey], reason: String)
        case log(Logger.Level, String)
        /// Close the connection, wait this long, open a new one and feed `connected`.
        case reconnect(afterMs: Int)
        /// Close the connection (letting a DISCONNECT just sent go out) and return.
        case stop
        /// Close the connection; the worker fails with this reason.
        case reject(String)
    }

    /// The longest pause between connections while the worker holds parts or unreported outcomes: a
    /// restarted coordinator waits for them only so long before it runs that work again (§7.4).
    static let holdingBackoffMaxMs = 1000

    let config: WorkerConfig
    /// Handler kinds announced in HELLO.
    let kinds: [String]
    private(set) var state: State
    /// Internal, not private(set), only because `events` (SessionReports.swift) updates it; the shell
    /// only reads it.
    var held: HeldParts

    init(config: WorkerConfig, kinds: [String], limits: HeldParts.Limits = HeldParts.Limits()) {
        self.config = config
        self.kinds = kinds
        state = .connecting(backoffMs: config.reconnectMinMs)
        held = HeldParts(capacity: config.slots + config.prefetch, limits: limits)
    }

    /// The connection's liveness, while one is open.
    var link: Link? {
        switch state {
        case .awaitingWelcome(let link, _), .registered(_, let link): link
        case .connecting, .rejected, .stopped: nil
        }
    }

    var isRegistered: Bool {
        if case .registered = state { return true }
        return false
    }

    /// When `tick` has something to do: the next heartbeat (registered only) or the silence limit.
    var deadline: Int64? {
        guard let link else { return nil }
        let heartbeatDue = isRegistered ? link.lastSent + link.heartbeat : Int64.max
        let limit = isRegistered ? link.effectiveLimit : link.silenceLimit
        // Also at the silence limit while the transport answers: the busy wait is logged then.
        let note = isRegistered && link.transportAnswering && !link.waitingOnBusy ? link.lastReceived + link.silenceLimit + 1 : Int64.max
        return min(heartbeatDue, link.lastReceived + limit, note)
    }

    // MARK: inputs

    /// A new connection is open: say HELLO, listing what the worker holds (§7.4).
    mutating func connected(now: Int64) -> [Action] {
        guard case .connecting(let backoff) = state else { impossible("connected") }
        var actions: [Action] = []
        let (running, finished) = held.helloSnapshot()
        if !running.isEmpty || !finished.isEmpty {
            actions.append(.log(.info, "registering with \(running.count) part(s) still held and \(finished.count) finished record(s)"))
        }
        var hello = WireHello()
        hello.protocolVersion = UInt32(WireVersion.current)
        hello.name = config.name
        hello.slots = UInt32(config.slots)
        hello.tags = config.tags
        hello.kinds = kinds
        hello.prefetch = UInt32(config.prefetch)
        hello.running = running
        hello.finished = finished
        hello.sentUs = now   // places the held parts' times on the coordinator's timeline
        let link = Link(heartbeat: Int64(config.heartbeatIntervalMs) * 1000, liveness: Int64(config.liveness),
                        lastReceived: now, lastSent: now)
        state = .awaitingWelcome(link, backoffMs: backoff)
        actions.append(.send(.hello(hello)))
        return actions
    }

    /// A message from the coordinator (any message counts as heard).
    mutating func received(_ message: Message, now: Int64) -> [Action] {
        heard(now, "received(\(message.command))")
        switch message {
        case .welcome(let w): return received(welcome: w, now: now)
        case .reject(let r): return received(reject: r)
        case .dispatch(let d): return received(dispatch: d)
        case .cancel(let c): return received(cancel: c)
        case .disconnect(let d): return lost("coordinator said: \(d.reason)", now: now)
        case .error(let e):
            let note = Action.log(.warning, "coordinator error \(e.code): \(e.message)")
            // UNEXPECTED: it does not know this session (restarted, or fenced us): register again.
            if e.code == .unexpected { return [note] + lost("coordinator does not know this session", now: now) }
            // (1.9) NOT_LEADER: a standby; the shell goes to the leader it names (WorkerSession).
            if e.code == .notLeader { return lost("coordinator is a standby: \(e.message)", now: now, maxWaitMs: Self.notLeaderWaitMs) }
            return [note]
        case .heartbeat: return []
        default: return [.log(.warning, "ignored \(message.command): not a coordinator-to-worker command")]
        }
    }

    /// (issue 29) The connection closed and there are other coordinators to try: leave it now instead of
    /// waiting out the silence limit (a leader that died; the next one is elected meanwhile).
    mutating func connectionClosed(now: Int64) -> [Action] {
        switch state {
        case .awaitingWelcome, .registered: return lost("connection closed; trying the next coordinator", now: now, maxWaitMs: Self.notLeaderWaitMs)
        case .connecting, .rejected, .stopped: return []
        }
    }

    /// Frames that do not decode: ignored, but the coordinator was heard.
    mutating func receivedMalformed(_ error: some Error, now: Int64) -> [Action] {
        heard(now, "receivedMalformed")
        return [.log(.warning, "ignored a malformed message from the coordinator: \(error)")]
    }

    /// Time passed (the shell calls it after every wake-up, at the latest at `deadline`): a silent
    /// coordinator is dead (§7.2); a registered worker that sent nothing for an interval heartbeats.
    /// A coordinator that sends nothing while its connection's transport answers (libzmq's heartbeat)
    /// is busy, not gone: a registered worker waits up to `busyLimit` for it (docs/ARCHITECTURE.md,
    /// "A loop with a bound"), still heartbeating.
    mutating func tick(now: Int64) -> [Action] {
        guard var link else { impossible("tick") }
        let silence = now - link.lastReceived
        var actions: [Action] = []
        if silence > link.silenceLimit {
            guard isRegistered, link.transportAnswering, silence <= link.busyLimit else {
                let what = isRegistered ? "coordinator silent" : "no WELCOME"
                let busy = isRegistered && link.transportAnswering ? " (its connection answered, but it sent nothing for longer than \(link.busyLimit / 1000) ms)" : ""
                return lost("\(what) for \(silence / 1000) ms\(busy)", now: now)
            }
            if !link.waitingOnBusy {
                link.waitingOnBusy = true
                setLink(link)
                actions.append(.log(.warning, "coordinator silent for \(silence / 1000) ms but its connection answers: it is busy, not gone; waiting up to \(link.busyLimit / 1000) ms before leaving it"))
            }
        }
        if isRegistered, now - link.lastSent >= link.heartbeat { send(.heartbeat, now: now, into: &actions) }
        return actions
    }

    /// The socket monitor says the connection's transport completed a handshake (`answering` true) or
    /// closed (false: the peer stopped answering libzmq's heartbeat, or went away). Ignored with no
    /// connection open: monitor events can trail the session they belong to.
    mutating func transport(answering: Bool) {
        guard var link else { return }
        if !answering { link.closedSinceHeard = true }
        link.transportAnswering = answering && !link.closedSinceHeard
        setLink(link)
    }

    /// The worker shuts down: a graceful goodbye (the coordinator re-queues what ran here at once instead
    /// of waiting for liveness), and the parts it holds are cancelled (the coordinator runs them again).
    mutating func stop(now: Int64) -> [Action] {
        var actions: [Action] = []
        switch state {
        case .awaitingWelcome, .registered:
            var d = WireDisconnect()
            d.reason = "worker shutting down"
            send(.disconnect(d), now: now, into: &actions)
        case .connecting:
            break
        case .rejected, .stopped:
            impossible("stop")
        }
        actions += dropHeld(reason: "worker shutting down")
        state = .stopped
        actions.append(.stop)
        return actions
    }

    /// The CURVE handshake says the coordinator refuses our keys (or their absence): the worker ends.
    mutating func handshakeRefused(_ why: String) -> [Action] {
        guard link != nil else { impossible("handshakeRefused") }
        let reason = "authentication failed: " + why
        let actions = dropHeld(reason: "worker shutting down")
        state = .rejected(reason: reason)
        return actions + [.reject(reason)]
    }

    /// The shell gives up (an error it cannot recover from, or it stops between connections): everything
    /// held is dropped, for the caller to cancel. Valid in every state.
    mutating func abandon() -> [PartKey] {
        let keys = held.dropAll()
        if case .rejected = state {} else { state = .stopped }
        return keys
    }

    // MARK: messages

    private mutating func received(welcome w: WireWelcome, now: Int64) -> [Action] {
        guard case .awaitingWelcome(var link, _) = state else {
            guard case .registered(let id, _) = state else { impossible("received(welcome:)") }
            return [.log(.warning, "ignored a second WELCOME (\(w.workerID)) in session \(id)")]
        }
        link.heartbeat = Int64(max(1, w.heartbeatIntervalMs)) * 1000
        link.liveness = Int64(max(1, w.liveness))
        state = .registered(workerID: w.workerID, link)
        let welcomed = held.welcomed(at: now, livenessBound: link.silenceLimit)
        let from = held.isEmpty ? "" : "; \(held.count) part(s) held from before"
        var actions: [Action] = [.log(.info, "registered as \(w.workerID) with \(config.connect): \(config.slots) slots, kinds \(kinds.joined(separator: ","))\(from)")]
        // The first grant leaves room for the parts still held; they give credit back as they finish.
        if welcomed.credit > 0 {
            var c = WireCredit()
            c.credit = UInt32(min(welcomed.credit, Int(WireLimits.maxCredit)))
            send(.credit(c), now: now, into: &actions)
        }
        // What the HELLO did not carry, finished first (a freed slot before the part that takes it).
        var finished = welcomed.finished, started = welcomed.started
        while case .finished(var m)? = Batcher.message(draining: &finished, sentUs: now) {
            m.credit = 0
            send(.finished(m), now: now, into: &actions)
        }
        while let m = Batcher.message(draining: &started, sentUs: now) { send(m, now: now, into: &actions) }
        return actions
    }

    private mutating func received(reject r: WireReject) -> [Action] {
        var actions: [Action] = [.log(.error, "coordinator rejected this worker: \(r.reason)")]
        actions += dropHeld(reason: "the coordinator rejected this worker")
        state = .rejected(reason: r.reason)
        actions.append(.reject(r.reason))
        return actions
    }

    private mutating func received(dispatch d: WireDispatch) -> [Action] {
        let parts = d.records.map(DispatchedPart.init(wire:))
        held.dispatched(zip(parts, d.records).lazy.map { (key: $0.key, token: $1.token) })
        return [.submit(parts)]
    }

    private mutating func received(cancel c: WireCancel) -> [Action] {
        c.records.map { r in
            held.cancelledByCoordinator(opID: r.opID, attempt: Int(r.attempt))
            return .cancel(opID: r.opID, attempt: Int(r.attempt), reason: r.reason.isEmpty ? "cancelled" : r.reason)
        }
    }

    // MARK: transitions

    /// The coordinator is gone or no longer knows this connection: the parts keep running, for the next
    /// HELLO to list. Backoff restarts after a connection that registered, else doubles.
    /// (issue 29) After NOT_LEADER the next try comes soon: a leader is named, or one is being elected.
    static let notLeaderWaitMs = 200

    private mutating func lost(_ reason: String, now: Int64, maxWaitMs: Int = .max) -> [Action] {
        let backoff: Int
        switch state {
        case .awaitingWelcome(_, let b): backoff = b
        case .registered: backoff = config.reconnectMinMs
        case .connecting, .rejected, .stopped: impossible("lost")
        }
        held.sessionEnded(at: now)
        let keeping = held.isEmpty ? "" : "; keeping \(held.count) part(s) running for the next registration"
        let wait = min(maxWaitMs, held.isEmpty && held.finishedKept == 0 ? backoff : min(backoff, Self.holdingBackoffMaxMs))
        state = .connecting(backoffMs: min(config.reconnectMaxMs, backoff * 2))
        return [.log(.warning, "session ended: \(reason)\(keeping); reconnecting in \(wait) ms"), .reconnect(afterMs: wait)]
    }

    /// Drops every part held (shutdown, REJECT): the coordinator runs them again (at-least-once).
    private mutating func dropHeld(reason: String) -> [Action] {
        let keys = held.dropAll()
        guard !keys.isEmpty else { return [] }
        return [.log(.info, "cancelling \(keys.count) local part(s)"), .cancelHeld(keys, reason: reason)]
    }

    private mutating func heard(_ now: Int64, _ input: @autoclosure () -> String) {
        guard var link else { impossible(input()) }
        link.lastReceived = now
        link.waitingOnBusy = false
        if link.closedSinceHeard {
            // It answered on the connection made after the close: the same coordinator, reachable again.
            link.closedSinceHeard = false
            link.transportAnswering = true
        }
        setLink(link)
    }

    /// Replaces the open connection's link (no-op without one).
    private mutating func setLink(_ link: Link) {
        switch state {
        case .awaitingWelcome(_, let b): state = .awaitingWelcome(link, backoffMs: b)
        case .registered(let id, _): state = .registered(workerID: id, link)
        case .connecting, .rejected, .stopped: break
        }
    }

    /// Appends a send; a connection's every message counts as its heartbeat.
    mutating func send(_ message: Message, now: Int64, into actions: inout [Action]) {
        switch state {
        case .awaitingWelcome(var link, let b):
            // Before WELCOME only HELLO (sent by `connected`) and a goodbye go out (§4.1).
            guard case .disconnect = message else { impossible("send(\(message.command)) before WELCOME") }
            link.lastSent = now
            state = .awaitingWelcome(link, backoffMs: b)
        case .registered(let id, var link):
            link.lastSent = now
            state = .registered(workerID: id, link)
        case .connecting, .rejected, .stopped:
            impossible("send(\(message.command))")
        }
        actions.append(.send(message))
    }

    func impossible(_ input: String) -> Never {
        preconditionFailure("SessionMachine: \(input) is impossible in state \(state)")
    }

    // MARK: invariants

    /// Every broken invariant as text; empty when the state is consistent (for tests).
    func validate() -> [String] {
        var bad: [String] = []
        if held.registered != isRegistered { bad.append("held parts registered=\(held.registered) in state \(state)") }
        switch state {
        case .rejected, .stopped:
            if !held.isEmpty || held.finishedKept > 0 { bad.append("the worker ended holding \(held.count) part(s), \(held.finishedKept) record(s)") }
        case .connecting(let b), .awaitingWelcome(_, let b):
            if b <= 0 { bad.append("backoff \(b) ms") }
        case .registered:
            break
        }
        if let link, link.heartbeat <= 0 || link.liveness <= 0 { bad.append("link \(link)") }
        return bad
    }
}
