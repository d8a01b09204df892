import Foundation
import Logging
import OpSpec
import WireProtocol
import WorkerRuntime
import ZeroMQ

/// One connection to the coordinator, from HELLO to its end. What the worker holds outlives the
/// session (`HeldParts`): when the coordinator goes silent, says DISCONNECT or answers ERROR
/// `UNEXPECTED`, the parts keep running, and the next HELLO lists them (PROTOCOL.md §7.4). Only the
/// worker's own shutdown and a REJECT cancel them.
final class WorkerSession {
    enum End {
        case stopped
        case rejected(String)
        case lost(String, wasRegistered: Bool)
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

    private var workerID: String?
    private var heartbeatMicros: Int64
    private var liveness: Int64
    private var lastReceived: Int64
    private var lastSent: Int64 = 0
    /// What the worker holds across sessions; lent to the session by `run`.
    private var held: HeldParts

    init(agent: WorkerAgent) throws {
        self.agent = agent
        heartbeatMicros = Int64(agent.config.heartbeatIntervalMs) * 1000
        liveness = Int64(agent.config.liveness)
        lastReceived = Self.now()
        held = HeldParts(capacity: 0)
        socket = try Socket(agent.context, type: .dealer)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.set(.sendHighWaterMark, 0)
        try socket.set(.receiveHighWaterMark, 0)
        if let curve = agent.config.curve { try socket.useCurveClient(curve) }
        handshake = HandshakeWatch(keyed: agent.config.curve != nil, patience: .seconds(2))
        monitor = try socket.monitor(HandshakeWatch.events)
        try socket.connect(agent.config.connect)
        _ = poller.add(socket)
        _ = poller.add(agent.waker)
        _ = poller.add(monitor.socket)
    }

    func close() {
        monitor.close()
        socket.close()
    }

    /// Why the coordinator refuses our keys (or their absence), if the handshake said so.
    private func handshakeRefusal() throws -> String? {
        while let event = try monitor.receive(flags: .dontWait) {
            if let why = handshake.observe(event, at: .now) { return "authentication failed: " + why }
        }
        return nil
    }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// `held`: what the worker holds, updated by the session (also when it throws).
    func run(holding held: inout HeldParts) throws -> End {
        swap(&self.held, &held)
        defer { swap(&self.held, &held) }
        // Events of the time between sessions (parts that started or finished meanwhile).
        reportEvents()
        let (running, finished) = self.held.helloSnapshot()
        if !running.isEmpty || !finished.isEmpty {
            logger.info("registering with \(running.count) part(s) still held and \(finished.count) finished record(s)")
        }
        var hello = WireHello()
        hello.protocolVersion = UInt32(WireVersion.current)
        hello.name = agent.config.name
        hello.slots = UInt32(agent.config.slots)
        hello.tags = agent.config.tags
        hello.kinds = agent.kinds
        hello.prefetch = UInt32(agent.config.prefetch)
        hello.running = running
        hello.finished = finished
        hello.sentUs = Self.now()   // places the held parts' times on the coordinator's timeline
        send(.hello(hello))

        while true {
            if agent.stopping.load(ordering: .relaxed) {
                leave("worker shutting down")
                return .stopped
            }
            let now = Self.now()
            // Nothing but HELLO goes out before WELCOME (PROTOCOL.md §4.1), so no heartbeat is due until then.
            let heartbeatDue = workerID == nil ? Int64.max : lastSent + heartbeatMicros
            let deadline = min(heartbeatDue, lastReceived + heartbeatMicros * liveness)
            try poller.poll(timeout: .microseconds(max(0, deadline - now) + 1000))
            if poller.isReadable(1) { agent.waker.drain() }
            if poller.isReadable(2), let why = try handshakeRefusal() { return .rejected(why) }
            // Report first: after a freeze (SIGSTOP) the finished parts go out before anything else, so
            // the coordinator sees, fences and counts them.
            reportEvents()
            if poller.isReadable(0), let end = try receiveAll() { return end }
            // Parts that ran inline while DISPATCH was handled are done already: report them now
            // rather than one loop iteration (an eventfd round) later.
            reportEvents()
            let after = Self.now()
            if after - lastReceived > heartbeatMicros * liveness {
                let what = workerID == nil ? "no WELCOME" : "coordinator silent"
                return lost("\(what) for \((after - lastReceived) / 1000) ms")
            }
            if workerID != nil, after - lastSent >= heartbeatMicros { send(.heartbeat) }
        }
    }

