import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show queues and operations: run, state, outcome, worker, attempts, times.",
        discussion: """
            States (docs/SEMANTICS.md S1): pending, ready, dispatched (sent to a worker, waiting there for a \
            slot), executing (its handler runs), finished. Times are where each transition happened \
            (a worker stamps its own start and finish): the submission as local time, the others relative \
            to it; --json gives µs since the epoch. Without ids, operations are listed newest run first, \
            each run in submission order, --limit of them from --after on; --json says "truncated" and \
            gives "next_after" when more remain, and "matched" counts every match.
            """)

    @OptionGroup var connection: Connection

    @OptionGroup var scope: RunScope

    @Argument(help: "Operation ids (OP in the --run scope, or RUN/OP); none lists operations (up to --limit).")
    var ids: [String] = []

    @Option(help: "Only this queue's operations.")
    var queue: String?

    @Option(name: .customLong("state"), help: "Only operations in this state (pending, ready, dispatched, executing, finished; repeatable).")
    var states: [String] = []

    @Option(help: "Only operations last held by this worker (its id, e.g. w3, or its name).")
    var worker: String?

    @Option(help: "At most this many operation records (fetched in pages).")
    var limit: Int = 1000

    @Option(help: "List operations submitted after this one (the cursor --json prints as next_after).")
    var after: String?

    @Flag(help: "Only the per-queue counts.")
    var queuesOnly = false

    @Flag(help: "Include result bytes (as UTF-8 text) in --json output.")
    var results = false

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be ≥ 1") }
        for s in states where Self.wireState(s) == nil {
            throw ValidationError("unknown --state '\(s)': use pending, ready, dispatched, executing or finished")
        }
    }

    static func wireState(_ s: String) -> WireOpState? {
        switch s {
        case "pending": .pending
        case "ready": .ready
        case "dispatched": .dispatched
        case "executing": .executing
        case "finished": .finished
        default: nil
        }
    }

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        let r = try fetch(conn)
        if let warning = insecureWarning(r.security) { printError(warning) }
        if json {
            var d: [String: Any] = [
                "queues": r.queues.map(queueJSON), "operations": r.ops.map { opJSON($0, results: results) },
                "not_found": r.notFound, "now_us": r.nowUs, "truncated": !r.nextAfter.isEmpty, "matched": r.matched,
                "unplaceable": r.unplaceable.map(unplaceableJSON),
                "coordinator_rss_bytes": r.coordinatorRssBytes, "coordinator_cpu_us": r.coordinatorCpuUs,
                "security": r.security, "auth_failures": r.authFailures]
            if !r.nextAfter.isEmpty { d["next_after"] = r.nextAfter }
            printJSON(d)
        } else {
            if ids.isEmpty && !queuesOnly { print(summaryLine(r)); print("") }
            printQueues(r.queues)
            printFairness(r.queues, now: r.nowUs)
            if !r.ops.isEmpty { print(""); printOps(r.ops, attemptErrors: !ids.isEmpty) }
            if !r.nextAfter.isEmpty {
                print("(\(r.ops.count) shown; more follow: --limit N, or --after \(r.nextAfter) for the next ones)")
            }
            for u in r.unplaceable { print("waiting for a worker: " + unplaceableText(u)) }
            print(""); print(coordinatorLine(r))
        }
        if !r.notFound.isEmpty {
            printError("opctl: unknown operation(s): \(r.notFound.joined(separator: ", "))")
            explainRuns(of: r.notFound, conn)
            throw ExitCode.notFound
        }
    }
}

extension Status {
    /// Every requested record: ids and listings go in pages of at most maxBatchRecords, so --limit is
    /// honoured whatever its size; the reply carries the last page's cursor.
    func fetch(_ conn: CoordinatorConnection) throws -> WireStatusReply {
        let page = WireLimits.maxBatchRecords
        var merged: WireStatusReply?
        func request(_ s: WireStatus) throws -> WireStatusReply {
            let reply = try withCoordinator { try conn.request(.status(s)) }
            guard case .statusReply(let r) = reply else { throw ExitCode(3) }
            return r
        }
        func add(_ r: WireStatusReply) {
            guard var m = merged else { merged = r; return }
            m.ops += r.ops
            m.notFound += r.notFound
            m.nextAfter = r.nextAfter
            m.matched = r.matched
            merged = m
        }
        var s = WireStatus()
        s.queue = queue ?? ""
        s.withResults = results
        s.run = scope.name
        s.states = states.compactMap(Self.wireState)
        s.worker = worker ?? ""
        if !ids.isEmpty {
            var todo = ids[...]
            while !todo.isEmpty {
                s.opIds = Array(todo.prefix(page))
                todo = todo.dropFirst(s.opIds.count)
                var r = try request(s)
                // Ids left out at the reply's size budget (large results) are asked for again.
                if !r.omitted.isEmpty && !r.ops.isEmpty { todo = r.omitted[...] + todo }
                r.omitted = []
                add(r)
            }
            return merged!
        }
        s.ops = !queuesOnly
        s.after = after ?? ""
        var remaining = limit
        repeat {
            s.limit = UInt32(min(remaining, page))
            let r = try request(s)
            add(r)
            remaining -= r.ops.count
            s.after = r.nextAfter
        } while !queuesOnly && remaining > 0 && !s.after.isEmpty
        return merged!
    }
}

