import Foundation
import Journal
import Logging
import SchedulerCore
import WireProtocol
import ZeroMQ

/// The coordinator's event loop: socket → core → socket on one thread (docs/ARCHITECTURE.md, "How an
/// event travels"). It turns frames into core inputs and core actions into frames; the bookkeeping the
/// wire needs lives in pure values it carries out (`PeerTable`, `ClientBook`, `WorkerLinks`, `Outbox`).
final class CoordinatorLoop {
    let endpoint: String
    let socket: Socket
    let poller = Poller()
    let waker: Waker
    let zmqContext: Context
    let logger: Logger
    let config: CoordinatorConfig

    /// The logic between the wire and the core (Shell/CoordinatorShell.swift): this loop feeds it what
    /// it reads and sends what it makes.
    var shell: CoordinatorShell
    /// Messages for peers whose pipe is full, and each client's budget (SlowReaders.swift).
    var backlog: OutputBacklog
    var nextBacklogTry: Int64 = 0
    var slowStreamsEnded = 0, droppedSinceTrim = 0, clientsAtTrim = 0
    private var nextMemoryCheck: Int64 = 0
    var now: Int64 = 0 { didSet { shell.now = now } }
    /// The shell's values the loop's own parts read (recovery, replication, slow readers, metrics).
    var core: Scheduler {
        _read { yield shell.core }
        _modify { yield &shell.core }
    }
    var peers: PeerTable { _read { yield shell.peers } }
    var logLimiter: LogLimiter {
        _read { yield shell.logLimiter }
        _modify { yield &shell.logLimiter }
    }
    /// `--ha` (Standby.swift): the role the election gave; nil without `--ha` (the loop always serves).
    var ha: LeadershipState?
    /// How long the loop holds without reading its socket (LoopPulse.swift): passes over budget, the
    /// longest for /metrics, and the coordinator's own pauses, which are not counted as workers' silence.
    var pulse = LoopPulse(now: CoordinatorClock.nowMicros())
    /// Where a hold over budget went, with `OPQ_LOOP_TRACE=1` (HoldTrace.swift).
    var trace = HoldTrace()
    /// The last message handled and its size in operations (a SUBMIT's), for the over-budget log line.
    private var lastInput: (command: Command, ops: Int)?
    /// The write-ahead journal (A5; Durability.swift), nil when ephemeral. The shell holds the client
    /// messages that wait for its records to be durable.
    var journal: JournalStore?
    let durabilityWake = DurabilityWake()
    var journalBehind = false
    /// With keys: the ROUTER's failed handshakes, so peers refused before the ZAP handler is asked (no
    /// keys at all: a mechanism mismatch) are logged as refusals too.
    var handshakeMonitor: SocketMonitor?
    /// Hot standby (issue 29, Replication/): this leader's standbys, or this standby's link.
    let replication = ReplicationState()

    init(config: CoordinatorConfig, context: Context, waker: Waker, logger: Logger) throws {
        self.config = config
        self.waker = waker
        zmqContext = context
        self.logger = logger
        ha = config.leadership.map { LeadershipState(box: $0) }
        backlog = OutputBacklog(perClient: config.clientOutputBytes, total: config.clientOutputTotalBytes)
        let coreConfig = CoordinatorShell.schedulerConfig(config)
        let core: Scheduler
        (core, journal) = try Self.recover(config, coreConfig, waker: waker, wake: durabilityWake, logger: logger)
        shell = CoordinatorShell(config: config, core: core, journalled: journal != nil, logger: logger)
        replication.sync = SyncPoint(records: journal?.durableRecords ?? 0, sequence: 0)
        socket = try Socket(context, type: .router)
        if let access = config.access {
            // The ZAP handler is bound already (CoordinatorServer), so no key gets in unchecked.
            try socket.useCurveServer(access.keys, domain: "opqueue")
            let (list, generation) = access.current()
            shell.access = ShellAccess(list: list, generation: generation)
        }
        // Tell us (EHOSTUNREACH) instead of silently dropping when a peer is gone, so departed
        // watchers are unsubscribed, and (EAGAIN) when a peer's pipe is full: a small high-water mark,
        // so what a peer that does not read costs is held by us, in bytes, within its budget
        // (`OutputBacklog`; nothing to a worker is dropped: its credit bounds what it is sent).
        try socket.set(.routerMandatory, true)
        // A worker that reconnects with the same routing id takes the old connection's place. Not with
        // keys: a peer choosing another's routing id must not take over its connection (and its work).
        try socket.set(.routerHandover, config.access == nil)
        try socket.set(.sendHighWaterMark, OutputBacklog.socketHighWaterMark)
        try socket.set(.receiveHighWaterMark, 0)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.bind(config.bind)
        endpoint = (try? socket.lastEndpoint()) ?? config.bind
        // The HTTP side's in-process connection: no handshake, so no User-Id (LoopAccess: view only).
        if let inproc = config.internalEndpoint { try socket.bind(inproc) }
        _ = poller.add(socket)
        _ = poller.add(waker)
        if config.access != nil {
            let monitor = try socket.monitor([.handshakeFailedProtocol])
            handshakeMonitor = monitor
            _ = poller.add(monitor.socket)
        }
        shell.facts = { [unowned self] in
            CoordinatorFacts(residentBytes: ProcessStats.residentBytes(), cpuMicros: ProcessStats.cpuMicros(),
                             standbys: self.standbyInfos(), replicationSyncing: self.replicationSyncing)
        }
        if trace.enabled {
            shell.traceMark = { [unowned self] in self.trace.mark($0, now: CoordinatorClock.nowMicros()) }
        }
    }