    // MARK: inbound

    private func receiveAll() throws -> End? {
        for _ in 0..<4096 {
            guard let frames = try socket.receiveMultipart(flags: .dontWait) else { return nil }
            lastReceived = Self.now()
            switch WireCodec.decode(frames) {
            case .failure(let error):
                logger.warning("ignored a malformed message from the coordinator: \(error)")
            case .success(let envelope):
                if let end = handle(envelope.message) { return end }
            }
        }
        return nil
    }

    private func handle(_ message: Message) -> End? {
        switch message {
        case .welcome(let w):
            guard workerID == nil else {
                logger.warning("ignored a second WELCOME (\(w.workerID)) in session \(workerID!)")
                break
            }
            workerID = w.workerID
            heartbeatMicros = Int64(max(1, w.heartbeatIntervalMs)) * 1000
            liveness = Int64(max(1, w.liveness))
            let welcomed = held.welcomed(at: Self.now(), livenessBound: heartbeatMicros * liveness)
            let from = held.isEmpty ? "" : "; \(held.count) part(s) held from before"
            logger.info("registered as \(w.workerID) with \(agent.config.connect): \(agent.config.slots) slots, kinds \(agent.kinds.joined(separator: ","))\(from)")
            // The first grant leaves room for the parts still held; they give credit back as they finish.
            if welcomed.credit > 0 {
                var c = WireCredit()
                c.credit = UInt32(min(welcomed.credit, Int(WireLimits.maxCredit)))
                send(.credit(c))
            }
            // What the HELLO did not carry, finished first (a freed slot before the part that takes it).
            var finished = welcomed.finished, started = welcomed.started
            while case .finished(var m)? = Batcher.finished(draining: &finished, sentUs: Self.now()) {
                m.credit = 0
                send(.finished(m))
            }
            while let m = Batcher.started(draining: &started, sentUs: Self.now()) { send(m) }
        case .reject(let r):
            logger.error("coordinator rejected this worker: \(r.reason)")
            cancelHeld(reason: "the coordinator rejected this worker")
            return .rejected(r.reason)
        case .dispatch(let d):
            let parts = d.records.map(DispatchedPart.init(wire:))
            held.dispatched(parts.lazy.map(\.key))
            agent.queue.submit(contentsOf: parts)
        case .cancel(let c):
            for r in c.records {
                held.cancelledByCoordinator(opID: r.opID, attempt: Int(r.attempt))
                agent.queue.cancel(opID: r.opID, attempt: Int(r.attempt), reason: r.reason.isEmpty ? "cancelled" : r.reason)
            }
        case .disconnect(let d):
            return lost("coordinator said: \(d.reason)")
        case .error(let e):
            logger.warning("coordinator error \(e.code): \(e.message)")
            if e.code == .unexpected {
                return lost("coordinator does not know this session")
            }
        case .heartbeat:
            break
        default:
            logger.warning("ignored \(message.command): not a coordinator-to-worker command")
        }
        return nil
    }

    // MARK: outbound

