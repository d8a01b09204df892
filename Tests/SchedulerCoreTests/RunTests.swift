import Testing
@testable import SchedulerCore

extension Harness {
    /// Submits `specs` as (or into) run `run`; the reply and any dispatches.
    @discardableResult
    mutating func submit(_ specs: [OperationSpec], run: String, mode: RunRequest.Mode = .create,
                         sourceLocation: SourceLocation = #_sourceLocation) -> (Reply?, [Dispatch]) {
        let r = ref()
        let out = send(.submit(r, ops: specs, queues: [], run: RunRequest(name: run, mode: mode)), sourceLocation: sourceLocation)
        return (reply(r, out), dispatches(out))
    }

    func key(_ r: Result<Int32, LookupFailure>) -> String? { if case .success(let op) = r { s.key(of: op) } else { nil } }
}

/// The run an accepted reply names, with its count (the unplaceable warning aside).
func accepted(_ r: Reply?) -> String? {
    if case .accepted(let n, _, let run)? = r { "\(n) \(run)" } else { nil }
}

func reply(_ r: ClientRef, _ out: [Action]) -> Reply? {
    for a in out { if case .reply(let ref, let rep) = a, ref == r { return rep } }
    return nil
}

func config(retainRuns: Int = 10_000, retainMicros: Int64 = 24 * 3_600_000_000, compactMinimum: Int = 65_536) -> SchedulerConfig {
    var c = SchedulerConfig()
    c.retainRuns = retainRuns; c.retainMicros = retainMicros; c.compactMinimum = compactMinimum
    return c
}

@Suite struct RunTests {
    /// RunNames finds the '/' in the id's bytes in place; the same split and the same rejections as
    /// reading them through `String.UTF8View`, for short (inline) and long, ASCII and non-ASCII ids.
    @Test func testSlashFoundInPlace() {
        let samples = ["a/b", "r/o/x", "/x", "x/", "plain", "", "é/ü", "a/\u{301}b", "🙂-run/🙂-op",
                       "a-run-name-longer-than-fifteen-bytes/and-an-op", "no-slash-but-longer-than-fifteen-bytes-ünï"]
        for s in samples {
            let slash = s.utf8.firstIndex(of: 0x2F)
            #expect(RunNames.slashOffset(s) == slash.map { s.utf8.distance(from: s.utf8.startIndex, to: $0) }, "\(s)")
            let split = RunNames.split(s)
            #expect(split?.run == slash.map { s[..<$0] }, "\(s)")
            #expect(split?.op == slash.map { s[s.index(after: $0)...] }, "\(s)")
        }
        var h = Harness()
        for id in ["x/y", "an-op-id-longer-than-fifteen/bytes", "é/ü"] {
            let r = h.ref()
            guard case .rejected(let p)? = reply(r, h.send(.submit(r, ops: [op(id)], queues: []))),
                  case .invalidId(let bad, _)? = p.first else { Issue.record("\(id) accepted"); continue }
            #expect(bad == id)
        }
        #expect(h.s.totalOperations == 0)
    }

    @Test func testSameBatchAsTwoRunsRunsTwice() {
        var h = Harness()
        let batch = [op("a"), op("b", ["a"])]
        #expect(accepted(h.submit(batch, run: "r1").0) == "2 r1")
        #expect(accepted(h.submit(batch, run: "r2").0) == "2 r2")
        #expect(h.s.totalOperations == 4)
        let order = h.drain(h.join(1), outcome: { .succeeded(Array($0.op.utf8)) })
        #expect(order == ["r1/a", "r1/b", "r2/a", "r2/b"], "FIFO by submission across runs")
        for r in ["r1", "r2"] {
            let info = h.s.runInfo(r)
            #expect(info?.finishedAt != nil, "\(r)")
            #expect(info?.succeeded == 2, "\(r)")
            #expect(info?.total == 2, "\(r)")
        }
        #expect(h.s.result("r2/b") == Array("r2/b".utf8))
    }

