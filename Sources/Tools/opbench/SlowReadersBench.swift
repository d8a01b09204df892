import Foundation
import OpClient
import WireProtocol
import ZeroMQ

// Slow readers (docs/BENCHMARKS.md, "Slow readers"; issue 23, finding 7): W clients subscribe with WATCH
// and never read again (a receive high-water mark of 1 message and a 4 KiB socket buffer, so what the
// coordinator sends them stays with it), while a well-behaved client submits N noops with P-byte
// payloads and waits for them. Bounds: the coordinator's RSS grows by ≤ 256 MiB, the submit+wait takes
// ≤ 2 s, and once the watchers are gone its RSS is back within 10 % of where it started.
// OPQ_SLOW_WATCHERS / OPQ_SLOW_OPS / OPQ_SLOW_PAYLOAD override the sizes.

func runSlowReadersBench(quick: Bool) -> [BenchResult] {
    E2EChildren.installSignalHandlers()
    let env = ProcessInfo.processInfo.environment
    let watchers = Int(env["OPQ_SLOW_WATCHERS"] ?? "") ?? (quick ? 1_000 : 5_000)
    let ops = Int(env["OPQ_SLOW_OPS"] ?? "") ?? 1_000
    let payload = Int(env["OPQ_SLOW_PAYLOAD"] ?? "") ?? 200
    do {
        // --client-idle 5s: clients that left are forgotten soon after, so the end state is seen quickly.
        var rows: [BenchResult] = []
        do {
            let cluster = try E2ECluster(slots: 4, prefetch: 256, coordinatorArgs: ["--client-idle", "5s"])
            defer { cluster.stop() }
            rows.append(try slowReaders(cluster, name: "watchers", watchers: watchers, ops: ops, payload: payload))
        }
        // Where bytes dominate: watchers of results (400 echo ops of 20 KB: 8 MB of events per watcher),
        // so what they do not read is held to their budget rather than to what they were sent.
        if env["OPQ_SLOW_RESULTS"] != "0" {
            let cluster = try E2ECluster(slots: 4, prefetch: 256, coordinatorArgs: ["--client-idle", "5s"])
            defer { cluster.stop() }
            rows.append(try slowReaders(cluster, name: "result-watchers", watchers: quick ? 50 : 200, ops: 400, payload: 20_000,
                                        kind: "echo", withResults: true))
        }
        return rows
    } catch {
        return [BenchResult(suite: "slow-readers", name: "cluster", fields: [], note: "failed: \(error)")]
    }
}

