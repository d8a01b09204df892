import Foundation
import WireProtocol
import ZeroMQ

/// A client's connection to the coordinator: one DEALER, requests matched to replies by request id,
/// and an optional event subscription (WATCH).
///
/// Every request is checked against the protocol's limits before it is sent (`WireCodec.encodeChecked`):
/// a request the coordinator would refuse, or that libzmq would drop for its size, fails at once with
/// `ClientError.invalidRequest` naming the operation and the limit. A socket monitor watches the
/// connection, so a reply that cannot come any more is reported as what happened: the coordinator went
/// away (`connectionLost`; ZMTP heartbeats also catch one that is frozen or cut off) or sent a frame over
/// the limit (`replyTooLarge`) — not as a timeout.
///
/// Not thread-safe: use it from one thread (like the socket it owns). `opctl` uses one per command;
/// the Swift API wraps one in a dedicated thread.
public final class CoordinatorConnection {
    /// The coordinator in use: one of `endpoints`, or the leader a standby named (issue 29).
    public var endpoint: String { endpoints.current }
    /// Several coordinators (`tcp://a:7600,tcp://b:7600`): a request refused with NOT_LEADER goes to the
    /// leader named, one that cannot reach its coordinator to the next (`request`).
    public private(set) var endpoints: CoordinatorEndpoints
    /// (1.9) The highest leadership epoch seen: replies and events with a lower one are ignored.
    public private(set) var fence = EpochFence()
    /// Whether a NOT_LEADER refusal sends the request to the leader it names (default). The HTTP side's
    /// in-process reader turns it off: a standby's dashboard shows the refusal, not another node's data.
    public var followsRedirects = true
    public let timeout: Duration
    private let context: Context
    private var socket: Socket
    private var monitor: SocketMonitor
    private var poller: Poller
    private var nextRequest: UInt32 = 1
    private var watchRequest: UInt32?
    /// The latest WATCH, re-sent after a reconnection: a restarted coordinator knows no subscription.
    private var watchSettings: WireWatch?
    /// Events that arrived while waiting for a reply.
    private var pendingEvents: [WireEvent] = []
    /// Times the coordinator ended our WATCH stream as too slow and it was made again at once (its
    /// events count from 1 again): events in between are lost, so a watcher re-reads what it shows.
    public private(set) var watchRestarts = 0
    /// Requests sent and not answered yet, with the link's counters when they were sent: a loss after
    /// that means their reply cannot come.
    private var outstanding: [UInt32: Sent] = [:]
    private struct Sent { var command: Command; var losses: Int; var refused: Int }

    /// What the socket monitor has said about the connection.
    public struct Link: Sendable {
        /// A connection is established (ZMTP handshake done) and not lost since.
        public internal(set) var isUp = false
        /// A TCP connection exists, the ZMTP handshake maybe not done yet.
        var isConnected = false
        /// A connection was established at some time.
        public internal(set) var wasEverUp = false
        /// Connections that ended from the coordinator's side or the network's (closed, reset, or no
        /// answer to ZMTP heartbeats), also one closed during its handshake: a coordinator that went
        /// away as we connected. libzmq reconnects after each.
        public internal(set) var losses = 0
        /// Connections this side closed because the coordinator sent a frame over the limit.
        public internal(set) var refusedFrames = 0
        /// When the current outage began; nil while up or before the first connection.
        public internal(set) var downSince: ContinuousClock.Instant?
        /// Why the coordinator refuses this client's keys (or their absence), once the handshake said
        /// so: every request then fails at once with `authenticationFailed` instead of timing out.
        public internal(set) var authProblem: String?
        /// Before the first connection: when connecting was first refused (nothing listens there), and
        /// how often since. A request then fails after `unreachableAfter` instead of its whole timeout.
        var refusedSince: ContinuousClock.Instant?
        var refusedConnects = 0
        /// Before the first handshake: since when a TCP connection has been open without the ZMTP
        /// handshake completing. libzmq does the handshake on its I/O thread, so a coordinator (even a
        /// busy one) completes it in milliseconds; a peer that stays silent speaks another protocol.
        var connectedSince: ContinuousClock.Instant?
    }