    @Test func testHandlerSeesOwnRunsDependencyByBareIdAndOthersByKey() {
        var h = Harness()
        h.submit([op("a")], run: "r1")
        h.drain(h.join(1, slots: 1), outcome: { _ in .succeeded([1]) })
        let (_, ds) = h.submit([op("a"), op("b", ["a", "r1/a"])], run: "r2")
        var inputs: [String] = []
        h.drain(ds, outcome: { d in
            if d.op == "r2/b" { inputs = d.inputs.map(\.0) }
            return .succeeded([2])
        })
        #expect(inputs.sorted() == ["a", "r1/a"])
    }

    @Test func testBareIdResolvesInNewestRetainedRunOrInItsContext() {
        var h = Harness()
        h.submit([op("x"), op("only1")], run: "r1")
        h.submit([op("x")], run: "r2")
        #expect(h.key(h.s.resolve("x")) == "r2/x")
        #expect(h.key(h.s.resolve("x", in: "r1")) == "r1/x")
        #expect(h.key(h.s.resolve("r1/x")) == "r1/x")
        #expect(h.key(h.s.resolve("only1")) == "r1/only1")
        #expect(h.s.resolve("y") == .failure(.unknownOperation("y")))
        #expect(h.s.resolve("r2/only1") == .failure(.unknownOperation("r2/only1")))
        #expect(h.s.resolve("r9/x") == .failure(.unknownRun("r9")))
        #expect(h.s.resolve("x", in: "r9") == .failure(.unknownRun("r9")))
        #expect(h.s.status("x")?.id == "r2/x")
        // Cancel by bare id in a context touches that run only.
        let r = h.ref()
        #expect(reply(r, h.send(.cancel(r, ids: ["x"], cascade: false, run: "r1"))) == .ok)
        #expect(h.s.status("r1/x")?.outcome == .cancelled)
        #expect(h.s.status("r2/x")?.state == .ready)
    }

    @Test func testCrossRunDependencies() {
        var h = Harness(config: config(retainRuns: 1))
        h.submit([op("a")], run: "r1")
        let (rep, _) = h.submit([op("b", ["r1/a"])], run: "r2")
        #expect(accepted(rep) == "1 r2")
        #expect(h.state("r2/b") == .pending, "waits for r1/a")
        var first = h.join(1)
        #expect(first.map(\.op) == ["r1/a"])
        first = dispatches(h.finish(first[0], .succeeded([7])))
        #expect(first.map(\.op) == ["r2/b"])
        #expect(first[0].inputs.map(\.0) == ["r1/a"])
        #expect(first[0].inputs.map(\.1) == [[7]])

        // A dependency on a run never seen: rejected, naming it; the run is not created.
        let (unknown, _) = h.submit([op("c", ["r9/a"])], run: "r3")
        guard case .rejected(let ps)? = unknown, ps.count == 1 else { Issue.record("\(String(describing: unknown))"); return }
        #expect(ps[0].description.contains("r9/a") && ps[0].description.contains("unknown run r9"), "\(ps[0].description)")
        #expect(h.s.runInfo("r3") == nil)
        #expect(h.s.runLookupFailure("r3") == .unknownRun("r3"))
        // An unknown op of a retained run.
        let (noOp, _) = h.submit([op("c", ["r1/zz"])], run: "r3")
        #expect(noOp == .rejected([.unknownDependency(op: "c", dependency: "r1/zz")]))

        // r2 finishes: with retainRuns 1, r1 (the older finished run) is evicted.
        h.finish(first[0])
        #expect(h.s.runInfo("r1") == nil)
        #expect(h.s.runInfo("r2") != nil)
        let (evicted, _) = h.submit([op("c", ["r1/a"])], run: "r3")
        guard case .rejected(let ps2)? = evicted, ps2.count == 1,
              case .unavailableDependency("c", "r1/a", let why) = ps2[0] else { Issue.record("\(String(describing: evicted))"); return }
        #expect(why.contains("evicted"), "\(why)")
        #expect(h.s.runLookupFailure("r3") == .unknownRun("r3"), "a rejected batch leaves no run")
        // Without the dependency the run is accepted.
        #expect(h.submit([op("c")], run: "r3").0 == .accepted(count: 1, run: "r3"))
    }

