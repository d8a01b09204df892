import Journal
import Logging
import SchedulerCore
import WireProtocol

/// The coordinator's logic between the wire and the core, as a value (docs/ARCHITECTURE.md, "The
/// coordinator shell"): it takes decoded messages, the passing of time and the journal's progress, and says
/// what to send, what to journal and when to be woken. No socket, no clock, no thread: `now` is given,
/// and `CoordinatorLoop` carries out `takeOutput()` on its ROUTER socket. The embedded harness
/// (Tests/CoordinatorTests/EmbeddedCoordinator.swift) runs it with scripted workers and clients.
///
/// One pass of the loop, in this order (each step may rely on the ones before):
/// 1. `receive` each message of the burst (the loop checks leadership and replication first);
/// 2. `tick`: the core's timers, a reloaded allow file, WAIT deadlines;
/// 3. the loop retries what waits for slow peers (older messages first), then `flush`: dispatches,
///    cancels and events leave, coalesced per worker and stream;
/// 4. the loop hands `journalBatch` to the journal, then `durable(upTo:)` releases the replies that
///    waited for it;
/// 5. `heartbeatIdleWorkers` and, now and then, `forgetIdlePeers`.
struct CoordinatorShell {
    /// One message for the loop to send, in the order made.
    struct Outgoing {
        var routing: [UInt8]
        var message: Message
        var requestID: UInt32 = 0
        /// The message's body as bytes shared by many peers (an EVENT body of a stream).
        var body: SharedBody? = nil
        /// The client whose WATCH stream it belongs to: the loop ends the watch when the peer is gone.
        var watcher: UInt64? = nil
    }

    let config: CoordinatorConfig
    let logger: Logger

    var core: Scheduler
    /// The loop's reading of the clock, set before every input (the shell never reads a clock).
    var now: Int64 = 0
    var stimulus: UInt64 = 0
    private var actions: [Action] = []
    private var nextTick: Int64 = .max

    var peers = PeerTable()
    /// Collected replies, WAIT deadlines, WATCH streams.
    var clientBook = ClientBook()
    /// Heartbeats to idle workers, clock offsets, HELLO details, lost sessions.
    var workerLinks: WorkerLinks
    var outbox = Outbox()
    var eventStreams = EventStreams()
    private var nextEventFlush: Int64 = 0
    private var nextPeerSweep: Int64 = 0
    /// The output of finished attempts (LOGS, PROTOCOL.md §5.26): bounded, not journalled.
    var logStore: LogStore
    /// Repeated warnings about one peer and cause are counted, not logged each time.
    var logLimiter = LogLimiter()
    /// Keys and roles (PROTOCOL.md §12); nil without CURVE (loopback, or `--insecure`).
    var access: ShellAccess?

    /// Whether changes are journalled (A5): then client messages wait in `gate` until what they may
    /// reveal is durable.
    let journalled: Bool
    /// This pass's records, for the loop to hand to the journal.
    var journalBatch = JournalBatch()
    var gate = DurabilityGate()
    /// The journal's durable sequence as last told (`durable(upTo:)`).
    private(set) var durableSequence: UInt64 = 0
    private var newlyHeld = false
    /// Whether the journal writes (while it fails, changes are refused and messages are not held for it).
    var journalHealthy = true
    /// Why changes are refused now (a failing or lagging journal), nil while they are accepted.
    var changeRefusal: String?

    /// What STATUS says of the coordinator beyond the core (the loop's replication and process figures).
    var facts: () -> CoordinatorFacts = { CoordinatorFacts() }
    /// With `OPQ_LOOP_TRACE=1`: marks where a hold went (the loop's `HoldTrace`); nil otherwise.
    var traceMark: ((String) -> Void)?

    private var output: [Outgoing] = []

    init(config: CoordinatorConfig, core: Scheduler, journalled: Bool, logger: Logger) {
        self.config = config
        self.core = core
        self.journalled = journalled
        self.logger = logger
        workerLinks = WorkerLinks(heartbeatInterval: Int64(config.heartbeatIntervalMs) * 1000)
        logStore = LogStore(capacity: config.logStoreBytes)
    }

    /// The core's settings from the coordinator's.
    static func schedulerConfig(_ config: CoordinatorConfig) -> SchedulerConfig {
        var c = SchedulerConfig()
        c.heartbeatIntervalMicros = Int64(config.heartbeatIntervalMs) * 1000
        c.missedHeartbeats = Int64(config.liveness)
        c.maxPrefetch = config.maxPrefetch
        c.startTimeoutMicros = config.startTimeoutMs * 1000
        c.retainMicros = config.retainMicros
        c.retainRuns = config.retainRuns
        c.retainBytes = config.retainBytes
        c.journal = config.stateDirectory != nil
        if config.metricsBoard != nil { c.metricsSampleCapacity = 100_000 }
        return c
    }

