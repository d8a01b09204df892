import Foundation
import HeapModule
import OpClient
import WireProtocol
import OpClient
import ZeroMQ

/// `count` simulated workers on one thread: one poller over all their sockets, one timer heap for the
/// parts that are "running". A session the coordinator ends (DISCONNECT, lost, unknown) is replaced by
/// a fresh connection and HELLO, as a real worker does.
final class SimulatedWorkers {
    struct Options {
        var endpoint: String
        var count: Int
        var slots: Int
        var prefetch: Int
        var kinds: [String]
        var namePrefix: String
        var readyFile: String?
        var timeLimitSeconds: Double
        /// Write the gaps between the coordinator's messages (GapRecorder) here as JSON at the end.
        var gapReport: String? = nil
    }

    private struct Timer: Comparable {
        var deadline: Int64
        var worker: Int
        var key: SimWorker.PartKey
        var outcome: WireFinishedRecord.OneOf_Outcome
        static func < (a: Timer, b: Timer) -> Bool { a.deadline < b.deadline }
        static func == (a: Timer, b: Timer) -> Bool { a.deadline == b.deadline && a.key == b.key }
    }

    private let options: Options
    private let context: Context
    private let poller = Poller()
    private var workers: [SimWorker] = []
    private var timers = Heap<Timer>()
    private var dirty: Set<Int> = []
    private var gaps = GapRecorder()
    /// CURVE keys from `$OPQ_KEY` / `$OPQ_COORDINATOR_KEY`, for a coordinator with keys (nil: none).
    private let curve: CurveClientKeys?

    init(_ options: Options) throws {
        self.options = options
        curve = try ClientKeys.resolve(key: nil, coordinatorKey: nil)
        // Each connection is a libzmq socket (plus its mailbox and a TCP descriptor).
        context = try Context(ioThreads: options.count > 200 ? 2 : 1, maxSockets: Int32(options.count + 64))
        let now = monotonicMicros()
        for i in 0..<options.count {
            let w = SimWorker(index: i, name: "\(options.namePrefix)-\(i)", slots: options.slots,
                              prefetch: options.prefetch, socket: try makeSocket(), now: now)
            workers.append(w)
            _ = poller.add(w.socket)
        }
    }

    private func makeSocket() throws -> Socket {
        let s = try Socket(context, type: .dealer)
        try s.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try s.set(.sendHighWaterMark, 0)
        try s.set(.receiveHighWaterMark, 0)
        if let curve { try s.useCurveClient(curve) }
        try s.connect(options.endpoint)
        return s
    }

    /// Runs until `shouldStop()` or the time limit; then each registered worker says goodbye.
    func run(shouldStop: () -> Bool) throws {
        let started = monotonicMicros()
        let limit = started + Int64(options.timeLimitSeconds * 1_000_000)
        for w in workers { w.hello(kinds: options.kinds, now: started) }
        var announced = false
        var nextHousekeeping = started
        while !shouldStop() {
            var now = monotonicMicros()
            if now >= limit {
                log("time limit of \(Int(options.timeLimitSeconds)) s reached")
                break
            }
            let nextTimer = timers.min?.deadline ?? now + 100_000
            let wait = max(0, min(nextTimer, nextHousekeeping, now + 100_000) - now)
            try poller.poll(timeout: .microseconds(wait))
            now = monotonicMicros()
            for i in workers.indices where poller.isReadable(i) { try receiveAll(i, now: now) }
            while let t = timers.min, t.deadline <= now {
                _ = timers.popMin()
                start(t.worker, workers[t.worker].complete(t.key, t.outcome, now: now), now: now)
                dirty.insert(t.worker)
            }
            for i in dirty { workers[i].flush(now: now) }
            dirty.removeAll(keepingCapacity: true)
            if now >= nextHousekeeping {
                nextHousekeeping = now + 50_000
                try housekeeping(now: now)
                if !announced, workers.allSatisfy(\.isRegistered) {
                    announced = true
                    log("\(workers.count) workers registered in \(String(format: "%.2f", Double(now - started) / 1e6)) s")
                    if let f = options.readyFile { try "\(workers.count)\n".write(toFile: f, atomically: true, encoding: .utf8) }
                }
            }
        }
        let now = monotonicMicros()
        for w in workers { w.leave("simulated worker shutting down", now: now) }
        let parts = workers.reduce(0) { $0 + $1.partsFinished }
        let sessions = workers.reduce(0) { $0 + $1.sessions }
        log("stopping: \(parts) parts finished over \(sessions) sessions")
        if let f = options.gapReport { try gaps.json().write(toFile: f, atomically: true, encoding: .utf8) }
        for w in workers { try? w.socket.set(.linger, 500); w.socket.close() }
    }

    private func receiveAll(_ i: Int, now: Int64) throws {
        let w = workers[i]
        for _ in 0..<1024 {
            guard let frames = try w.socket.receiveMultipart(flags: .dontWait) else { return }
            guard case .success(let envelope) = WireCodec.decode(frames) else { continue }
            if w.isRegistered { gaps.record(silence: now - w.lastReceived, interval: w.heartbeatMicros) }
            switch w.handle(envelope.message, now: now) {
            case .none: break
            case .start(let parts): start(i, parts, now: now)
            case .ended(let why):
                gaps.sessionsEnded += 1
                log("\(w.name): session ended (\(why)); connecting again")
                try reconnect(i, now: now)
                return
            }
        }
    }

    /// Starts parts on worker `i`: immediate ones finish now (which may start more), timed ones get a timer.
    private func start(_ i: Int, _ parts: [SimWorker.QueuedPart], now: Int64) {
        var pending = parts
        while let p = pending.popLast() {
            let plan = SimWorker.plan(p)
            if plan.micros == 0 {
                pending += workers[i].complete(p.key, plan.outcome, now: now)
                dirty.insert(i)
            } else {
                timers.insert(Timer(deadline: now + plan.micros, worker: i, key: p.key, outcome: plan.outcome))
            }
        }
        if !parts.isEmpty { dirty.insert(i) }
    }

    private func housekeeping(now: Int64) throws {
        for (i, w) in workers.enumerated() {
            if w.isSilent(now: now) {
                gaps.sessionsEnded += 1
                log("\(w.name): coordinator silent for \((now - w.lastReceived) / 1000) ms; connecting again")
                try reconnect(i, now: now)
            } else {
                w.heartbeatIfDue(now: now)
            }
        }
    }

    private func reconnect(_ i: Int, now: Int64) throws {
        let s = try makeSocket()
        workers[i].replace(socket: s)
        try poller.replaceSocket(at: i, with: workers[i].socket)
        workers[i].hello(kinds: options.kinds, now: now)
    }

    private func log(_ text: String) {
        FileHandle.standardError.write(Data("simworkers: \(text)\n".utf8))
    }
}

func monotonicMicros() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}