    /// Sends what the local queue reported since the last call, one message per kind: FINISHED first,
    /// then STARTED, so the coordinator never counts more parts running here than there are slots (a
    /// slot is freed before the part that takes it starts). A part that started and finished since the
    /// last report goes in FINISHED alone, its start time in `started_at_us`. Before WELCOME nothing
    /// goes out: `held` keeps the events for the HELLO, or for right after WELCOME.
    private func reportEvents() {
        let events = agent.events.take()
        guard !events.isEmpty else { return }
        var started: [WirePartRef] = []
        var startedIndex: [PartKey: Int] = [:]
        var progress: [WireProgressRecord] = []
        var finished: [WireFinishedRecord] = []
        var finishedKeys: [PartKey] = []
        var credit = 0
        for (event, at) in events {
            switch event {
            case .started(let key):
                guard held.started(key, at: at) else { continue }
                startedIndex[key] = started.count
                started.append(WirePartRef(key: key, at: at))
            case .progress(let key, let fraction, let message):
                guard held.registered && held.holds(key) else { continue }
                var r = WireProgressRecord()
                r.opID = key.opID
                r.part = UInt32(key.part)
                r.attempt = UInt32(key.attempt)
                r.fraction = fraction ?? 0
                if let message { r.message = String(message.prefix(1024)) }
                progress.append(r)
            case .finished(let key, let outcome, let output):
                var record = WireFinishedRecord(key: key, outcome: Self.bounded(outcome), at: at)
                if let output { record.setOutput(output) }
                guard case .report(let grant) = held.finished(key, record: record, at: at) else { continue }
                credit += grant
                if let i = startedIndex.removeValue(forKey: key) {
                    record.startedAtUs = started[i].atUs
                    started[i].opID = ""   // reported with its FINISHED instead
                }
                finished.append(record)
                finishedKeys.append(key)
            }
        }
        started.removeAll { $0.opID.isEmpty }
        // Credit rides on the FINISHED messages, at most one per record in each.
        while case .finished(var m)? = Batcher.finished(draining: &finished, sentUs: Self.now()) {
            m.credit = UInt32(min(credit, m.records.count))
            credit -= Int(m.credit)
            send(.finished(m))
        }
        if !finishedKeys.isEmpty { held.reportedFinished(finishedKeys, at: Self.now()) }
        while let m = Batcher.started(draining: &started, sentUs: Self.now()) { send(m) }
        while let m = Batcher.progress(draining: &progress) { send(m) }
    }

    /// Keeps an outcome within the protocol's limits, so a huge result fails clearly instead of
    /// being refused by the coordinator as a malformed message.
    static func bounded(_ outcome: OperationOutcome) -> OperationOutcome {
        switch outcome {
        case .succeeded(let bytes) where bytes.count > WireLimits.maxResultSize:
            return .failed("result of \(bytes.count) bytes is over the limit of \(WireLimits.maxResultSize) bytes")
        case .failed(let text) where text.utf8.count > WireLimits.maxTextLength:
            return .failed(String(decoding: text.utf8.suffix(WireLimits.maxTextLength - 16), as: UTF8.self))
        case .cancelled(let text) where text.utf8.count > WireLimits.maxTextLength:
            return .cancelled(String(text.prefix(1024)))
        default:
            return outcome
        }
    }

    private func send(_ message: Message) {
        do {
            _ = try socket.sendMultipart(WireCodec.encode(message), flags: .dontWait)
            lastSent = Self.now()
        } catch {
            logger.debug("send \(message.command) failed: \(error)")
        }
    }

    /// Graceful goodbye: the coordinator re-queues what ran here at once instead of waiting for liveness.
    private func leave(_ reason: String) {
        var d = WireDisconnect()
        d.reason = reason
        send(.disconnect(d))
        cancelHeld(reason: reason)
        try? socket.set(.linger, 1000)
    }

    /// The coordinator is gone or no longer knows this session: the parts keep running, for the next
    /// HELLO to list. Events not yet reported stay in the inbox: the next session takes them as
    /// finished while away.
    private func lost(_ reason: String) -> End {
        held.sessionEnded(at: Self.now())
        let keeping = held.isEmpty ? "" : "; keeping \(held.count) part(s) running for the next registration"
        return .lost(reason + keeping, wasRegistered: workerID != nil)
    }

    /// Cancels every part held (shutdown, REJECT): the coordinator runs them again (at-least-once).
    private func cancelHeld(reason: String) {
        let keys = held.dropAll()
        if !keys.isEmpty {
            logger.info("cancelling \(keys.count) local part(s)")
            agent.cancelLocally(keys, reason: reason)
        }
    }
}
