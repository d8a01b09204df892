import Foundation
import Logging
import OpClient
import WireProtocol
import ZeroMQ

/// One connection to the coordinator, from HELLO to its end: the socket side of `SessionMachine`. It
/// waits on the socket, the waker (local queue events, stop) and the handshake monitor, feeds the
/// machine what happened and performs the actions it returns. All session state lives in the machine.
final class WorkerSession {
    enum End {
        case stopped
        case rejected(String)
        /// Lost (coordinator silent, DISCONNECT, ERROR `UNEXPECTED`, no WELCOME): connect again after this.
        case reconnect(afterMs: Int)
    }

    private let agent: WorkerAgent
    private let socket: Socket
    private let poller = Poller()
    /// Handshake failures (CURVE): a refused key ends the worker with the reason instead of retrying blind.
    private let monitor: SocketMonitor
    /// Whether the coordinator refuses our keys (or their absence); 2 s of closed handshakes, more than a
    /// client's 1 s, because a worker that gives up stops for good.
    private var handshake: HandshakeWatch
    private var logger: Logger { agent.logger }
    /// (issue 29) A standby said who leads (ERROR NOT_LEADER, or DISCONNECT with its text): `.some(nil)`
    /// when it named none yet. The agent goes there for the next session.
    private(set) var redirect: String??

    init(agent: WorkerAgent) throws {
        self.agent = agent
        socket = try Socket(agent.context, type: .dealer)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.set(.sendHighWaterMark, 0)
        try socket.set(.receiveHighWaterMark, 0)
        // libzmq's own heartbeat, answered by the coordinator's I/O thread even while its loop is busy:
        // a connection that stays open says the coordinator is alive, one that closes (no PONG within the
        // silence limit: frozen, dead, partitioned) says it is not (SessionMachine `transportAnswering`).
        let interval = Int32(clamping: max(100, agent.config.heartbeatIntervalMs))
        try socket.set(.heartbeatInterval, interval)
        try socket.set(.heartbeatTimeout, interval * Int32(clamping: max(1, agent.config.liveness)))
        if let curve = agent.config.curve { try socket.useCurveClient(curve) }
        handshake = HandshakeWatch(keyed: agent.config.curve != nil, patience: .seconds(2))
        // connect-retried: nothing listens there (a coordinator that died), for the several-endpoints case.
        monitor = try socket.monitor(HandshakeWatch.events.union([.connectRetried]))
        try socket.connect(agent.endpoints.withLock { $0.current })
        _ = poller.add(socket)
        _ = poller.add(agent.waker)
        _ = poller.add(monitor.socket)
    }

    func close() {
        monitor.close()
        socket.close()
    }

    /// Why the coordinator refuses our keys (or their absence), if the handshake said so. The machine
    /// hears whether the transport answers (a completed handshake, a closed connection).
    private func handshakeRefusal(_ machine: inout SessionMachine) throws -> String? {
        while let event = try monitor.receive(flags: .dontWait) {
            if event.kind == .handshakeSucceeded { machine.transport(answering: true) }
            if event.kind == .connectRetried, !machine.isRegistered, agent.endpoints.withLock({ $0.isSeveral }) { closedWithOthers = true }
            if event.kind == .disconnected {
                machine.transport(answering: false)
                // Other coordinators to try: a closed connection ends the session now (issue 29).
                if agent.endpoints.withLock({ $0.isSeveral }) { closedWithOthers = true }
            }
            if let why = handshake.observe(event, at: .now) { return why }
        }
        return nil
    }

    /// The worker's monotonic clock (µs): the times fed to the machine and stamped on events.
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// Runs the connection until the machine ends it. `machine` is in `.connecting` on entry.
    func run(_ machine: inout SessionMachine) throws -> End {
        // Events of the time between connections (parts that started or finished meanwhile) go into
        // the HELLO.
        perform(machine.events(agent.events.take(), now: Self.now()))
        perform(machine.connected(now: Self.now()))
        while true {
            if agent.stopping.load(ordering: .relaxed), let end = perform(machine.stop(now: Self.now())) { return end }
            let now = Self.now()
            let deadline = machine.deadline ?? now
            try poller.poll(timeout: .microseconds(max(0, deadline - now) + 1000))
            if poller.isReadable(1) { agent.waker.drain() }
            if poller.isReadable(2), let why = try handshakeRefusal(&machine), let end = perform(machine.handshakeRefused(why)) {
                return end
            }
            if closedWithOthers, let end = perform(machine.connectionClosed(now: Self.now())) { return end }
            // Report first: after a freeze (SIGSTOP) the finished parts go out before anything else, so
            // the coordinator sees, fences and counts them.
            perform(machine.events(agent.events.take(), now: Self.now()))
            if poller.isReadable(0), let end = try receiveAll(&machine) { return end }
            // Parts that ran inline while DISPATCH was handled are done already: report them now
            // rather than one loop iteration (an eventfd round) later.
            perform(machine.events(agent.events.take(), now: Self.now()))
            if let end = perform(machine.tick(now: Self.now())) { return end }
        }
    }

    private func receiveAll(_ machine: inout SessionMachine) throws -> End? {
        for _ in 0..<4096 {
            guard let frames = try socket.receiveMultipart(flags: .dontWait) else { return nil }
            let actions: [SessionMachine.Action]
            switch WireCodec.decode(frames) {
            case .failure(let error): actions = machine.receivedMalformed(error, now: Self.now())
            case .success(let envelope):
                if !admit(envelope.message) { continue }
                actions = machine.received(envelope.message, now: Self.now())
            }
            if let end = perform(actions) { return end }
        }
        return nil
    }

    private var closedWithOthers = false

    /// (1.9) Fencing: a message with an epoch below the highest seen is a replaced leader's, ignored.
    /// A standby's NOT_LEADER (ERROR, or DISCONNECT of a session it no longer serves) is noted as a redirect.
    private func admit(_ message: Message) -> Bool {
        if let e = message.epoch, e > 0, !agent.fence.withLock({ $0.admit(message) }) {
            logger.warning("ignored \(message.command) of epoch \(e): a newer leader was seen (epoch \(agent.fence.withLock { $0.highest }))")
            return false
        }
        switch message {
        case .welcome: agent.endpoints.withLock { $0.reached() }
        case .error(let e) where e.code == .notLeader: redirect = .some(NotLeader.leader(in: e.message))
        case .disconnect(let d) where d.reason.hasPrefix(NotLeader.prefix): redirect = .some(NotLeader.leader(in: d.reason))
        default: break
        }
        return true
    }

    /// Carries out the machine's actions in order; the connection's end, if one of them ends it.
    @discardableResult
    private func perform(_ actions: [SessionMachine.Action]) -> End? {
        for action in actions {
            switch action {
            case .send(let message):
                do {
                    _ = try socket.sendMultipart(WireCodec.encode(message), flags: .dontWait)
                } catch {
                    logger.debug("send \(message.command) failed: \(error)")
                }
            case .submit(let parts):
                agent.queue.submit(contentsOf: parts)
            case .cancel(let opID, let attempt, let reason):
                agent.queue.cancel(opID: opID, attempt: attempt, reason: reason)
            case .cancelHeld(let keys, let reason):
                agent.cancelLocally(keys, reason: reason)
            case .log(let level, let text):
                logger.log(level: level, "\(text)")
            case .reconnect(let wait):
                return .reconnect(afterMs: wait)
            case .stop:
                try? socket.set(.linger, 1000)   // lets the DISCONNECT go out
                return .stopped
            case .reject(let reason):
                return .rejected(reason)
            }
        }
        return nil
    }
}