    /// Logs (rate-limited, counted) the peers the ROUTER refused during the handshake for want of keys.
    func drainHandshakeFailures() {
        guard let monitor = handshakeMonitor, let access = config.access else { return }
        while let event = try? monitor.receive(flags: .dontWait) {
            switch Int(event.value) {
            case ZMQProtocolError.mechanismMismatch:
                access.refused("a peer without keys (no CURVE handshake) on \(event.endpoint)", key: "mechanism \(event.endpoint)")
            case ZMQProtocolError.cryptographic:
                access.refused("a CURVE handshake that did not open (the peer has another coordinator key) on \(event.endpoint)", key: "crypto \(event.endpoint)")
            default:
                break   // malformed traffic: not an authentication matter
            }
        }
    }

    /// A burst of messages ends after this long, so dispatches, replies and heartbeats leave in time.
    static let burstMicros: Int64 = LoopPulse.defaultBudgetMicros
    /// A SUBMIT with at least this many operations is not sliced (the core checks and inserts a batch
    /// at once, all or nothing); the loop flushes and heartbeats its workers before applying it.
    static let longSubmitOps = 2048

    func run(stopRequested: () -> Bool) throws {
        // A standby (`--follow`) replays its leader's journal until promoted; with `--ha` a coordinator
        // serves once elected; otherwise it serves at once.
        if config.replication.follow != nil {
            now = CoordinatorClock.nowMicros()
            try startStandby()
        } else if ha == nil {
            startServing()
        }
        while !stopRequested() {
            now = CoordinatorClock.nowMicros()
            if ha != nil, !leadershipServes() { try notLeaderPass(); continue }
            let waitUntil = min(shell.nextWake, now + 1_000_000, backlog.isEmpty ? .max : nextBacklogTry,
                                ha?.deadline ?? .max, replicationDeadline ?? .max)
            try pass(waitUntil: waitUntil)
        }
    }

    /// What the journal's recovery asks once the loop serves (at start, or with `--ha` when it first
    /// leads): workers that were connected get their window to re-register with what they hold.
    func startServing() {
        if journal != nil {
            now = CoordinatorClock.nowMicros()
            shell.restoreWorkerSessions()
            feed(.recovered)
            if let until = core.holdingUntil {
                logger.info("dispatch waits up to \((until - now) / 1000) ms for the workers that were connected to re-register with what they hold")
            }
        }
    }

    /// One pass of the serving loop: wait, read a burst, (a standby: follow its leader), tick, flush,
    /// commit, replicate, heartbeat.
    private func pass(waitUntil: Int64) throws {
        aboutToRead()
        try poller.poll(timeout: .microseconds(max(0, waitUntil - now)))
        // Stamp what this wake-up handles with the time it arrived, not when the loop went to sleep.
        now = CoordinatorClock.nowMicros()
        pulse.woke(at: now)
        trace.woke(at: now)
        if poller.isReadable(1) { waker.drain(); releaseDurable(); trace.mark("durable replies", now: CoordinatorClock.nowMicros()) }
        if poller.isReadable(0) { try receiveBurst() }
        if handshakeMonitor != nil, poller.isReadable(2) { drainHandshakeFailures() }
        now = CoordinatorClock.nowMicros()
        if ha != nil, !leadershipServes() { return }   // the deadline passed during the burst: send nothing
        if replication.standby != nil { try followPass() }
        if config.replication.promotion.take() { _ = promote(reason: "promote()") }
        if let leader = config.replication.promotion.takeFollow() { followInstead(leader) }
        // A standby's core only replays: no timers (its leader's records say what they decided).
        shell.epoch = ha?.stamp ?? 0
        shell.tick(runTimers: replication.standby == nil)
        transmit()
        if !backlog.isEmpty { drainBacklog() }
        trace.mark("waits, backlog", now: CoordinatorClock.nowMicros())
        shell.flush()
        transmit()
        trace.mark("flush", now: CoordinatorClock.nowMicros())
        commitJournal()
        replicationPass()
        trace.mark("journal commit", now: CoordinatorClock.nowMicros())
        shell.heartbeatIdleWorkers()
        shell.forgetIdlePeers()
        transmit()
        if now >= nextMetricsPublish { publishMetrics(); nextMetricsPublish = now + 1_000_000 }
        if now >= nextMemoryCheck { releaseMemoryAfterSlowReaders(); nextMemoryCheck = now + 5_000_000 }
        retainedMemory.check(retained: core.retainedBytes, budget: core.config.retainBytes)
        trace.mark("heartbeats, metrics", now: CoordinatorClock.nowMicros())
    }

