import ArgumentParser
import Foundation
import OpClient
import WireProtocol

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Live view: per-run and per-queue progress with rate, ETA and elapsed time, workers and their load, and what happened.",
        discussion: """
            On a terminal the view is redrawn in place and fits the window (re-measured at every redraw): \
            runs and queues with counts, a progress bar, the rate (finished per second over the last 10 s), \
            the ETA and the elapsed time; the workers; and the newest notices (a worker lost and how many of \
            its operations were dispatched again, an operation re-dispatched or failed). When more runs or \
            queues than rows exist, those with work left are shown and the rest counted. Otherwise (not a \
            terminal) one line per state change and a summary per second, the rate, ETA and elapsed time \
            appended after "; ". With --run, only that run's state changes are shown, and --until-done exits \
            by that run's outcome only.
            If the coordinator becomes unreachable (it stopped or restarted, or the network failed), or does \
            not answer for a few seconds, the terminal view says so at the top ("disconnected, retrying… \
            (since 3 s)") and keeps the last data; otherwise it is said on stderr. watch keeps reconnecting \
            until --timeout (without one, until it is back) and goes on watching: the subscription is made \
            again on the new connection.
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

    /// Runs listed without --run (the newest; the rest are counted on screen).
    static let runsShown: UInt32 = 20

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        try withCoordinator { try conn.watch(queue: queue, run: scope.name) }
        var session = WatchSession(command: self, conn: conn)
        try session.loop()
    }

    /// The coordinator is away (the reply cannot come, or the link is down), as opposed to a refusal.
    static func isOutage(_ error: ClientError, _ conn: CoordinatorConnection) -> Bool {
        switch error {
        case .connectionLost: true
        case .timeout: !conn.link.isUp && conn.link.wasEverUp
        default: false
        }
    }
}

/// One `watch`: the I/O around `WatchModel` — ask, read events, draw, ride out outages.
struct WatchSession {
    let command: Watch
    let conn: CoordinatorConnection
    let runName: String
    let tty = isatty(STDOUT_FILENO) != 0
    let origin = ContinuousClock.now
    let deadline: ContinuousClock.Instant?
    /// Questions unanswered this long mark the view "no reply" (they are still awaited): a frozen
    /// coordinator keeps the connection up until the ZMTP heartbeat gives up on it (about 6 s).
    let staleAfter: Duration
    var model: WatchModel
    var terminal = TerminalView()
    var plain = PlainWatchView()
    var lastSummary: ContinuousClock.Instant?

    init(command: Watch, conn: CoordinatorConnection) {
        self.command = command
        self.conn = conn
        runName = command.scope.name
        let start = origin
        deadline = command.timeout.map { start + .microseconds(Int64(($0 * 1_000_000).rounded())) }
        let interval = Duration.microseconds(Int64(command.interval * 1_000_000))
        staleAfter = min(conn.timeout, max(.seconds(2), interval * 4))
        model = WatchModel(endpoint: conn.endpoint, started: 0, wallOffset: Date().timeIntervalSince1970)
    }

    var interval: Duration { .microseconds(Int64(command.interval * 1_000_000)) }

    /// Monotonic seconds since the watch began: the model's time.
    func t(_ i: ContinuousClock.Instant = .now) -> Double {
        let d = i - origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    mutating func loop() throws {
        while true {
            try checkDeadline()
            // Known to be down: ask nothing that cannot be answered; mark it and wait.
            if try !conn.waitForLink(until: .now) { try rideOut(); continue }
            if let n = model.reconnected(at: t()) { announce(n) }
            let snapshot: WatchModel.Snapshot
            do {
                snapshot = try ask()
            } catch let error as ClientError {
                // Moved on to a standby (rideOut): it names the leader, where the WATCH is made again.
                if case .server(.notLeader, let text) = error, try conn.followNotLeader(text, until: deadline) { continue }
                guard Watch.isOutage(error, conn) else { throw report(error) }
                try rideOut()
                continue
            }
            try readEvents(until: .now)
            for n in model.update(snapshot, at: t()) { announce(n) }
            draw()
            try exitIfDone(snapshot)
            try readEvents(until: .now + interval)
        }
    }

    // MARK: asking

    /// STATUS, WORKERS and (on a terminal, or with --run) RUNS, pipelined. While the answers are late the
    /// view is marked and redrawn; a lost connection throws `connectionLost`.
    mutating func ask() throws -> WatchModel.Snapshot {
        let sentAt = ContinuousClock.now
        var s = WireStatus()
        s.queue = command.queue ?? ""
        let statusID = try conn.send(.status(s))
        let workersID = try conn.send(.workers)
        var runsID: UInt32?
        if !runName.isEmpty || tty {
            var q = WireRuns()
            if runName.isEmpty { q.limit = Watch.runsShown } else { q.runs = [runName] }
            runsID = try conn.send(.runs(q))
        }
        var snapshot = WatchModel.Snapshot()
        guard case .statusReply(let st) = try answer(statusID, sentAt: sentAt) else { throw ExitCode(3) }
        snapshot.queues = st.queues
        snapshot.unplaceable = st.unplaceable.map(unplaceableText)
        guard case .workersReply(let w) = try answer(workersID, sentAt: sentAt) else { throw ExitCode(3) }
        snapshot.workers = w.workers
        if let runsID {
            guard case .runsReply(let r) = try answer(runsID, sentAt: sentAt) else { throw ExitCode(3) }
            if !runName.isEmpty && r.runs.first == nil { throw ExitCode(3) }
            snapshot.runs = r.runs
            snapshot.nowUs = r.nowUs
        }
        return snapshot
    }

    /// The reply to `id`, however long it takes (until --timeout): past `staleAfter` the view says
    /// the coordinator does not answer, redrawn each interval.
    mutating func answer(_ id: UInt32, sentAt: ContinuousClock.Instant) throws -> WireProtocol.Message {
        while true {
            var until = ContinuousClock.now + interval
            if let deadline { until = min(until, deadline) }
            if let reply = try conn.reply(to: id, until: until) { return reply }
            if let deadline, ContinuousClock.now >= deadline {
                leave("opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) did not answer for "
                      + "\(seconds(ContinuousClock.now - sentAt)) s")
                throw ExitCode(4)
            }
            if ContinuousClock.now - sentAt >= staleAfter {
                let wasUp = model.link == .up
                model.silent(since: t(sentAt))
                if !tty && wasUp {
                    printError("opctl: the coordinator at \(conn.endpoint) has not answered for \(seconds(ContinuousClock.now - sentAt)) s; still waiting")
                }
                draw()
            }
        }
    }

    // MARK: events

    /// Reads events until `until` (at least those already here).
    mutating func readEvents(until: ContinuousClock.Instant) throws {
        let restarts = conn.watchRestarts
        repeat {
            let left = until - .now
            let events = try conn.nextEvents(timeout: max(.zero, left))
            if !events.isEmpty {
                if !tty { for e in events { plain.record(e) } }
                for n in model.record(events, at: t()) { announce(n) }
            }
            // The coordinator ended the stream as too slow (the connection made it again): events were
            // lost, so ask for a fresh snapshot now rather than at the next interval.
            if conn.watchRestarts != restarts {
                if !tty { printError("opctl: the coordinator ended this watch as too slow (\(WireLimits.watchTooSlow)); watching again") }
                break
            }
            if events.isEmpty { break }
        } while conn.link.isUp
    }

    /// A notice: on a terminal it shows in the view; otherwise a line of its own.
    func announce(_ n: WatchNotice) {
        if !tty { plain.notice(n, wallOffset: model.wallOffset) }
    }

    // MARK: drawing

    mutating func draw(final: Bool = false) {
        let now = ContinuousClock.now
        if tty {
            terminal.draw(model, at: t(now))
        } else if final || lastSummary.map({ now - $0 >= .seconds(1) }) ?? true {
            plain.render(model, at: t(now), scoped: !runName.isEmpty, final: final)
            lastSummary = now
        }
    }

    /// Ends the view and says `why` on stderr below it.
    mutating func leave(_ why: String) {
        if tty { draw(); terminal.interrupt() }
        printError(why)
    }

    func checkDeadline() throws {
        guard let deadline, ContinuousClock.now >= deadline else { return }
        throw ExitCode(4)
    }

    /// With --until-done: exits once the run (with --run) or everything watched has finished.
    mutating func exitIfDone(_ s: WatchModel.Snapshot) throws {
        guard command.untilDone else { return }
        if !runName.isEmpty, let r = s.runs.first {
            guard r.finishedUs != 0 else { return }
            draw(final: true)
            throw r.failed + r.cancelled > 0 ? ExitCode(1) : ExitCode.success
        }
        let unfinished = s.queues.reduce(0) { $0 + $1.pending + $1.ready + $1.dispatched + $1.executing }
        let total = unfinished + s.queues.reduce(0) { $0 + $1.finished }
        guard runName.isEmpty, unfinished == 0, total > 0 else { return }
        draw(final: true)
        let bad = s.queues.reduce(0) { $0 + $1.failed + $1.cancelled }
        throw bad > 0 ? ExitCode(1) : ExitCode.success
    }

    // MARK: outages

    /// The coordinator went away: marks the view (on a terminal, redrawn each interval so "since N s"
    /// counts up; otherwise a line on stderr), waits until it is back (until the deadline, else exit 4)
    /// and says that too. The connection makes the WATCH again by itself. Given several endpoints it goes
    /// on at the next one each interval until one is up.
    mutating func rideOut() throws {
        let since = conn.link.downSince ?? .now
        if let n = model.lost(since: t(since), at: t()) {
            announce(n)
            if !tty {
                printError("opctl: coordinator at \(conn.endpoint) unreachable, retrying… (until "
                           + (deadline == nil ? "it is back)" : "the --timeout)"))
            }
        }
        while true {
            draw()
            var until = ContinuousClock.now + interval
            if let deadline { until = min(until, deadline) }
            if try conn.waitForLink(until: until) { break }
            // Several endpoints (an --ha group): go on at the next; the one lost may never come back.
            if ContinuousClock.now - since >= CoordinatorConnection.nextEndpointAfter, try conn.moveToNextEndpoint(), !tty {
                printError("opctl: trying \(conn.endpoint)")
            }
            if let deadline, ContinuousClock.now >= deadline {
                leave("opctl: gave up at the --timeout: the coordinator at \(conn.endpoint) did not come back "
                      + "(unreachable for \(seconds(ContinuousClock.now - since)) s)")
                throw ExitCode(4)
            }
        }
        if let n = model.reconnected(at: t()) { announce(n) }
        if !tty {
            printError("opctl: reconnected to the coordinator at \(conn.endpoint) after \(seconds(ContinuousClock.now - since)) s; watching again")
        }
    }
}
