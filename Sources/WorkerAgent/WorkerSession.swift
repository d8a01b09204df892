import Foundation
import Logging
import OpSpec
import WireProtocol
import WorkerRuntime
import ZeroMQ

/// One connection to the coordinator, from HELLO to its end. A new session is a new worker to the
/// coordinator (new id), so nothing of an old session's parts is reported in a later one: they were
/// re-queued by the coordinator when it declared the old session lost.
final class WorkerSession {
    enum End {
        case stopped
        case rejected(String)
        case lost(String, wasRegistered: Bool)
    }

    private let agent: WorkerAgent
    private let socket: Socket
    private let poller = Poller()
    private var logger: Logger { agent.logger }

    private var workerID: String?
    private var heartbeatMicros: Int64
    private var liveness: Int64
    private var lastReceived: Int64
    private var lastSent: Int64 = 0
    /// Parts dispatched in this session and not yet reported finished.
    private var active: Set<PartKey> = []

    init(agent: WorkerAgent) throws {
        self.agent = agent
        heartbeatMicros = Int64(agent.config.heartbeatIntervalMs) * 1000
        liveness = Int64(agent.config.liveness)
        lastReceived = Self.now()
        socket = try Socket(agent.context, type: .dealer)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.set(.sendHighWaterMark, 0)
        try socket.set(.receiveHighWaterMark, 0)
        try socket.connect(agent.config.connect)
        _ = poller.add(socket)
        _ = poller.add(agent.waker)
    }

    func close() { socket.close() }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    func run() throws -> End {
        var hello = WireHello()
        hello.protocolVersion = UInt32(WireVersion.current)
        hello.name = agent.config.name
        hello.slots = UInt32(agent.config.slots)
        hello.tags = agent.config.tags
        hello.kinds = agent.kinds
        hello.prefetch = UInt32(agent.config.prefetch)
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
                abandon()
                return .lost("\(what) for \((after - lastReceived) / 1000) ms", wasRegistered: workerID != nil)
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
            workerID = w.workerID
            heartbeatMicros = Int64(max(1, w.heartbeatIntervalMs)) * 1000
            liveness = Int64(max(1, w.liveness))
            logger.info("registered as \(w.workerID) with \(agent.config.connect): \(agent.config.slots) slots, kinds \(agent.kinds.joined(separator: ","))")
            var c = WireCredit()
            c.credit = UInt32(agent.config.slots + agent.config.prefetch)
            send(.credit(c))
        case .reject(let r):
            logger.error("coordinator rejected this worker: \(r.reason)")
            return .rejected(r.reason)
        case .dispatch(let d):
            let parts = d.records.map(DispatchedPart.init(wire:))
            for p in parts { active.insert(p.key) }
            agent.queue.submit(contentsOf: parts)
        case .cancel(let c):
            for r in c.records {
                agent.queue.cancel(opID: r.opID, attempt: Int(r.attempt), reason: r.reason.isEmpty ? "cancelled" : r.reason)
            }
        case .disconnect(let d):
            abandon()
            return .lost("coordinator said: \(d.reason)", wasRegistered: workerID != nil)
        case .error(let e):
            logger.warning("coordinator error \(e.code): \(e.message)")
            if e.code == .unexpected {
                abandon()
                return .lost("coordinator does not know this session", wasRegistered: workerID != nil)
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
    /// last report goes in FINISHED alone, its start time in `started_at_us`.
    private func reportEvents() {
        let events = agent.events.take()
        guard !events.isEmpty else { return }
        var started: [WirePartRef] = []
        var startedIndex: [PartKey: Int] = [:]
        var progress: [WireProgressRecord] = []
        var finished: [WireFinishedRecord] = []
        for (event, at) in events where active.contains(event.key) {
            switch event {
            case .started(let key):
                startedIndex[key] = started.count
                started.append(WirePartRef(key: key, at: at))
            case .progress(let key, let fraction, let message):
                var r = WireProgressRecord()
                r.opID = key.opID
                r.part = UInt32(key.part)
                r.attempt = UInt32(key.attempt)
                r.fraction = fraction ?? 0
                if let message { r.message = String(message.prefix(1024)) }
                progress.append(r)
            case .finished(let key, let outcome):
                active.remove(key)
                var record = WireFinishedRecord(key: key, outcome: Self.bounded(outcome), at: at)
                if let i = startedIndex.removeValue(forKey: key) {
                    record.startedAtUs = started[i].atUs
                    started[i].opID = ""   // reported with its FINISHED instead
                }
                finished.append(record)
            }
        }
        started.removeAll { $0.opID.isEmpty }
        while let m = Batcher.finished(draining: &finished, sentUs: Self.now()) { send(m) }
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
        abandon()
        try? socket.set(.linger, 1000)
    }

    /// Drops this session's parts: the coordinator runs them again elsewhere (at-least-once).
    private func abandon() {
        if !active.isEmpty {
            logger.info("cancelling \(active.count) local part(s) of the ended session")
            for key in active { agent.queue.cancel(opID: key.opID, attempt: key.attempt, reason: "worker session ended") }
            active.removeAll()
        }
    }
}
