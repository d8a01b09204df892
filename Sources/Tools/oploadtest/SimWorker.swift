import Foundation
import OpSpec
import WireProtocol
import ZeroMQ

/// One simulated worker: a DEALER connection speaking the worker protocol (docs/PROTOCOL.md) with a
/// local priority queue and `slots` pretend executors. It runs nothing: `noop` finishes at once,
/// `sleep`/`burn` finish when their milliseconds are up (a timer in `SimulatedWorkers`), `echo`
/// returns its payload, `fail` fails. So one process can stand in for a thousand workers.
final class SimWorker {
    struct PartKey: Hashable {
        var opID: String
        var part: UInt32
        var attempt: UInt32
        /// The DISPATCH's token (1.10), echoed in STARTED and FINISHED as opworker does.
        var token: UInt64 = 0
    }

    struct QueuedPart {
        var key: PartKey
        var kind: String
        var payload: [UInt8]
        var priority: Int32
        var sequence: UInt64
    }

    let index: Int
    let name: String
    let slots: Int
    let prefetch: Int
    private(set) var socket: Socket
    private(set) var workerID: String?
    var heartbeatMicros: Int64 = 1_000_000
    var liveness: Int64 = 3
    var lastSent: Int64 = 0
    var lastReceived: Int64
    /// Parts dispatched and not yet started here, best first (priority, then arrival).
    private var queued: [QueuedPart] = []
    /// Parts started and not yet finished.
    private(set) var running: Set<PartKey> = []
    /// STARTED and FINISHED records to send at the end of this loop iteration (times on the monotonic clock).
    private var started: [WirePartRef] = []
    private var finished: [WireFinishedRecord] = []
    private var sequence: UInt64 = 0
    var partsFinished = 0
    var sessions = 0

    init(index: Int, name: String, slots: Int, prefetch: Int, socket: Socket, now: Int64) {
        self.index = index
        self.name = name
        self.slots = slots
        self.prefetch = prefetch
        self.socket = socket
        lastReceived = now
    }

    var isRegistered: Bool { workerID != nil }
    var hasOutput: Bool { !finished.isEmpty || !started.isEmpty }

    func hello(kinds: [String], now: Int64) {
        var h = WireHello()
        h.protocolVersion = UInt32(WireVersion.current)
        h.name = name
        h.slots = UInt32(slots)
        h.kinds = kinds
        h.prefetch = UInt32(prefetch)
        sessions += 1
        lastReceived = now
        send(.hello(h), now: now)
    }

    /// A fresh connection after the coordinator ended the session (a new worker id to it).
    func replace(socket newSocket: Socket) {
        socket.close()
        socket = newSocket
        workerID = nil
        queued.removeAll()
        running.removeAll()
        started.removeAll()
        finished.removeAll()
    }

    enum Reaction {
        case none
        case start([QueuedPart])
        case ended(String)
    }

    /// Handles one message from the coordinator; returns parts to start (slots were free).
    func handle(_ message: WireProtocol.Message, now: Int64) -> Reaction {
        lastReceived = now
        switch message {
        case .welcome(let w):
            workerID = w.workerID
            heartbeatMicros = Int64(max(1, w.heartbeatIntervalMs)) * 1000
            liveness = Int64(max(1, w.liveness))
            var c = WireCredit()
            c.credit = UInt32(slots + prefetch)
            send(.credit(c), now: now)
        case .dispatch(let d):
            for r in d.records {
                sequence += 1
                let part = QueuedPart(key: PartKey(opID: r.opID, part: r.part, attempt: r.attempt, token: r.token), kind: r.kind,
                                      payload: Array(r.payload), priority: r.priority, sequence: sequence)
                let at = queued.firstIndex { $0.priority < part.priority } ?? queued.endIndex
                queued.insert(part, at: at)
            }
            return .start(takeStartable(now: now))
        case .cancel(let c):
            for r in c.records {
                let reason = r.reason.isEmpty ? "cancelled" : r.reason
                queued.removeAll { q in
                    guard q.key.opID == r.opID, q.key.attempt == r.attempt else { return false }
                    finish(q.key, .cancelled(reason), now: now)
                    return true
                }
                for key in running where key.opID == r.opID && key.attempt == r.attempt {
                    running.remove(key)
                    finish(key, .cancelled(reason), now: now)
                }
            }
            return .start(takeStartable(now: now))
        case .disconnect(let d):
            return .ended("coordinator said: \(d.reason)")
        case .reject(let r):
            return .ended("rejected: \(r.reason)")
        case .error(let e) where e.code == .unexpected:
            return .ended("coordinator does not know this session: \(e.message)")
        default:
            break
        }
        return .none
    }