    @Test func testEvictedNameCannotBeReused() {
        var h = Harness(config: config(retainRuns: 0))
        h.submit([op("a")], run: "r1")
        h.drain(h.join(1))
        guard case .evictedRun("r1", _, _, _)? = h.s.runLookupFailure("r1") else { Issue.record(); return }
        for mode in [RunRequest.Mode.create, .append, .createOrAppend] {
            let (rep, _) = h.submit([op("a")], run: "r1", mode: mode)
            guard case .rejected(let ps)? = rep, ps.count == 1, case .invalidRun("r1", let why) = ps[0] else {
                Issue.record("\(mode): \(String(describing: rep))"); return
            }
            #expect(why.contains("evicted"), "\(why)")
        }
        #expect(h.s.totalOperations == 0)
        // An existing run cannot be created again; append joins it.
        h.submit([op("a")], run: "r2")
        guard case .rejected(let ps)? = h.submit([op("b")], run: "r2").0, case .invalidRun("r2", _) = ps[0] else { Issue.record(); return }
        #expect(h.submit([op("b", ["a"])], run: "r2", mode: .append).0 == .accepted(count: 1, run: "r2"))
    }

    @Test func testWaitRunCountsThatRunOnly() {
        var h = Harness()
        h.submit([op("a"), op("b")], run: "r1")
        h.submit([op("c")], run: "r2")
        let w = h.ref()
        #expect(h.send(.waitRun(w, run: "r1")).isEmpty)
        var d = h.join(1, slots: 3)
        #expect(d.map(\.op) == ["r1/a", "r1/b", "r2/c"])
        #expect(reply(w, h.finish(d.removeLast(), .failed("boom"))) == nil)
        #expect(reply(w, h.finish(d[0], .succeeded([]))) == nil)
        #expect(reply(w, h.finish(d[1], .failed("x"))) == .waitDone(WaitSummary(succeeded: 1, failed: 1, cancelled: 0)))
        // A finished run answers at once; an unknown one is not found.
        let w2 = h.ref()
        #expect(reply(w2, h.send(.waitRun(w2, run: "r2"))) == .waitDone(WaitSummary(succeeded: 0, failed: 1, cancelled: 0)))
        let w3 = h.ref()
        #expect(reply(w3, h.send(.waitRun(w3, run: "r7"))) == .error(.notFound("unknown run r7")))
    }

    @Test func testCancelRunCancelsThatRunOnly() {
        var h = Harness()
        h.submit([op("a"), op("b", ["a"]), op("c")], run: "r1")
        h.submit([op("a"), op("b", ["a"])], run: "r2")
        let d = h.join(1, slots: 1)
        #expect(d.map(\.op) == ["r1/a"])
        let r = h.ref()
        let out = h.send(.cancelRun(r, run: "r1", reason: "stop"))
        #expect(reply(r, out) == .ok)
        #expect(cancels(out).map(\.1) == ["r1/a"])
        #expect(h.s.status("r1/b")?.outcome == .cancelled)
        #expect(h.s.status("r1/c")?.errorText == "stop")
        #expect(h.s.status("r1/a")!.isCancelled)
        #expect(!h.s.status("r2/a")!.isCancelled)
        #expect(!h.s.status("r2/b")!.isCancelled)
        let next = dispatches(h.finish(d[0], .succeeded([])))
        #expect(h.s.runInfo("r1")?.cancelled == 3)
        #expect(h.s.runInfo("r1")?.finishedAt != nil)
        #expect(h.drain(next) == ["r2/a", "r2/b"])
        #expect(h.s.runInfo("r2")?.succeeded == 2)
        let r2 = h.ref()
        #expect(reply(r2, h.send(.cancelRun(r2, run: "nope"))) == .error(.notFound("unknown run nope")))
    }

