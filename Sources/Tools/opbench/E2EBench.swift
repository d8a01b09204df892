import Foundation
import Lifecycle
import OpClient
import ZeroMQ
import WireProtocol

/// `opbench e2e`: the whole cluster as separate processes on loopback — one `opcoord` and two
/// `opworker`s started from the directory of this executable (or `$OPQ_BIN_DIR`), a client on a
/// `CoordinatorConnection`. Workloads (each bounded in time; a workload that overruns is reported as
/// given up, with what was done):
///
/// - `independent`: N `noop` ops, submitted in SUBMITs of 8192, then WAIT on their queue; ops/s from the
///   first SUBMIT to the WAIT reply. Run once per worker `--prefetch` value (`$OPQ_E2E_PREFETCH`, default
///   "64,256"), each on a fresh cluster; the CPU seconds each process spent are reported alongside so a
///   miss says where the time went.
/// - `chain`: ops each depending on the previous one; per-hop figures from the coordinator's STATUS
///   timestamps (see `chainResults` for exactly what each one measures).
/// - `layered`: L layers × W ops, each op depending on 2 ops of the previous layer → ops/s.
/// - `cancel`: a running `sleep 60000` op is cancelled; time from sending CANCEL-OPS until the WATCH
///   stream reports it finished-cancelled (client → coordinator → worker → coordinator → client).
/// - journal: the coordinator runs with its journal (a fresh state directory) and, for `independent` and
///   `chain`, once more `--ephemeral`, in the same run (`$OPQ_E2E_JOURNAL`, default "on,off"); every row
///   says which (`"journal": true|false`).
/// - `floor`: the C program's lock-step ZeroMQ round trip between two processes (`$OPQ_ZMQ_FLOOR`), and the
///   chain hop as a ratio to it.
/// - with `peers`: the same workloads on Dask distributed and Ray (scripts/peers/dask_bench.py, run by
///   scripts/bench in a virtualenv whose python is `$OPQ_PEERS_PYTHON`), and ours/theirs ratios.
func runE2EBench(quick: Bool, peers: Bool) -> [BenchResult] {
    E2EChildren.installSignalHandlers()
    let env = ProcessInfo.processInfo.environment
    let prefetches = (env["OPQ_E2E_PREFETCH"] ?? (quick ? "64" : "64,256"))
        .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    let slots = Int(env["OPQ_E2E_SLOTS"] ?? "") ?? 2
    let journalModes = (env["OPQ_E2E_JOURNAL"] ?? "on,off").split(separator: ",").compactMap { (s: Substring) -> Bool? in
        s == "on" ? true : s == "off" ? false : nil
    }
    // CURVE (PROTOCOL.md §12): `$OPQ_E2E_CURVE` "on" (default) adds a run of the first journal mode with
    // keys on every connection; rows say `"curve": true|false`.
    let curveToo = (env["OPQ_E2E_CURVE"] ?? "on") == "on"
    let modes: [E2EMode] = journalModes.map { E2EMode(journal: $0, curve: false) }
        + (curveToo ? [E2EMode(journal: journalModes.first ?? true, curve: true)] : [])
    let withJournal = journalModes.first ?? true
    // For profiling: OPQ_E2E_ONLY=chain,cancel runs only those workloads (independent, chain, layered,
    // cancel, floor, peers); OPQ_E2E_CHAIN=N overrides the chain's length.
    let only = Set((env["OPQ_E2E_ONLY"] ?? "").split(separator: ",").map(String.init))
    func wanted(_ w: String) -> Bool { only.isEmpty || only.contains(w) }
    var sizes = E2ESizes(quick: quick)
    if let n = Int(env["OPQ_E2E_CHAIN"] ?? ""), n > 1 { sizes.chain = n }
    if let n = Int(env["OPQ_E2E_INDEPENDENT"] ?? ""), n > 0 { sizes.independent = n }
    let floorBinary = env["OPQ_ZMQ_FLOOR"].flatMap { $0.isEmpty ? nil : $0 }
    // The floor is measured right before and right after the chain (loopback latency on a VM moves with
    // which vCPUs the processes land on and how idle they are); the ratio uses the mean of the two p50s.
    var floors: [(p50: Double, p99: Double)] = []
    func measureFloor() {
        guard let floorBinary, wanted("floor") else { return }
        if let f = runKeyValues(floorBinary, ["roundtrip", "\(sizes.floorRoundTrips)", "64"], timeout: 60),
           let p50 = f["p50_us"], let p99 = f["p99_us"] { floors.append((p50, p99)) }
    }
    var results: [BenchResult] = []
    func note(_ name: String, _ text: String) {
        results.append(BenchResult(suite: "e2e", name: name, fields: [], note: text))
    }

    func flagged(_ rs: [BenchResult], _ mode: E2EMode) -> [BenchResult] {
        rs.map { var r = $0; r.flags.append(("journal", mode.journal)); r.flags.append(("curve", mode.curve)); return r }
    }

    // independent, once per prefetch value and journal mode, each on a fresh cluster (alternating the
    // journal modes, so a change in the machine's load moves both alike).
    var best: (prefetch: Int, rate: Double)?
    for pf in !wanted("independent") ? [] : prefetches.isEmpty ? [64] : prefetches {
        for mode in modes {
            do {
                let cluster = try E2ECluster(slots: slots, prefetch: pf, journal: mode.journal, curve: mode.curve)
                defer { cluster.stop() }
                let r = try independent(cluster, n: sizes.independent, prefetch: pf, budget: sizes.budget)
                results += flagged([r], mode)
                if mode.journal == withJournal, !mode.curve, let rate = r["ops_per_s"], rate.isFinite, best == nil || rate > best!.rate { best = (pf, rate) }
            } catch {
                note("independent", "prefetch \(pf), \(mode): failed: \(error)")
            }
        }
    }
    let prefetch = best?.prefetch ?? prefetches.first ?? 64

    // http (issue 15): independent with the HTTP side off, and on with a dashboard's load on it
    // (scripts/dashboard-load.py), alternating, `$OPQ_E2E_HTTP_ROUNDS` pairs (default 2; 0 skips).
    let httpRounds = Int(env["OPQ_E2E_HTTP_ROUNDS"] ?? "") ?? (quick ? 1 : 2)
    if wanted("http") && httpRounds > 0 {
        var rows: [BenchResult] = []
        for _ in 0..<httpRounds {
            for on in [false, true] {
                do {
                    let port = try freeTCPPort()
                    let args = on ? ["--http", "127.0.0.1:\(port)"] : ["--http", "off"]
                    let cluster = try E2ECluster(slots: slots, prefetch: prefetch, journal: withJournal, coordinatorArgs: args)
                    defer { cluster.stop() }
                    let load = on ? try cluster.startDashboardLoad("http://127.0.0.1:\(port)") : nil
                    var r = try independent(cluster, n: sizes.independent, prefetch: prefetch, budget: sizes.budget)
                    r.name = "independent_http"
                    r.flags = [("journal", withJournal), ("http", on)]
                    if let load { r.note = "dashboard load: " + cluster.stopDashboardLoad(load) }
                    rows.append(r)
                } catch {
                    note("independent_http", "http \(on ? "on" : "off"): failed: \(error)")
                }
            }
        }
        results += rows
        results += httpRatio(rows)
    }

    // standby (issue 29): independent without and with a hot standby, alternating (StandbyBench.swift).
    let standbyRounds = Int(env["OPQ_E2E_STANDBY_ROUNDS"] ?? "") ?? (quick ? 1 : 2)
    if wanted("standby") && standbyRounds > 0 {
        results += standbyRows(slots: slots, prefetch: prefetch, n: sizes.independent, budget: sizes.budget,
                               rounds: standbyRounds, mode: env["OPQ_E2E_STANDBY_MODE"] ?? "sync")
    }

    // chain per journal mode; layered and cancel on the first mode's cluster, with the best prefetch.
    var chainHopP50 = Double.nan
    for (k, mode) in modes.enumerated() {
        do {
            let cluster = try E2ECluster(slots: slots, prefetch: prefetch, journal: mode.journal, curve: mode.curve)
            defer { cluster.stop() }
            if wanted("chain") {
                measureFloor()
                do {
                    let r = try chain(cluster, n: sizes.chain, budget: sizes.budget)
                    if k == 0 { chainHopP50 = r.first { $0.name == "chain" }?["hop_p50_us"] ?? .nan }
                    results += flagged(r, mode)
                } catch { note("chain", "\(mode): failed: \(error)") }
            }
            measureFloor()
            guard k == 0 else { continue }
            if wanted("layered") {
                do { results += flagged([try layered(cluster, layers: sizes.layers, width: sizes.width, budget: sizes.budget)], mode) }
                catch { note("layered", "failed: \(error)") }
            }
            if wanted("cancel") {
                do { results += flagged(try cancel(cluster, samples: sizes.cancelSamples, budget: sizes.budget), mode) }
                catch { note("cancel", "failed: \(error)") }
            }
        } catch {
            note("cluster", "could not start: \(error)")
        }
    }

    // floor: the raw ZeroMQ round trip between two processes, in the same run.
    if floorBinary == nil {
        note("floor", "not measured: $OPQ_ZMQ_FLOOR unset (scripts/bench builds scripts/floor/zmq_floor.c and sets it)")
    } else if floors.isEmpty {
        if wanted("floor") { note("floor", "the C floor program failed") }
    } else {
        let p50 = floors.map(\.p50).reduce(0, +) / Double(floors.count)
        var fields: [(String, Double)] = [("n", Double(sizes.floorRoundTrips)), ("p50_us", round1(p50)),
                                          ("p99_us", round1(floors.map(\.p99).max()!))]
        for (k, f) in floors.enumerated() { fields.append(("p50_run\(k + 1)_us", f.p50)) }
        var text = "zmq_floor roundtrip 64 B, DEALER<->ROUTER, 2 processes, lock-step; before and after the chain"
        if chainHopP50.isFinite {
            let ratio = chainHopP50 / p50
            fields.append(("chain_hop_ratio", (ratio * 100).rounded() / 100))
            text += "; chain hop p50 / floor p50 = \(String(format: "%.2f", ratio)), target ≤ 1.5: \(ratio <= 1.5 ? "met" : "missed")"
        }
        results.append(BenchResult(suite: "e2e", name: "floor", fields: fields, note: text))
    }

    if curveToo { results += curveRatios(results, journal: withJournal) }
    if peers && wanted("peers") { results += peerResults(ours: results, quick: quick, sizes: sizes) }
    return results
}

