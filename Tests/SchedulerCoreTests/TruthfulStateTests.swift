import Foundation
import Testing
@testable import SchedulerCore

/// What status says is what happened (S1, S6, S8, A4 in docs/SEMANTICS.md): dispatched is not executing,
/// FIFO among equal priority, per-op times from the worker, retries with backoff, timeouts as failed
/// attempts, warnings for ops no worker can run, and the transition table the docs show.
@Suite struct TruthfulStateTests {
    @Test func testDispatchedIsNotExecutingUntilTheWorkerStartsIt() {
        var h = Harness()
        h.submit((0..<6).map { op("o\($0)") })
        let d = h.join(1, slots: 2, credit: 4)          // 2 slots + 2 prefetched
        #expect(d.count == 4)
        #expect(h.s.queueCounts("default")?.dispatched == 4)
        #expect(h.s.queueCounts("default")?.executing == 0)
        h.start(d[0])
        h.start(d[1])
        let c = h.s.queueCounts("default")!
        let counts = [c.ready, c.dispatched, c.executing]   // one array's type, so the literal's is not ambiguous
        #expect(counts == [2, 2, 2])
        #expect(h.s.workerSnapshot().first?.running == 2)
        #expect(h.s.workerSnapshot().first?.inFlight == 4)
        #expect(h.state("o0") == .executing)
        #expect(h.state("o2") == .dispatched)
        h.start(d[1])                                     // a repeated STARTED changes nothing
        #expect(h.s.workerSnapshot().first?.running == 2)
        h.finish(d[0])
        #expect(h.s.workerSnapshot().first?.running == 1)
        // A part finished without a STARTED (cancelled while waiting on the worker) never counted as running.
        h.finish(d[2], .cancelled("stopped"))
        #expect(h.s.workerSnapshot().first?.running == 1)
    }