    @Test func testEvictionByCountFreesRowsAfterCompaction() {
        var h = Harness(config: config(retainRuns: 2, compactMinimum: 4))
        h.join(1, slots: 4)
        for k in 1...5 {
            let (_, d) = h.submit((0..<4).map { op("o\($0)") }, run: "r\(k)")
            h.drain(d)
            #expect(h.s.runInfo("r\(k)")?.finishedAt != nil)
            switch k {
            case 3:   // r1 evicted: 4 dead rows next to 8 live ones stay until they outnumber them
                #expect(h.s.totalOperations == 8)
                #expect(h.s.ops.count == 12)
                #expect(h.s.compactions == 0)
            case 4:   // r2 evicted too: 8 dead, 8 live, compacted
                #expect(h.s.ops.count == 8)
                #expect(h.s.compactions == 1)
            default: break
            }
        }
        #expect(h.s.totalOperations == 8)
        #expect(h.s.runCounts.retained == 2)
        #expect(h.s.runCounts.evicted == 3)
        guard case .success(let page) = h.s.runInfos(limit: 10) else { Issue.record(); return }
        #expect(page.runs.map(\.name) == ["r5", "r4"], "newest first")
        #expect(page.next == nil)
        guard case .success(let first) = h.s.runInfos(limit: 1) else { Issue.record(); return }
        #expect(first.runs.map(\.name) == ["r5"])
        #expect(first.next == "r5")
        guard case .success(let second) = h.s.runInfos(after: "r5", limit: 1) else { Issue.record(); return }
        #expect(second.runs.map(\.name) == ["r4"])
        for k in 1...3 {
            guard case .evictedRun("r\(k)", _, _, _)? = h.s.runLookupFailure("r\(k)") else { Issue.record("r\(k)"); return }
            guard case .failure(.evictedRun) = h.s.resolve("r\(k)/o1") else { Issue.record("r\(k)/o1"); return }
        }
        #expect(h.key(h.s.resolve("o1")) == "r5/o1")
        #expect(h.key(h.s.resolve("o1", in: "r4")) == "r4/o1")
        // Only the retained runs' ops are listed.
        guard case .success(let ids) = h.s.operationIDs(limit: 100) else { Issue.record(); return }
        #expect(ids.ids == ["r5/o0", "r5/o1", "r5/o2", "r5/o3", "r4/o0", "r4/o1", "r4/o2", "r4/o3"])
        #expect(h.s.queueCounts("default")?.succeeded == 8, "queue counts cover retained ops")
    }

    @Test func testEvictionByAge() {
        var h = Harness(config: config(retainMicros: 1_000_000, compactMinimum: 1))
        h.submit([op("a"), op("b")], run: "r1")
        let d = h.join(1, slots: 2)
        h.now = 5_000
        h.finish(d[0])
        let out = h.finish(d[1])
        #expect(out.contains(.scheduleTick(at: 1_005_000)), "a tick is asked for at the run's eviction time")
        #expect(h.s.runInfo("r1")?.evictAt == 1_005_000)
        h.now = 1_004_999
        h.send(.tick)
        #expect(h.s.runInfo("r1") != nil)
        h.now = 1_005_000
        h.send(.tick)
        #expect(h.s.runInfo("r1") == nil)
        #expect(h.s.totalOperations == 0)
        #expect(h.s.ops.count == 0, "compacted")
        #expect(h.s.resolve("a") == .failure(.unknownOperation("a")))
        guard case .failure(.evictedRun("r1", finishedAt: 5_000, evictedAt: 1_005_000, now: 1_005_000)) = h.s.resolve("r1/a") else {
            Issue.record("\(h.s.resolve("r1/a"))"); return
        }
    }