/// The HTTP side's cost in this run: independent throughput with a dashboard's load over without, the
/// median of the pairs. Target (issue 15): ≥ 0.95.
func httpRatio(_ rows: [BenchResult]) -> [BenchResult] {
    let on = rows.filter { $0.flags.contains { $0.0 == "http" && $0.1 } }.compactMap { $0["ops_per_s"] }
    let off = rows.filter { $0.flags.contains { $0.0 == "http" && !$0.1 } }.compactMap { $0["ops_per_s"] }
    let pairs = zip(on, off).map { $0 / $1 }
    guard !pairs.isEmpty else { return [] }
    let ratios = pairs.sorted()
    let median = ratios.count % 2 == 1 ? ratios[ratios.count / 2] : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
    // The coordinator's CPU per operation, on over off: steadier than throughput on a shared machine.
    let cpuOn = rows.filter { $0.flags.contains { $0.0 == "http" && $0.1 } }.compactMap { $0["coord_cpu_s"] }.reduce(0, +)
    let cpuOff = rows.filter { $0.flags.contains { $0.0 == "http" && !$0.1 } }.compactMap { $0["coord_cpu_s"] }.reduce(0, +)
    var fields: [(String, Double)] = [("ratio", (median * 100).rounded() / 100)]
    if cpuOff > 0 { fields.append(("coord_cpu_ratio", (cpuOn / cpuOff * 100).rounded() / 100)) }
    for (k, r) in pairs.enumerated() { fields.append(("pair\(k + 1)", (r * 1000).rounded() / 1000)) }
    return [BenchResult(suite: "e2e", name: "http_ratio", fields: fields,
                        note: "independent ops/s with the HTTP side on and a dashboard's load / off, median of \(ratios.count) pairs; target ≥ 0.95: \(median >= 0.95 ? "met" : "missed")")]
}

