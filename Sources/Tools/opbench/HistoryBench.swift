import Foundation
import OpClient
import WireProtocol
import ZeroMQ

// Bounded history (docs/BENCHMARKS.md, "History"): a long-lived coordinator must plateau, not grow.
//   runs:    R runs of N noop ops pushed through one opcoord with --retain-runs 100; its RSS after the
//            first 1M ops vs at the end, and the throughput vs `independent` measured on the same cluster.
//   clients: C short-lived clients (a new DEALER each: one STATUS, then gone); RSS after the first
//            tenth vs at the end, with --client-idle 2s so forgotten clients can be seen going.
// OPQ_HISTORY_RUNS / OPQ_HISTORY_OPS / OPQ_HISTORY_CLIENTS override the sizes.

func runHistoryBench(quick: Bool) -> [BenchResult] {
    E2EChildren.installSignalHandlers()
    let env = ProcessInfo.processInfo.environment
    let runs = Int(env["OPQ_HISTORY_RUNS"] ?? "") ?? (quick ? 300 : 10_000)
    let perRun = Int(env["OPQ_HISTORY_OPS"] ?? "") ?? 1_000
    let clients = Int(env["OPQ_HISTORY_CLIENTS"] ?? "") ?? (quick ? 5_000 : 100_000)
    let retainRuns = env["OPQ_HISTORY_RETAIN_RUNS"] ?? "100"
    let window = Int(env["OPQ_HISTORY_WINDOW"] ?? "") ?? 20
    var results: [BenchResult] = []
    do {
        let cluster = try E2ECluster(slots: 2, prefetch: 256,
                                     coordinatorArgs: ["--retain-runs", retainRuns, "--client-idle", "2s"])
        defer { cluster.stop() }
        let ind = try independent(cluster, n: quick ? 20_000 : 100_000, prefetch: 256, budget: 120)
        results.append(ind)
        results.append(try manyRuns(cluster, runs: runs, perRun: perRun, window: window, independentRate: ind["ops_per_s"] ?? .nan))
        if clients > 0 { results.append(try manyClients(cluster, count: clients)) }
    } catch {
        results.append(BenchResult(suite: "history", name: "cluster", fields: [], note: "failed: \(error)"))
    }
    return results
}

/// Resident set size of a process in bytes (VmRSS), NaN if unknown.
func residentBytes(_ pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return .nan }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kb = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? .nan
        return kb * 1024
    }
    return .nan
}

/// Runs "h0", "h1", … of `perRun` independent noops each, at most `window` unfinished at a time.
private func manyRuns(_ cluster: E2ECluster, runs: Int, perRun: Int, window: Int, independentRate: Double) throws -> BenchResult {
    let conn = try cluster.connect()
    let queue = "history"
    let ids = (0..<perRun).map { "o\($0)" }   // the same ids in every run
    var rssAfter1M = Double.nan
    let firstMillionRun = max(1, 1_000_000 / perRun) - 1
    func waitRun(_ k: Int) throws {
        var w = WireWait()
        w.run = "h\(k)"
        w.timeoutUs = 120_000_000
        guard case .waitReply(let r) = try conn.request(.wait(w), timeout: .seconds(130)), r.finished else {
            throw E2EError("run h\(k) did not finish within 120 s")
        }
        if k == firstMillionRun { rssAfter1M = residentBytes(cluster.coordinatorPID) }
    }
    let cpu0 = cluster.cpuSeconds()
    let t0 = BenchProbe.nowNanos()
    for k in 0..<runs {
        var m = WireSubmit()
        m.run = "h\(k)"
        m.operations = ids.map { noop($0, queue: queue) }
        guard case .submitReply(let r) = try conn.request(.submit(m), timeout: .seconds(60)), r.accepted else {
            throw E2EError("run h\(k) was not accepted")
        }
        if k >= window { try waitRun(k - window) }
    }
    for k in max(0, runs - window)..<runs { try waitRun(k) }
    let seconds = Double(BenchProbe.nowNanos() - t0) / 1e9
    let cpu1 = cluster.cpuSeconds()
    let rssEnd = residentBytes(cluster.coordinatorPID)
    let rate = Double(runs * perRun) / seconds
    var listed = WireRuns()
    listed.limit = 1
    guard case .runsReply(let rr) = try conn.request(.runs(listed)) else { throw E2EError("no RUNS reply") }
    let growth = rssEnd / rssAfter1M
    let vsIndependent = rate / independentRate
    return BenchResult(suite: "history", name: "runs", fields: [
        ("runs", Double(runs)), ("ops", Double(runs * perRun)), ("ops_per_s", rate.rounded()),
        ("vs_independent", (vsIndependent * 100).rounded() / 100),
        ("rss_after_1M_mib", (rssAfter1M / 1_048_576 * 10).rounded() / 10), ("rss_end_mib", (rssEnd / 1_048_576 * 10).rounded() / 10),
        ("rss_growth", (growth * 100).rounded() / 100), ("retained", Double(rr.retained)), ("evicted", Double(rr.evicted)),
        ("window", Double(window)), ("coord_cpu_us_per_op", ((cpu1.coordinator - cpu0.coordinator) / Double(runs * perRun) * 1e7).rounded() / 10),
        ("workers_cpu_us_per_op", ((cpu1.workers - cpu0.workers) / Double(runs * perRun) * 1e7).rounded() / 10),
    ], note: "RSS end / after 1M ≤ 1.5: \(growth <= 1.5 ? "met" : "missed"); throughput ≥ 0.9× independent: \(vsIndependent >= 0.9 ? "met" : "missed")")
}

/// `count` clients that each connect (a new DEALER, so a new routing id), ask STATUS and leave.
private func manyClients(_ cluster: E2ECluster, count: Int) throws -> BenchResult {
    let ctx = try Context()
    let tenth = max(1, count / 10)
    var rssTenth = Double.nan
    var status = WireStatus()
    status.queue = "history"
    let request = WireCodec.encode(.status(status), requestID: 1)
    let t0 = BenchProbe.nowNanos()
    for k in 0..<count {
        let s = try Socket(ctx, type: .dealer)
        try s.set(.linger, 0)
        try s.connect(cluster.endpoint)
        _ = try s.sendMultipart(request)
        let poller = Poller()
        _ = poller.add(s)
        try poller.poll(timeout: .seconds(10))
        guard try s.receiveMultipart(flags: .dontWait) != nil else { throw E2EError("client \(k): no STATUS reply in 10 s") }
        s.close()
        if k + 1 == tenth { rssTenth = residentBytes(cluster.coordinatorPID) }
    }
    let seconds = Double(BenchProbe.nowNanos() - t0) / 1e9
    // The last ones are forgotten after --client-idle (2 s); sampled once that has passed.
    Thread.sleep(forTimeInterval: 3)
    let rssEnd = residentBytes(cluster.coordinatorPID)
    let growth = rssEnd / rssTenth
    return BenchResult(suite: "history", name: "clients", fields: [
        ("clients", Double(count)), ("clients_per_s", (Double(count) / seconds).rounded()),
        ("rss_after_tenth_mib", (rssTenth / 1_048_576 * 10).rounded() / 10), ("rss_end_mib", (rssEnd / 1_048_576 * 10).rounded() / 10),
        ("rss_growth", (growth * 100).rounded() / 100),
    ], note: "RSS end / after the first tenth ≤ 1.5: \(growth <= 1.5 ? "met" : "missed")")
}
