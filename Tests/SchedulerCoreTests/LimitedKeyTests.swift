import Testing
@testable import SchedulerCore

/// What a holder of a limited key can make the core do (issue 23, PROTOCOL.md §12): a worker's claims are
/// checked like its requests, and a caller's cascade or priority inheritance stops at the edge of its scope.
@Suite struct LimitedKeyTests {
    func hello(_ id: UInt64, name: String? = nil, owner: String, tags: [String] = [], finished: [FinishedPart] = [],
               running: [HeldPart] = []) -> Event {
        .workerJoined(WorkerHello(worker: id, name: name ?? "w\(id)", slots: 1, tags: tags, kinds: ["noop"], credit: 0,
                                  running: running, finished: finished, owner: owner))
    }
    func forged(_ op: String, attempt: Int = 1) -> FinishedPart {
        FinishedPart(part: HeldPart(op: op, part: 0, attempt: attempt), outcome: .succeeded(Array("FORGED".utf8)), at: 900)
    }
    func refusals(_ out: [Action]) -> [(worker: UInt64, count: Int, example: String)] {
        out.compactMap { if case .refusedClaims(let w, let n, let e) = $0 { (w, n, e) } else { nil } }
    }

    /// Finding 1: a worker key lists finished attempts of ops it was never sent — one pinned to another
    /// key, one needing a tag it lacks, one never dispatched at all. None is taken back; the dependent does
    /// not read the forged result; the refusal is reported once for the worker.
    @Test func claimsOfAttemptsNeverSentAreRefused() {
        var h = Harness()
        var pinned = op("pinned"), gpu = op("gpu")
        pinned.requires = ["key:trusted"]
        gpu.requires = ["gpu"]
        h.submit([pinned, gpu, op("plain"), op("use", ["pinned"])])
        let out = h.send(hello(1, owner: "key:cpu", tags: ["cpu", "key:cpu"], finished: [forged("pinned"), forged("gpu"), forged("plain")]))
        for id in ["pinned", "gpu", "plain"] { #expect(h.state(id) == .ready, "\(id) taken back") }
        #expect(h.state("use") == .pending)
        #expect(h.s.fencing.refusedClaim == 3)
        #expect(h.s.fencing.staleAttempt == 0, "a refused claim counted as a late report too")
        let r = refusals(out)
        #expect(r.count == 1 && r.first?.worker == 1 && r.first?.count == 3, "\(r)")
        #expect(r.first?.example.contains("could not have been sent it") == true, "\(r)")
        // The pinned op's own key still runs it.
        let d = dispatches(h.send(hello(2, owner: "key:trusted", tags: ["key:trusted"])))
        #expect(d.isEmpty)   // no credit yet
        #expect(dispatches(h.send(.credit(worker: 2, grant: 1))).map(\.op) == ["pinned"])
    }

    /// A worker lost while it ran an op: its owner may take the attempt back; another owner that could run
    /// it may not (the op was dispatched to someone else), nor may anyone claim an op never dispatched.
    @Test func aClaimMustComeFromTheOwnerTheAttemptWasDispatchedTo() {
        for (claimant, takenBack) in [("key:a", true), ("key:b", false)] {
            var h = Harness()
            h.send(hello(1, owner: "key:a"))
            h.send(.credit(worker: 1, grant: 1))
            let (_, sent) = h.submit([op("x"), op("never")])
            #expect(sent.map(\.op) == ["x"])
            h.start(sent[0])
            h.send(.workerLost(worker: 1, reason: "link cut"))
            #expect(h.state("x") == .ready)
            let held = HeldPart(op: "x", part: 0, attempt: sent[0].attempt, startedAt: h.now)
            let out = h.send(hello(2, owner: claimant, running: [held, HeldPart(op: "never", part: 0, attempt: 1)]))
            #expect((h.state("x") == .executing) == takenBack, "\(claimant): \(String(describing: h.state("x")))")
            #expect(h.state("never") == .ready)
            let cancelled = cancels(out).map(\.1)
            #expect(cancelled.contains("never") && cancelled.contains("x") != takenBack, "\(claimant): \(cancelled)")
            #expect(h.s.fencing.refusedClaim == (takenBack ? 1 : 2), "\(claimant)")
        }
    }

    /// A part of a multi-part op its worker's owner claims back after losing it is not taken back (parts
    /// run again) and is cancelled on the worker with that reason, word for word.
    @Test func aClaimedPartOfAMultiPartOpIsCancelledWithItsReason() {
        var h = Harness()
        h.send(hello(1, owner: "key:a"))
        h.send(.credit(worker: 1, grant: 1))
        var split = op("split")
        split.parts = 2
        let (_, sent) = h.submit([split])
        #expect(sent.map(\.op) == ["split"])
        h.send(.workerLost(worker: 1, reason: "link cut"))
        let held = HeldPart(op: "split", part: sent[0].part, attempt: sent[0].attempt, startedAt: h.now)
        let out = h.send(hello(2, owner: "key:a", running: [held]))
        let reasons = out.compactMap { if case .cancelOnWorker(_, "split", _, _, let reason) = $0 { reason } else { nil } }
        #expect(reasons == ["not taken back by the coordinator: parts of multi-part operations run again"], "\(out)")
    }

    /// An attempt claimed back after it failed and its op went to wait out a retry delay is not taken
    /// back, and the worker is told why, word for word.
    @Test func aClaimedAttemptOfADelayedOpIsCancelledWithItsReason() {
        var h = Harness()
        h.send(hello(1, owner: "key:a"))
        h.send(.credit(worker: 1, grant: 1))
        var a = op("a"); a.retries = 1; a.retryDelayMicros = 100_000; a.retryDelayMaxMicros = 100_000
        let (_, sent) = h.submit([a])
        h.finish(sent[0], .failed("x"), grant: 0)
        #expect(h.state("a") == .delayed)
        h.send(.workerLost(worker: 1, reason: "link cut"))
        let held = HeldPart(op: "a", part: 0, attempt: sent[0].attempt, startedAt: h.now)
        let out = h.send(hello(2, owner: "key:a", running: [held]))
        let reasons = out.compactMap { if case .cancelOnWorker(_, "a", _, _, let reason) = $0 { reason } else { nil } }
        #expect(reasons == ["not taken back by the coordinator: it waits out a retry delay after a failed attempt"], "\(out)")
        #expect(h.state("a") == .delayed)
    }

    /// After a restart nobody's holder is recorded: a worker that could have been sent an op may claim it
    /// (no more than it could do by being dispatched it); one that could not, may not.
    @Test func afterARestartClaimsAreCheckedAgainstWhatTheWorkerCouldRun() {
        var h = Harness()
        var gpu = op("gpu")
        gpu.requires = ["gpu"]
        h.send(hello(1, owner: "key:a", tags: ["gpu"]))
        h.send(.credit(worker: 1, grant: 2))
        let (_, sent) = h.submit([op("x"), gpu])
        #expect(Set(sent.map(\.op)) == ["x", "gpu"])
        var r = Harness()
        for record in h.s.snapshotRecords() { r.now = record.at; r.send(.restore(record.record)) }
        r.now = h.now + 10
        r.send(.recovered)
        // Another key's worker under the name the journal awaits (names are the worker's to choose).
        r.send(hello(2, name: "w1", owner: "key:b", finished: [forged("x"), forged("gpu")]))
        #expect(r.state("x") == .finished)
        #expect(r.state("gpu") == .ready, "a worker without the gpu tag claimed the gpu op")
    }

    /// Finding 5: a scoped cascade cancels the caller's dependents and stops at another team's, which
    /// are left alone and counted; an unscoped one (an admin) goes on as before.
    @Test func aScopedCascadeStopsAtOpsOutsideTheScope() {
        for scoped in [true, false] {
            var h = Harness()
            h.submit([op("a", q: "team-a/q"), op("a2", ["a"], q: "team-a/q"), op("b", ["a"], q: "team-b/q"),
                      op("b2", ["b"], q: "team-b/q"), op("a3", ["b"], q: "team-a/q")])
            let out = h.send(.cancel(h.ref(), ids: ["a"], cascade: true, reason: "stop",
                                     scope: scoped ? QueueScope([Glob("team-a/*")]) : nil))
            #expect(replies(out) == [scoped ? .okOutsideScope(leftAlone: 1) : .ok])
            #expect(h.s.status("a2")?.outcome == .cancelled)
            #expect((h.s.status("b")?.outcome == .cancelled) == !scoped, "scoped \(scoped)")
            #expect((h.s.status("b2")?.outcome == .cancelled) == !scoped, "scoped \(scoped)")
            // b's other dependent is reached only through b: left alone with it.
            #expect((h.s.status("a3")?.outcome == .cancelled) == !scoped, "scoped \(scoped)")
            if scoped {
                // b runs with its cancelled dependency (policy: finished), as after any cancelled input.
                #expect(h.state("b") == .ready)
                // The journal holds plain cancels: replay needs no scope and ends the same.
                var r = Harness()
                for (at, record) in h.journal { r.now = at; r.send(.restore(record)) }
                for id in ["a", "a2", "b", "b2", "a3"] { #expect(r.s.status(id)?.outcome == h.s.status(id)?.outcome, "\(id)") }
            }
        }
    }

    /// Priority inheritance by a scoped caller raises its own prerequisites only.
    @Test func scopedPriorityInheritanceStopsAtOpsOutsideTheScope() {
        var h = Harness()
        h.submit([op("b", q: "team-b/q"), op("a0", q: "team-a/q"), op("a", ["a0", "b"], q: "team-a/q")])
        let out = h.send(.setPriority(h.ref(), id: "a", priority: 8, inherit: true, scope: QueueScope([Glob("team-a/*")])))
        #expect(replies(out) == [.okOutsideScope(leftAlone: 1)])
        #expect(h.s.status("a0")?.priority == 8)
        #expect(h.s.status("b")?.priority == 0)
        var r = Harness()
        for (at, record) in h.journal { r.now = at; r.send(.restore(record)) }
        #expect(r.s.status("a0")?.priority == 8 && r.s.status("b")?.priority == 0, "replay raised what the original did not")
    }

    /// Finding 3: with `appendOwnRunOnly` (a key that is not an admin's) only the run's submitter may add to it.
    @Test func onlyItsSubmitterAppendsToARun() {
        var h = Harness()
        h.send(.submit(h.ref(), ops: [op("b1")], queues: [], run: RunRequest(name: "runD", mode: .create, submitter: "team-b")))
        let intruder = h.send(.submit(h.ref(), ops: [op("x")], queues: [],
                                      run: RunRequest(name: "runD", mode: .createOrAppend, submitter: "team-a", appendOwnRunOnly: true)))
        guard case .rejected(let problems)? = replies(intruder).first else { Issue.record("accepted: \(replies(intruder))"); return }
        #expect(problems.description.contains("only its submitter or an admin"), "\(problems)")
        let owner = h.send(.submit(h.ref(), ops: [op("b2")], queues: [],
                                   run: RunRequest(name: "runD", mode: .createOrAppend, submitter: "team-b", appendOwnRunOnly: true)))
        #expect(replies(owner).first.map { if case .accepted = $0 { true } else { false } } == true, "\(replies(owner))")
    }
}