/// A TCP port nobody listens on now (the kernel's pick for port 0).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw E2EError("socket: \(errno)") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard bound else { throw E2EError("bind: \(errno)") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// CURVE's cost in this run: independent throughput (same prefetch) and chain hop p50, with keys over
/// without, both with the first journal mode. Targets (issue 13): throughput ≥ 0.7, hop ≤ 1.3.
func curveRatios(_ results: [BenchResult], journal: Bool) -> [BenchResult] {
    func flag(_ r: BenchResult, _ name: String) -> Bool? { r.flags.first { $0.0 == name }?.1 }
    func rows(_ name: String, curve: Bool) -> [BenchResult] {
        results.filter { $0.name == name && flag($0, "curve") == curve && flag($0, "journal") == journal }
    }
    var fields: [(String, Double)] = [], text: [String] = []
    for with in rows("independent", curve: true) {
        guard let pf = with["prefetch"], let rate = with["ops_per_s"],
              let base = rows("independent", curve: false).first(where: { $0["prefetch"] == pf })?["ops_per_s"], base > 0 else { continue }
        let ratio = (rate / base * 100).rounded() / 100
        fields.append(("independent_prefetch\(Int(pf))_ratio", ratio))
        text.append("independent (prefetch \(Int(pf))) with/without \(String(format: "%.2f", ratio)), target ≥ 0.7: \(ratio >= 0.7 ? "met" : "missed")")
    }
    if let with = rows("chain", curve: true).first?["hop_p50_us"], let base = rows("chain", curve: false).first?["hop_p50_us"], base > 0 {
        let ratio = (with / base * 100).rounded() / 100
        fields.append(("chain_hop_p50_ratio", ratio))
        text.append("chain hop p50 with/without \(String(format: "%.2f", ratio)), target ≤ 1.3: \(ratio <= 1.3 ? "met" : "missed")")
    }
    guard !fields.isEmpty else { return [] }
    return [BenchResult(suite: "e2e", name: "curve", fields: fields, note: "CURVE cost, same run: " + text.joined(separator: "; "))]
}

// MARK: sizes

struct E2ESizes {
    var independent = 100_000
    var chain = 2_000
    var layers = 100
    var width = 1_000
    var cancelSamples = 200
    var floorRoundTrips = 20_000
    /// Seconds each workload may take before it is given up.
    var budget: Double = 120

    init(quick: Bool) {
        if quick {
            independent = 10_000; chain = 300; layers = 10; width = 200; cancelSamples = 30
            floorRoundTrips = 2_000; budget = 15
        }
    }
}

struct E2EError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

// MARK: workloads

func noop(_ id: String, queue: String, after: [String] = []) -> WireOperation {
    var o = WireOperation()
    o.id = id
    o.kind = "noop"
    o.queue = queue
    o.after = after
    return o
}

/// Submits `ops` in SUBMITs within the protocol's limits, one after the other (each waits for its reply).
func submitAll(_ conn: CoordinatorConnection, _ ops: [WireOperation]) throws {
    // A short run name keeps "RUN/OP" keys within Swift's 15-byte inline strings for these ids.
    for m in Batcher.submits(ops, run: "b", appendAll: true) {
        guard case .submitReply(let r) = try conn.request(m, timeout: .seconds(60)) else {
            throw E2EError("no SUBMIT reply")
        }
        guard r.accepted else {
            throw E2EError("SUBMIT rejected: \(r.errors.prefix(3).map { "\($0.opID): \($0.message)" })")
        }
    }
}