    /// What was made to send since the last call, in order.
    mutating func takeOutput() -> [Outgoing] {
        guard !output.isEmpty else { return [] }
        defer { output.removeAll(keepingCapacity: output.capacity <= 4096) }
        return output
    }

    var hasOutput: Bool { !output.isEmpty }

    /// When the shell next needs a `tick` or a `heartbeatIdleWorkers` (`.max`: not for anything).
    var nextWake: Int64 {
        min(nextTick, clientBook.nextDeadline ?? .max, workerLinks.nextHeartbeat,
            eventStreams.isEmpty ? .max : nextEventFlush)
    }

    // MARK: time

    /// The core's timers (unless `runTimers` is false: a standby's core only replays), a reloaded allow
    /// file, and WAITs whose deadline passed.
    mutating func tick(runTimers: Bool = true) {
        if runTimers && now >= nextTick {
            nextTick = .max
            feed(.tick)
        }
        refreshAccess()
        expireWaits()
    }

    /// Answers waits whose deadline passed with what is known now.
    mutating func expireWaits() {
        for (ref, w) in clientBook.expired(now: now) {
            reply(.waitReply(waitReply(w, timedOut: true)), to: ref)
        }
    }

    /// Every live worker not sent to for an interval hears a HEARTBEAT (so it does not take our silence
    /// for a dead coordinator).
    mutating func heartbeatIdleWorkers() {
        for w in workerLinks.idleWorkers(now: now) { send(.heartbeat, toWorker: w) }
    }

    /// Before an input that holds the loop (a large SUBMIT): workers not sent to within a quarter
    /// interval hear a HEARTBEAT, so none takes the pause for a dead coordinator.
    mutating func heartbeatQuietWorkers() {
        for w in workerLinks.notSentTo(since: now - workerLinks.heartbeatInterval / 4) { send(.heartbeat, toWorker: w) }
    }

    /// Bounded peer state (docs/ARCHITECTURE.md, "What a peer can make it hold"): clients idle past
    /// `clientIdleMicros` that are owed nothing, and lost workers' routing after `lostWorkerKeepMicros`,
    /// are forgotten. Returns at once until its next sweep is due.
    mutating func forgetIdlePeers() {
        guard now >= nextPeerSweep else { return }
        let owed = clientBook.clientsOwed
        _ = peers.forgetIdleClients(idleSince: now - config.clientIdleMicros) { owed.contains($0) }
        for w in peers.forgetLostWorkers(lostBefore: now - config.lostWorkerKeepMicros) {
            workerLinks.forgot(w)
            access?.workerKeys[w] = nil
        }
        forgetClientKeys()
        nextPeerSweep = now + max(config.clientIdleMicros / 2, 100_000)
    }

    /// Workers that were connected when the journal was written keep their session numbers: they may
    /// re-register with what they hold (at start, or at promotion).
    mutating func restoreWorkerSessions() {
        for s in core.journalledWorkerSessions() { peers.restore(session: s.id, who: WorkerIdentity(name: s.name, owner: s.owner)) }
    }

    // MARK: core