    private var retainedMemory = RetainedMemory()

    var nextMetricsPublish: Int64 = 0

    /// Graceful stop: every worker hears DISCONNECT so it reconnects to the next coordinator at once.
    func shutdown() {
        leaveLeader()
        // A standby's workers are another leader's now (it told them DISCONNECT when they spoke).
        for id in shell.peers.workerIDs where !shell.workerLinks.isLost(id) && (ha == nil || ha!.stamp > 0) {
            var d = WireDisconnect()
            d.reason = "coordinator shutting down"
            shell.send(.disconnect(d), toWorker: id)
        }
        transmit()
        closeJournal()
        logger.info("opcoord stopped; fenced messages: \(core.fencing.total)")
        try? socket.set(.linger, 500)
        handshakeMonitor?.close()
        socket.close()
    }

    // MARK: inbound

    /// Takes up to `receiveBurst` messages, but for at most `burstMicros` (the loop's budget): under a
    /// flood of costly messages the loop still flushes dispatches and heartbeats workers in time
    /// (liveness both ways). The clock is read before every message (tens of ns against µs per message),
    /// so one costly message — a large SUBMIT — is never followed by more in the same pass.
    private func receiveBurst() throws {
        let until = CoordinatorClock.nowMicros() + Self.burstMicros
        for n in 0..<config.receiveBurst {
            // Before every read, the first too: a hold that ends the burst is excused before the tick.
            if aboutToRead() > until, n > 0 { return }
            let frames: [[UInt8]], user: String?
            if shell.access == nil {
                guard let f = try socket.receiveMultipart(flags: .dontWait) else { return }
                (frames, user) = (f, nil)
            } else {
                // With CURVE every message carries the User-Id our ZAP handler gave its connection: the key.
                guard let r = try socket.receiveMultipart(flags: .dontWait, property: "User-Id") else { return }
                (frames, user) = (r.frames, r.property)
            }
            guard frames.count >= 2 else { continue }   // a ROUTER always prepends the routing id
            let routing = frames[0]
            let body = Array(frames[1...])
            trace.mark("receive", now: CoordinatorClock.nowMicros())
            switch WireCodec.decode(body) {
            case .success(let envelope):
                trace.mark("decode", now: CoordinatorClock.nowMicros())
                handle(envelope, from: routing, body: body, user: user)
                trace.mark("shell \(envelope.message.command)", now: CoordinatorClock.nowMicros())
            case .failure(let error): shell.reject(error, frames: body, from: routing)
            }
            transmit()
        }
    }

    /// The loop is about to read its socket: a hold over budget is counted, logged (rate-limited) and
    /// excused — the core does not count it as any worker's silence. Returns the time read.
    @discardableResult
    private func aboutToRead() -> Int64 {
        let t = CoordinatorClock.nowMicros()
        let held = t - pulse.lastRead
        let excess = pulse.reading(at: t)
        let traced = trace.reading(at: t, over: excess > 0)
        guard excess > 0 else { return t }
        now = t
        if let traced {
            let what = lastInput.map { $0.ops > 0 ? "\($0.command) of \($0.ops) operations" : "\($0.command)" } ?? "no message"
            let snapshot = journal?.snapshotInProgress == true ? "; a snapshot is being written" : ""
            logger.warning("trace: held \(held / 1000) ms (last input: \(what)\(snapshot)): \(traced)")
        }
        feed(.coordinatorPaused(micros: excess))
        if let suppressed = logLimiter.admit("pass over budget", burst: 5, now: now) {
            let what = lastInput.map { $0.ops > 0 ? "\($0.command) of \($0.ops) operations" : "\($0.command)" } ?? "no message"
            logger.warning("loop held \(held / 1000) ms without reading (budget \(pulse.budget / 1000) ms; last input: \(what)); workers' silence during it is not counted\(heldBack(suppressed, "more passes over budget not logged"))")
        }
        lastInput = nil
        return t
    }

    /// Before an input the loop cannot slice (a large SUBMIT): what is ready leaves now, and every worker
    /// not sent to within a quarter interval hears a HEARTBEAT, so none takes the pause for a dead
    /// coordinator (at most four such heartbeats per worker and interval, however many batches come).
    private func beforeLongInput() {
        shell.flush()
        transmit()
        commitJournal()
        shell.heartbeatQuietWorkers()
        transmit()
    }