/// WAIT for every op of `queue` (bounded by `seconds`).
func waitQueue(_ conn: CoordinatorConnection, _ queue: String, seconds: Double) throws -> WireWaitReply {
    var w = WireWait()
    w.queue = queue
    w.timeoutUs = Int64(max(0, seconds) * 1_000_000)
    guard case .waitReply(let r) = try conn.request(.wait(w), timeout: .seconds(max(0, seconds) + 10)) else {
        throw E2EError("no WAIT reply")
    }
    return r
}

/// STATUS of `ids`, in pages of at most 8192 ids.
private func statuses(_ conn: CoordinatorConnection, _ ids: [String]) throws -> [String: WireOpStatus] {
    var out: [String: WireOpStatus] = [:]
    var i = 0
    while i < ids.count {
        var s = WireStatus()
        s.opIds = Array(ids[i..<min(ids.count, i + WireLimits.maxBatchRecords)])
        guard case .statusReply(let r) = try conn.request(.status(s), timeout: .seconds(30)) else {
            throw E2EError("no STATUS reply")
        }
        for o in r.ops { out[o.id] = o }
        i += s.opIds.count
    }
    return out
}

private func micros(_ nanos: UInt64) -> Double { Double(nanos) / 1000 }
private func round1(_ x: Double) -> Double { (x * 10).rounded() / 10 }

func independent(_ cluster: E2ECluster, n: Int, prefetch: Int, budget: Double) throws -> BenchResult {
    let conn = try cluster.connect()
    let queue = "e2e-independent-pf\(prefetch)"
    let ops = (0..<n).map { noop("ind\(prefetch)-\($0)", queue: queue) }
    let cpu0 = cluster.cpuSeconds()
    let threads0 = E2ECluster.cpuByThread(cluster.coordinatorPID)
    let t0 = BenchProbe.nowNanos()
    try submitAll(conn, ops)
    let tSubmitted = BenchProbe.nowNanos()
    let r = try waitQueue(conn, queue, seconds: budget - Double(tSubmitted - t0) / 1e9)
    let t1 = BenchProbe.nowNanos()
    let cpu1 = cluster.cpuSeconds()
    let threads1 = E2ECluster.cpuByThread(cluster.coordinatorPID)
    let seconds = Double(t1 - t0) / 1e9
    let done = Int(r.succeededCount + r.failedCount + r.cancelledCount)
    var fields: [(String, Double)] = [("ops", Double(n)), ("prefetch", Double(prefetch)), ("slots", Double(cluster.slots))]
    guard r.finished else {
        return BenchResult(suite: "e2e", name: "independent", fields: fields + [("finished", Double(done))],
                           note: "gave up after \(Int(seconds)) s: \(done) of \(n) finished")
    }
    let rate = Double(n) / seconds
    fields += [("ops_per_s", rate.rounded()), ("submit_s", Double(tSubmitted - t0) / 1e9), ("total_s", seconds),
               ("coord_cpu_s", cpu1.coordinator - cpu0.coordinator), ("workers_cpu_s", cpu1.workers - cpu0.workers),
               ("client_cpu_s", cpu1.client - cpu0.client)]
    // Where the coordinator's CPU went: its loop, the journal's writer, ZeroMQ's I/O thread (CURVE's
    // encryption and the sockets' system calls), the rest; each thread's user + system time.
    for (name, seconds) in threads1.sorted(by: { $0.key < $1.key }) {
        fields.append(("coord_cpu_\(name)_s", seconds - (threads0[name] ?? 0)))
    }
    // The journal's size after the run (a submitted and a finished record per op, plus worker sessions).
    let journalBytes = cluster.stateBytes()
    if journalBytes > 0 { fields.append(("journal_bytes_per_op", (Double(journalBytes) / Double(n)).rounded())) }
    let failed = r.failedCount + r.cancelledCount
    return BenchResult(suite: "e2e", name: "independent", fields: fields,
                       note: "target ≥ 100,000 ops/s: \(rate >= 100_000 ? "met" : "missed")"
                           + (failed > 0 ? "; \(failed) not succeeded" : ""))
}

