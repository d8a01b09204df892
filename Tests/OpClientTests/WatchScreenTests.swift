import OpClient
import Testing
import WireProtocol

/// The live view's lines for a given terminal size: never wider or taller than the terminal, the
/// numbers a person watches for, and the marker when the coordinator is away.
struct WatchScreenTests {
    /// A model fed 10 s of a run and a queue finishing 2 ops per second out of 100.
    func steadyModel() -> WatchModel {
        var m = WatchModel(endpoint: "tcp://127.0.0.1:7600", started: 0)
        for t in 0...10 {
            let done = UInt64(t * 2)
            let s = WatchModel.Snapshot(
                queues: [queueCounts("images", ready: 100 - done - 4, executing: 4, finished: done)],
                workers: [worker("w1", "host-a", slots: 4, running: 4, inFlight: 6)],
                runs: [runInfo("r-1", total: 100, succeeded: done, executing: 4, submittedUs: 1_000_000)],
                nowUs: 1_000_000 + Int64(t) * 1_000_000 + 500_000)
            _ = m.update(s, at: Double(t))
        }
        return m
    }

    func widest(_ lines: [String]) -> Int { lines.map(TerminalText.width).max() ?? 0 }

    @Test func rowsCarryCountsRateEtaAndElapsed() {
        let m = steadyModel()
        let q = m.queueRows(at: 10).first!
        #expect(q.rate == 2 && q.eta == 40 && q.elapsed == 10)
        #expect(q.finished == 20 && q.onWorkers == 4 && q.ready == 76 && q.total == 100)
        let r = m.runRows(at: 10).first!
        #expect(r.rate == 2 && r.eta == 40)
        #expect(r.elapsed == 10.5, "on the coordinator's clock: submitted at 1 s, answered at 11.5 s")
        #expect(m.runRows(at: 12).first!.elapsed == 12.5, "an unfinished run's clock runs on between answers")

        let lines = WatchScreen(width: 80, height: 24).lines(m, at: 10)
        let queue = lines.first { $0.hasPrefix("images ") }
        #expect(queue != nil, "\(lines)")
        // NAME [bar] DONE RUN RDY PEND FAIL CANC RATE ETA ELAPSED
        let fields = queue?.split(separator: " ").map(String.init) ?? []
        #expect(fields.suffix(9) == ["20/100", "4", "76", "0", "0", "0", "2.0/s", "40s", "10.0s"], "\(queue ?? "")")
        #expect(lines.contains { $0.hasPrefix("r-1 ") && $0.hasSuffix("2.0/s    40s   10.5s") }, "\(lines)")
        #expect(lines.contains("workers: w1 host-a: 4/4 (+2 queued)"))
        #expect(lines.contains { $0.hasPrefix("QUEUE ") && $0.contains("RATE") && $0.contains("ETA") && $0.contains("ELAPSED") })
    }

    @Test func anUnknownEtaIsADashAndAFinishedOneSaysDone() {
        var m = WatchModel(endpoint: "e", started: 0)
        _ = m.update(.init(queues: [queueCounts("stuck", ready: 5), queueCounts("over", finished: 3)]), at: 0)
        _ = m.update(.init(queues: [queueCounts("stuck", ready: 5), queueCounts("over", finished: 3)]), at: 2)
        let lines = WatchScreen(width: 80, height: 24).lines(m, at: 2)
        #expect(lines.first { $0.hasPrefix("stuck") }?.contains("0.0/s      —") == true, "\(lines)")
        #expect(lines.first { $0.hasPrefix("over") }?.contains("done") == true, "\(lines)")
        let ascii = WatchScreen(width: 80, height: 24, unicode: false).lines(m, at: 2)
        #expect(ascii.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) }, "\(ascii)")
    }