/// For ids RUN/OP that were not found: says when RUN itself is unknown or was evicted (the
/// coordinator's RUNS answer names it, e.g. "run r-12 finished 25h03m ago and was evicted …").
func explainRuns(of ids: [String], _ conn: CoordinatorConnection) {
    var seen = Set<String>()
    for id in ids {
        guard let slash = id.firstIndex(of: "/") else { continue }
        let run = String(id[..<slash])
        guard seen.insert(run).inserted else { continue }
        var q = WireRuns()
        q.runs = [run]
        do {
            _ = try conn.request(.runs(q))
        } catch ClientError.server(.notFound, let text) {
            printError("opctl: \(text)")
        } catch {}
    }
}

/// One line about ops no connected worker can run (they wait until one joins).
func unplaceableText(_ u: WireUnplaceable) -> String {
    let one = u.opCount == 1
    var what = "\(u.opCount) operation\(one ? "" : "s") (\(u.opIds.prefix(5).joined(separator: ", "))\(u.opCount > 5 ? ", …" : ""))"
    if u.noWorkerKind {
        what += " need\(one ? "s" : "") kind '\(u.kind)', which no connected worker has"
    } else if !u.missingTags.isEmpty {
        what += " require\(one ? "s" : "") tag\(u.missingTags.count == 1 ? "" : "s") \(u.missingTags.joined(separator: ", ")), which no connected worker with kind '\(u.kind)' has"
    } else {
        what += " need\(one ? "s" : "") kind '\(u.kind)' with tags \(u.requires.joined(separator: ", ")), which no single connected worker has"
    }
    return what + "; they wait until such a worker joins"
}

func unplaceableJSON(_ u: WireUnplaceable) -> [String: Any] {
    ["kind": u.kind, "requires": u.requires, "missing_tags": u.missingTags, "no_worker_kind": u.noWorkerKind,
     "op_ids": u.opIds, "op_count": u.opCount]
}

/// "coordinator: RSS 12.3 MiB, CPU 1.52 s" (RSS 0 means the coordinator could not read it).
func coordinatorLine(_ r: WireStatusReply) -> String {
    let rss = r.coordinatorRssBytes == 0 ? "unknown" : String(format: "%.1f MiB", Double(r.coordinatorRssBytes) / 1_048_576)
    let security = switch r.security {
    case "curve": ", keys (CURVE), \(r.authFailures) refused"
    case "insecure": ", INSECURE (no keys off loopback)"
    default: ""
    }
    return "coordinator: RSS \(rss), CPU \(String(format: "%.2f", Double(r.coordinatorCpuUs) / 1_000_000)) s\(security)"
}

/// A warning for stderr when the coordinator runs off loopback without keys (`opcoord --insecure`).
func insecureWarning(_ security: String) -> String? {
    security == "insecure"
        ? "opctl: warning: this coordinator runs without keys (--insecure): anyone who reaches it can run commands on its workers"
        : nil
}