/// A chain of `n` noop ops. From the coordinator's STATUS timestamps: `started_us` is when the core
/// dispatched the op (the DISPATCH is sent at the end of that loop iteration), `finished_us` when the core
/// processed the FINISHED record. Both are the coordinator loop's `now`, read when a wake-up's messages
/// arrive. (started(i) − finished(i−1) is 0 by construction: the core dispatches the dependent while
/// handling the FINISHED of its dependency, in the same step.)
///   - `chain` (the hop): finished(i) − finished(i−1): one full hop — DISPATCH leaves the coordinator,
///     a worker runs the noop and sends FINISHED, the coordinator processes it and dispatches the next.
///     This is the dependency-to-dependent latency as the coordinator sees it; its floor is one
///     coordinator↔worker round trip.
private func chain(_ cluster: E2ECluster, n: Int, budget: Double) throws -> [BenchResult] {
    let conn = try cluster.connect()
    let queue = "e2e-chain"
    let ids = (0..<n).map { "chain-\($0)" }
    let ops = ids.indices.map { noop(ids[$0], queue: queue, after: $0 == 0 ? [] : [ids[$0 - 1]]) }
    let cpu0 = cluster.cpuSeconds(), cs0 = cluster.contextSwitches()
    let t0 = BenchProbe.nowNanos()
    try submitAll(conn, ops)
    let r = try waitQueue(conn, queue, seconds: budget)
    let t1 = BenchProbe.nowNanos()
    let cpu1 = cluster.cpuSeconds(), cs1 = cluster.contextSwitches()
    guard r.finished else {
        let done = r.succeededCount + r.failedCount + r.cancelledCount
        return [BenchResult(suite: "e2e", name: "chain", fields: [("ops", Double(n)), ("finished", Double(done))],
                            note: "gave up after \(Int(budget)) s: \(done) of \(n) finished")]
    }
    let st = try statuses(conn, ids)
    var hop: [Double] = [], switches = 0
    for i in 1..<n {
        guard let a = st[ids[i - 1]], let b = st[ids[i]] else { continue }
        hop.append(Double(b.finishedUs - a.finishedUs))
        if a.workerID != b.workerID { switches += 1 }
    }
    let wall = micros(t1 - t0) / Double(n)
    let p50 = BenchProbe.quantile(hop, 0.5), p99 = BenchProbe.quantile(hop, 0.99)
    let met = p50 <= 150 && p99 <= 1000
    return [
        BenchResult(suite: "e2e", name: "chain",
                    fields: [("ops", Double(n)), ("hop_p50_us", round1(p50)), ("hop_p99_us", round1(p99)),
                             ("hop_mean_us", round1(hop.reduce(0, +) / Double(max(1, hop.count)))),
                             ("client_us_per_op", round1(wall)),
                             ("coord_cpu_us_per_hop", round1((cpu1.coordinator - cpu0.coordinator) * 1e6 / Double(n))),
                             ("workers_cpu_us_per_hop", round1((cpu1.workers - cpu0.workers) * 1e6 / Double(n))),
                             ("coord_ctxsw_per_hop", round1((cs1.coordinator - cs0.coordinator) / Double(n))),
                             ("workers_ctxsw_per_hop", round1((cs1.workers - cs0.workers) / Double(n))),
                             ("worker_switch_pct", round1(100 * Double(switches) / Double(max(1, n - 1))))],
                    note: "finished(i)-finished(i-1), coordinator clock; target p50 ≤ 150, p99 ≤ 1000 µs: \(met ? "met" : "missed")"),
    ]
}

private func layered(_ cluster: E2ECluster, layers: Int, width: Int, budget: Double) throws -> BenchResult {
    let conn = try cluster.connect()
    let queue = "e2e-layered"
    var ops: [WireOperation] = []
    ops.reserveCapacity(layers * width)
    for l in 0..<layers {
        for j in 0..<width {
            let after = l == 0 ? [] : ["L\(l - 1)-\(j)", "L\(l - 1)-\((j + 1) % width)"]
            ops.append(noop("L\(l)-\(j)", queue: queue, after: after))
        }
    }
    let n = ops.count
    let t0 = BenchProbe.nowNanos()
    try submitAll(conn, ops)
    let tSubmitted = BenchProbe.nowNanos()
    let r = try waitQueue(conn, queue, seconds: budget - Double(tSubmitted - t0) / 1e9)
    let t1 = BenchProbe.nowNanos()
    let seconds = Double(t1 - t0) / 1e9
    let base: [(String, Double)] = [("ops", Double(n)), ("layers", Double(layers)), ("width", Double(width))]
    guard r.finished else {
        let done = r.succeededCount + r.failedCount + r.cancelledCount
        return BenchResult(suite: "e2e", name: "layered", fields: base + [("finished", Double(done))],
                           note: "gave up after \(Int(seconds)) s: \(done) of \(n) finished")
    }
    return BenchResult(suite: "e2e", name: "layered",
                       fields: base + [("ops_per_s", (Double(n) / seconds).rounded()),
                                       ("submit_s", Double(tSubmitted - t0) / 1e9), ("total_s", seconds)],
                       note: "each op after 2 ops of the previous layer; submit start → WAIT reply")
}