    /// Moves parts from the local queue to free slots (each reported STARTED, as a real worker does).
    private func takeStartable(now: Int64) -> [QueuedPart] {
        var out: [QueuedPart] = []
        while running.count < slots, !queued.isEmpty {
            let p = queued.removeFirst()
            running.insert(p.key)
            out.append(p)
            var r = WirePartRef()
            r.opID = p.key.opID
            r.part = p.key.part
            r.attempt = p.key.attempt
            r.atUs = now
            r.token = p.key.token
            started.append(r)
        }
        return out
    }

    /// A started part's time is up (or it needed none); returns parts that can start now.
    func complete(_ key: PartKey, _ outcome: WireFinishedRecord.OneOf_Outcome, now: Int64) -> [QueuedPart] {
        guard running.remove(key) != nil else { return [] }   // cancelled meanwhile
        finish(key, outcome, now: now)
        return takeStartable(now: now)
    }

    private func finish(_ key: PartKey, _ outcome: WireFinishedRecord.OneOf_Outcome, now: Int64) {
        var r = WireFinishedRecord()
        r.opID = key.opID
        r.part = key.part
        r.attempt = key.attempt
        r.outcome = outcome
        r.atUs = now
        r.token = key.token
        finished.append(r)
        partsFinished += 1
    }

    /// Sends the FINISHED, then the STARTED records of this iteration (one credit back per finished one),
    /// as opworker does: a part that started and finished since the last flush carries its start in
    /// FINISHED (`started_at_us`), so the coordinator never counts more running parts than slots.
    func flush(now: Int64) {
        if !started.isEmpty && !finished.isEmpty {
            var startedAt: [PartKey: Int64] = [:]
            for r in started { startedAt[PartKey(opID: r.opID, part: r.part, attempt: r.attempt, token: r.token)] = r.atUs }
            for i in finished.indices {
                let key = PartKey(opID: finished[i].opID, part: finished[i].part, attempt: finished[i].attempt, token: finished[i].token)
                if let at = startedAt.removeValue(forKey: key) { finished[i].startedAtUs = at }
            }
            started.removeAll { startedAt[PartKey(opID: $0.opID, part: $0.part, attempt: $0.attempt, token: $0.token)] == nil }
        }
        while let m = Batcher.message(draining: &finished, sentUs: now) { send(m, now: now) }
        while let m = Batcher.message(draining: &started, sentUs: now) { send(m, now: now) }
    }

    func heartbeatIfDue(now: Int64) {
        if isRegistered, now - lastSent >= heartbeatMicros { send(.heartbeat, now: now) }
    }

    func isSilent(now: Int64) -> Bool { now - lastReceived > heartbeatMicros * liveness }

    func leave(_ reason: String, now: Int64) {
        guard isRegistered else { return }
        var d = WireDisconnect()
        d.reason = reason
        send(.disconnect(d), now: now)
    }

    func send(_ message: WireProtocol.Message, now: Int64) {
        _ = try? socket.sendMultipart(WireCodec.encode(message), flags: .dontWait)
        lastSent = now
    }

    /// How long a started part takes here, in microseconds, or its immediate outcome.
    static func plan(_ part: QueuedPart) -> (micros: Int64, outcome: WireFinishedRecord.OneOf_Outcome) {
        switch part.kind {
        case BuiltinKind.sleep, BuiltinKind.burn:
            guard let p = try? SleepPayload.decode(part.payload) else {
                return (0, .failed("\(part.kind): payload is not a number of milliseconds"))
            }
            return (Int64(p.milliseconds) * 1000, .succeeded(Data()))
        case BuiltinKind.echo:
            return (0, .succeeded(Data(part.payload)))
        case BuiltinKind.fail:
            return (0, .failed(String(decoding: part.payload, as: UTF8.self)))
        default:
            return (0, .succeeded(Data()))
        }
    }
}