    /// How long connecting may be refused, before the first connection, until a request gives up with
    /// `unreachable`: long enough for a coordinator that is just starting, short enough that a wrong
    /// address or port is said at once. (After a first connection, a lost coordinator is waited for.)
    public static let unreachableAfter: Duration = .seconds(1)
    /// With several coordinators (issue 29) another is tried sooner: one refused for this long (or whose
    /// link stays down this long) is most likely a leader that died, and the next one answers or redirects.
    public static let nextEndpointAfter: Duration = .milliseconds(250)
    private var unreachableBound: Duration { endpoints.isSeveral ? Self.nextEndpointAfter : Self.unreachableAfter }
    /// How long a first connection may stay without a ZMTP handshake until a request gives up with
    /// `notACoordinator` (an HTTP server, such as the dashboard's port, waits for a request line).
    public static let handshakeMissingAfter: Duration = .seconds(1)
    public private(set) var link = Link()

    /// ZMTP heartbeat: a PING each second; no traffic for 5 s after one closes the connection, which
    /// the monitor reports like any loss. (The coordinator's libzmq answers PINGs by itself.)
    static let heartbeatIntervalMs: Int32 = 1000
    static let heartbeatTimeoutMs: Int32 = 5000
    /// How long after a disconnect libzmq gets to say it is reconnecting (it does so at once, from
    /// the same I/O thread); silence means it closed the connection itself and never will.
    static let reconnectNoticeGrace: Duration = .milliseconds(500)

    /// `HOST:PORT` is taken as `tcp://HOST:PORT`; anything with a scheme is left as it is.
    public static func normalised(_ endpoint: String) -> String {
        let e = endpoint.trimmingCharacters(in: .whitespaces)
        guard !e.contains("://"), let colon = e.lastIndex(of: ":"), Int(e[e.index(after: colon)...]) != nil else { return e }
        return "tcp://" + e
    }

    /// The default endpoint: `$OPCOORD`, else tcp://127.0.0.1:7600.
    public static var defaultEndpoint: String {
        ProcessInfo.processInfo.environment["OPCOORD"].flatMap { $0.isEmpty ? nil : $0 } ?? "tcp://127.0.0.1:7600"
    }

    /// CURVE keys (PROTOCOL.md §12); nil speaks in the clear (a loopback or `--insecure` coordinator).
    public let curve: CurveClientKeys?
    /// Whether the coordinator refuses our keys (or their absence), from the monitor's handshake events.
    private var handshake: HandshakeWatch

    /// `context`: share a ZeroMQ context (an in-process coordinator, `inproc://`); nil makes one.
    public init(endpoint given: String = CoordinatorConnection.defaultEndpoint, timeout: Duration = .seconds(10),
                curve: CurveClientKeys? = nil, context shared: Context? = nil) throws {
        endpoints = CoordinatorEndpoints(given)
        // Before libzmq sees it: it refuses a missing port with "Invalid argument" and retries a port
        // over 65535 for ever (the caller would wait out its timeout and hear "could not connect").
        if let (e, problem) = endpoints.problem() { throw ClientError.badEndpoint(endpoints.isSeveral ? e : given, problem) }
        let endpoint = endpoints.current
        self.timeout = timeout
        self.curve = curve
        handshake = HandshakeWatch(keyed: curve != nil, patience: .seconds(1))
        context = try shared ?? Context()
        (socket, monitor, poller) = try Self.open(context, endpoint, curve)
    }

    deinit { close() }

    /// Closes the socket now (deinit does too): needed before a shared context terminates.
    public func close() {
        monitor.close()
        socket.close()
    }

    private static func open(_ context: Context, _ endpoint: String, _ curve: CurveClientKeys?) throws -> (Socket, SocketMonitor, Poller) {
        let socket = try Socket(context, type: .dealer)
        if let curve { try socket.useCurveClient(curve) }
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.set(.sendHighWaterMark, 0)
        try socket.set(.receiveHighWaterMark, 0)
        try socket.set(.heartbeatInterval, heartbeatIntervalMs)
        try socket.set(.heartbeatTimeout, heartbeatTimeoutMs)
        try socket.set(.reconnectInterval, 100)
        try socket.set(.reconnectIntervalMax, 1000)
        // Before connecting, so the first connection's events are seen too.
        let monitor = try socket.monitor(HandshakeWatch.events.union([.connectRetried, .connectDelayed, .connected]))
        do {
            try socket.connect(endpoint)
        } catch {
            monitor.close()
            socket.close()
            throw ClientError.badEndpoint(endpoint, "\(error)")
        }
        let poller = Poller()
        poller.add(socket)
        poller.add(monitor.socket)
        return (socket, monitor, poller)
    }

    // MARK: requests