/// Cancels running `sleep 60000` ops one at a time. For each: submit, poll STATUS until the op is
/// executing (dispatched), give the worker 2 ms to start the handler, then send CANCEL-OPS and time
/// until the WATCH stream says the op finished cancelled (client → coordinator → worker → handler's task
/// cancelled → FINISHED → coordinator → EVENT → client). The ACK of CANCEL-OPS (one client↔coordinator
/// round trip) is timed too.
private func cancel(_ cluster: E2ECluster, samples: Int, budget: Double) throws -> [BenchResult] {
    let conn = try cluster.connect()
    let queue = "e2e-cancel"
    try conn.watch()   // every queue (a queue exists only once it has an op); events are filtered by op id
    let deadline = BenchProbe.nowNanos() + UInt64(budget * 1e9)
    var roundTrip: [Double] = [], ack: [Double] = []
    var notCancelled = 0, gaveUp = false
    for i in 0..<samples {
        if BenchProbe.nowNanos() > deadline { gaveUp = true; break }
        let id = "cancel-\(i)"
        var op = WireOperation()
        op.id = id
        op.kind = "sleep"
        op.payload = Data("60000".utf8)
        op.queue = queue
        try submitAll(conn, [op])
        var executing = false
        while BenchProbe.nowNanos() < deadline {
            if let s = try statuses(conn, [id])[id], s.state == .executing { executing = true; break }
            usleep(200)
        }
        guard executing else { gaveUp = true; break }
        usleep(2_000)
        while !(try conn.nextEvents(timeout: .zero)).isEmpty {}   // drop the ready/executing events
        var c = WireCancelOps()
        c.opIds = [id]
        let t0 = BenchProbe.nowNanos()
        _ = try conn.request(.cancelOps(c), timeout: .seconds(10))
        let tAck = BenchProbe.nowNanos()
        var seen = false
        while !seen && BenchProbe.nowNanos() < deadline {
            for e in try conn.nextEvents(timeout: .seconds(1)) where e.opID == id && e.state == .finished {
                let t1 = BenchProbe.nowNanos()
                if case .cancelled? = e.outcome.result { roundTrip.append(micros(t1 - t0)) } else { notCancelled += 1 }
                ack.append(micros(tAck - t0))
                seen = true
            }
        }
        if !seen { gaveUp = true; break }
    }
    let p50 = BenchProbe.quantile(roundTrip, 0.5)
    var text = "CANCEL-OPS sent → WATCH event finished(cancelled): client→coord→worker→coord→client"
    if gaveUp { text += "; gave up after \(roundTrip.count) of \(samples) samples" }
    if notCancelled > 0 { text += "; \(notCancelled) finished otherwise" }
    return [
        BenchResult(suite: "e2e", name: "cancel",
                    fields: [("n", Double(roundTrip.count)), ("p50_us", round1(p50)),
                             ("p99_us", round1(BenchProbe.quantile(roundTrip, 0.99)))],
                    note: text),
        BenchResult(suite: "e2e", name: "cancel_ack",
                    fields: [("n", Double(ack.count)), ("p50_us", round1(BenchProbe.quantile(ack, 0.5))),
                             ("p99_us", round1(BenchProbe.quantile(ack, 0.99)))],
                    note: "CANCEL-OPS → ACK: one client↔coordinator round trip, for scale"),
    ]
}

// MARK: peers (Dask, Ray)

/// Runs scripts/peers/dask_bench.py with `$OPQ_PEERS_PYTHON` for each framework and prints its figures
/// and ours/theirs ratios. The script prints JSON lines {"framework","name", fields…, "note"}.
private func peerResults(ours: [BenchResult], quick: Bool, sizes: E2ESizes) -> [BenchResult] {
    let env = ProcessInfo.processInfo.environment
    guard let python = env["OPQ_PEERS_PYTHON"], !python.isEmpty, let script = env["OPQ_PEERS_SCRIPT"] else {
        return [BenchResult(suite: "peers", name: "skipped", fields: [],
                            note: "$OPQ_PEERS_PYTHON / $OPQ_PEERS_SCRIPT unset (scripts/bench e2e --peers sets them)")]
    }
    let frameworks = (env["OPQ_PEERS_FRAMEWORKS"] ?? "dask,ray").split(separator: ",").map(String.init)
    var out: [BenchResult] = []
    for fw in ["dask", "ray"] where !frameworks.contains(fw) {
        out.append(BenchResult(suite: fw, name: "skipped", fields: [],
                               note: "pip install failed on this machine (scripts/bench printed why)"))
    }
    for fw in frameworks {
        let args = [script, "--framework", fw, "--workers", "2",
                    "--independent", "\(sizes.independent)", "--chain", "\(sizes.chain)",
                    "--layers", "\(sizes.layers)", "--width", "\(sizes.width)",
                    "--cancel", "\(min(sizes.cancelSamples, quick ? 10 : 50))", "--budget", "\(Int(sizes.budget))"]
        let lines = runLines(python, args, timeout: sizes.budget * 5 + 120)
        if lines.isEmpty {
            out.append(BenchResult(suite: "peers", name: fw, fields: [], note: "no output (crashed or timed out; see stderr)"))
            continue
        }
        for obj in lines {
            let name = obj["name"] as? String ?? "?"
            var fields: [(String, Double)] = []
            for key in ["ops", "n", "finished", "ops_per_s", "hop_p50_us", "hop_p99_us", "start_hop_p50_us",
                        "client_us_per_op", "p50_us", "p99_us", "missed", "total_s"] {
                if let v = obj[key] as? Double { fields.append((key, v)) } else if let v = obj[key] as? Int { fields.append((key, Double(v))) }
            }
            var note = obj["note"] as? String ?? ""
            // ours / theirs: throughput higher is better, latency lower is better; the ratio is always ours/theirs.
            // Ours: the best of our rows of that name (independent runs once per prefetch value).
            if let mine = ours.filter({ $0.name == name }).max(by: { ($0["ops_per_s"] ?? 0) < ($1["ops_per_s"] ?? 0) }) {
                for key in ["ops_per_s", "hop_p50_us", "p50_us"] {
                    if let a = mine[key], let b = fields.first(where: { $0.0 == key })?.1, b > 0 {
                        let ratio = a / b
                        fields.append(("ours_over_theirs_" + key, (ratio * 1000).rounded() / 1000))
                        note += (note.isEmpty ? "" : "; ") + "ours/theirs \(key) = \(String(format: ratio < 0.1 ? "%.4f" : "%.2f", ratio))"
                    }
                }
            }
            out.append(BenchResult(suite: fw, name: name, fields: fields, note: note))
        }
    }
    return out
}

// MARK: processes

/// Child PIDs, kept in a fixed C array so a signal handler can end them.
enum E2EChildren {
    nonisolated(unsafe) static let pids = UnsafeMutablePointer<pid_t>.allocate(capacity: 64)
    nonisolated(unsafe) static var count = 0
    nonisolated(unsafe) static var installed = false