    /// Many runs and queues with long and wide names, many workers, notices: at 80 × 24 nothing is
    /// wider than 80 columns or taller than 23 lines; what does not fit is summarised, with the ones
    /// that have work left shown first.
    @Test func at80x24NothingOverflowsAndTheRestIsSummarised() {
        var m = WatchModel(endpoint: "tcp://coordinator.example.internal:7600", started: 0)
        let queues = (0..<30).map { i in
            i % 3 == 0 ? queueCounts("queue-\(i)-画像処理パイプライン-with-a-long-name", ready: 5, executing: 2, finished: 123_456)
                       : queueCounts("q\(i)", finished: 10)
        }
        let runs = (0..<20).map { i in runInfo("nightly-build-\(i)-of-a-very-long-named-project", total: 1_000_000, succeeded: 999, executing: i % 2 == 0 ? 1 : 0) }
        let workers = (0..<40).map { worker("w\($0)", "host-\($0).rack-7.example", slots: 16, running: 9, inFlight: 12) }
        _ = m.update(.init(queues: queues, workers: workers, unplaceable: ["3 operations (r-1/a, r-1/b, r-1/c) require tag gpu, which no connected worker with kind 'shell' has; they wait until such a worker joins"],
                           runs: runs, nowUs: 5_000_000), at: 0)
        var n = m.notices
        _ = n.workers(workers, at: 1)
        _ = n.workers(Array(workers.dropFirst()), at: 2)
        let withNotices = WatchModel(endpoint: m.endpoint, started: 0, notices: n)
        var m2 = withNotices
        _ = m2.update(.init(queues: queues, workers: Array(workers.dropFirst()), runs: runs, nowUs: 6_000_000), at: 3)

        for model in [m, m2] {
            let lines = WatchScreen(width: 80, height: 24).lines(model, at: 3)
            #expect(lines.count <= 23, "\(lines.count) lines")
            #expect(widest(lines) <= 80, "\(lines.filter { TerminalText.width($0) > 80 })")
            #expect(lines.contains { $0.hasPrefix("… ") && $0.contains("more queues") }, "\(lines.joined(separator: "\n"))")
            #expect(lines.contains { $0.hasPrefix("… ") && $0.contains("more runs") }, "\(lines.joined(separator: "\n"))")
            // Those with work left come first.
            let firstQueue = lines.firstIndex { $0.hasPrefix("QUEUE") }.map { lines[$0 + 1] } ?? ""
            #expect(firstQueue.hasPrefix("queue-0-"), "\(firstQueue)")
            #expect(lines.contains { $0.hasPrefix("workers: w") && $0.hasSuffix(" more") }, "\(lines)")
        }
        let noticeLines = WatchScreen(width: 80, height: 24).lines(m2, at: 3)
        #expect(noticeLines.last?.hasSuffix("worker w0 (host-0.rack-7.example) lost") == true, "\(noticeLines)")
    }

    /// Every size from tiny to wide: the two bounds hold.
    @Test func noSizeOverflows() {
        var m = steadyModel()
        _ = m.lost(since: 9, at: 10)
        for width in [1, 5, 10, 20, 33, 40, 59, 60, 79, 80, 81, 120, 200] {
            for height in [1, 2, 3, 5, 8, 12, 24, 50] {
                let lines = WatchScreen(width: width, height: height).lines(m, at: 12)
                #expect(lines.count <= max(1, height - 1), "\(width)×\(height): \(lines.count)")
                #expect(widest(lines) <= width, "\(width)×\(height): \(lines)")
            }
        }
    }

    @Test func aLostCoordinatorIsMarkedAtTheTopAndTheLastDataStays() {
        var m = steadyModel()
        #expect(m.lost(since: 10, at: 10.1)?.text == "lost the coordinator; retrying")
        #expect(m.lost(since: 10, at: 11) == nil, "once per outage")
        let lines = WatchScreen(width: 80, height: 24).lines(m, at: 13.4)
        #expect(lines[0].hasPrefix("disconnected, retrying… (since 3 s)  tcp://127.0.0.1:7600  last data "), "\(lines[0])")
        #expect(lines.contains { $0.hasPrefix("images ") }, "the last data stays")
        #expect(WatchScreen(width: 80, height: 24, unicode: false).lines(m, at: 13.4)[0].hasPrefix("disconnected, retrying... (since 3 s)"))
        #expect(WatchScreen(width: 20, height: 24).lines(m, at: 13.4)[0] == "disconnected, retry…", "the marker comes first")
        #expect(m.reconnected(at: 15)?.text == "coordinator back after 5.0s")
        #expect(WatchScreen(width: 80, height: 24).lines(m, at: 15)[0].hasPrefix("opctl watch  tcp://127.0.0.1:7600  for 15s"))
    }

    @Test func aSilentCoordinatorIsMarkedUntilItAnswers() {
        var m = steadyModel()
        m.silent(since: 10)
        #expect(WatchScreen(width: 80, height: 24).lines(m, at: 14)[0].hasPrefix("no reply, retrying… (since 4 s)"))
        _ = m.update(.init(), at: 15)
        #expect(m.link == .up)
    }

    @Test func noticesShowAtTheBottomNewestLast() {
        var m = WatchModel(endpoint: "e", started: 0)
        _ = m.update(.init(queues: [queueCounts("q", executing: 4, finished: 1)], workers: [worker("w3", "host-a"), worker("w4", "host-b")]), at: 0)
        _ = m.record((1...4).map { event("RUN", "x\($0)", .executing, attempt: 1, worker: "w3") }, at: 1)
        _ = m.record([event("RUN", "y", .dispatched, attempt: 1, worker: "w4")], at: 1)
        _ = m.record((1...4).map { event("RUN", "x\($0)", .ready) }, at: 2)
        _ = m.update(.init(queues: [queueCounts("q", ready: 4, finished: 1)], workers: [worker("w4", "host-b")]), at: 2.2)
        _ = m.record([event("RUN", "y", .ready)], at: 3)
        let lines = WatchScreen(width: 80, height: 24).lines(m, at: 3)
        #expect(lines.suffix(2).map { String($0.drop { $0 != " " }.dropFirst()) }
                == ["worker w3 (host-a) lost — 4 ops re-dispatched", "op RUN/y re-dispatched (attempt 2)"], "\(lines)")
    }
}