    /// One decoded message: authorized against its key, refused by a standby, answered here when it is
    /// about leadership or replication, else the shell's.
    private func handle(_ envelope: Envelope, from routing: [UInt8], body: [[UInt8]], user: String?) {
        let rid = envelope.requestID
        var principal: Principal?
        if shell.access != nil {
            guard let p = shell.authorize(envelope, from: routing, user: user, inProcess: config.internalEndpoint != nil) else { return }
            principal = p
        }
        if let refusal = standbyRefusal(envelope.message) {
            // ERROR `unexpected`: a worker goes back to connecting and tries again later (REJECT would stop it).
            if case .replicaAck = envelope.message { return }
            sendError(.unexpected, refusal, requestID: rid, command: envelope.message.command.rawValue, to: routing)
            return
        }
        if case .watch = envelope.message { backlog.streamReopened(routing) }   // after `watch too slow`
        if case .submit(let s) = envelope.message {
            lastInput = (.submit, s.operations.count)
            if s.operations.count >= Self.longSubmitOps { beforeLongInput() }
        } else {
            lastInput = (envelope.message.command, 0)
        }
        switch envelope.message {
        case .heartbeat where followerMessage(envelope.message, from: routing),
             .disconnect where followerMessage(envelope.message, from: routing):
            return
        case .ha(let h):
            send(.haReply(haReply(stepDown: h.stepDown)), to: routing, requestID: rid)
        case .follow(let f): follow(f, from: routing, requestID: rid)
        case .replicaAck(let a): replicaAck(a, from: routing)
        case .promote: promoteRequest(from: routing, requestID: rid)
        default:
            shell.receive(envelope, from: routing, body: body, principal: principal)
            if config.testStallAfterSubmitMicros > 0, case .submit(let s) = envelope.message, s.run.hasPrefix("stall") {
                usleep(UInt32(clamping: config.testStallAfterSubmitMicros))
            }
        }
    }

    // MARK: outbound

    /// Sends what the shell made, in order. An EVENT whose watcher is gone ends its watch (which may
    /// make more to send).
    /// When the shell held a client message for the journal, the journal is asked to hurry.
    func transmit() {
        sendOutput()
        if shell.takeNewlyHeld() { releaseDurable() }
    }

    func sendOutput() {
        while shell.hasOutput {
            for o in shell.takeOutput() where !send(o.message, body: o.body, to: o.routing, requestID: o.requestID) {
                if let c = o.watcher { shell.unwatch(c) }
            }
        }
    }

    /// Feeds the core an input of the loop's own (a pause, recovery, promotion) and sends what follows.
    func feed(_ event: Event) {
        shell.feed(event)
        transmit()
    }

    /// Returns false when the peer is gone (ROUTER_MANDATORY says so). A peer whose pipe is full, or
    /// that has messages waiting, gets it queued behind them (`hold`). `body`: the message's body as
    /// bytes many peers are sent without a copy each (an EVENT body of a stream).
    @discardableResult
    func send(_ message: Message, body: SharedBody? = nil, to routing: [UInt8], requestID: UInt32 = 0) -> Bool {
        // (1.9) A leader's epoch on what it sends (fencing, PROTOCOL.md §14); without --ha nothing is added.
        let message = body == nil ? (ha?.stamp).map { $0 > 0 ? message.stamped(epoch: $0) : message } ?? message : message
        if case .event = message, backlog.discardsEvents(for: routing) { return true }   // its stream ended as too slow
        let frames = body.map { [routing, Header(command: message.command, requestID: requestID).bytes, $0.bytes] }
            ?? [routing] + WireCodec.encode(message, requestID: requestID)
        if backlog.holds(routing) { return hold(frames, message, to: routing) }
        func attempt() throws -> Bool {
            guard let body else { return try socket.sendMultipart(frames, flags: .dontWait) }
            return try socket.sendMultipart(Array(frames.dropLast()), last: body.frame(), flags: .dontWait)
        }
        do {
            if try attempt() { return true }
            // The pipe may only look full: libzmq learns that the peer read when it processes its
            // commands, which a send does only now and then. Asking for the events makes it do so.
            _ = try? socket.get(.events)
            if try attempt() { return true }
            return hold(frames, message, to: routing)
        } catch {
            logger.debug("send \(message.command) to \(hex(routing)) failed: \(error)")
            return false
        }
    }

    func sendError(_ code: WireErrorCode, _ text: String, requestID: UInt32, command: UInt8, to routing: [UInt8]) {
        send(.error(CoordinatorShell.errorReply(code, text, command: command)), to: routing, requestID: requestID)
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