    static func add(_ pid: pid_t) {
        if count < 64 { pids[count] = pid; count += 1 }
    }

    static func remove(_ pid: pid_t) {
        for i in 0..<count where pids[i] == pid { pids[i] = 0 }
    }

    nonisolated(unsafe) static var signals: StopSignals?

    /// SIGINT, SIGTERM or SIGHUP (`StopSignals`): the clusters' processes are ended, then opbench.
    static func installSignalHandlers() {
        guard !installed else { return }
        installed = true
        signals = StopSignals(stop: { s in
            for i in 0..<E2EChildren.count where E2EChildren.pids[i] > 0 { kill(E2EChildren.pids[i], SIGKILL) }
            _exit(128 + s)
        })
    }
}

/// How one e2e cluster runs: with its journal or `--ephemeral`, with CURVE keys or without.
struct E2EMode: CustomStringConvertible {
    var journal: Bool
    var curve: Bool
    var description: String { "journal \(journal ? "on" : "off"), curve \(curve ? "on" : "off")" }
}

/// One opcoord and two opworkers on loopback, logging to a temp dir; `stop()` ends them by PID.
final class E2ECluster {
    let dir: URL
    let endpoint: String
    let slots: Int
    private var coordinator: Process
    private let coordinatorArgs: [String]
    private var coordinatorStarts = 1
    private var workers: [Process] = []
    private var stopped = false
    /// With `curve`: the client's keys (an admin key); the workers use a worker key.
    private(set) var clientKeys: CurveClientKeys?

