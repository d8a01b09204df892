import Foundation
import SchedulerCore
import DequeModule

/// Drives SchedulerCore in-process with simulated workers that finish every part at once:
/// (a) 1M independent ops, (b) a layered 1M-op DAG (2 deps per op on the previous layer), (c) the same at 10k.
/// (d) the same DAG with the core pre-sized; (e) (a) and (b) with fair share on, the ops spread over 2 and over
/// 1,000 share keys (issue 28: ≥ 0.95× of (a) and (b), which share nothing).
/// `$OPQ_CORE_ONLY` (comma-separated: independent, dag, dag_10k, reserved, shares, independent_shares,
/// dag_shares; `$OPQ_CORE_SHARE_KEYS`, default "2,1000", the share counts) runs only those workloads and
/// `$OPQ_CORE_OPS` sets the big workloads' size (e.g. for instruction counts under callgrind).
func runCoreBench(json: Bool, quick: Bool) -> [BenchResult] {
    let env = ProcessInfo.processInfo.environment
    let big = Int(env["OPQ_CORE_OPS"] ?? "") ?? (quick ? 100_000 : 1_000_000)
    let only = env["OPQ_CORE_ONLY"].map { Set($0.split(separator: ",").map(String.init)) }
    let wanted = { (w: String) in only?.contains(w) ?? true }
    var results: [BenchResult] = []
    var a, b, c, d: BenchResult?
    if wanted("independent") { a = CoreWorkload(name: "independent_\(label(big))", ops: big, layerWidth: 0).run() }
    if wanted("dag") { b = CoreWorkload(name: "dag_\(label(big))", ops: big, layerWidth: 1_000).run() }
    // The small graph is run several times (fresh core each) so its figure is not noise.
    var small = CoreWorkload(name: "dag_10k", ops: 10_000, layerWidth: 1_000)
    small.repeats = quick ? 5 : 20
    if wanted("dag_10k") { c = small.run() }
    // The same DAG with the core pre-sized (Scheduler.reserve), as a coordinator expecting the load would be.
    var reserved = CoreWorkload(name: "dag_\(label(big))_reserved", ops: big, layerWidth: 1_000)
    reserved.reserve = true
    if wanted("reserved") { d = reserved.run() }
    var shared: [(BenchResult, BenchResult?)] = []
    let shareKeys = (env["OPQ_CORE_SHARE_KEYS"] ?? "2,1000").split(separator: ",").compactMap { Int($0) }
    for keys in shareKeys {
        if wanted("shares") || wanted("independent_shares") {
            var i = CoreWorkload(name: "independent_\(label(big))_shares\(keys)", ops: big, layerWidth: 0)
            i.shares = keys
            shared.append((i.run(), a))
        }
        if wanted("shares") || wanted("dag_shares") {
            var g = CoreWorkload(name: "dag_\(label(big))_shares\(keys)", ops: big, layerWidth: 1_000)
            g.shares = keys
            shared.append((g.run(), b))
        }
    }
    let target = 1_000_000.0
    for case let (r?, checkMem) in [(a, true), (b, true), (c, false), (d, true)] {
        var notes: [String] = []
        let rate = r["ops_per_s"] ?? 0
        notes.append("≥1M ops/s: \(rate >= target ? "met" : "MISSED")")
        if checkMem && big >= 1_000_000, let bpo = r["bytes_per_op"] {
            notes.append("≤256 B/op: \(bpo <= 256 ? "met" : "MISSED")")
        }
        if r.name.hasPrefix("dag_") && r.name != "dag_10k", let small = c?["ops_per_s"], small > 0 {
            let ratio = rate / small
            notes.append("\(label(big)) vs 10k throughput \(Int((ratio * 100).rounded()))% (≥75%: \(ratio >= 0.75 ? "met" : "MISSED"))")
        }
        var rr = r
        rr.note = notes.joined(separator: "; ")
        results.append(rr)
    }
    for (r, base) in shared {
        var rr = r
        if let base = base?["ops_per_s"], base > 0, let rate = r["ops_per_s"] {
            let ratio = rate / base
            rr.fields.append(("vs_no_sharing", ratio))
            rr.note = "vs the same workload without sharing, same run: \(String(format: "%.2f", ratio))× (≥0.95×: \(ratio >= 0.95 ? "met" : "MISSED"))"
        }
        results.append(rr)
    }
    return results
}

private func label(_ n: Int) -> String { n >= 1_000_000 ? "\(n / 1_000_000)M" : "\(n / 1_000)k" }