    /// The unnamed run (never evicted) does not take one of `retainRuns`' places.
    @Test func testUnnamedRunDoesNotCountAgainstRetainedRuns() {
        var h = Harness(config: config(retainRuns: 2))
        let (_, d0) = h.submit([op("u")])
        h.drain(d0 + h.join(1))
        #expect(h.s.status("u")?.outcome == .succeeded)
        for k in 1...2 { h.drain(h.submit([op("a")], run: "r\(k)").1) }
        #expect(h.s.status("u") != nil)
        #expect(h.s.runInfo("r1") != nil, "two finished named runs are kept")
        #expect(h.s.runInfo("r2") != nil)
        h.drain(h.submit([op("a")], run: "r3").1)
        #expect(h.s.runInfo("r1") == nil, "the third evicts the oldest")
        #expect(h.s.runCounts.retained == 3, "r2, r3 and the unnamed run")
    }

    @Test func testWatchScopedToRun() {
        var h = Harness()
        h.submit([op("a")], run: "r1")
        h.submit([op("a")], run: "r2")
        let w = ClientRef(client: 5, request: 1)
        #expect(reply(w, h.send(.watch(w, queue: nil, run: "r1"))) == .watching(stream: 1))
        var events: [OpEvent] = []
        func collect(_ out: [Action]) { for a in out { if case .publish(let p) = a, p.watchers.contains(5) { events.append(p.event) } } }
        let out = h.send(.workerJoined(WorkerHello(worker: 1, name: "w1", slots: 2, kinds: ["noop"])))
        collect(out)
        for d in dispatches(out) { collect(h.finish(d)) }
        #expect(events.count == 2, "dispatched, finished")
        #expect(Set(events.map(\.op)) == ["r1/a"])
        let u = h.ref()
        #expect(reply(u, h.send(.watch(u, queue: nil, run: "r7"))) == .error(.notFound("unknown run r7")))
    }

    /// A watcher scoped to a run that is evicted hears nothing more (not every other run's events).
    @Test func testWatchOfEvictedRunHearsNothing() {
        var h = Harness(config: config(retainRuns: 0))
        h.submit([op("a")], run: "r1")
        let w = ClientRef(client: 5, request: 1)
        #expect(reply(w, h.send(.watch(w, queue: nil, run: "r1"))) == .watching(stream: 1))
        h.drain(h.join(1))
        #expect(h.s.runInfo("r1") == nil, "evicted at once (retainRuns 0)")
        var heard: [String] = []
        let (_, d) = h.submit([op("c")], run: "r2")
        #expect(d.map(\.op) == ["r2/c"])
        for a in h.finish(d[0]) { if case .publish(let p) = a, p.watchers.contains(5) { heard.append(p.event.op) } }
        #expect(heard == [])
    }