    static var binDirectory: String {
        if let d = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"], !d.isEmpty { return d }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }

    var coordinatorPID: pid_t { coordinator.processIdentifier }

    /// `journal`: the coordinator keeps its journal in a fresh state directory (else `--ephemeral`).
    /// `curve`: keys on every connection (a coordinator key, an allow file with a worker and an admin key).
    init(slots: Int, prefetch: Int, workerCount: Int = 2, journal: Bool = true, curve: Bool = false, coordinatorArgs: [String] = []) throws {
        self.slots = slots
        let bin = Self.binDirectory
        for name in ["opcoord", "opworker"] where !FileManager.default.isExecutableFile(atPath: bin + "/" + name) {
            throw E2EError("\(bin)/\(name) not found: build it first (scripts/bench e2e does)")
        }
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("opq-e2e-\(getpid())-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let endpointFile = dir.appendingPathComponent("endpoint").path
        let state = journal ? ["--state-dir", dir.appendingPathComponent("state").path] : ["--ephemeral"]
        var keyArgs: [String] = [], workerKeyArgs: [String] = []
        if curve {
            let k = dir.appendingPathComponent("keys").path
            try FileManager.default.createDirectory(atPath: k, withIntermediateDirectories: true)
            let coordinatorKey = try KeyFile.create(at: k + "/coordinator.key")
            let worker = try KeyFile.create(at: k + "/worker.key"), admin = try KeyFile.create(at: k + "/admin.key")
            try "\(Z85.encode(worker.publicKey)) worker worker\n\(Z85.encode(admin.publicKey)) admin admin\n"
                .write(toFile: k + "/allow.txt", atomically: true, encoding: .utf8)
            keyArgs = ["--key", k + "/coordinator.key", "--allow", k + "/allow.txt"]
            workerKeyArgs = ["--key", k + "/worker.key", "--coordinator-key", k + "/coordinator.key.pub"]
            clientKeys = CurveClientKeys(keys: admin, server: coordinatorKey.publicKeyValue)
        }
        // The HTTP side only where a row asks for it (`--http`), so the other rows compare with earlier runs.
        let http = coordinatorArgs.contains("--http") ? [] : ["--http", "off"]
        self.coordinatorArgs = state + keyArgs + http + coordinatorArgs
        coordinator = try Self.launch(bin + "/opcoord", ["--bind", "tcp://127.0.0.1:*", "--endpoint-file", endpointFile,
                                                         "--log-level", "warning"] + self.coordinatorArgs,
                                      log: dir.appendingPathComponent("opcoord.log"))
        var found: String?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: endpointFile, encoding: .utf8), text.hasPrefix("tcp://") {
                found = text.trimmingCharacters(in: .whitespacesAndNewlines); break
            }
            guard coordinator.isRunning else { break }
            usleep(10_000)
        }
        guard let found else {
            let log = (try? String(contentsOf: dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? ""
            endpoint = ""
            stop()
            throw E2EError("opcoord did not report its endpoint within 20 s: \(log)")
        }
        endpoint = found
        do {
            for i in 0..<workerCount {
                workers.append(try Self.launch(bin + "/opworker",
                                               ["--connect", endpoint, "--name", "e2e-w\(i + 1)", "--slots", "\(slots)",
                                                "--prefetch", "\(prefetch)", "--log-level", "warning"] + workerKeyArgs,
                                               log: dir.appendingPathComponent("w\(i + 1).log")))
            }
            let conn = try connect()
            let until = Date().addingTimeInterval(20)
            while true {
                guard case .workersReply(let r) = try conn.request(.workers) else { throw E2EError("no WORKERS reply") }
                if r.workers.count >= workerCount { break }
                if Date() > until { throw E2EError("only \(r.workers.count) of \(workerCount) workers registered within 20 s") }
                usleep(10_000)
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// SIGKILL to the coordinator, then a new one on the same endpoint and state directory, started at
    /// once; returns when the old one is gone and the new one was launched.
    func crashAndRestartCoordinator(logLevel: String = "info") throws {
        kill(coordinator.processIdentifier, SIGKILL)
        coordinator.waitUntilExit()
        E2EChildren.remove(coordinator.processIdentifier)
        coordinatorStarts += 1
        coordinator = try Self.launch(Self.binDirectory + "/opcoord", ["--bind", endpoint, "--log-level", logLevel] + coordinatorArgs,
                                      log: dir.appendingPathComponent("opcoord-\(coordinatorStarts).log"))
    }

    /// scripts/dashboard-load.py against the HTTP side at `base`, once it answers (bounded wait).
    func startDashboardLoad(_ base: String) throws -> Process {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/dashboard-load.py").path
        let log = dir.appendingPathComponent("dashboard-load.log")
        let p = try Self.launch("/usr/bin/python3", [script, base, "600"], log: log)
        let deadline = Date().addingTimeInterval(15)
        while !((try? String(contentsOf: log, encoding: .utf8)) ?? "").hasPrefix("ready") {
            if !p.isRunning || Date() > deadline {
                _ = stopDashboardLoad(p)
                throw E2EError("the dashboard load did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            }
            usleep(20_000)
        }
        return p
    }

    /// Stops the load (SIGINT: it prints its counts) and returns what it printed.
    func stopDashboardLoad(_ p: Process) -> String {
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        E2EChildren.remove(p.processIdentifier)
        let text = (try? String(contentsOf: dir.appendingPathComponent("dashboard-load.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").last.map(String.init) ?? ""
    }

    /// Bytes in the coordinator's state directory (0 when it runs --ephemeral).
    func stateBytes() -> Int { directoryBytes(dir.appendingPathComponent("state")) }

    /// The coordinator's log of its `start`-th start (1 = the first).
    func coordinatorLog(_ start: Int) -> String {
        (try? String(contentsOf: dir.appendingPathComponent(start == 1 ? "opcoord.log" : "opcoord-\(start).log"), encoding: .utf8)) ?? ""
    }

    func connect() throws -> CoordinatorConnection {
        try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(30), curve: clientKeys)
    }

    /// CPU seconds (user + system) so far of the coordinator, of the workers together, and of this process.
    func cpuSeconds() -> (coordinator: Double, workers: Double, client: Double) {
        (Self.cpu(coordinator.processIdentifier), workers.map { Self.cpu($0.processIdentifier) }.reduce(0, +), Self.cpu(getpid()))
    }

    /// Context switches so far (voluntary + involuntary, every thread) of the coordinator and of the workers.
    func contextSwitches() -> (coordinator: Double, workers: Double) {
        (Self.switches(coordinator.processIdentifier), workers.map { Self.switches($0.processIdentifier) }.reduce(0, +))
    }

    static func switches(_ pid: pid_t) -> Double {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return .nan }
        var n = 0.0
        for t in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.contains("ctxt_switches:") {
                n += Double(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return n
    }

    static func cpu(_ pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return .nan }
        let f = text[text.index(after: close)...].split(separator: " ")
        // after the comm field: state(0) ppid(1) … utime(11) stime(12)
        guard f.count > 12, let u = Double(f[11]), let s = Double(f[12]) else { return .nan }
        let ticks = (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
        // Nanosecond precision from the scheduler's per-thread run time, when available.
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            var ns = 0.0
            for t in tasks {
                guard let line = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
                      let first = line.split(separator: " ").first, let v = Double(first) else { return ticks }
                ns += v
            }
            return ns / 1e9
        }
        return ticks
    }

    /// The process's CPU seconds (user + system, from /proc's per-thread `stat`) by kind of thread:
    /// `loop` (the main thread), `journal` (`journal-writer`), `zmq_io` (`ZMQbg/IO/…`), `other`; and
    /// `system`, the kernel's share of them all.
    static func cpuByThread(_ pid: pid_t) -> [String: Double] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        var out: [String: Double] = [:]
        for t in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/stat", encoding: .utf8),
                  let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { continue }
            let comm = text[text.index(after: open)..<close]
            let f = text[text.index(after: close)...].split(separator: " ")
            guard f.count > 12, let u = Double(f[11]), let s = Double(f[12]) else { continue }
            let kind = t == "\(pid)" ? "loop" : comm == "journal-writer" ? "journal"
                : comm.hasPrefix("ZMQbg/IO") ? "zmq_io" : "other"
            out[kind, default: 0] += (u + s) / tick
            out["system", default: 0] += s / tick
        }
        return out
    }

    static func launch(_ path: String, _ args: [String], log: URL) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        E2EChildren.add(p.processIdentifier)
        return p
    }

    /// SIGTERM to every process, SIGKILL after 5 s; removes the log directory unless `$OPQ_E2E_KEEP` is set.
    func stop() {
        guard !stopped else { return }
        stopped = true
        let all = workers + [coordinator]
        for p in all where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        for p in all {
            while p.isRunning && Date() < deadline { usleep(10_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
            E2EChildren.remove(p.processIdentifier)
        }
        if ProcessInfo.processInfo.environment["OPQ_E2E_KEEP"] == nil { try? FileManager.default.removeItem(at: dir) }
    }
}