struct CoreWorkload {
    var name: String
    var ops: Int
    var layerWidth: Int          // 0 = independent ops
    var batch = 10_000
    var workers = 8
    var creditPerWorker = 256
    var repeats = 1
    var reserve = false
    /// 0: no sharing (one share key); N: N share keys in a queue that shares by key, each batch split
    /// into N runs of ops with one key.
    var shares = 0

    func spec(_ i: Int) -> OperationSpec {
        var s = OperationSpec(id: "o\(i)", kind: "noop")
        if layerWidth > 0 && i >= layerWidth {
            let layerStart = (i / layerWidth - 1) * layerWidth
            let j = i % layerWidth
            let d1 = layerStart + (j &* 7 &+ 1) % layerWidth
            var d2 = layerStart + (j &* 13 &+ 5) % layerWidth
            if d2 == d1 { d2 = layerStart + (j + 1) % layerWidth }
            s.after = ["o\(d1)", "o\(d2)"]
        }
        return s
    }

    func run() -> BenchResult {
        var coreNanos: UInt64 = 0
        var buildNanos: UInt64 = 0
        var rssGrowth = 0
        var dispatched = 0
        for _ in 0..<repeats {
            let r = once()
            coreNanos += r.core; buildNanos += r.build; rssGrowth = max(rssGrowth, r.rss); dispatched += r.dispatched
        }
        let total = ops * repeats
        let secs = Double(coreNanos) / 1e9
        return BenchResult(suite: "core", name: name, fields: [
            ("ops", Double(total)),
            ("seconds", secs),
            ("ops_per_s", Double(total) / secs),
            ("bytes_per_op", Double(rssGrowth) / Double(ops)),
            ("dispatches", Double(dispatched)),
            ("spec_build_s", Double(buildNanos) / 1e9),
        ])
    }

    /// One run; the time spent building specs (the shell's decoding) is measured apart from the core's.
    var shareNames: [String] { (0..<shares).map { "s\($0)" } }

    func once() -> (core: UInt64, build: UInt64, rss: Int, dispatched: Int) {
        let names = shareNames
        // Runs of `block` ops share a key, as a batch from one submitter does (shares alternating op by op
        // in one batch cost one dictionary lookup per op more: ≈ 400 instructions, BENCHMARKS.md "core").
        let block = shares > 0 ? max(1, batch / shares) : 1
        let queues = shares > 0 ? [QueueSpec(name: OperationSpec.defaultQueue, fairness: QueueFairness(share: .key))] : []
        let rss0 = BenchProbe.residentBytes()
        var s = Scheduler()
        if reserve { s.reserve(ops: ops) }
        var out: [Action] = []
        out.reserveCapacity(4096)
        var fifo = Deque<Dispatch>()
        var stim: UInt64 = 0
        var now: Int64 = 0
        var coreNanos: UInt64 = 0
        var buildNanos: UInt64 = 0
        var next = 0
        var finished = 0
        var dispatched = 0
        let capacity = workers * creditPerWorker
        func feed(_ e: Event) {
            stim += 1; now += 1
            out.removeAll(keepingCapacity: true)
            let t0 = BenchProbe.nowNanos()
            s.handle(Input(stimulus: stim, now: now, e), into: &out)
            coreNanos += BenchProbe.nowNanos() - t0
            for a in out {
                switch a {
                case .dispatch(let d): fifo.append(d); dispatched += 1
                case .journal(.finished): finished += 1
                default: break
                }
            }
        }
        for w in 0..<workers {
            feed(.workerJoined(WorkerHello(worker: UInt64(w + 1), name: "w\(w)", slots: creditPerWorker, kinds: ["noop"])))
        }
        var guardLoops = ops * 4 + 1_000
        while finished < ops && guardLoops > 0 {
            guardLoops -= 1
            if next < ops && fifo.count < capacity / 2 {
                let t0 = BenchProbe.nowNanos()
                let n = min(batch, ops - next)
                let specs = (next..<next + n).map { i in
                    var o = spec(i)
                    if shares > 0 { o.share = names[(i / block) % shares] }
                    return o
                }
                buildNanos += BenchProbe.nowNanos() - t0
                next += n
                feed(.submit(ClientRef(client: 1, request: UInt64(next)), ops: specs, queues: next == n ? queues : []))
            } else if let d = fifo.popFirst() {
                feed(.partFinished(PartRef(worker: d.worker, op: d.op, part: d.part, attempt: d.attempt, token: d.token), .succeeded([]), grant: 1))
            } else {
                break
            }
        }
        out = []
        fifo = []
        let rss = BenchProbe.residentBytes() - rss0
        precondition(finished == ops, "core bench \(name): finished \(finished) of \(ops)")
        withExtendedLifetime(s) {}
        return (coreNanos, buildNanos, rss, dispatched)
    }
}
