import ArgumentParser
import Foundation
import OpClient
import WireProtocol

/// `--run`: the run a command is scoped to. Bare op ids are resolved in it; without one they name
/// the newest retained run that has them (docs/GRAPHS.md, "Runs").
struct RunScope: ParsableArguments {
    @Option(name: .long, help: "Run to scope the command to (default: $OPQ_RUN). Ops are named OP within it, or RUN/OP anywhere.")
    var run: String?

    /// The scope given, or $OPQ_RUN; "" for none.
    var name: String {
        if let run { return run }
        return ProcessInfo.processInfo.environment["OPQ_RUN"] ?? ""
    }
}

struct Runs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the retained runs, newest first: who submitted them, when, and how far they are.",
        discussion: """
            Every `opctl submit` is a run. Finished runs are kept for the coordinator's --retain period \
            (and at most --retain-runs of them), then evicted: asking for an evicted run says so. Beyond the \
            coordinator's --retain-bytes the oldest finished runs lose their results first (RESULTS says \
            "evicted"; outcomes, times and errors stay), then are evicted whole.
            """)

    @OptionGroup var connection: Connection

    @Argument(help: "Only these runs.")
    var runs: [String] = []

    @Option(help: "Most runs to list (the newest).")
    var limit: Int = 50

    @Flag(help: "Print machine-readable JSON.")
    var json = false

    func run() throws {
        guard limit > 0 else { throw ValidationError("--limit must be > 0") }
        let conn = try withCoordinator { try connection.connect() }
        var list: [WireRunInfo] = []
        var after = ""
        var reply = WireRunsReply()
        repeat {
            var q = WireRuns()
            q.runs = runs
            q.limit = UInt32(min(limit - list.count, WireLimits.maxBatchRecords))
            q.after = after
            guard case .runsReply(let r) = try withCoordinator({ try conn.request(.runs(q)) }) else { throw ExitCode(3) }
            reply = r
            list += r.runs
            after = r.nextAfter
        } while !after.isEmpty && list.count < limit
        if json {
            printJSON(["runs": list.map { runJSON($0, now: reply.nowUs) }, "retained": reply.retained, "evicted": reply.evicted,
                       "retained_bytes": reply.retainedBytes, "retain_bytes": reply.retainBytes, "truncated": !after.isEmpty])
            return
        }
        if list.isEmpty { print("no runs (\(reply.evicted) evicted)"); return }
        let rows = list.map { r -> [String] in
            let done = r.succeeded + r.failed + r.cancelled
            return [r.id, runState(r), "\(done)/\(r.total)", "\(r.succeeded)", "\(r.failed)", "\(r.cancelled)",
                    TimeText.clock(r.submittedUs), TimeText.duration(runDuration(r, now: reply.nowUs)),
                    r.resultsEvicted ? "evicted" : byteText(r.bytes), r.submitter.isEmpty ? "-" : r.submitter]
        }
        printTable([["RUN", "STATE", "DONE", "OK", "FAILED", "CANCELLED", "SUBMITTED", "DURATION", "RESULTS", "BY"]] + rows)
        print("\(reply.retained) run(s) retained, \(reply.evicted) evicted" + (after.isEmpty ? "" : "; more with --limit")
              + "; finished operations hold \(byteText(reply.retainedBytes)) of --retain-bytes \(byteText(reply.retainBytes))")
    }
}

func runState(_ r: WireRunInfo) -> String {
    if r.finishedUs == 0 { return r.executing + r.dispatched > 0 ? "running" : "waiting" }
    return r.failed + r.cancelled == 0 ? "succeeded" : (r.failed > 0 ? "failed" : "cancelled")
}

func runDuration(_ r: WireRunInfo, now: Int64) -> Int64 {
    (r.finishedUs == 0 ? now : r.finishedUs) - r.submittedUs
}

func runJSON(_ r: WireRunInfo, now: Int64) -> [String: Any] {
    ["run": r.id, "state": runState(r), "submitter": r.submitter, "submitted_us": r.submittedUs,
     "finished_us": r.finishedUs == 0 ? NSNull() : r.finishedUs as Any, "total": r.total,
     "pending": r.pending, "ready": r.ready, "dispatched": r.dispatched, "executing": r.executing,
     "succeeded": r.succeeded, "failed": r.failed, "cancelled": r.cancelled,
     "duration_us": runDuration(r, now: now), "evict_at_us": r.evictAtUs == 0 ? NSNull() : r.evictAtUs as Any,
     "results_evicted": r.resultsEvicted, "bytes": r.bytes]
}

/// "512B", "3.2KiB", "256.0MiB", "1.5GiB".
func byteText(_ n: UInt64) -> String {
    if n < 1024 { return "\(n)B" }
    var v = Double(n) / 1024
    for unit in ["KiB", "MiB", "GiB"] {
        if v < 1024 || unit == "GiB" { return String(format: "%.1f%@", v, unit) }
        v /= 1024
    }
    return "\(n)B"
}

/// Times for people: local wall-clock time of day, and compact durations.
enum TimeText {
    /// "12:04:31.207" (local time), with the date when it is not today.
    static func clock(_ micros: Int64) -> String {
        guard micros > 0 else { return "-" }
        let date = Date(timeIntervalSince1970: Double(micros) / 1e6)
        let f = DateFormatter()
        f.dateFormat = Calendar.current.isDateInToday(date) ? "HH:mm:ss.SSS" : "yyyy-MM-dd HH:mm:ss"
        return f.string(from: date)
    }

    /// "850ms", "4.2s", "3m05s", "2h04m".
    static func duration(_ micros: Int64) -> String {
        let us = max(micros, 0)
        if us < 1000 { return "\(us)µs" }
        if us < 1_000_000 { return "\(us / 1000).\(us % 1000 / 100)ms" }
        let s = us / 1_000_000
        if s < 60 { return "\(s).\(us % 1_000_000 / 100_000)s" }
        if s < 3600 { return "\(s / 60)m" + String(format: "%02d", s % 60) + "s" }
        return "\(s / 3600)h" + String(format: "%02d", s % 3600 / 60) + "m"
    }
}
