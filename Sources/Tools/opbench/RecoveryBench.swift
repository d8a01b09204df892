import Foundation
import OpClient
import WireProtocol

/// `opbench recovery` (A5): how long a coordinator killed with SIGKILL takes to accept requests again
/// with N live operations in its journal, and the journal's bytes per operation. One opcoord (release)
/// with a fresh state directory and no worker, so every op stays live (ready); N noop ops submitted in
/// SUBMITs of 8,192 (each acknowledged once durable); then SIGKILL, a new opcoord on the same state
/// directory at once, and STATUS asked every millisecond until one is answered: "kill to accepting
/// requests". The replay time is the new coordinator's own log line. `$OPQ_RECOVERY_OPS` (default
/// 1,000,000; --quick 100,000).
func runRecoveryBench(quick: Bool) -> [BenchResult] {
    E2EChildren.installSignalHandlers()
    let n = Int(ProcessInfo.processInfo.environment["OPQ_RECOVERY_OPS"] ?? "") ?? (quick ? 100_000 : 1_000_000)
    do {
        let cluster = try E2ECluster(slots: 1, prefetch: 0, workerCount: 0, journal: true)
        defer { cluster.stop() }
        let conn = try cluster.connect()
        let t0 = BenchProbe.nowNanos()
        for start in stride(from: 0, to: n, by: 8192) {
            var s = WireSubmit()
            s.operations = (start..<min(n, start + 8192)).map { i in
                var o = WireOperation()
                o.id = "op-\(i)"
                o.kind = "noop"
                o.queue = "recovery"
                return o
            }
            s.run = "recovery"
            s.append = true
            guard case .submitReply(let r) = try conn.request(.submit(s), timeout: .seconds(120)), r.accepted else {
                throw E2EError("SUBMIT not accepted")
            }
        }
        let submitSeconds = Double(BenchProbe.nowNanos() - t0) / 1e9
        let bytes = directoryBytes(cluster.dir.appendingPathComponent("state"))

        let killed = BenchProbe.nowNanos()
        try cluster.crashAndRestartCoordinator()
        var accepted: UInt64 = 0
        let deadline = Date().addingTimeInterval(120)
        while accepted == 0 && Date() < deadline {
            if let probe = try? CoordinatorConnection(endpoint: cluster.endpoint, timeout: .milliseconds(200)),
               case .statusReply? = try? probe.request(.status(WireStatus()), timeout: .milliseconds(200)) {
                accepted = BenchProbe.nowNanos()
            }
        }
        guard accepted > 0 else { throw E2EError("the restarted coordinator did not answer within 120 s") }
        let killToAccept = Double(accepted - killed) / 1e9
        var s = WireStatus()
        s.queue = "recovery"
        var live = 0.0
        if case .statusReply(let r)? = try? cluster.connect().request(.status(s)), let q = r.queues.first(where: { $0.name == "recovery" }) {
            live = Double(q.pending + q.ready)
        }
        let replay = replayLine(cluster.coordinatorLog(2))
        let fields: [(String, Double)] = [
            ("ops", Double(n)), ("recovered_ops", live), ("kill_to_accept_s", killToAccept),
            ("journal_bytes", Double(bytes)), ("journal_bytes_per_op", (Double(bytes) / Double(n)).rounded()),
            ("submit_ops_per_s", (Double(n) / submitSeconds).rounded())]
        return [BenchResult(suite: "recovery", name: "kill_restart", fields: fields,
                            note: "replay: \(replay); target ≤ 1 s for 1M live ops: \(n >= 1_000_000 ? (killToAccept <= 1 ? "met" : "missed") : "n/a at this size")")]
    } catch {
        return [BenchResult(suite: "recovery", name: "kill_restart", fields: [], note: "failed: \(error)")]
    }
}

func directoryBytes(_ dir: URL) -> Int {
    let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    return files.reduce(0) { sum, f in
        let size = (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(f).path)[.size] as? Int) ?? 0
        return sum + size
    }
}

/// The "… records replayed in …" part of the coordinator's start line.
private func replayLine(_ log: String) -> String {
    guard let line = log.split(separator: "\n").first(where: { $0.contains("replayed in") }),
          let r = line.range(of: "state directory ") else { return "not logged" }
    return String(line[r.upperBound...]).replacingOccurrences(of: "\"", with: "'")
}
