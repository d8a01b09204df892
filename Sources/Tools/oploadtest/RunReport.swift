import Foundation

/// One workload run, as written to `--json` (keys in snake_case; scripts/loadtest-plot.py reads it).
struct RunReport: Codable {
    var tool = "oploadtest"
    var version = 1
    var label: String?
    var series: String?
    var target: String?
    var workload: String
    var ops: Int
    var seed: UInt64
    var opKind: String
    var opMs: Int
    var coordinator: String
    var startedAt: String
    var workers: Int
    var slotsTotal: Int
    var wallS: Double = 0
    var throughputOpsS: Double = 0
    var outcomes: [String: Int] = [:]
    var unfinished = 0
    /// Operations that ran more than once (a worker was lost, or a retry).
    var redispatched = 0
    /// Worker reports the coordinator ignored as stale during the run.
    var fenced: UInt64 = 0
    var coordinatorFigures = CoordinatorFigures()
    var latenciesUs: [String: LatencySummary] = [:]
    var workerUtilisation: [WorkerUtilisation] = []
    var exactlyOnce: ExactlyOnce?
    var timeline: [TimelineEntry]?
    var checks: [Check] = []
    var notes: [String] = []

    var passed: Bool { checks.allSatisfy(\.ok) }
}

struct CoordinatorFigures: Codable {
    var cpuS: Double?
    var rssBytesStart: UInt64?
    var rssBytesEnd: UInt64?
    /// RSS before any worker connected (`--baseline-rss`), for the per-worker cost.
    var rssBytesNoWorkers: UInt64?
    var bytesPerWorker: Double?
    /// (RSS with the ops held − RSS before them) / ops, for the `queued` workload.
    var bytesPerQueuedOp: Double?
    var submitOpsS: Double?
}

struct WorkerUtilisation: Codable {
    var workerID: String
    var name: String
    var slots: Int
    var ops: Int
    /// Share of the run's operations that ran here.
    var share: Double
    /// succeeded ops × op duration / (wall × slots); only for `sleep`/`burn` operations, whose duration is
    /// known. Wall is the whole run, so a worker that joined late (a new session) shows less.
    var utilisation: Double?
}

/// From the WATCH stream: how many FINISHED events each operation produced.
struct ExactlyOnce: Codable {
    var ok: Bool
    var operations: Int
    var finishedOnce: Int
    var finishedTwiceOrMore: Int
    var neverFinished: Int
    var eventGaps: Int
}

struct TimelineEntry: Codable {
    var op: String
    var worker: String
    var startUs: Int64
    var endUs: Int64
    var outcome: String
}

struct Check: Codable {
    var name: String
    var ok: Bool
    var detail: String
}

extension RunReport {
    func json() throws -> Data {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try e.encode(self)
    }

    /// A few lines for people: what ran, how fast, the latency percentiles, the checks.
    func table() -> String {
        var lines: [String] = []
        let who = label ?? target ?? ""
        lines.append("== \(workload): \(ops) ops (\(opKind)\(opMs > 0 ? " \(opMs) ms" : "")) on \(workers) workers (\(slotsTotal) slots)\(who.isEmpty ? "" : " [\(who)]")")
        let outcomeText = outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        lines.append(String(format: "   wall %.2f s, %.0f ops/s; ", wallS, throughputOpsS) + outcomeText
                     + (unfinished > 0 ? ", UNFINISHED \(unfinished)" : "")
                     + "; re-dispatched \(redispatched); fenced \(fenced)")
        var coord: [String] = []
        if let c = coordinatorFigures.cpuS { coord.append(String(format: "CPU %.2f s (%.0f%% of one core)", c, wallS > 0 ? c / wallS * 100 : 0)) }
        if let r = coordinatorFigures.rssBytesEnd { coord.append(String(format: "RSS %.1f MiB", Double(r) / 1_048_576)) }
        if let b = coordinatorFigures.bytesPerQueuedOp { coord.append(String(format: "%.0f B per queued op", b)) }
        if let b = coordinatorFigures.bytesPerWorker { coord.append(String(format: "%.0f B per connected worker", b)) }
        if !coord.isEmpty { lines.append("   coordinator: " + coord.joined(separator: ", ")) }
        if !latenciesUs.isEmpty {
            lines.append("   latency (µs)         count      p50      p90      p99    p99.9      max")
            for (name, l) in latenciesUs.sorted(by: { $0.key < $1.key }) {
                lines.append("   " + name.padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: " %9llu %8llu %8llu %8llu %8llu %8llu", l.count, l.p50, l.p90, l.p99, l.p999, l.max))
            }
        }
        if !workerUtilisation.isEmpty {
            let shares = workerUtilisation.map(\.share)
            var text = String(format: "   workers: %d ran ops; share min %.3f max %.3f", workerUtilisation.count, shares.min()!, shares.max()!)
            let u = workerUtilisation.compactMap(\.utilisation)
            if !u.isEmpty { text += String(format: "; utilisation min %.2f mean %.2f max %.2f", u.min()!, u.reduce(0, +) / Double(u.count), u.max()!) }
            lines.append(text)
        }
        if let x = exactlyOnce {
            lines.append("   exactly once: \(x.ok ? "yes" : "NO") — \(x.finishedOnce) of \(x.operations) finished once, \(x.finishedTwiceOrMore) more than once, \(x.neverFinished) never; event gaps \(x.eventGaps)")
        }
        for c in checks { lines.append("   check \(c.ok ? "ok  " : "FAIL") \(c.name): \(c.detail)") }
        for n in notes { lines.append("   note: \(n)") }
        return lines.joined(separator: "\n")
    }
}