    /// Sends `message` and returns the reply. An ERROR reply is thrown as `ClientError.server`; see
    /// `reply(to:until:)` for the other errors, and `timeout` when nothing came in time.
    /// With several endpoints, or told NOT_LEADER, the request goes to another coordinator within the same
    /// timeout: to the leader a standby names (one more round trip), else the next endpoint of the list.
    public func request(_ message: WireProtocol.Message, timeout: Duration? = nil) throws -> WireProtocol.Message {
        let deadline = ContinuousClock.now + (timeout ?? self.timeout)
        while true {
            do {
                let reply = try requestOnce(message, timeout: max(.milliseconds(1), deadline - .now))
                endpoints.reached()
                return reply
            } catch ClientError.server(.notLeader, let text) where followsRedirects && ContinuousClock.now < deadline {
                // Not elected yet, or a leader we could not reach: ask this standby again shortly.
                if endpoints.redirect(to: NotLeader.leader(in: text)) { try moveToCurrent() } else { pause(until: deadline) }
            } catch let error as ClientError where endpoints.isSeveral && ContinuousClock.now < deadline && Self.coordinatorGone(error) {
                if endpoints.unreachable() { try moveToCurrent() } else { pause(until: deadline) }
            }
        }
    }

    /// A NOT_LEADER refusal (`text`) of a request sent with `send` and awaited apart (a WAIT): goes to
    /// the leader it names as `request` does, or — naming none yet, or one that failed — pauses to ask
    /// this standby again. False when redirects are off (the caller reports the refusal).
    public func followNotLeader(_ text: String, until deadline: ContinuousClock.Instant?) throws -> Bool {
        guard followsRedirects else { return false }
        if endpoints.redirect(to: NotLeader.leader(in: text)) { try moveToCurrent() } else { pause(until: deadline ?? .now + .seconds(1)) }
        return true
    }

    /// The link was lost while a reply to a request sent with `send` (a WAIT) was awaited: with several
    /// endpoints goes on at the next one (in an --ha group it may lead now; a standby names the leader).
    /// False with one endpoint: the caller waits for it to come back.
    public func moveToNextEndpoint() throws -> Bool {
        guard endpoints.isSeveral, endpoints.unreachable() else { return false }
        try moveToCurrent()
        return true
    }

    /// Errors that say the coordinator in use cannot answer (before any reply): another may.
    static func coordinatorGone(_ error: ClientError) -> Bool {
        switch error {
        case .unreachable, .notACoordinator: true
        case .timeout(_, _, let connected): !connected
        default: false
        }
    }

    /// A tenth of a second (less at the deadline) between asks of a standby without a leader to name.
    private func pause(until deadline: ContinuousClock.Instant) {
        let left = (deadline - .now).components
        Thread.sleep(forTimeInterval: max(0, min(0.1, Double(left.seconds) + Double(left.attoseconds) / 1e18)))
    }

    /// Connects to `endpoints.current` anew (a fresh link); the WATCH, if any, is made again there.
    private func moveToCurrent() throws {
        close()
        link = Link()
        outstanding.removeAll()
        (socket, monitor, poller) = try Self.open(context, endpoint, curve)
        resubscribe()
    }

    /// The id of the last request `request` sent.
    private var lastRequestID: UInt32 = 0

    private func requestOnce(_ message: WireProtocol.Message, timeout: Duration) throws -> WireProtocol.Message {
        let id = try send(message)
        lastRequestID = id
        guard let reply = try reply(to: id, until: .now + timeout) else {
            outstanding[id] = nil
            throw ClientError.timeout(message.command, endpoint, connected: link.isUp)
        }
        return reply
    }

    /// Checks `message` against the protocol's limits and field rules, sends it, and returns its
    /// request id for `reply(to:until:)`. A message that breaks them is not sent: `invalidRequest`.
    /// While the coordinator is unreachable the message waits in the socket and goes when it is back.
    public func send(_ message: WireProtocol.Message) throws -> UInt32 {
        let (id, frames) = try encode(message)
        try send(frames, id: id, command: message.command)
        return id
    }

    /// `message` checked (`invalidRequest` if it breaks the limits) and encoded with a new request id.
    func encode(_ message: WireProtocol.Message) throws -> (id: UInt32, frames: [[UInt8]]) {
        let id = nextRequest
        let frames: [[UInt8]]
        do throws(WireError) {
            frames = try WireCodec.encodeChecked(message, requestID: id)
        } catch {
            throw ClientError.invalidRequest(message.command, RequestProblem.describe(error, in: message))
        }
        nextRequest = nextRequest == .max ? 1 : nextRequest + 1
        return (id, frames)
    }

