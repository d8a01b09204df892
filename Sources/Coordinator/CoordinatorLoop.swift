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

    var core: Scheduler
    var peers = PeerTable()
    var outbox = Outbox()
    var eventStreams = EventStreams()
    /// Messages for peers whose pipe is full, and each client's budget (SlowReaders.swift).
    var backlog: OutputBacklog
    var nextBacklogTry: Int64 = 0
    private var nextEventFlush: Int64 = 0
    var slowStreamsEnded = 0, droppedSinceTrim = 0, clientsAtTrim = 0
    private var nextMemoryCheck: Int64 = 0
    private var actions: [Action] = []
    var stimulus: UInt64 = 0
    var now: Int64 = 0
    private var nextTick: Int64 = .max
    /// Collected replies, WAIT deadlines, WATCH streams.
    var clientBook = ClientBook()
    /// Heartbeats to idle workers, clock offsets, HELLO details, lost sessions.
    var workerLinks: WorkerLinks
    /// `--ha` (Standby.swift): the role the election gave; nil without `--ha` (the loop always serves).
    var ha: LeadershipState?
    /// How long the loop holds without reading its socket (LoopPulse.swift): passes over budget, the
    /// longest for /metrics, and the coordinator's own pauses, which are not counted as workers' silence.
    var pulse = LoopPulse(now: CoordinatorClock.nowMicros())
    /// Where a hold over budget went, with `OPQ_LOOP_TRACE=1` (HoldTrace.swift).
    var trace = HoldTrace()
    /// The last message handled and its size in operations (a SUBMIT's), for the over-budget log line.
    private var lastInput: (command: Command, ops: Int)?
    /// Repeated warnings about one peer and cause are counted, not logged each time.
    var logLimiter = LogLimiter()
    /// The write-ahead journal (A5; Durability.swift), nil when ephemeral; this pass's records; client
    /// messages waiting for theirs to be durable.
    var journal: JournalStore?
    var journalBatch = JournalBatch()
    var gate = DurabilityGate()
    let durabilityWake = DurabilityWake()
    var journalHealthy = true
    var journalBehind = false
    /// The output of finished attempts (LOGS, PROTOCOL.md §5.26): bounded, not journalled.
    var logStore: LogStore
    /// Keys and roles (PROTOCOL.md §12); nil without CURVE (loopback, or `--insecure`).
    var loopAccess: LoopAccess?
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
        workerLinks = WorkerLinks(heartbeatInterval: Int64(config.heartbeatIntervalMs) * 1000)
        backlog = OutputBacklog(perClient: config.clientOutputBytes, total: config.clientOutputTotalBytes)
        var coreConfig = SchedulerConfig()
        coreConfig.heartbeatIntervalMicros = Int64(config.heartbeatIntervalMs) * 1000
        coreConfig.missedHeartbeats = Int64(config.liveness)
        coreConfig.maxPrefetch = config.maxPrefetch
        coreConfig.startTimeoutMicros = config.startTimeoutMs * 1000
        coreConfig.retainMicros = config.retainMicros
        coreConfig.retainRuns = config.retainRuns
        coreConfig.retainBytes = config.retainBytes
        coreConfig.journal = config.stateDirectory != nil
        if config.metricsBoard != nil { coreConfig.metricsSampleCapacity = 100_000 }
        (core, journal) = try Self.recover(config, coreConfig, waker: waker, wake: durabilityWake, logger: logger)
        replication.sync = SyncPoint(records: journal?.durableRecords ?? 0, sequence: 0)
        logStore = LogStore(capacity: config.logStoreBytes)
        socket = try Socket(context, type: .router)
        if let access = config.access {
            // The ZAP handler is bound already (CoordinatorServer), so no key gets in unchecked.
            try socket.useCurveServer(access.keys, domain: "opqueue")
            let (list, generation) = access.current()
            loopAccess = LoopAccess(list: list, generation: generation)
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
            let waitUntil = min(nextTick, clientBook.nextDeadline ?? .max, workerLinks.nextHeartbeat, now + 1_000_000,
                                backlog.isEmpty ? .max : nextBacklogTry, eventStreams.isEmpty ? .max : nextEventFlush,
                                ha?.deadline ?? .max, replicationDeadline ?? .max)
            try pass(waitUntil: waitUntil)
        }
    }

    /// What the journal's recovery asks once the loop serves (at start, or with `--ha` when it first
    /// leads): workers that were connected get their window to re-register with what they hold.
    func startServing() {
        if journal != nil {
            now = CoordinatorClock.nowMicros()
            for s in core.journalledWorkerSessions() { peers.restore(session: s.id, who: WorkerIdentity(name: s.name, owner: s.owner)) }
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
        if now >= nextTick && replication.standby == nil {
            nextTick = .max
            feed(.tick)
        }
        refreshAccess()
        expireWaits()
        if !backlog.isEmpty { drainBacklog() }
        trace.mark("waits, backlog", now: CoordinatorClock.nowMicros())
        flush()
        trace.mark("flush", now: CoordinatorClock.nowMicros())
        commitJournal()
        replicationPass()
        trace.mark("journal commit", now: CoordinatorClock.nowMicros())
        for w in workerLinks.idleWorkers(now: now) { send(.heartbeat, toWorker: w) }
        if now >= nextPeerSweep { forgetIdlePeers() }
        if now >= nextMetricsPublish { publishMetrics(); nextMetricsPublish = now + 1_000_000 }
        if now >= nextMemoryCheck { releaseMemoryAfterSlowReaders(); nextMemoryCheck = now + 5_000_000 }
        retainedMemory.check(retained: core.retainedBytes, budget: core.config.retainBytes)
        trace.mark("heartbeats, metrics", now: CoordinatorClock.nowMicros())
    }

    private var retainedMemory = RetainedMemory()

    var nextMetricsPublish: Int64 = 0

    /// Bounded peer state (docs/ARCHITECTURE.md, "What a peer can make it hold"): clients idle past `clientIdleMicros`
    /// that are owed nothing, and lost workers' routing after `lostWorkerKeepMicros`, are forgotten.
    private var nextPeerSweep: Int64 = 0
    private func forgetIdlePeers() {
        let owed = clientBook.clientsOwed
        _ = peers.forgetIdleClients(idleSince: now - config.clientIdleMicros) { owed.contains($0) }
        for w in peers.forgetLostWorkers(lostBefore: now - config.lostWorkerKeepMicros) {
            workerLinks.forgot(w)
            loopAccess?.workerKeys[w] = nil
        }
        forgetClientKeys()
        nextPeerSweep = now + max(config.clientIdleMicros / 2, 100_000)
    }

    /// Graceful stop: every worker hears DISCONNECT so it reconnects to the next coordinator at once.
    func shutdown() {
        leaveLeader()
        // A standby's workers are another leader's now (it told them DISCONNECT when they spoke).
        for id in peers.workerIDs where !workerLinks.isLost(id) && (ha == nil || ha!.stamp > 0) {
            var d = WireDisconnect()
            d.reason = "coordinator shutting down"
            send(.disconnect(d), toWorker: id)
        }
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
            if loopAccess == nil {
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
            case .failure(let error): reject(error, frames: body, from: routing)
            }
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
        flush()
        commitJournal()
        for w in workerLinks.notSentTo(since: now - workerLinks.heartbeatInterval / 4) { send(.heartbeat, toWorker: w) }
    }

    /// A message we could not decode: the sender gets an ERROR naming the problem; nothing else changes.
    private func reject(_ error: WireError, frames: [[UInt8]], from routing: [UInt8]) {
        let header = WireCodec.peekHeader(frames)
        if let suppressed = logLimiter.admit("malformed \(hex(routing)) \(error.code)", now: now) {
            logger.warning("rejected a malformed message from peer \(hex(routing)): \(clipped(error.description))\(heldBack(suppressed, "more like it not logged"))")
        }
        if header?.command == .hello {
            // A registration that fails the checks gets REJECT, so the worker stops instead of retrying.
            var r = WireReject()
            r.code = error.code
            r.reason = error.description
            send(.reject(r), to: routing)
            return
        }
        sendError(error.code, error.description, requestID: header?.requestID ?? 0,
                  command: header?.commandCode ?? 0, to: routing)
    }

    private func handle(_ envelope: Envelope, from routing: [UInt8], body: [[UInt8]], user: String?) {
        let rid = envelope.requestID
        var principal: Principal?
        if loopAccess != nil {
            guard let p = authorize(envelope, from: routing, user: user, inProcess: config.internalEndpoint != nil) else { return }
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
        case .submit(let s) where !s.submissionKey.isEmpty:
            // A retry is recognised by its key and the exact bytes it carries (PROTOCOL.md §5.13).
            let client = peers.client(for: routing, now: now)
            if let p = principal { noteKey(p.key, client: client, name: p.name) }
            let key = SubmissionKey(key: s.submissionKey, digest: SubmissionDigest.of(body.last ?? []))
            clientRequest(envelope.message, ref: ClientRef(client: client, request: UInt64(rid)), key: key, principal: principal)
        case .hello(let h): workerHello(h, from: routing, principal: principal)
        case .heartbeat where followerMessage(envelope.message, from: routing),
             .disconnect where followerMessage(envelope.message, from: routing):
            return
        case .credit, .started, .progress, .finished, .heartbeat, .disconnect:
            workerMessage(envelope.message, from: routing)
        case .ha(let h):
            send(.haReply(haReply(stepDown: h.stepDown)), to: routing, requestID: rid)
        case .submit, .cancelOps, .queue, .setPriority, .status, .why, .workers, .watch, .wait, .runs, .logs, .story:
            let client = peers.client(for: routing, now: now)
            if let p = principal { noteKey(p.key, client: client, name: p.name) }
            clientRequest(envelope.message, ref: ClientRef(client: client, request: UInt64(rid)), principal: principal)
        case .follow(let f): follow(f, from: routing, requestID: rid)
        case .replicaAck(let a): replicaAck(a, from: routing)
        case .promote: promoteRequest(from: routing, requestID: rid)
        case .welcome, .reject, .dispatch, .cancel, .submitReply, .ack, .statusReply, .whyReply,
             .workersReply, .event, .waitReply, .runsReply, .logsReply, .storyReply, .haReply, .error, .journal, .snapshot:
            sendError(.unexpected, "\(envelope.message.command) is sent by the coordinator, not to it",
                      requestID: rid, command: envelope.message.command.rawValue, to: routing)
        }
    }

    private func workerHello(_ h: WireHello, from routing: [UInt8], principal: Principal?) {
        // Sessions this HELLO replaces are lost in the core together with the join, so the parts they
        // held are taken back from the new session's `running` before anything dispatches them again.
        var replaced: [UInt64] = []
        if case .worker(let old)? = peers.role(of: routing), !workerLinks.isLost(old) {
            endSession(old, reason: "re-registered on the same connection", tell: false)
            replaced.append(old)
        }
        let owner = principal.map { Principal.pinTagPrefix + $0.name } ?? h.name
        let who = WorkerIdentity(name: h.name, owner: owner)
        if let old = peers.openSession(of: who), !workerLinks.isLost(old) {
            // The same worker restarted (or a second one given the same --name): the new session takes
            // its identity, and whatever the old one held runs again.
            if let suppressed = logLimiter.admit("replaced \(h.name)", now: now) {
                logger.warning("worker \(WorkerName.sessionText(old)) '\(clipped(h.name))' replaced by a new connection with the same name\(heldBack(suppressed, "more times since the last such line"))")
            }
            endSession(old, reason: "replaced by a new connection of worker '\(h.name)'", tell: true)
            replaced.append(old)
        }
        let id = peers.newWorker(routing: routing, who: who)
        var clock = WorkerClock()
        clock.observe(sent: h.sentUs, receivedAt: now)
        // With keys every worker also carries "key:NAME", so a submitter can pin ops to a key (PROTOCOL.md §12).
        let tags = principal.map { h.tags + [$0.pinTag] } ?? h.tags
        if let p = principal { noteKey(p.key, worker: id, name: p.name) }
        // The attempts it still holds and those it finished while we were away (A5): taken back, not re-run.
        func started(_ at: Int64) -> Int64? { at > 0 ? clock.convert(at, now: now) ?? now : nil }
        let running = h.running.map { p in
            WireCoreMapping.heldPart(opID: p.opID, part: p.part, attempt: p.attempt, startedAt: started(p.atUs))
        }
        let finished = h.finished.map { r in
            FinishedPart(part: WireCoreMapping.heldPart(opID: r.opID, part: r.part, attempt: r.attempt, startedAt: started(r.startedAtUs)),
                         outcome: Outcome(wire: r), at: clock.convert(r.atUs, now: now))
        }
        workerLinks.opened(id, info: WorkerLinks.Info(name: h.name, tags: tags, kinds: h.kinds, connectedAt: now), clock: clock, now: now)
        feed(.workerJoined(WorkerHello(worker: id, name: h.name, slots: Int(h.slots), tags: tags,
                                       kinds: h.kinds, credit: 0, prefetch: h.hasPrefetch ? Int(h.prefetch) : nil,
                                       running: running, finished: finished, replaces: replaced, owner: owner)))
        // (1.5) Their output, as a FINISHED's would be kept (a coordinator that restarted has none from
        // before) — only for attempts this worker may claim: a refused claim's output is never shown.
        for r in h.finished where r.carriesOutput && core.mayClaim(r.opID, by: id) {
            keepOutput(r, worker: id, at: clock.convert(r.atUs, now: now) ?? now)
        }
        var w = WireWelcome()
        w.workerID = WorkerName.text(id)
        w.heartbeatIntervalMs = config.heartbeatIntervalMs
        w.liveness = config.liveness
        send(.welcome(w), to: routing)
        // Up to 100 join lines per window (a cluster starting), then a count.
        if let suppressed = logLimiter.admit("joined", burst: 100, now: now) {
            logger.info("worker \(WorkerName.sessionText(id)) '\(clipped(h.name))' joined: \(h.slots) slots, kinds \(clipped(h.kinds)), tags \(clipped(h.tags))\(heldBack(suppressed, "more registrations not logged"))")
        }
    }

    /// Ends the shell's side of a worker session that a new HELLO replaces (the core loses it with that
    /// HELLO: `WorkerHello.replaces`): late messages from it are fenced, and with `tell` it hears DISCONNECT.
    private func endSession(_ id: UInt64, reason: String, tell: Bool) {
        if tell {
            var d = WireDisconnect()
            d.reason = reason
            send(.disconnect(d), toWorker: id)
        }
        workerLinks.markLost(id)          // what its HELLO said goes with it
        peers.workerLost(id, now: now)
    }

    private func workerMessage(_ message: Message, from routing: [UInt8]) {
        guard case .worker(let w)? = peers.role(of: routing) else {
            if case .heartbeat = message { return }   // a watching client's heartbeat
            if case .disconnect = message, case .client(let c)? = peers.role(of: routing) {
                unwatch(c)
                return
            }
            sendError(.unexpected, "\(message.command) before HELLO: register first", requestID: 0,
                      command: message.command.rawValue, to: routing)
            return
        }
        switch message {
        case .credit(let c): feed(.credit(worker: w, grant: Int(c.credit)))
        case .started(let s):
            // One clock lookup per message, not per record (this is every operation's path).
            var clock = workerLinks.clocks[w]
            clock?.observe(sent: s.sentUs, receivedAt: now)
            for p in s.parts {
                let at = clock?.convert(p.atUs, now: now)
                feed(.partStarted(WireCoreMapping.partRef(worker: w, p.opID, part: p.part, attempt: p.attempt, token: p.token, at: at)))
            }
            if let clock { workerLinks.update(clock, of: w) }
        case .progress(let p):
            for r in p.records {
                let fraction = r.total > 0 ? Double(r.done) / Double(r.total) : r.fraction
                feed(.progress(WireCoreMapping.partRef(worker: w, r.opID, part: r.part, attempt: r.attempt), fraction: fraction,
                               message: r.message))
            }
        case .finished(let f):
            var clock = workerLinks.clocks[w]
            clock?.observe(sent: f.sentUs, receivedAt: now)
            for (i, r) in f.records.enumerated() {
                // The credit rides on the last record so the core applies it once, fenced or not.
                let grant = i == f.records.count - 1 ? Int(f.credit) : 0
                if r.startedAtUs > 0 {
                    // Started and finished between two reports: its start rides on the record.
                    let started = clock?.convert(r.startedAtUs, now: now)
                    feed(.partStarted(WireCoreMapping.partRef(worker: w, r.opID, part: r.part, attempt: r.attempt, token: r.token, at: started)))
                }
                let at = clock?.convert(r.atUs, now: now)
                // (1.5) Output tails, when the record has any (a noop's has none: nothing is done for it).
                if r.carriesOutput { keepOutput(r, worker: w, at: at ?? now) }
                feed(.partFinished(WireCoreMapping.partRef(worker: w, r.opID, part: r.part, attempt: r.attempt, token: r.token, at: at),
                                   Outcome(wire: r), grant: grant))
            }
            if let clock { workerLinks.update(clock, of: w) }
        case .heartbeat: feed(.heartbeat(worker: w))
        case .disconnect(let d):
            if !workerLinks.isLost(w) {
                feed(.workerLost(worker: w, reason: "worker left: \(d.reason)"))
                if let suppressed = logLimiter.admit("left", burst: 100, now: now) {
                    logger.info("worker \(WorkerName.sessionText(w)) left: \(clipped(d.reason))\(heldBack(suppressed, "more departures not logged"))")
                }
            }
            peers.forgetWorker(w)
            workerLinks.closed(w)
            return
        default: return
        }
        if workerLinks.isLost(w) {
            // Its messages were fenced by the core; make it start a new session.
            var d = WireDisconnect()
            d.reason = "you were declared lost; register again"
            send(.disconnect(d), to: routing)
        }
    }

    // MARK: core

    /// Feeds one input to the core and carries out what it asks for.
    func feed(_ event: Event) {
        stimulus &+= 1
        if trace.enabled { trace.mark("shell", now: CoordinatorClock.nowMicros()) }
        core.handle(Input(stimulus: stimulus, now: now, event), into: &actions)
        if trace.enabled { trace.mark(HoldTrace.coreStep(event), now: CoordinatorClock.nowMicros()) }
        for action in actions { apply(action) }
        if trace.enabled { trace.mark("apply actions", now: CoordinatorClock.nowMicros()) }
        // Keep the buffer between inputs, unless one input made a huge fan-out (an event to thousands
        // of watchers): that much is not kept for ever.
        if actions.capacity > 1 << 16 { actions = [] } else { actions.removeAll(keepingCapacity: true) }
    }

    private func apply(_ action: Action) {
        switch action {
        case .dispatch(let d):
            outbox.dispatch(WireCoreMapping.dispatchRecord(d), to: d.worker)
        case .cancelOnWorker(let w, let op, _, let attempt, let reason):
            outbox.cancel(op: op, attempt: attempt, reason: reason, on: w)
        case .reply(let ref, let reply):
            deliver(reply, to: ref)
        case .publish(let p):
            // Made and encoded once for every watcher of the stream.
            eventStreams.add(EventBody(event: publishedEvent(p.event, withResult: p.withResult)), stream: p.stream, watchers: p.watchers)
        case .journal(let record):
            journalBatch.add(JournalEntry(at: now, record: record))
        case .scheduleTick(let at):
            nextTick = min(nextTick, at)
        case .refusedClaims(let w, let count, let example):
            // Once per session: a worker that claims what it was not sent is broken or hostile.
            let key = loopAccess?.keyNameOfWorker[WorkerName.number(w)].map { " (key '\($0)')" } ?? ""
            logger.warning("worker \(WorkerName.sessionText(w)) '\(clipped(workerLinks.info[w]?.name ?? "?"))'\(key) claimed \(count) attempt(s) it may not claim; refused, they run as if never claimed. First: \(clipped(example))")
        case .disconnectWorker(let w, let reason):
            let info = workerLinks.markLost(w)
            peers.workerLost(w, now: now)
            if let suppressed = logLimiter.admit("lost", burst: 100, now: now) {
                logger.warning("worker \(WorkerName.sessionText(w)) '\(clipped(info?.name ?? "?"))' lost: \(reason)\(heldBack(suppressed, "more losses not logged"))")
            }
            var d = WireDisconnect()
            d.reason = reason
            send(.disconnect(d), toWorker: w)
        }
    }

    // MARK: outbound

    /// With more watchers than this, their events leave at most every `eventInterval` µs (coalesced),
    /// not in every pass: the cost of a pass is one message per watcher.
    static let eventFanOut = 64, eventInterval: Int64 = 10_000

    private func flush() {
        for b in outbox.drain() { send(b.message, toWorker: b.worker) }
        guard !eventStreams.isEmpty, eventStreams.waitingWatchers <= Self.eventFanOut || now >= nextEventFlush else { return }
        nextEventFlush = now + Self.eventInterval
        sendEvents(eventStreams.drain())
    }

    /// Each body to each watcher of its stream that is still in it, behind the header with the request
    /// id of its WATCH: the body's bytes are shared, not copied per watcher.
    private func sendEvents(_ deliveries: [EventStreams.Delivery]) {
        let placeholder = Message.event(WireEvents())
        let suffix = epochSuffix()
        for d in deliveries {
            let body = SharedBody(suffix.isEmpty ? d.body : d.body + suffix)
            for c in d.watchers {
                guard let w = clientBook.stream(of: c), w.stream == d.stream, let r = peers.routing(ofClient: c) else { continue }
                if !sendToClient(placeholder, body: body, to: r, requestID: w.requestID) { unwatch(c) }
            }
        }
    }

    func send(_ message: Message, toWorker id: UInt64) {
        guard let r = peers.routing(ofWorker: id) else { return }
        send(message, to: r)
        workerLinks.sent(to: id, now: now)
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
        send(.error(errorReply(code, text, command: command)), to: routing, requestID: requestID)
    }

    func errorReply(_ code: WireErrorCode, _ text: String, command: UInt8) -> WireErrorReply {
        var e = WireErrorReply()
        e.code = code
        e.message = text
        e.command = UInt32(command)
        return e
    }

    func unwatch(_ client: UInt64) {
        guard let w = clientBook.unwatch(client) else { return }
        if w.stream != 0 { eventStreams.left(w.stream) }
        feed(.unwatch(client: client))
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
