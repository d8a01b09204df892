import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live view: per-queue progress, workers and their load, and state changes as they happen.",
        discussion: """
            On a terminal the view is redrawn in place; otherwise one line per state change and a summary per \
            second. With --run, only that run's state changes are shown, and --until-done exits by that run's \
            outcome only.
            If the coordinator becomes unreachable (it stopped or restarted, or the network failed), watch says \
            so on stderr, keeps reconnecting until --timeout (without one, until it is back) and goes on \
            watching: the subscription is made again on the new connection.
            """)

    @OptionGroup var connection: Connection

    @OptionGroup var scope: RunScope

    @Option(help: "Only this queue.")
    var queue: String?

    @Flag(help: "Exit when no operation is left unfinished (exit 1 if any failed or was cancelled).")
    var untilDone = false

    @Option(help: "Give up after this many seconds (exit 4).")
    var timeout: Double?

    @Option(help: "Seconds between redraws.")
    var interval: Double = 0.25

    func validate() throws {
        if interval <= 0 { throw ValidationError("--interval must be > 0") }
    }

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        let run = scope.name
        try withCoordinator { try conn.watch(queue: queue, run: run) }
        let tty = isatty(STDOUT_FILENO) != 0
        let started = Date()
        let deadline = timeout.map { ContinuousClock.now + .microseconds(Int64(($0 * 1_000_000).rounded())) }
        var view = LiveView(tty: tty)
        var lastSummary = Date.distantPast
        while true {
            let queues: [WireQueueCounts], workers: [WireWorkerInfo], unplaceable: [WireUnplaceable], runInfo: WireRunInfo?
            do {
                for e in try conn.nextEvents(timeout: .milliseconds(Int(interval * 1000))) { view.record(e) }
                // Known to be down: ask nothing that cannot be answered (it would wait out the request timeout).
                if try !conn.waitForLink(until: .now) { throw ClientError.connectionLost(.status, conn.endpoint) }
                (queues, workers, unplaceable) = try snapshot(conn)
                runInfo = run.isEmpty ? nil : try runSnapshot(conn, run)
            } catch let error as ClientError {
                guard Self.isOutage(error, conn) else { throw report(error) }
                try rideOut(conn, &view, until: deadline)
                continue
            }
            if tty || Date().timeIntervalSince(lastSummary) >= 1 {
                view.render(queues: queues, workers: workers, unplaceable: unplaceable, run: runInfo)
                lastSummary = Date()
            }
            if untilDone, let r = runInfo, r.finishedUs != 0 {
                view.render(queues: queues, workers: workers, unplaceable: unplaceable, run: r, final: true)
                throw r.failed + r.cancelled > 0 ? ExitCode(1) : ExitCode.success
            }
            let unfinished = queues.reduce(0) { $0 + $1.pending + $1.ready + $1.dispatched + $1.executing }
            let total = unfinished + queues.reduce(0) { $0 + $1.finished }
            if untilDone && runInfo == nil && unfinished == 0 && total > 0 {
                view.render(queues: queues, workers: workers, unplaceable: unplaceable, final: true)
                let bad = queues.reduce(0) { $0 + $1.failed + $1.cancelled }
                throw bad > 0 ? ExitCode(1) : ExitCode.success
            }
            if let timeout, Date().timeIntervalSince(started) > timeout { throw ExitCode(4) }
        }
    }

    /// The coordinator is away (the reply cannot come, or the link is down), as opposed to a refusal.
    static func isOutage(_ error: ClientError, _ conn: CoordinatorConnection) -> Bool {
        switch error {
        case .connectionLost: true
        case .timeout: !conn.link.isUp && conn.link.wasEverUp
        default: false
        }
    }

    /// The coordinator went away: says so, waits until it is back (until `deadline`, else exit 4) and says
    /// that too. The connection makes the WATCH again by itself.
    private func rideOut(_ conn: CoordinatorConnection, _ view: inout LiveView, until deadline: ContinuousClock.Instant?) throws {
        let since = conn.link.downSince ?? .now
        view.interrupt()
        printError("opctl: coordinator at \(conn.endpoint) unreachable, retrying… (until "
                   + (deadline == nil ? "it is back)" : "the --timeout)"))
        guard try conn.waitForLink(until: deadline) else {
            printError("opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) did not come back "
                       + "(unreachable for \(seconds(ContinuousClock.now - since)) s)")
            throw ExitCode(4)
        }
        printError("opctl: reconnected to the coordinator at \(conn.endpoint) after \(seconds(ContinuousClock.now - since)) s; watching again")
    }

    private func runSnapshot(_ conn: CoordinatorConnection, _ run: String) throws -> WireRunInfo {
        var q = WireRuns()
        q.runs = [run]
        guard case .runsReply(let r) = try conn.request(.runs(q)), let info = r.runs.first else {
            throw ExitCode(3)
        }
        return info
    }

    private func snapshot(_ conn: CoordinatorConnection) throws -> ([WireQueueCounts], [WireWorkerInfo], [WireUnplaceable]) {
        var s = WireStatus()
        s.queue = queue ?? ""
        let status = try conn.request(.status(s))
        let workers = try conn.request(.workers)
        guard case .statusReply(let st) = status, case .workersReply(let w) = workers else { throw ExitCode(3) }
        return (st.queues, w.workers, st.unplaceable)
    }
}