    /// Compaction renumbers every op while others are ready, dispatched, executing and in a retry
    /// delay: dispatch order stays priority then submission order, in-flight parts finish by their
    /// reports (with a now stale row too), and the retry fires.
    @Test func testCompactionKeepsDispatchOrderAndInFlightParts() {
        var h = Harness(config: config(retainRuns: 0, compactMinimum: 1))
        h.send(.workerJoined(WorkerHello(worker: 1, name: "w1", slots: 20, kinds: ["noop"], credit: 0)))
        h.submit((0..<8).map { op("z\($0)") }, run: "r1")
        let zs = dispatches(h.send(.credit(worker: 1, grant: 8)))
        #expect(zs.count == 8)
        var a = op("a", p: 8); a.retries = 1; a.retryDelayMicros = 10_000; a.retryDelayMaxMicros = 10_000
        var m = op("m", p: 8); m.parts = 2
        h.submit([a, m] + (0..<5).map { op("c\($0)") } + [op("d", p: 4)], run: "r2")
        let first = dispatches(h.send(.credit(worker: 1, grant: 2)))
        #expect(first.map(\.op) == ["r2/a", "r2/m"])
        let rowOfM = UInt64(h.s.lookup("r2/m")!)   // before compaction renumbers it
        h.finish(first[0], .failed("x"), grant: 0)
        #expect(h.state("r2/a") == .delayed, "in its retry delay")
        h.start(first[1])
        for z in zs { h.finish(z, grant: 0) }
        #expect(h.s.runInfo("r1") == nil)
        #expect(h.s.compactions == 1)
        #expect(h.s.ops.count == 8)
        #expect(h.state("r2/m") == .executing)
        guard case .retrying = h.s.why("r2/a") else { Issue.record("\(h.s.why("r2/a"))"); return }
        // New ops take the freed indices' successors: m's old row now names another op.
        h.submit((0..<4).map { op("e\($0)", p: -8) }, run: "r3")
        #expect(h.s.key(of: Int32(rowOfM)) != "r2/m")
        let fenced = h.s.fencing.total
        h.send(.partFinished(PartRef(worker: 1, op: "r2/m", part: 0, attempt: 1, token: rowOfM), .succeeded([1]), grant: 0))
        #expect(h.s.fencing.total == fenced, "a report with a stale row is matched by its op id")
        #expect(h.s.status("r2/m")?.partsFinished == 1)
        let next = dispatches(h.send(.credit(worker: 1, grant: 7)))
        #expect(next.map(\.op) == ["r2/m", "r2/d", "r2/c0", "r2/c1", "r2/c2", "r2/c3", "r2/c4"])
        h.now += 10_001
        h.send(.tick)
        #expect(h.state("r2/a") == .ready)
        let retry = dispatches(h.send(.credit(worker: 1, grant: 1)))
        #expect(retry.map(\.op) == ["r2/a"], "veryHigh before the r3 ops")
        #expect(retry.first?.attempt == 2)
        h.drain(next + retry)
        h.drain(dispatches(h.send(.credit(worker: 1, grant: 4))))
        #expect(h.s.status("r2/m") == nil, "r2 finished and evicted (retainRuns 0)")
        #expect(h.s.totalOperations == 0)
        #expect(h.s.runCounts.evicted == 3)
    }

    /// A tick that finishes an op (timeout) and evicts a run by age, compacting: the finished op's
    /// dependents are still released (the release list holds op indices).
    @Test func testCompactionAtTickKeepsReleases() {
        var h = Harness(config: config(retainMicros: 1_000_000, compactMinimum: 1))
        h.submit((0..<4).map { op("z\($0)") }, run: "r1")
        h.drain(h.join(1, slots: 4))
        #expect(h.s.runInfo("r1")?.finishedAt == 1_000)
        var t = op("t"); t.timeoutMicros = 500_000
        let (_, d) = h.submit([t, op("u", ["t"])], run: "r2")
        #expect(d.map(\.op) == ["r2/t"])
        h.start(d[0])
        h.now = 1_001_000
        let out = h.send(.tick)
        #expect(h.s.runInfo("r1") == nil, "evicted by age")
        #expect(h.s.compactions == 1)
        #expect(h.s.status("r2/t")?.outcome == .failed)
        #expect(dispatches(out).map(\.op) == ["r2/u"], "released by t's failure (policy finished)")
    }

    /// A run that an unfinished op of another run depends on is not evicted (pinned), so the result
    /// still reaches the dependent; once the dependent finished, the run goes at the next eviction.
    @Test func testARunOthersDependOnIsKeptUntilTheyFinish() {
        var h = Harness(config: config(retainRuns: 1))
        h.submit([op("a")], run: "r1")
        h.finish(h.join(1)[0], .succeeded([7]))
        let (_, dg) = h.submit([op("g"), op("b", ["g", "r1/a"])], run: "r2")
        #expect(dg.map(\.op) == ["r2/g"])
        h.submit([op("h")], run: "r3")
        let dh = dispatches(h.send(.credit(worker: 1, grant: 1)))
        #expect(dh.map(\.op) == ["r3/h"])
        h.finish(dh[0], grant: 0)
        #expect(h.s.runInfo("r1") != nil, "pinned by r2/b, which depends on r1/a")
        let db = dispatches(h.finish(dg[0], .succeeded([5])))
        #expect(db.map(\.op) == ["r2/b"])
        #expect(db.first?.inputs.map(\.0) == ["g", "r1/a"])
        #expect(db.first?.inputs.map(\.1) == [[5], [7]])
        h.finish(db[0], grant: 0)
        #expect(h.s.runInfo("r1") == nil, "unpinned: evicted beyond retainRuns")
        #expect(h.s.validate().isEmpty, "\(h.s.validate())")
    }