    /// One dependency releases eight ops at once: they start in submission order, not the reverse.
    @Test func testEqualPriorityOpsReleasedTogetherStartInSubmissionOrder() {
        var h = Harness()
        let ds = (1...8).map { op("d\($0)", ["root"]) }
        h.submit([op("root")] + ds, queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        #expect(h.drain(h.join(1, slots: 1)) == ["root"] + (1...8).map { "d\($0)" })
    }

    @Test func testTimesAreWhereTheWorkerSaysTransitionsHappened() {
        var h = Harness()
        h.submit([op("a"), op("b")])
        let d = h.join(1, slots: 1, credit: 2)
        let dispatchedAt = h.now
        h.now += 10_000
        h.start(d[0], at: dispatchedAt + 100)
        h.now += 10_000
        h.finish(d[0], at: dispatchedAt + 5_000)
        h.start(d[1], at: dispatchedAt + 5_001)
        h.now += 10_000
        h.finish(d[1], at: h.now + 50_000)                // from the future: kept at now
        let a = h.s.status("a")!, b = h.s.status("b")!
        #expect(a.dispatchedAt == dispatchedAt)
        #expect(a.startedAt == dispatchedAt + 100)
        #expect(a.finishedAt == dispatchedAt + 5_000)
        #expect(b.startedAt == dispatchedAt + 5_001)
        #expect(b.finishedAt == h.now)
        // Before its dispatch: kept at the dispatch time.
        let (_, c) = h.submit([op("c")])
        h.start(c[0], at: 5)
        #expect(h.s.status("c")?.startedAt == h.s.status("c")?.dispatchedAt)
        let story = h.s.story("a")!.entries
        #expect(story.first { if case .started = $0.event { true } else { false } }?.at == dispatchedAt + 100)
    }

    @Test func testFailedAttemptsWaitOutExponentialBackoffWithJitter() {
        var h = Harness()
        var a = op("a"); a.retries = 3; a.retryDelayMicros = 100_000; a.retryDelayMaxMicros = 250_000
        h.submit([a])
        var d = h.join(1, slots: 1)
        var delays: [Int64] = []
        for n in 1...3 {
            #expect(d.first?.attempt == n)
            h.start(d[0])
            h.finish(d[0], .failed("e\(n)"))
            #expect(h.state("a") == .delayed, "waits out its delay")
            guard case .retrying(let failed, let until, let last) = h.s.why("a") else { Issue.record("\(h.s.why("a"))"); return }
            #expect(failed == n)
            #expect(last == "attempt \(n): e\(n)")
            delays.append(until - h.now)
            h.now = until - 1
            #expect(dispatches(h.send(.tick)).isEmpty, "not before its delay")
            h.now = until
            d = dispatches(h.send(.tick))
        }
        #expect((50_000...100_000).contains(delays[0]), "\(delays)")
        #expect((100_000...200_000).contains(delays[1]), "\(delays)")
        #expect((125_000...250_000).contains(delays[2]), "capped: \(delays)")
        h.start(d[0])
        h.finish(d[0], .failed("e4"))
        let st = h.s.status("a")!
        #expect(st.outcome == .failed)
        #expect(st.errorText == "failed after 4 attempts: e4")
        #expect(st.attemptErrors == (1...4).map { "attempt \($0): e\($0)" })
        #expect(st.attempts == 4)
    }

    @Test func testTheDefaultRetryDelayIsOneSecondAndZeroRetriesAtOnce() {
        var h = Harness()
        var a = op("a"); a.retries = 1
        var b = op("b"); b.retries = 1; b.retryDelayMicros = 0
        h.submit([a, b])
        let d = h.join(1, slots: 2)
        h.finish(d[0], .failed("x"))
        guard case .retrying(_, let until, _) = h.s.why("a") else { Issue.record(); return }
        #expect((500_000...1_000_000).contains(until - h.now))
        let again = dispatches(h.finish(d[1], .failed("y")))
        #expect(again.map { "\($0.op)#\($0.attempt)" } == ["b#2"])
    }

    /// A failed attempt waiting for its retry gives its queue place back (S8): others run meanwhile.
    @Test func testARetryDelayDoesNotHoldTheQueuePlace() {
        var h = Harness()
        var a = op("a"); a.retries = 1
        h.submit([a, op("b")], queues: [QueueSpec(name: "default", maxConcurrent: 1)])
        let d = h.join(1, slots: 2)
        #expect(d.map(\.op) == ["a"])
        #expect(dispatches(h.finish(d[0], .failed("x"))).map(\.op) == ["b"])
    }

    @Test func testATimedOutAttemptIsRetriedAndTheLastSaysTimedOut() {
        var h = Harness()
        var a = op("a"); a.retries = 1; a.retryDelayMicros = 0; a.timeoutMicros = 100_000
        h.submit([a])
        let d1 = h.join(1, slots: 1)
        h.start(d1[0])
        h.now += 100_000
        let t1 = h.send(.tick)
        #expect(cancels(t1).map(\.1) == ["a"], "the worker is told to stop the timed-out attempt")
        #expect(h.s.status("a")?.attemptErrors == ["attempt 1: timed out after 100ms"])
        // Its slot frees when the worker reports (fenced); then attempt 2 goes out.
        let d2 = dispatches(h.finish(d1[0], .cancelled("timed out")))
        #expect(d2.map(\.attempt) == [2])
        h.start(d2[0])
        h.now += 100_000
        h.send(.tick)
        #expect(h.s.status("a")?.outcome == .failed)
        #expect(h.s.status("a")?.errorText == "timed out after 2 attempts (limit 100ms each)")
    }

    @Test func testOpsNoWorkerCanRunAreReportedAtSubmitAndInStatus() {
        var h = Harness()
        h.join(1, kinds: ["noop"], tags: ["gpu"], credit: 0)
        var tpu = op("t1"); tpu.requires = ["tpu", "gpu"]
        var tpu2 = op("t2"); tpu2.requires = ["gpu", "tpu"]
        var gpu = op("g"); gpu.requires = ["gpu"]
        let (reply, _) = h.submit([tpu, gpu, op("x", kind: "render"), tpu2])
        guard case .accepted(4, let warnings, _)? = reply else { Issue.record("\(String(describing: reply))"); return }
        #expect(warnings.map(\.ops) == [["t1", "t2"], ["x"]])
        #expect(warnings[0].missingTags == ["tpu"])
        #expect(warnings[0].requires == ["gpu", "tpu"])
        #expect(!warnings[0].noWorkerKind)
        #expect(warnings[1].noWorkerKind)
        #expect(h.s.unplaceableReady().map(\.count) == [2, 1])
        h.join(2, kinds: ["noop", "render"], tags: ["gpu", "tpu"], credit: 0)
        #expect(h.s.unplaceableReady().isEmpty)
    }

    /// The constant the hot path checks is the table.
    @Test func testTheTransitionMaskIsTheTable() {
        for from in OpState.allCases {
            for to in OpState.allCases {
                let listed = OpState.transitions.contains { $0.from == from && $0.to == to }
                #expect(from.canMove(to: to) == listed, "\(from) → \(to)")
            }
        }
    }

    /// docs/ARCHITECTURE.md's transition table is the code's table, row for row, with the function
    /// that makes each move.
    @Test func testTheDocumentedTransitionTableIsTheCodesTable() throws {
        let doc = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        // Rows like: | `pending` | `ready` | cause | `makeReady` |
        let rows = doc.split(separator: "\n").compactMap { line -> String? in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, cells[0].hasPrefix("`"), cells[1].hasPrefix("`"),
                  OpState.allCases.contains(where: { "`\($0)`" == cells[0] }) else { return nil }
            return "\(cells[0]) → \(cells[1]) by \(cells[3])"
        }
        #expect(rows == OpState.transitions.map { "`\($0.from)` → `\($0.to)` by \($0.by.map { "`\($0)`" }.joined(separator: ", "))" })
    }

    /// An op enters each state only in the functions the table names for it: every `transition(_:to:)`
    /// in the core's sources sits in one of them, and each of them makes its move.
    @Test func everyTransitionIsMadeByTheFunctionTheTableNames() throws {
        let dir = repositoryRoot.appendingPathComponent("Sources/SchedulerCore")
        let call = try Regex(#"(^|[^A-Za-z])transition\([^,]+, to: \.([a-z]+)"#)
        let declaration = try Regex(#"func ([A-Za-z]+)[(<]"#)
        var made: Set<String> = []   // "function → state"
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
            var function = ""
            for line in try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8).split(separator: "\n") {
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                if let d = line.firstMatch(of: declaration), let f = d.output[1].substring { function = String(f) }
                if let c = line.firstMatch(of: call), let state = c.output[2].substring { made.insert("\(function) → \(state)") }
            }
        }
        var listed: Set<String> = []
        for t in OpState.transitions { for f in t.by { listed.insert("\(f) → \(t.to)") } }
        #expect(made == listed, "made but not listed: \(made.subtracting(listed).sorted()); listed but not made: \(listed.subtracting(made).sorted())")
    }

    private var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
