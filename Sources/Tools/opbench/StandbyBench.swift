import Foundation
import OpClient
import WireProtocol

// e2e `standby` rows (issue 29): `independent` on the same kind of cluster without a standby and with one
// (`opcoord --follow`, its own state directory, on the same machine), alternating, `$OPQ_E2E_STANDBY_ROUNDS`
// pairs (default 2, 1 with --quick; 0 skips); the mode is `$OPQ_E2E_STANDBY_MODE` (sync, the default, or
// async). While the run with a standby goes, the leader's STATUS is asked every 20 ms for the standby's
// lag (records durable on the leader that the standby has not acknowledged durable, and the age of its
// oldest unacknowledged message); its acknowledgement latency (sent → durable there) comes from the last
// STATUS. Target (issue 29): throughput with a sync standby ≥ 0.8× without, in one run.

/// A standby following `cluster`'s coordinator, until `stop()`.
final class E2EStandby {
    let process: Process
    let dir: URL

    init(following cluster: E2ECluster, mode: String) throws {
        dir = cluster.dir.appendingPathComponent("standby")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        process = try E2ECluster.launch(E2ECluster.binDirectory + "/opcoord",
                                        ["--bind", "tcp://127.0.0.1:*", "--state-dir", dir.appendingPathComponent("state").path,
                                         "--http", "off", "--follow", cluster.endpoint, "--standby-name", "bench-standby",
                                         "--log-level", "warning"],
                                        log: dir.appendingPathComponent("opcoord.log"))
        // In sync: caught up once and acknowledging (STATUS `standbys`), within 20 s.
        let conn = try cluster.connect()
        let until = Date().addingTimeInterval(20)
        while true {
            guard case .statusReply(let r) = try conn.request(.status(WireStatus())) else { throw E2EError("no STATUS reply") }
            if let s = r.standbys.first, s.state == (mode == "sync" ? "sync" : "live") || s.state == "sync" { break }
            if Date() > until || !process.isRunning {
                throw E2EError("the standby was not in sync within 20 s: \((try? String(contentsOf: dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? "")")
            }
            usleep(20_000)
        }
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        E2EChildren.remove(process.processIdentifier)
    }
}

/// Samples the leader's view of its standby while a run goes.
final class StandbyLagProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [Double] = []
    private var micros: [Double] = []
    private var running = true
    private var thread: Thread?
    private(set) var last: WireStandbyInfo?

    init(_ cluster: E2ECluster) throws {
        let endpoint = cluster.endpoint
        let t = Thread { [self] in
            guard let conn = try? CoordinatorConnection(endpoint: endpoint, timeout: .seconds(30), curve: nil) else { return }
            while lock.withLock({ running }) {
                if case .statusReply(let r)? = try? conn.request(.status(WireStatus())), let s = r.standbys.first {
                    lock.withLock {
                        records.append(Double(s.lagRecords))
                        micros.append(Double(s.lagUs))
                        last = s
                    }
                }
                usleep(20_000)
            }
        }
        thread = t
        t.start()
    }

    func stop() -> (records: [Double], micros: [Double], last: WireStandbyInfo?) {
        lock.withLock { running = false }
        while thread?.isFinished == false { usleep(5_000) }
        return lock.withLock { (records, micros, last) }
    }
}

private func percentile(_ xs: [Double], _ p: Double) -> Double {
    guard !xs.isEmpty else { return .nan }
    let s = xs.sorted()
    return s[min(s.count - 1, Int(Double(s.count - 1) * p))]
}

func standbyRows(slots: Int, prefetch: Int, n: Int, budget: Double, rounds: Int, mode: String) -> [BenchResult] {
    var rows: [BenchResult] = []
    for _ in 0..<rounds {
        for withStandby in [false, true] {
            do {
                let cluster = try E2ECluster(slots: slots, prefetch: prefetch, journal: true,
                                             coordinatorArgs: ["--replication", mode])
                defer { cluster.stop() }
                let standby = withStandby ? try E2EStandby(following: cluster, mode: mode) : nil
                defer { standby?.stop() }
                let probe = withStandby ? try StandbyLagProbe(cluster) : nil
                let standbyCPU0 = standby.map { E2ECluster.cpu($0.process.processIdentifier) }
                var r = try independent(cluster, n: n, prefetch: prefetch, budget: budget)
                if let standby, let c0 = standbyCPU0 { r.fields.append(("standby_cpu_s", E2ECluster.cpu(standby.process.processIdentifier) - c0)) }
                r.name = "independent_standby"
                r.flags = [("journal", true), ("standby", withStandby), ("sync", mode == "sync")]
                if let (records, micros, last) = probe?.stop() {
                    r.fields += [("lag_records_p50", percentile(records, 0.5)), ("lag_records_p99", percentile(records, 0.99)),
                                 ("lag_records_max", records.max() ?? .nan),
                                 ("lag_ms_p50", percentile(micros, 0.5) / 1000), ("lag_ms_p99", percentile(micros, 0.99) / 1000),
                                 ("lag_ms_max", (micros.max() ?? .nan) / 1000), ("lag_samples", Double(records.count)),
                                 ("ack_p50_ms", Double(last?.ackP50Us ?? 0) / 1000), ("ack_p99_ms", Double(last?.ackP99Us ?? 0) / 1000)]
                    r.note = "standby \(last?.state ?? "?") at the end"
                }
                rows.append(r)
            } catch {
                rows.append(BenchResult(suite: "e2e", name: "independent_standby", fields: [],
                                        note: "standby \(withStandby ? "on" : "off"): failed: \(error)"))
            }
        }
    }
    // The ratio per round and over the means.
    func rate(_ standby: Bool) -> [Double] {
        rows.filter { $0.flags.contains { $0.0 == "standby" && $0.1 == standby } }.compactMap { $0["ops_per_s"] }.filter(\.isFinite)
    }
    let on = rate(true), off = rate(false)
    if !on.isEmpty && on.count == off.count {
        let ratio = (on.reduce(0, +) / Double(on.count)) / (off.reduce(0, +) / Double(off.count))
        var fields: [(String, Double)] = [("ratio", (ratio * 100).rounded() / 100)]
        for (k, (a, b)) in zip(on, off).enumerated() { fields.append(("ratio_round\(k + 1)", (a / b * 100).rounded() / 100)) }
        rows.append(BenchResult(suite: "e2e", name: "standby_ratio", fields: fields,
                                note: "\(mode) standby / none, independent; target ≥ 0.8: \(ratio >= 0.8 ? "met" : "missed")"))
    }
    return rows
}