/// The text of the live view. On a terminal it rewrites its own lines; otherwise it appends.
struct LiveView {
    let tty: Bool
    private var recent: [String] = []
    private var drawnLines = 0

    init(tty: Bool) { self.tty = tty }

    /// Lines are about to be written below the view (on a terminal, the next view is drawn under them).
    mutating func interrupt() { drawnLines = 0 }

    mutating func record(_ e: WireEvent) {
        let time = Self.clock(e.timestampUs)
        var line = "\(time)  \(e.run.isEmpty ? "" : e.run + "/")\(e.opID)  \(stateName(e.state, cancelled: e.cancelled))"
        if e.state == .finished { line += " \(outcomeName(e.outcome))" }
        if !e.workerID.isEmpty && (e.state == .executing || e.state == .dispatched) {
            line += " on \(e.workerID) (attempt \(e.attempt))"
        }
        if !e.message.isEmpty { line += ": \(firstLine(e.message))" }
        if case .failed(let err)? = e.outcome.result { line += ": \(firstLine(err))" }
        if case .cancelled(let why)? = e.outcome.result { line += ": \(why)" }
        if tty {
            recent.append(line)
            if recent.count > 8 { recent.removeFirst(recent.count - 8) }
        } else {
            print(line)
        }
    }

    mutating func render(queues: [WireQueueCounts], workers: [WireWorkerInfo], unplaceable: [WireUnplaceable] = [],
                         run: WireRunInfo? = nil, final: Bool = false) {
        var lines: [String] = []
        if let r = run {
            let done = r.succeeded + r.failed + r.cancelled
            lines.append("run \(r.id): \(done)/\(r.total) done, \(r.executing) running, \(r.dispatched) dispatched, "
                         + "\(r.failed) failed, \(r.cancelled) cancelled (\(runState(r)))")
        }
        // Queues that never had an operation (the implicit "default", say) are noise here.
        for q in queues where q.pending + q.ready + q.dispatched + q.executing + q.finished > 0 || q.suspended {
            let total = q.pending + q.ready + q.dispatched + q.executing + q.finished
            let width = 30
            let filled = total == 0 ? 0 : Int(Double(q.finished) / Double(total) * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            var line = "\(q.name.padding(toLength: 12, withPad: " ", startingAt: 0)) [\(bar)] \(q.finished)/\(total) done, \(q.executing) running, \(q.dispatched) dispatched, \(q.failed) failed, \(q.cancelled) cancelled"
            if q.suspended { line += " (suspended)" }
            lines.append(line)
        }
        // Running (handlers executing) out of slots; prefetched parts waiting there in brackets.
        let load = workers.map { w in
            "\(w.workerID) \(w.name): \(w.running)/\(w.slots)" + (w.inFlight > w.running ? " (+\(w.inFlight - w.running) queued)" : "")
        }
        lines.append("workers: " + (load.isEmpty ? "none connected" : load.joined(separator: "  ")))
        for u in unplaceable { lines.append("waiting for a worker: " + unplaceableText(u)) }
        if tty {
            lines += recent.map { "  " + $0 }
            var out = ""
            if drawnLines > 0 { out += "\u{1B}[\(drawnLines)A" }
            for l in lines { out += "\u{1B}[2K" + l + "\n" }
            FileHandle.standardOutput.write(Data(out.utf8))
            drawnLines = lines.count
        } else {
            for l in lines { print((final ? "final: " : "") + l) }
        }
        fflush(nil)   // all streams; naming `stdout` trips strict concurrency
    }

    static func clock(_ us: Int64) -> String {
        let seconds = Double(us) / 1_000_000
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss.SSS"
        return f.string(from: Date(timeIntervalSince1970: seconds))
    }
}