func stateName(_ s: WireOpState, cancelled: Bool) -> String {
    let base: String
    switch s {
    case .pending: base = "pending"
    case .ready: base = "ready"
    case .dispatched: base = "dispatched"
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

/// "1,204 operations match (run r-3): showing 1,000": what the listing covers.
func summaryLine(_ r: WireStatusReply) -> String {
    let runs = Set(r.ops.map(\.run))
    let unfinished = r.queues.reduce(UInt64(0)) { $0 + $1.pending + $1.ready + $1.dispatched + $1.executing }
    return "\(r.matched) operation\(r.matched == 1 ? "" : "s") match, \(r.ops.count) shown"
        + (runs.count == 1 ? " (run \(runs.first!))" : runs.isEmpty ? "" : " (from \(runs.count) runs)")
        + "; \(unfinished) unfinished in the queues shown"
}

func queueJSON(_ q: WireQueueCounts) -> [String: Any] {
    ["name": q.name, "pending": q.pending, "ready": q.ready, "dispatched": q.dispatched, "executing": q.executing,
     "finished": q.finished,
     "cancelled": q.cancelled, "failed": q.failed, "suspended": q.suspended, "max_concurrent": q.maxConcurrent,
     "qos": qosName(q.qos), "fairness": fairnessJSON(q)]
}

func opJSON(_ o: WireOpStatus, results: Bool) -> [String: Any] {
    var d: [String: Any] = [
        "id": o.id, "run": o.run, "name": o.name, "queue": o.queue, "state": stateName(o.state, cancelled: false),
        "cancelled": o.cancelled, "outcome": outcomeName(o.outcome), "worker": o.workerID, "worker_key": o.workerKey,
        "worker_session": o.workerSession, "attempts": o.attempts,
        "priority": priorityName(o.priority), "parts": o.parts, "parts_done": o.partsDone,
        "result_size": o.resultSize, "result_evicted": o.resultEvicted, "error": o.error, "attempt_errors": o.attemptErrors,
        "submitted_us": o.submittedUs, "ready_us": o.readyUs, "dispatched_us": o.dispatchedUs,
        "started_us": o.startedUs, "finished_us": o.finishedUs,
    ]
    if results, case .succeeded(let data)? = o.outcome.result { d["result"] = String(decoding: data, as: UTF8.self) }
    return d
}

func printQueues(_ queues: [WireQueueCounts]) {
    var rows = [["QUEUE", "PENDING", "READY", "DISPATCHED", "EXECUTING", "DONE", "FAILED", "CANCELLED", "LIMIT", "QOS", "STATE"]]
    for q in queues {
        rows.append([q.name, "\(q.pending)", "\(q.ready)", "\(q.dispatched)", "\(q.executing)", "\(q.finished)", "\(q.failed)",
                     "\(q.cancelled)", q.maxConcurrent < 0 ? "-" : "\(q.maxConcurrent)", qosName(q.qos),
                     q.suspended ? "suspended" : "running"])
    }
    printTable(rows)
}

/// The worker column: its id, and the session when it reconnected since ("w3#2").
func workerText(_ o: WireOpStatus) -> String {
    if o.workerID.isEmpty { return "-" }
    return o.workerSession > 1 ? "\(o.workerID)#\(o.workerSession)" : o.workerID
}

/// - Parameter attemptErrors: also list every failed attempt's error under the table.
func printOps(_ ops: [WireOpStatus], attemptErrors: Bool = false) {
    // Submission as local time, the other times relative to it, so a row reads as a timeline.
    var rows = [["RUN", "ID", "STATE", "OUTCOME", "WORKER", "ATT", "QUEUE", "PRIO", "SUBMITTED", "READY", "DISPATCHED",
                 "STARTED", "FINISHED", "DURATION", "RESULT", "ERROR"]]
    for o in ops {
        func rel(_ t: Int64) -> String { t == 0 ? "-" : "+" + TimeText.duration(t - o.submittedUs) }
        let duration = o.startedUs > 0 && o.finishedUs > 0 ? TimeText.duration(o.finishedUs - o.startedUs) : "-"
        // An operation with a display name of its own (the Swift API's `name`) shows it beside its id.
        let id = o.name.isEmpty || o.name == o.id ? o.id : "\(o.name) (\(o.id))"
        rows.append([o.run.isEmpty ? "-" : o.run, id, stateName(o.state, cancelled: o.cancelled), outcomeName(o.outcome),
                     workerText(o), "\(o.attempts)", o.queue, priorityName(o.priority),
                     TimeText.clock(o.submittedUs), rel(o.readyUs), rel(o.dispatchedUs), rel(o.startedUs), rel(o.finishedUs),
                     duration, o.resultEvicted ? "evicted" : o.resultSize > 0 ? "\(o.resultSize)B" : "-", o.error.isEmpty ? "" : firstLine(o.error)])
    }
    printTable(rows)
    guard attemptErrors else { return }
    for o in ops where !o.attemptErrors.isEmpty {
        print("\n\(o.id): errors of its failed attempts")
        for e in o.attemptErrors { print("  \(firstLine(e))") }
    }
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