private func slowReaders(_ cluster: E2ECluster, name: String, watchers count: Int, ops: Int, payload: Int,
                         kind: String = "noop", withResults: Bool = false) throws -> BenchResult {
    let conn = try cluster.connect()
    let body = String(repeating: "x", count: payload)
    func submitAndWait(_ run: String) throws -> Double {
        var m = WireSubmit()
        m.run = run
        m.operations = (0..<ops).map { i in
            var o = noop("o\(i)", queue: "slow")
            o.kind = kind
            o.payload = Data(body.utf8)
            return o
        }
        let t0 = BenchProbe.nowNanos()
        guard case .submitReply(let r) = try conn.request(.submit(m), timeout: .seconds(120)), r.accepted else {
            throw E2EError("run \(run) was not accepted")
        }
        var w = WireWait()
        w.run = run
        w.timeoutUs = 120_000_000
        guard case .waitReply(let wr) = try conn.request(.wait(w), timeout: .seconds(130)), wr.finished else {
            throw E2EError("run \(run) did not finish within 120 s")
        }
        return Double(BenchProbe.nowNanos() - t0) / 1e9
    }
    // Warm up (the first run pays for code and pools), then the reference without watchers.
    _ = try submitAndWait("warm")
    let alone = try submitAndWait("alone")
    let pid = cluster.coordinatorPID
    let rssStart = residentBytes(pid)

    // The watchers: each subscribes, reads its ACK, and never reads again.
    let ctx = try Context(ioThreads: 2, maxSockets: Int32(count + 64))
    var sockets: [Socket] = []
    var watch = WireWatch()
    watch.withResults = withResults
    let request = WireCodec.encode(.watch(watch), requestID: 1)
    let receiveBuffer = SocketOption<Int32>(12, name: "ZMQ_RCVBUF")   // SO_RCVBUF
    for k in 0..<count {
        let s = try Socket(ctx, type: .dealer)
        try s.set(.linger, 0)
        try s.set(.receiveHighWaterMark, 1)
        try s.set(receiveBuffer, 4096)
        try s.connect(cluster.endpoint)
        _ = try s.sendMultipart(request)
        let poller = Poller()
        _ = poller.add(s)
        try poller.poll(timeout: .seconds(10))
        guard try s.receiveMultipart(flags: .dontWait) != nil else { throw E2EError("watcher \(k): no ACK in 10 s") }
        sockets.append(s)
    }
    let rssWatching = residentBytes(pid)

    // The well-behaved client, with the coordinator's RSS sampled meanwhile.
    let peak = PeakSampler(pid: pid)
    let slow = try submitAndWait("slow")
    let rssPeak = max(peak.stop(), residentBytes(pid))

    // One watcher reads now: it finds the notice that ended its stream (if its stream was over budget).
    var noticeSeen = false
    let reader = sockets[0]
    let until = BenchProbe.nowNanos() + 5_000_000_000
    let poller = Poller()
    _ = poller.add(reader)
    while !noticeSeen && BenchProbe.nowNanos() < until {
        try poller.poll(timeout: .milliseconds(200))
        while let frames = try reader.receiveMultipart(flags: .dontWait) {
            if case .success(let e) = WireCodec.decode(frames), case .error(let m) = e.message, m.message == WireLimits.watchTooSlow {
                noticeSeen = true
            }
        }
    }

    // They leave. The coordinator learns it when it next sends them something (libzmq's ROUTER says
    // nothing of a peer that left), then forgets them after --client-idle: a small run meanwhile, as
    // any cluster has, makes events for the streams still open.
    for s in sockets { s.close() }
    sockets.removeAll()
    let left = BenchProbe.nowNanos()
    var rssAfter = residentBytes(pid)
    var k = 0
    while Double(BenchProbe.nowNanos() - left) / 1e9 < 30 {
        Thread.sleep(forTimeInterval: 1)
        var m = WireSubmit()
        m.run = "after-\(k)"
        m.operations = [noop("a", queue: "slow")]
        _ = try? conn.request(.submit(m))
        rssAfter = residentBytes(pid)
        k += 1
        if k >= 12 && rssAfter <= rssStart * 1.1 { break }   // past --client-idle and a memory check
    }
    let settled = Double(BenchProbe.nowNanos() - left) / 1e9

    let log = cluster.coordinatorLog(1)
    if let line = log.split(separator: "\n").first(where: { $0.contains("does not read") }) { print("opcoord: \(line)") }
    let mib = { (b: Double) in (b / 1_048_576 * 10).rounded() / 10 }
    let growth = rssPeak - rssStart
    let backRatio = rssAfter / rssStart
    let notes = [
        "RSS growth ≤ 256 MiB: \(growth <= 256 * 1_048_576 ? "met" : "missed")",
        "submit+wait ≤ 2 s: \(slow <= 2 ? "met" : "missed")",
        "RSS back within 10 %: \(backRatio <= 1.1 ? "met" : "missed")",
    ]
    return BenchResult(suite: "slow-readers", name: name, fields: [
        ("watchers", Double(count)), ("ops", Double(ops)), ("payload_bytes", Double(payload)),
        ("submit_wait_s", (slow * 1000).rounded() / 1000), ("alone_s", (alone * 1000).rounded() / 1000),
        ("rss_start_mib", mib(rssStart)), ("rss_watching_mib", mib(rssWatching)), ("rss_peak_mib", mib(rssPeak)),
        ("rss_growth_mib", mib(growth)), ("rss_after_mib", mib(rssAfter)), ("after_vs_start", (backRatio * 100).rounded() / 100),
        ("settled_s", settled.rounded()), ("notice_seen", noticeSeen ? 1 : 0),
        ("slow_client_log_lines", Double(log.components(separatedBy: "does not read what it is sent").count - 1)),
    ], note: notes.joined(separator: "; "))
}

/// The highest RSS of `pid` seen every 20 ms until `stop`.
private final class PeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0.0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(pid: pid_t) {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let r = residentBytes(pid)
                lock.withLock { if r > peak { peak = r } }
                Thread.sleep(forTimeInterval: 0.02)
            }
            done.signal()
        }
    }

    func stop() -> Double {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { peak }
    }
}
