import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queues and operations: state, outcome, worker, attempts, timestamps (µs).")

    @OptionGroup var connection: Connection

    @Argument(help: "Operation ids; none lists every operation (up to --limit).")
    var ids: [String] = []

    @Option(help: "Only this queue's operations.")
    var queue: String?

    @Option(help: "At most this many operation records.")
    var limit: Int = 1000

    @Flag(help: "Only the per-queue counts.")
    var queuesOnly = false

    @Flag(help: "Include result bytes (as UTF-8 text) in --json output.")
    var results = false

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        var s = WireStatus()
        s.opIds = ids
        s.queue = queue ?? ""
        s.ops = !queuesOnly
        s.limit = UInt32(max(1, limit))
        s.withResults = results
        let reply = try withCoordinator { try conn.request(.status(s)) }
        guard case .statusReply(let r) = reply else { throw ExitCode(3) }
        if json {
            printJSON(["queues": r.queues.map(queueJSON), "operations": r.ops.map { opJSON($0, results: results) },
                       "not_found": r.notFound, "now_us": r.nowUs,
                       "coordinator_rss_bytes": r.coordinatorRssBytes, "coordinator_cpu_us": r.coordinatorCpuUs])
        } else {
            printQueues(r.queues)
            if !r.ops.isEmpty { print(""); printOps(r.ops) }
            if !r.nextAfter.isEmpty { print("(more operations; use --limit or ids)") }
            print(""); print(coordinatorLine(r))
        }
        if !r.notFound.isEmpty {
            printError("opctl: unknown operation(s): \(r.notFound.joined(separator: ", "))")
            throw ExitCode(3)
        }
    }
}

/// "coordinator: RSS 12.3 MiB, CPU 1.52 s" (RSS 0 means the coordinator could not read it).
func coordinatorLine(_ r: WireStatusReply) -> String {
    let rss = r.coordinatorRssBytes == 0 ? "unknown" : String(format: "%.1f MiB", Double(r.coordinatorRssBytes) / 1_048_576)
    return "coordinator: RSS \(rss), CPU \(String(format: "%.2f", Double(r.coordinatorCpuUs) / 1_000_000)) s"
}

func stateName(_ s: WireOpState, cancelled: Bool) -> String {
    let base: String
    switch s {
    case .pending: base = "pending"
    case .ready: base = "ready"
    case .executing: base = "executing"
    case .finished: base = "finished"
    default: base = "unknown"
    }
    return cancelled && s != .finished ? base + "+cancelled" : base
}

func outcomeName(_ o: WireOutcome) -> String {
    switch o.result {
    case .succeeded?: "succeeded"
    case .failed?: "failed"
    case .cancelled?: "cancelled"
    case nil: "-"
    }
}

func qosName(_ q: WireQoS) -> String {
    switch q {
    case .userInteractive: "userInteractive"
    case .userInitiated: "userInitiated"
    case .utility: "utility"
    case .background: "background"
    default: "default"
    }
}

func priorityName(_ p: Int32) -> String {
    switch p {
    case -8: "veryLow"
    case -4: "low"
    case 0: "normal"
    case 4: "high"
    case 8: "veryHigh"
    default: "\(p)"
    }
}

func queueJSON(_ q: WireQueueCounts) -> [String: Any] {
    ["name": q.name, "pending": q.pending, "ready": q.ready, "executing": q.executing, "finished": q.finished,
     "cancelled": q.cancelled, "failed": q.failed, "suspended": q.suspended, "max_concurrent": q.maxConcurrent,
     "qos": qosName(q.qos)]
}

func opJSON(_ o: WireOpStatus, results: Bool) -> [String: Any] {
    var d: [String: Any] = [
        "id": o.id, "name": o.name, "queue": o.queue, "state": stateName(o.state, cancelled: false),
        "cancelled": o.cancelled, "outcome": outcomeName(o.outcome), "worker": o.workerID, "attempts": o.attempts,
        "priority": priorityName(o.priority), "parts": o.parts, "parts_done": o.partsDone,
        "result_size": o.resultSize, "error": o.error,
        "submitted_us": o.submittedUs, "ready_us": o.readyUs, "started_us": o.startedUs, "finished_us": o.finishedUs,
    ]
    if results, case .succeeded(let data)? = o.outcome.result { d["result"] = String(decoding: data, as: UTF8.self) }
    return d
}

func printQueues(_ queues: [WireQueueCounts]) {
    var rows = [["QUEUE", "PENDING", "READY", "RUNNING", "DONE", "FAILED", "CANCELLED", "LIMIT", "QOS", "STATE"]]
    for q in queues {
        rows.append([q.name, "\(q.pending)", "\(q.ready)", "\(q.executing)", "\(q.finished)", "\(q.failed)",
                     "\(q.cancelled)", q.maxConcurrent < 0 ? "-" : "\(q.maxConcurrent)", qosName(q.qos),
                     q.suspended ? "suspended" : "running"])
    }
    printTable(rows)
}

func printOps(_ ops: [WireOpStatus]) {
    // Absolute submission time in µs, the other timestamps relative to it (+µs), so a row reads as a timeline.
    var rows = [["ID", "STATE", "OUTCOME", "WORKER", "ATT", "QUEUE", "PRIO", "SUBMITTED_US", "READY", "STARTED", "FINISHED", "RESULT", "ERROR"]]
    for o in ops {
        func rel(_ t: Int64) -> String { t == 0 ? "-" : "+\(t - o.submittedUs)" }
        rows.append([o.id, stateName(o.state, cancelled: o.cancelled), outcomeName(o.outcome),
                     o.workerID.isEmpty ? "-" : o.workerID, "\(o.attempts)", o.queue, priorityName(o.priority),
                     "\(o.submittedUs)", rel(o.readyUs), rel(o.startedUs), rel(o.finishedUs),
                     o.resultSize > 0 ? "\(o.resultSize)B" : "-", o.error.isEmpty ? "" : firstLine(o.error)])
    }
    printTable(rows)
}

func printTable(_ rows: [[String]]) {
    guard let first = rows.first else { return }
    var widths = Array(repeating: 0, count: first.count)
    for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
    for r in rows {
        var line = ""
        for (i, c) in r.enumerated() {
            line += i == r.count - 1 ? c : c.padding(toLength: widths[i] + 2, withPad: " ", startingAt: 0)
        }
        print(line)
    }
}
