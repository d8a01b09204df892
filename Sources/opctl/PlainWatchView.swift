import Foundation
import OpClient
import WireProtocol

/// `watch` when stdout is not a terminal: one line per state change as it comes, and a summary per
/// second, for scripts and logs. Lines keep their earlier form; the rate, ETA and elapsed time are
/// appended after "; ", and notices (worker lost, re-dispatched, …) are lines of their own.
struct PlainWatchView {
    mutating func record(_ e: WireEvent) {
        let time = PlainWatchView.clock(e.timestampUs)
        var line = "\(time)  \(e.run.isEmpty ? "" : e.run + "/")\(e.opID)  \(stateName(e.state, cancelled: e.cancelled))"
        if e.state == .finished { line += " \(outcomeName(e.outcome))" }
        if !e.workerID.isEmpty && (e.state == .executing || e.state == .dispatched) {
            line += " on \(e.workerID) (attempt \(e.attempt))"
        }
        if !e.message.isEmpty { line += ": \(firstLine(e.message))" }
        if case .failed(let err)? = e.outcome.result { line += ": \(firstLine(err))" }
        if case .cancelled(let why)? = e.outcome.result { line += ": \(why)" }
        print(line)
    }

    func notice(_ n: WatchNotice, wallOffset: Double) {
        print("\(WatchFormat.clock(n.at + wallOffset))  \(n.text)")
    }

    func render(_ model: WatchModel, at now: Double, scoped: Bool, final: Bool = false) {
        guard let s = model.snapshot else { return }
        var lines: [String] = []
        // Runs only with --run (the one asked for), as before.
        if scoped, let r = s.runs.first, let row = model.runRows(at: now).first {
            let done = r.succeeded + r.failed + r.cancelled
            lines.append("run \(r.id): \(done)/\(r.total) done, \(r.executing) running, \(r.dispatched) dispatched, "
                         + "\(r.failed) failed, \(r.cancelled) cancelled (\(runState(r)))" + Self.pace(row))
        }
        let rows = Dictionary(model.queueRows(at: now).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for q in s.queues {
            guard let row = rows[q.name] else { continue }
            let width = 30
            let filled = row.total == 0 ? 0 : Int(Double(q.finished) / Double(row.total) * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            var line = "\(q.name.padding(toLength: 12, withPad: " ", startingAt: 0)) [\(bar)] \(q.finished)/\(row.total) done, \(q.executing) running, \(q.dispatched) dispatched, \(q.failed) failed, \(q.cancelled) cancelled"
            if q.suspended { line += " (suspended)" }
            lines.append(line + Self.pace(row))
        }
        // Running (handlers executing) out of slots; prefetched parts waiting there in brackets.
        let load = s.workers.map { w in
            "\(w.workerID) \(w.name): \(w.running)/\(w.slots)" + (w.inFlight > w.running ? " (+\(w.inFlight - w.running) queued)" : "")
        }
        lines.append("workers: " + (load.isEmpty ? "none connected" : load.joined(separator: "  ")))
        for u in s.unplaceable { lines.append("waiting for a worker: " + u) }
        for l in lines { print((final ? "final: " : "") + l) }
        fflush(nil)   // all streams; naming `stdout` trips strict concurrency
    }

    /// "; 2.5/s, ETA 4s, elapsed 12.0s" ("-" for what is not known yet).
    static func pace(_ row: WatchModel.Row) -> String {
        let eta = row.unfinished == 0 ? "done" : WatchFormat.duration(row.eta, unknown: "-")
        return "; \(WatchFormat.rate(row.rate, unknown: "-")), ETA \(eta), elapsed \(WatchFormat.duration(row.elapsed, tenths: true, unknown: "-"))"
    }

    static func clock(_ us: Int64) -> String {
        let seconds = Double(us) / 1_000_000
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss.SSS"
        return f.string(from: Date(timeIntervalSince1970: seconds))
    }
}