    /// Feeds one input to the core and carries out what it asks for.
    /// The event is taken (`consuming`) and each action moved out of the buffer into `apply`: a copy of
    /// each, and its destruction, cost ≈ 1,000 instructions per op (docs/BENCHMARKS.md, "The shell's feed
    /// without copies").
    mutating func feed(_ event: consuming Event) {
        stimulus &+= 1
        traceMark?("shell")
        let input = Input(stimulus: stimulus, now: now, event)
        core.handle(input, into: &actions)
        traceMark?(HoldTrace.coreStep(input.event))
        var taken: [Action] = []
        swap(&taken, &actions)
        taken.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for i in buffer.indices {
                // Moved out, and a payload-free action put in its place for the array to destroy.
                apply((base + i).move())
                (base + i).initialize(to: .scheduleTick(at: .max))
            }
        }
        traceMark?("apply actions")
        // Keep the buffer between inputs, unless one input made a huge fan-out (an event to thousands
        // of watchers): that much is not kept for ever. (`apply` never feeds the core: `actions` is empty.)
        assert(actions.isEmpty, "apply fed the core while its actions were being carried out")
        if taken.capacity <= 1 << 16 {
            taken.removeAll(keepingCapacity: true)
            actions = taken
        }
    }

    private mutating func apply(_ action: consuming Action) {
        switch consume action {
        case .dispatch(let d):
            let worker = d.worker   // read before `d` is consumed: a read after would copy the dispatch
            outbox.dispatch(WireCoreMapping.dispatchRecord(d), to: worker)
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
            let key = access?.keyNameOfWorker[WorkerName.number(w)].map { " (key '\($0)')" } ?? ""
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

    /// What this pass made for workers (one DISPATCH and one CANCEL per worker, cut at the protocol's
    /// limits) and for watchers.
    mutating func flush() {
        for b in outbox.drain() { send(b.message, toWorker: b.worker) }
        guard !eventStreams.isEmpty, eventStreams.waitingWatchers <= Self.eventFanOut || now >= nextEventFlush else { return }
        nextEventFlush = now + Self.eventInterval
        sendEvents(eventStreams.drain())
    }

    /// Each body to each watcher of its stream that is still in it, behind the header with the request
    /// id of its WATCH: the body's bytes are shared, not copied per watcher.
    private mutating func sendEvents(_ deliveries: [EventStreams.Delivery]) {
        let placeholder = Message.event(WireEvents())
        let suffix = EpochField.bytes(epoch)
        for d in deliveries {
            let body = SharedBody(suffix.isEmpty ? d.body : d.body + suffix)
            for c in d.watchers {
                guard let w = clientBook.stream(of: c), w.stream == d.stream, let r = peers.routing(ofClient: c) else { continue }
                sendToClient(placeholder, body: body, to: r, requestID: w.requestID, watcher: c)
            }
        }
    }

    /// The leader's epoch every EVENT body ends with (PROTOCOL.md §14; 0 without `--ha`: nothing is
    /// added); set by the loop. The loop stamps the other messages as it sends them.
    var epoch: UInt64 = 0

    mutating func send(_ message: Message, toWorker id: UInt64) {
        guard let r = peers.routing(ofWorker: id) else { return }
        send(message, to: r)
        workerLinks.sent(to: id, now: now)
    }

    mutating func send(_ message: Message, body: SharedBody? = nil, to routing: [UInt8], requestID: UInt32 = 0, watcher: UInt64? = nil) {
        output.append(Outgoing(routing: routing, message: message, requestID: requestID, body: body, watcher: watcher))
    }

    /// Sends a message to a client now, or once the journal has made durable what it may reveal (A5: a
    /// client is told of a change only once a crash can no longer undo it). While the disk fails,
    /// messages go at once (reads and waits answer from memory; the changes they show are held for the
    /// disk, and acknowledgements of changes wait for it).
    mutating func sendToClient(_ message: Message, body: SharedBody? = nil, to routing: [UInt8], requestID: UInt32, watcher: UInt64? = nil) {
        guard journalled else { return send(message, body: body, to: routing, requestID: requestID, watcher: watcher) }
        let tag = gate.tag(batchHasRecords: !journalBatch.isEmpty)
        if (!journalHealthy && !Self.isAcknowledgement(message)) || gate.mayPass(tag, durable: durableSequence) {
            return send(message, body: body, to: routing, requestID: requestID, watcher: watcher)
        }
        gate.hold(DurabilityGate.Held(tag: tag, routing: routing, message: message, requestID: requestID, body: body, watcher: watcher))
        newlyHeld = true
    }

    /// Whether a message was held for the journal since the last call (the loop then asks the journal
    /// to hurry: a reply waits for it).
    mutating func takeNewlyHeld() -> Bool {
        defer { newlyHeld = false }
        return newlyHeld
    }

    /// Replies that acknowledge a change: they never go before it is durable.
    private static func isAcknowledgement(_ message: Message) -> Bool {
        switch message {
        case .submitReply, .ack: return true
        default: return false
        }
    }

    /// The journal made everything up to `sequence` durable (as the loop reads it, replication
    /// included): the held messages that waited for it are sent, in order.
    mutating func durable(upTo sequence: UInt64) {
        durableSequence = sequence
        guard !gate.isEmpty else { return }
        for h in gate.release(durable: durableSequence) {
            send(h.message, body: h.body, to: h.routing, requestID: h.requestID, watcher: h.watcher)
        }
    }

    /// The journal starts again (a deposed leader reloads it): the messages held for the old one's
    /// batches are dropped, never sent (nothing was acknowledged by them; their clients ask the next
    /// leader), and its sequence numbers mean nothing any more.
    mutating func dropHeldForDurability() {
        gate = DurabilityGate()
        durableSequence = 0
    }

    mutating func sendError(_ code: WireErrorCode, _ text: String, requestID: UInt32, command: UInt8, to routing: [UInt8]) {
        send(.error(Self.errorReply(code, text, command: command)), to: routing, requestID: requestID)
    }

    static func errorReply(_ code: WireErrorCode, _ text: String, command: UInt8) -> WireErrorReply {
        var e = WireErrorReply()
        e.code = code
        e.message = text
        e.command = UInt32(command)
        return e
    }

    /// Ends `client`'s WATCH (stopped, its key revoked, it is gone or reads too slowly).
    mutating func unwatch(_ client: UInt64) {
        guard let w = clientBook.unwatch(client) else { return }
        if w.stream != 0 { eventStreams.left(w.stream) }
        feed(.unwatch(client: client))
    }
}

/// What STATUS says of the coordinator that the shell does not hold: its process's figures and its
/// standbys (the loop's replication). The embedded harness leaves them empty.
struct CoordinatorFacts {
    var residentBytes: UInt64 = 0
    var cpuMicros: UInt64 = 0
    var standbys: [WireStandbyInfo] = []
    var replicationSyncing = false
}