    /// Sends the encoded request `id` — again, after a lost connection, the same bytes — and waits for
    /// its reply anew. Never blocks: with unlimited high-water marks a send only fails when libzmq dropped
    /// the connection itself, which it does after a failed handshake (a protocol error: our keys, or a
    /// peer that is no coordinator) and never reconnects; a DEALER without a connection would wait for
    /// one for ever (DroppedHandshakeTests).
    func send(_ frames: [[UInt8]], id: UInt32, command: Command) throws {
        _ = try pumpMonitor()   // a loss before this send is not this request's
        var reopened = false
        while try !socket.sendMultipart(frames, flags: .dontWait) {
            _ = try pumpMonitor()   // the handshake's event comes before libzmq drops the connection
            if let why = link.authProblem { throw ClientError.authenticationFailed(endpoint, why) }
            // Dropped for another protocol error: once more on a fresh socket, then it is no coordinator.
            guard !reopened else { throw ClientError.notACoordinator(endpoint) }
            reopened = true
            link.losses += 1   // what waited in the dropped connection is gone with it
            if link.isUp { link.downSince = .now }
            link.isUp = false
            link.isConnected = false
            link.connectedSince = nil
            try reopen()
            resubscribe()   // a WATCH sent before went with the dropped connection
        }
        outstanding[id] = Sent(command: command, losses: link.losses, refused: link.refusedFrames)
    }

    /// Stops waiting for the reply to request `id` (a late one is then skipped).
    func forget(_ id: UInt32) { outstanding[id] = nil }

    /// Checks `message` as `send` would, without sending it: nil if it may be sent, else what is wrong.
    public static func problem(with message: WireProtocol.Message) -> ClientError? {
        do throws(WireError) {
            _ = try WireCodec.encodeChecked(message)
            return nil
        } catch {
            return .invalidRequest(message.command, RequestProblem.describe(error, in: message))
        }
    }

    /// The reply to request `id`, waiting until `deadline` (nil: no limit); nil when the deadline passed
    /// first (the request stays outstanding: call again to wait longer). Throws `server` for an ERROR
    /// reply; `connectionLost` once the connection ended after the request was sent (the reply cannot
    /// come; ask again when `link.isUp`); `replyTooLarge` or `malformedReply` for a reply this client
    /// cannot accept.
    public func reply(to id: UInt32, until deadline: ContinuousClock.Instant?) throws -> WireProtocol.Message? {
        let sent = outstanding[id] ?? Sent(command: .heartbeat, losses: link.losses, refused: link.refusedFrames)
        while true {
            if let why = link.authProblem {
                outstanding[id] = nil
                throw ClientError.authenticationFailed(endpoint, why)
            }
            if !link.wasEverUp, link.refusedConnects >= 2, let since = link.refusedSince,
               ContinuousClock.now - since >= unreachableBound {
                outstanding[id] = nil
                throw ClientError.unreachable(endpoint)
            }
            if let check = notACoordinatorCheck(), check <= .now {
                outstanding[id] = nil
                throw ClientError.notACoordinator(endpoint)
            }
            if link.refusedFrames > sent.refused {
                outstanding[id] = nil
                throw ClientError.replyTooLarge(sent.command, endpoint, size: nil)
            }
            if link.losses > sent.losses {
                outstanding[id] = nil
                throw ClientError.connectionLost(sent.command, endpoint)
            }
            // (issue 29) Several coordinators: one whose connection stays down for `nextEndpointAfter` is
            // left for the next (`request`), as one never reached is.
            let giveUp = endpoints.isSeveral && !link.isUp ? link.downSince.map { $0 + Self.nextEndpointAfter } : nil
            if let giveUp, giveUp <= .now {
                outstanding[id] = nil
                throw ClientError.unreachable(endpoint)
            }
            // Wake for the handshake check too: a silent peer sends no event.
            let check = [notACoordinatorCheck(), giveUp].compactMap { $0 }.min()
            let wake = check.map { c in deadline.map { min($0, c) } ?? c } ?? deadline
            guard let arrival = try next(until: wake) else {
                if let deadline, ContinuousClock.now >= deadline { return nil }
                continue
            }
            guard case .message(let envelope) = arrival else {
                // The link changed: check above. A link that keeps changing (reconnects every 100 ms)
                // must not outlast the deadline: `next` returns those before it looks at the clock.
                if let deadline, ContinuousClock.now >= deadline { return nil }
                continue
            }
            if envelope.requestID == watchRequest, case .event(let e) = envelope.message {
                pendingEvents.append(contentsOf: e.events)
                continue
            }
            guard envelope.requestID == id else { continue }   // a late reply to an earlier request
            outstanding[id] = nil
            if case .error(let e) = envelope.message { throw ClientError.server(e.code, e.message) }
            return envelope.message
        }
    }