    /// Runs are evicted by the time they finished as the worker reported it, not by the order their
    /// reports arrived: a run whose last op finished earlier is evicted first.
    @Test func testEvictionByAgeFollowsReportedFinishTimes() {
        var h = Harness(config: config(retainMicros: 1_000_000))
        h.join(1, slots: 2)
        let da = h.submit([op("a")], run: "r1").1
        let db = h.submit([op("b")], run: "r2").1
        #expect((da + db).map(\.op) == ["r1/a", "r2/b"])
        h.now = 500_000
        h.finish(da[0])
        h.now = 600_000
        let out = h.finish(db[0], at: 2_000)
        #expect(h.s.runInfo("r2")?.finishedAt == 2_000)
        #expect(h.s.runInfo("r2")?.evictAt == 1_002_000)
        #expect(out.contains(.scheduleTick(at: 1_002_000)))
        h.now = 1_002_000
        h.send(.tick)
        #expect(h.s.runInfo("r2") == nil, "r2 finished first (at 2 ms)")
        #expect(h.s.runInfo("r1") != nil)
        h.now = 1_500_000
        h.send(.tick)
        #expect(h.s.runInfo("r1") == nil)
    }

    /// Appending to a finished run reopens it: it is not evicted while open, and counts again once done.
    @Test func testAppendReopensAFinishedRun() {
        var h = Harness(config: config(retainRuns: 1))
        h.join(1, slots: 1)
        h.drain(h.submit([op("a")], run: "r1").1)
        #expect(h.s.runInfo("r1")?.finishedAt != nil)
        let db = h.submit([op("b", ["a"])], run: "r1", mode: .append).1
        #expect(db.first?.inputs.map(\.0) == ["a"])
        #expect(h.s.runInfo("r1")?.finishedAt == nil, "open again")
        h.now = 2_000
        let dc = h.submit([op("c")], run: "r2", mode: .createOrAppend).1
        #expect(dc.isEmpty)
        h.now = 3_000
        let next = dispatches(h.finish(db[0]))
        #expect(h.s.runInfo("r1") != nil, "r1 finished again at 3 ms, the only finished run")
        h.now = 4_000
        h.drain(next)
        #expect(h.s.runInfo("r1") == nil, "the older finished run goes when r2 finishes")
        #expect(h.s.runInfo("r2")?.succeeded == 1)
    }

    /// Beyond `evictedRunsRemembered`, an evicted run's name is forgotten: unknown, and usable again.
    @Test func testForgottenEvictedNameCanBeUsedAgain() {
        var c = config(retainRuns: 0, compactMinimum: 1)
        c.evictedRunsRemembered = 1
        var h = Harness(config: c)
        h.join(1)
        h.drain(h.submit([op("a")], run: "r1").1)
        h.drain(h.submit([op("a")], run: "r2").1)
        #expect(h.s.runLookupFailure("r1") == .unknownRun("r1"))
        guard case .evictedRun? = h.s.runLookupFailure("r2") else { Issue.record(); return }
        let (rep, d) = h.submit([op("a")], run: "r1")
        #expect(accepted(rep) == "1 r1")
        h.drain(d)
        #expect(h.s.runCounts.evicted == 3)
        #expect(h.s.totalOperations == 0)
    }
}
