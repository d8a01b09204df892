import Foundation
import OpClient
import WireProtocol

// Retention by bytes (issue 25 finding 3; docs/BENCHMARKS.md, "Retention by bytes"): opcoord with
// `--retain-bytes 256MiB` (journal on) and 2 workers; runs of 8 `echo` ops with 1 MiB payloads (so 1 MiB
// results), one run at a time, until N ops have finished. The coordinator's RSS is sampled after every run:
// its peak must stay within the budget plus the RSS it had before the first large op (baseline).
// OPQ_RETAIN_OPS (default 600; --quick 160), OPQ_RETAIN_BYTES ("256MiB"), OPQ_RETAIN_RESULT (1 MiB).

func runRetainBytesBench(quick: Bool) -> [BenchResult] {
    E2EChildren.installSignalHandlers()
    let env = ProcessInfo.processInfo.environment
    let total = Int(env["OPQ_RETAIN_OPS"] ?? "") ?? (quick ? 160 : 600)
    let budgetText = env["OPQ_RETAIN_BYTES"] ?? "256MiB"
    let resultBytes = Int(env["OPQ_RETAIN_RESULT"] ?? "") ?? 1 << 20
    let perRun = 8
    do {
        let cluster = try E2ECluster(slots: 2, prefetch: 2, coordinatorArgs: ["--retain-bytes", budgetText])
        defer { cluster.stop() }
        let conn = try cluster.connect()
        func run(_ name: String, payload: Data) throws {
            var m = WireSubmit()
            m.run = name
            m.operations = (0..<perRun).map { i in
                var o = WireOperation()
                o.id = "o\(i)"
                o.kind = "echo"
                o.payload = payload
                return o
            }
            guard case .submitReply(let r) = try conn.request(.submit(m), timeout: .seconds(60)), r.accepted else {
                throw E2EError("run \(name) was not accepted")
            }
            var w = WireWait()
            w.run = name
            w.timeoutUs = 120_000_000
            guard case .waitReply(let done) = try conn.request(.wait(w), timeout: .seconds(130)), done.finished else {
                throw E2EError("run \(name) did not finish within 120 s")
            }
        }
        try run("warm-up", payload: Data("x".utf8))
        let baseline = residentBytes(cluster.coordinatorPID)
        let payload = Data(repeating: 0x78, count: resultBytes)
        var peak = baseline
        let t0 = BenchProbe.nowNanos()
        for k in 0..<(total + perRun - 1) / perRun {
            try run("big-\(k)", payload: payload)
            peak = max(peak, residentBytes(cluster.coordinatorPID))
        }
        let seconds = Double(BenchProbe.nowNanos() - t0) / 1e9
        var listed = WireRuns()
        listed.limit = 1
        guard case .runsReply(let rr) = try conn.request(.runs(listed)) else { throw E2EError("no RUNS reply") }
        let mib = { (b: Double) in (b / 1_048_576 * 10).rounded() / 10 }
        let budget = Double(rr.retainBytes)
        let met = peak <= budget + baseline
        return [BenchResult(suite: "retain-bytes", name: "large-results", fields: [
            ("ops", Double(total)), ("result_mib", mib(Double(resultBytes))), ("retain_mib", mib(budget)),
            ("rss_baseline_mib", mib(baseline)), ("rss_peak_mib", mib(peak)), ("rss_end_mib", mib(residentBytes(cluster.coordinatorPID))),
            ("retained_mib", mib(Double(rr.retainedBytes))), ("runs_retained", Double(rr.retained)), ("runs_evicted", Double(rr.evicted)),
            ("mib_per_s", (Double(total * resultBytes) / 1_048_576 / seconds).rounded()),
        ], note: "RSS peak ≤ --retain-bytes + baseline: \(met ? "met" : "missed")")]
    } catch {
        return [BenchResult(suite: "retain-bytes", name: "large-results", fields: [], note: "failed: \(error)")]
    }
}