    /// Waits until a connection to the coordinator is established; false if `deadline` (nil: no
    /// limit) passed first. libzmq keeps reconnecting by itself meanwhile.
    /// `refusedIsFinal`: a first connection refused for `unreachableAfter` throws `unreachable` (for a
    /// caller that would otherwise wait out a request timeout, not one waiting for a coordinator to come).
    public func waitForLink(until deadline: ContinuousClock.Instant?, refusedIsFinal: Bool = false) throws -> Bool {
        while true {
            _ = try pumpMonitor()
            if link.isUp { return true }
            if let why = link.authProblem { throw ClientError.authenticationFailed(endpoint, why) }
            let check = notACoordinatorCheck()
            if let check, check <= .now { throw ClientError.notACoordinator(endpoint) }
            var left: Duration?
            if let deadline {
                left = deadline - .now
                if left! <= .zero { return false }
            }
            if let check { left = min(left ?? check - .now, check - .now) }
            // Refused again and again before ever connecting: nothing listens there (as `reply` says).
            if refusedIsFinal, !link.wasEverUp, link.refusedConnects >= 2, let since = link.refusedSince {
                let at = since + Self.unreachableAfter
                if at <= .now { throw ClientError.unreachable(endpoint) }
                left = min(left ?? at - .now, at - .now)
            }
            let p = Poller()
            p.add(monitor.socket)
            try p.poll(timeout: left)
        }
    }

    /// When a first connection that is still without its handshake shows the peer is no coordinator.
    private func notACoordinatorCheck() -> ContinuousClock.Instant? {
        guard !link.wasEverUp, link.isConnected, let since = link.connectedSince else { return nil }
        return since + Self.handshakeMissingAfter
    }

    // MARK: events

    /// Subscribes to state changes (the KVO analogue); read them with `nextEvents`. After a lost
    /// connection the subscription is made again (its events are numbered anew: PROTOCOL.md §5.22).
    public func watch(queue: String? = nil, run: String = "", opIDs: [String] = [], withResults: Bool = false,
                      progress: Bool = false) throws {
        var w = WireWatch()
        w.queue = queue ?? ""
        w.run = run
        w.opIds = opIDs
        w.withResults = withResults
        w.progress = progress
        watchRequest = nextRequest
        watchSettings = w
        _ = try request(.watch(w))
        // Sent again elsewhere (NOT_LEADER, another endpoint): the events carry the id of the one answered.
        watchRequest = lastRequestID
    }

    /// Events received so far or within `timeout`; empty when nothing came.
    public func nextEvents(timeout: Duration) throws -> [WireEvent] {
        if !pendingEvents.isEmpty {
            defer { pendingEvents.removeAll() }
            return pendingEvents
        }
        let deadline = ContinuousClock.now + timeout
        while let arrival = try next(until: deadline) {
            if case .message(let envelope) = arrival, envelope.requestID == watchRequest, case .event(let e) = envelope.message {
                return e.events
            }
        }
        return []
    }

    // MARK: receiving and the monitor

    private enum Arrival {
        case message(Envelope)
        /// The monitor reported a lost or refused connection, or a first one still without its handshake.
        case linkChanged
    }

    /// The next message or link change; nil at `deadline`.
    private func next(until deadline: ContinuousClock.Instant?) throws -> Arrival? {
        var monitorReady = true   // events may have come while nobody polled
        while true {
            if monitorReady, try pumpMonitor() { return .linkChanged }
            if let frames = try socket.receiveMultipart(flags: .dontWait) {
                switch WireCodec.decode(frames) {
                case .success(let envelope):
                    if isSlowStreamNotice(envelope) { watchRestarts += 1; resubscribe(); continue }
                    if !fence.admit(envelope.message) { continue }   // a replaced leader's late message
                    return .message(envelope)
                case .failure(let error): try undecodable(frames, error)
                }
                continue
            }
            var left: Duration?
            if let deadline {
                left = deadline - .now
                if left! <= .zero { return nil }
            }
            try poller.poll(timeout: left)
            monitorReady = poller.isReadable(1)
        }
    }

    /// A message that does not decode: an error if it answers an outstanding request (or has no
    /// readable header); a stale one is dropped.
    private func undecodable(_ frames: [[UInt8]], _ error: WireError) throws {
        let requestID = WireCodec.peekHeader(frames)?.requestID
        var command: Command?
        if let requestID {
            guard let sent = outstanding[requestID] else { return }
            outstanding[requestID] = nil
            command = sent.command
        }
        if case .bodyTooLarge(let size, _) = error { throw ClientError.replyTooLarge(command, endpoint, size: size) }
        throw ClientError.malformedReply(command, "\(error)")
    }

    /// Handles every monitor event that is ready; true if a connection was lost or refused (or a
    /// first one was made, which starts the handshake check).
    private func pumpMonitor() throws -> Bool {
        var changed = false
        while let event = try monitor.receive(flags: .dontWait) {
            switch event.kind {
            case .handshakeFailedAuth, .handshakeFailedProtocol:
                if let why = handshake.observe(event, at: .now) {
                    link.authProblem = why
                    changed = true
                }
            case .handshakeSucceeded:
                _ = handshake.observe(event, at: .now)
                link.connectedSince = nil
                let again = link.wasEverUp
                link.isUp = true
                link.wasEverUp = true
                link.downSince = nil
                if again { resubscribe() }
            case .connected:
                link.isConnected = true
                if !link.wasEverUp && link.connectedSince == nil {
                    link.connectedSince = .now
                    changed = true   // the handshake check now has a deadline to wake for
                }
                link.refusedSince = nil
                link.refusedConnects = 0
            case .connectRetried where !link.wasEverUp && !link.isConnected:
                // libzmq retries a connection that failed (refused: nothing listens there).
                if link.refusedSince == nil { link.refusedSince = .now }
                link.refusedConnects += 1
                changed = true
            case .disconnected:
                // Only a connection that was made counts; failed attempts are libzmq's business.
                let wasUp = link.isUp
                guard wasUp || link.isConnected else { continue }
                if !wasUp {
                    // Closed before the handshake completed: nothing sent is lost (it waits in the socket
                    // for a connection that completes); enough of them in a row mean our keys are refused.
                    link.isConnected = false
                    link.connectedSince = nil
                    if let why = handshake.observe(event, at: .now) {
                        link.authProblem = why
                        changed = true
                    }
                    continue
                }
                _ = handshake.observe(event, at: .now)
                link.isUp = false
                link.isConnected = false
                changed = true
                if try libzmqReconnects() {
                    link.losses += 1
                    link.downSince = .now
                } else if wasUp {
                    // libzmq closed it over a protocol error (a frame over ZMQ_MAXMSGSIZE) and will
                    // never reconnect this socket: replace it.
                    link.refusedFrames += 1
                    link.downSince = .now
                    try reopen()
                }
                // Else the peer failed the ZMTP handshake (not a coordinator): libzmq gives up, and a
                // request times out as "could not connect".
            default:
                break
            }
        }
        return changed
    }

    /// After a disconnect, libzmq announces its reconnection at once (connect-retried), unless it
    /// closed the connection itself over a protocol error. Other events read here only precede that.
    private func libzmqReconnects() throws -> Bool {
        let deadline = ContinuousClock.now + Self.reconnectNoticeGrace
        let p = Poller()
        p.add(monitor.socket)
        while true {
            let reconnecting: MonitorEvents = [.connectRetried, .connectDelayed, .connected]
            while let event = try monitor.receive(flags: .dontWait) {
                if reconnecting.contains(event.kind) { return true }
            }
            let left = deadline - .now
            if left <= .zero { return false }
            try p.poll(timeout: left)
        }
    }

    private func reopen() throws {
        close()
        (socket, monitor, poller) = try Self.open(context, endpoint, curve)
    }

    /// The coordinator ended our WATCH stream because we read it too slowly (PROTOCOL.md §13): an ERROR
    /// BUSY `watch too slow: resubscribe` with the stream's request id, once its ACK came.
    private func isSlowStreamNotice(_ envelope: Envelope) -> Bool {
        guard let id = watchRequest, envelope.requestID == id, outstanding[id] == nil,
              case .error(let e) = envelope.message, e.code == .busy, e.message == WireLimits.watchTooSlow else { return false }
        return true
    }

    /// The coordinator on the other end of a new connection knows no subscription of ours.
    private func resubscribe() {
        guard let w = watchSettings, let id = watchRequest else { return }
        // Its ACK carries the old request id and is skipped like any stale reply.
        _ = try? socket.sendMultipart(WireCodec.encode(.watch(w), requestID: id), flags: .dontWait)
    }
}
