@testable import Coordinator
import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// The coordinator's logic in one process (`EmbeddedCoordinator`): the harness's own guarantees, and
/// coordinator-only checks that needed real processes and real time before it (each names where it
/// came from).
struct EmbeddedCoordinatorTests {
    let client = Array("client".utf8)

    // MARK: the harness

    @Test func aDependentRunsAfterItsDependencyOnAnotherWorkerAndAWaitSeesBoth() throws {
        var c = EmbeddedCoordinator()
        let workers = [ScriptedWorker("one"), ScriptedWorker("two")]
        for w in workers { c.connect(w) }
        let submitted = c.submit([op("a", kind: "echo"), op("b", kind: "echo", after: ["a"])], run: "r")
        let reply = try #require(submitted)
        #expect(reply.accepted && reply.acceptedCount == 2 && reply.workers == 2)
        let wait = c.send(.wait(.with { $0.opIds = ["a", "b"]; $0.run = "r" }), from: client)
        let first = c.dispatched(to: workers)
        #expect(first.map(\.record.opID) == ["r/a"], "b waits for a")
        c.succeed(first.map(\.record), on: try #require(first.first).worker, result: "from a")
        let second = c.dispatched(to: workers)
        #expect(second.map(\.record.opID) == ["r/b"], "a's FINISHED released b")
        #expect(c.reply(client, to: wait) == nil, "no answer while b runs")
        c.succeed(second.map(\.record), on: try #require(second.first).worker, result: "from b")
        guard case .waitReply(let w)? = c.reply(client, to: wait) else { Issue.record("no WAIT-REPLY"); return }
        #expect(w.finished && !w.timedOut && w.succeededCount == 2)
        #expect(w.outcomes.map(\.opID).sorted() == ["a", "b"])
    }

    /// A5 in one process: the SUBMIT's acknowledgement leaves only once its records are durable, while
    /// the dispatch it caused leaves at once (an effect, not an acknowledgement).
    @Test func anAcknowledgementWaitsForItsRecordsToBeDurableAndADispatchDoesNot() throws {
        var c = EmbeddedCoordinator(journalled: true)
        let w = ScriptedWorker("one")
        c.connect(w)
        let rid = c.send(.submit(.with { $0.operations = [op("a")]; $0.run = "r" }), from: client)
        #expect(c.dispatched(to: w).map(\.opID) == ["r/a"], "the pass flushed the dispatch and appended the batch")
        #expect(c.appendedBatches >= 1 && c.journalRecords > 0)
        #expect(c.reply(client, to: rid) == nil, "not acknowledged before the journal's sync")
        c.sync()
        guard case .submitReply(let r)? = c.reply(client, to: rid) else { Issue.record("no SUBMIT-REPLY after the sync"); return }
        #expect(r.accepted && r.run == "r")
    }

    /// A deposed leader reloads its journal, whose batch numbers start over: the replies it held are
    /// dropped (never sent), and a later reply waits for its own batch of the new journal, not for a
    /// number the old journal reached. (Remembering the old durable sequence let it pass at once.)
    @Test func aReloadedJournalDropsHeldRepliesAndGatesOnItsOwnNumbers() throws {
        var c = EmbeddedCoordinator(journalled: true)
        for i in 0..<3 { _ = c.submit([op("early\(i)")], run: "e\(i)") }   // durable up to batch 3
        let held = c.send(.submit(.with { $0.operations = [op("a")]; $0.run = "r" }), from: client)
        c.pass()
        #expect(c.reply(client, to: held) == nil)
        c.reloadJournal()
        c.sync()
        #expect(c.reply(client, to: held) == nil, "a reply held for the old journal is never sent")
        let later = c.send(.submit(.with { $0.operations = [op("b")]; $0.run = "s" }), from: client)
        #expect(c.reply(client, to: later) == nil, "not before its batch is appended and durable")
        c.pass()
        #expect(c.appendedBatches == 1)
        #expect(c.reply(client, to: later) == nil, "the new journal's batch 1 is not durable yet")
        c.sync()
        guard case .submitReply(let r)? = c.reply(client, to: later) else { Issue.record("no SUBMIT-REPLY"); return }
        #expect(r.accepted)
    }

    /// Virtual time: a WAIT's timeout fires at its deadline, not before, without waiting for it.
    @Test func aWaitTimesOutAtItsDeadlineOnVirtualTime() throws {
        var c = EmbeddedCoordinator()
        #expect(c.submit([op("a")], run: "r")?.accepted == true)
        let rid = c.send(.wait(.with { $0.opIds = ["a"]; $0.run = "r"; $0.timeoutUs = 5_000_000 }), from: client)
        c.advance(by: 4_999_999)
        #expect(c.reply(client, to: rid) == nil, "answered before its deadline")
        c.advance(by: 1)
        guard case .waitReply(let w)? = c.reply(client, to: rid) else { Issue.record("no WAIT-REPLY at the deadline"); return }
        #expect(w.timedOut && !w.finished && w.pendingCount == 1, "\(w)")
    }

    /// The harness is deterministic: one script, run twice, makes the same messages in the same order.
    @Test func theSameScriptMakesTheSameMessages() throws {
        func script() -> [String] {
            var c = EmbeddedCoordinator()
            let workers = [ScriptedWorker("one", slots: 2), ScriptedWorker("two")]
            for w in workers { c.connect(w, credit: 2) }
            _ = c.submit((0..<6).map { op("o\($0)", after: $0 >= 3 ? ["o\($0 - 3)"] : []) }, run: "r")
            for _ in 0..<4 {
                for (w, r) in c.dispatched(to: workers) { c.succeed([r], on: w) }
                c.advance(by: 250_000)
            }
            _ = c.status(["o5"], run: "r")
            return c.transcript.map { "\(String(decoding: $0.peer, as: UTF8.self)) \($0.envelope)" }
        }
        let once = script(), again = script()
        #expect(once.filter { $0.contains("dispatch(") }.count >= 4 && once.last?.contains("statusReply") == true,
                "\(once.joined(separator: "\n"))")
        #expect(once == again)
    }

    /// A HELLO under the name of a session still open (the worker restarted before it was declared
    /// lost) replaces it: the old connection hears DISCONNECT, what it held runs again on the new one,
    /// and the worker keeps its number with a new session.
    @Test func aHelloUnderALiveSessionsNameReplacesItAndItsWorkRunsAgain() throws {
        var c = EmbeddedCoordinator()
        let old = ScriptedWorker("keeper")
        c.connect(old)
        #expect(c.submit([op("held")], run: "r")?.accepted == true)
        #expect(c.dispatched(to: old).map(\.attempt) == [1])
        let restarted = ScriptedWorker("keeper", routing: Array("w-keeper-2".utf8))
        c.send(restarted.hello, from: restarted.routing)
        guard case .welcome(let welcome)? = c.take(restarted.routing).first?.message else { Issue.record("no WELCOME"); return }
        #expect(welcome.workerID == "w1", "the same worker number")
        let told = c.take(old.routing).compactMap { e -> String? in if case .disconnect(let d) = e.message { d.reason } else { nil } }
        #expect(told == ["replaced by a new connection of worker 'keeper'"])
        c.send(.credit(.with { $0.credit = 1 }), from: restarted.routing)
        let again = c.dispatched(to: restarted)
        #expect(again.map(\.opID) == ["r/held"] && again.map(\.attempt) == [2])
        // The old connection's late report is fenced, not taken for the new attempt.
        c.succeed(c.transcriptDispatches(to: old), on: old, result: "stale")
        c.succeed(again, on: restarted, result: "fresh")
        let st = try #require(c.status(["held"], run: "r")?.ops.first)
        #expect(st.outcome.succeeded == Data("fresh".utf8) && st.attempts == 2)
    }

    /// A worker's report before its HELLO is refused with ERROR `unexpected` (it then registers), and
    /// what only the coordinator sends is refused when sent to it.
    @Test func reportsBeforeHelloAndCoordinatorCommandsAreRefusedByName() throws {
        var c = EmbeddedCoordinator()
        let stranger = Array("stranger".utf8)
        c.send(.finished(.with { $0.records = [.with { $0.opID = "r/x"; $0.attempt = 1; $0.succeeded = Data() }] }), from: stranger)
        c.send(.dispatch(.with { $0.records = [.with { $0.opID = "r/x"; $0.attempt = 1; $0.kind = "noop" }] }), from: stranger)
        let errors = c.take(stranger).compactMap { e -> String? in if case .error(let x) = e.message, x.code == .unexpected { x.message } else { nil } }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.first?.contains("before HELLO") == true && errors.last?.contains("sent by the coordinator") == true, "\(errors)")
    }

    // MARK: moved from the process tests

    /// From ClusterTests (was 1 s of real time and three processes): a worker declared lost after
    /// 3 × 100 ms of silence reports its attempt anyway; the report is fenced and counted, and the op
    /// runs again elsewhere with its own result.
    @Test func aLateReportOfALostWorkersAttemptIsFencedAndCounted() throws {
        var c = EmbeddedCoordinator { $0.heartbeatIntervalMs = 100; $0.liveness = 3 }
        let impostor = ScriptedWorker("impostor", kinds: ["echo"])
        c.connect(impostor)
        #expect(c.submit([op("stale", kind: "echo", payload: "from-the-real-run")])?.accepted == true)
        let d = c.dispatched(to: impostor)
        #expect(d.map(\.attempt) == [1])
        // Silence: it sends nothing, so it is declared lost after 3 intervals.
        c.advance(by: 500_000)
        #expect(c.take(impostor.routing).contains { if case .disconnect = $0.message { true } else { false } })
        let fencedBefore = try #require(c.status()?.fenced)
        c.succeed(d, on: impostor, result: "forged")
        let fencedAfter = try #require(c.status()?.fenced)
        #expect(fencedAfter > fencedBefore)
        let real = ScriptedWorker("real", kinds: ["echo"])
        c.connect(real)
        let again = c.dispatched(to: real)
        #expect(again.map(\.attempt) == [2])
        c.succeed(again, on: real, result: "from-the-real-run")
        let st = try #require(c.status([d[0].opID])?.ops.first)
        #expect(st.outcome.succeeded == Data("from-the-real-run".utf8))
        #expect(st.attempts == 2)
    }

    /// From ClusterTests: naming an existing queue again without its fields lifts neither its
    /// suspension nor its limit.
    @Test func submitQueueSettingsLeaveAbsentFieldsOfAnExistingQueueUnchanged() throws {
        var c = EmbeddedCoordinator()
        #expect(c.submit([op("q1")], queues: [queueSettings("held", maxConcurrent: 3, suspended: true)])?.accepted == true)
        #expect(c.submit([op("q2", queue: "held")], queues: [queueSettings("held")])?.accepted == true)
        let status = c.status()
        let q = try #require(status?.queues.first { $0.name == "held" })
        #expect(q.suspended)
        #expect(q.maxConcurrent == 3)
    }

    /// From HostilePeerIntegrationTests (was 1 s or more of real time): a worker that grants a million
    /// credits gets no more than its slot, and the part it never starts is taken back at the start
    /// timeout; another worker runs everything.
    @Test func aGreedyWorkerGetsNoMoreThanItsSlotsAndWorkItSitsOnIsTakenBack() throws {
        var c = EmbeddedCoordinator { $0.heartbeatIntervalMs = 200; $0.startTimeoutMs = 1000 }
        let greedy = ScriptedWorker("greedy")
        c.connect(greedy, credit: 1_000_000)
        let ops = (0..<300).map { op("g\($0)") }
        #expect(c.submit(ops)?.accepted == true)
        let d = c.dispatched(to: greedy)
        #expect(d.count == 1, "a 1-slot worker holding one gets no more")
        // It never starts it; it heartbeats, so it is not declared lost instead.
        var takenBack = false
        for _ in 0..<20 where !takenBack {
            c.send(.heartbeat, from: greedy.routing)
            c.advance(by: 100_000)
            for e in c.take(greedy.routing) {
                switch e.message {
                case .cancel(let cancel): takenBack = takenBack || cancel.records.contains { $0.opID == d[0].opID }
                case .dispatch(let more): Issue.record("a second DISPATCH of \(more.records.count) to a 1-slot worker holding one")
                default: break
                }
            }
        }
        #expect(takenBack, "the part it sat on was taken back within 2 s")
        let real = ScriptedWorker("real", slots: 4)
        c.connect(real, credit: 4)
        var done = 0
        for _ in 0..<200 where done < ops.count {
            let batch = c.dispatched(to: real)
            done += batch.count
            c.succeed(batch, on: real)
        }
        #expect(done == ops.count)
        let st = try #require(c.status([d[0].opID])?.ops.first)
        #expect(st.state == .finished && st.outcome.result == .succeeded(Data()), "\(st)")
    }

    /// From ClusterTests (was a 300 ms sleep on a real worker): a cancelled pending op finishes at once
    /// and counts as finished for its dependents; with cascade, its dependents are cancelled naming it.
    @Test func cancellingAPendingOperationUnblocksDependentsUnlessCascade() throws {
        var c = EmbeddedCoordinator()
        let w = ScriptedWorker("a", slots: 2)
        c.connect(w)
        let ops = [op("gate"), op("x", after: ["gate"]), op("x-dep", after: ["x"]), op("y", after: ["gate"]), op("y-dep", after: ["y"])]
        #expect(c.submit(ops, run: "r")?.accepted == true)
        let gate = c.dispatched(to: w)
        #expect(gate.map(\.opID) == ["r/gate"])
        c.start(gate, on: w)
        c.advance(by: 100_000)
        guard case .ack? = c.request(.cancelOps(.with { $0.opIds = ["x"]; $0.run = "r" })) else { Issue.record("no ACK"); return }
        guard case .ack? = c.request(.cancelOps(.with { $0.opIds = ["y"]; $0.run = "r"; $0.cascade = true; $0.reason = "not needed any more" })) else {
            Issue.record("no ACK"); return
        }
        c.advance(by: 200_000)
        c.succeed(gate, on: w)
        let next = c.dispatched(to: w)
        #expect(next.map(\.opID) == ["r/x-dep"], "x's dependent runs; y's was cancelled with it")
        c.start(next, on: w)
        c.succeed(next, on: w)
        let st = Dictionary(uniqueKeysWithValues: (c.status(ops.map(\.id), run: "r")?.ops ?? []).map { ($0.id, $0) })
        #expect(st.count == 5)
        // A1: cancelled(reason) — the client's reason, or "cancelled by client" when it gave none.
        #expect(st["x"]?.outcome.cancelled == "cancelled by client")
        #expect(st["y"]?.outcome.cancelled == "not needed any more")
        #expect(st["y-dep"]?.outcome.cancelled == "dependency y cancelled", "a cascaded cancel names its cause")
        #expect(st["x"]?.startedUs == 0 && st["y-dep"]?.startedUs == 0, "a cancelled pending op never runs")
        #expect((st["x"]?.finishedUs ?? .max) < (st["gate"]?.finishedUs ?? 0), "cancelled before it started, it finished at once")
        #expect(st["x-dep"]?.outcome.result == .succeeded(Data()), "a cancelled dependency counts as finished")
    }

    /// From ClusterTests (was 8 sleeps of 30 ms on two real workers): a suspended queue holds its ready
    /// ops (WHY says so), and once resumed its limit of one is never exceeded across workers.
    @Test func suspendHoldsNewWorkAndQueueLimitOneIsNeverExceededAcrossWorkers() throws {
        var c = EmbeddedCoordinator()
        let workers = [ScriptedWorker("a", slots: 2), ScriptedWorker("b", slots: 2)]
        for w in workers { c.connect(w, credit: 4) }
        let ops = (0..<8).map { op("s\($0)", queue: "serial") }
        #expect(c.submit(ops, queues: [queueSettings("serial", maxConcurrent: 1, suspended: true)], run: "r")?.accepted == true)
        #expect(c.dispatched(to: workers).isEmpty, "suspended: nothing is dispatched")
        let held = c.status(ops.map(\.id), run: "r")?.ops ?? []
        #expect(held.count == 8 && held.allSatisfy { $0.state == .ready && $0.dispatchedUs == 0 })
        guard case .whyReply(let why)? = c.request(.why(.with { $0.opID = "s0"; $0.run = "r" })) else { Issue.record("no WHY-REPLY"); return }
        #expect(why.reasons.contains { $0.contains("queue serial is suspended") }, "\(why.reasons)")
        guard case .ack? = c.request(.queue(.with { $0.settings = queueSettings("serial", suspended: false) })) else { Issue.record("no ACK"); return }
        var ran: [String] = [], on: Set<String> = []
        for _ in 0..<10 where ran.count < ops.count {
            let now = c.dispatched(to: workers)
            #expect(now.count == 1, "the limit of one holds across workers: \(now.map(\.record.opID))")
            guard let (w, r) = now.first else { break }
            ran.append(r.opID)
            on.insert(w.name)
            c.start([r], on: w)
            c.advance(by: 30_000)
            c.succeed([r], on: w)
        }
        #expect(ran == ops.map { "r/\($0.id)" })
        #expect(on.count == 2, "the limit is cluster-wide: both workers took turns")
    }

    /// From ClusterTests (was 10 sleeps on a real worker): a one-slot worker is sent ready operations in
    /// priority order, FIFO within a level.
    @Test func oneSlotWorkerIsSentReadyOperationsInPriorityOrderFifoWithinALevel() throws {
        var c = EmbeddedCoordinator()
        let solo = ScriptedWorker("solo")
        c.connect(solo)
        // The queue starts suspended so every operation is ready before the first is dispatched.
        let levels: [Int32] = [0, -8, 4, -4, 8, 0, -8, 4, -4, 8]
        let ops = levels.enumerated().map { i, p in op("p\(i)", priority: p, queue: "prio") }
        #expect(c.submit(ops, queues: [queueSettings("prio", suspended: true)], run: "r")?.accepted == true)
        guard case .ack? = c.request(.queue(.with { $0.settings = queueSettings("prio", suspended: false) })) else { Issue.record("no ACK"); return }
        var order: [String] = []
        for _ in 0..<12 where order.count < ops.count {
            let d = c.dispatched(to: solo)
            #expect(d.count == 1)
            order += d.map { String($0.opID.dropFirst(2)) }
            c.succeed(d, on: solo)
        }
        #expect(order == ["p4", "p9", "p2", "p7", "p0", "p5", "p3", "p8", "p1", "p6"])
    }

    /// From TruthfulStatusTests: one dependency releases eight equal-priority operations at once; a
    /// one-slot worker is sent them in submission order.
    @Test func equalPriorityOperationsReleasedTogetherGoInSubmissionOrder() throws {
        var c = EmbeddedCoordinator()
        let solo = ScriptedWorker("solo")
        c.connect(solo)
        let ds = (1...8).map { op("d\($0)", after: ["root"], queue: "fifo") }
        #expect(c.submit([op("root", queue: "fifo")] + ds, queues: [queueSettings("fifo", maxConcurrent: 1)], run: "r")?.accepted == true)
        var order: [String] = []
        for _ in 0..<12 where order.count < 9 {
            let d = c.dispatched(to: solo)
            order += d.map { String($0.opID.dropFirst(2)) }
            c.succeed(d, on: solo)
        }
        #expect(order == ["root"] + ds.map(\.id))
    }

    /// From TruthfulStatusTests (was 1 s or more of real time): a failed attempt is retried after its
    /// delay (between half and all of it, doubling), every attempt's error is kept, and an attempt over
    /// its timeout is a failed attempt too: the worker is told to stop it.
    @Test func failedAttemptsAreRetriedAfterADelayAndEveryErrorIsKept() throws {
        var c = EmbeddedCoordinator()
        let w = ScriptedWorker("w", slots: 2)
        c.connect(w)
        var flaky = op("flaky", kind: "fail", payload: "broken")
        flaky.retries = 2
        flaky.retryDelayUs = 200_000
        var slow = op("slow", kind: "sleep", payload: "5000")
        slow.retries = 1
        slow.retryDelayUs = 0
        slow.timeoutUs = 300_000
        let submittedAt = c.now
        #expect(c.submit([flaky, slow], run: "r")?.accepted == true)
        var flakyDispatches: [Int64] = [], slowAttempts = 0, cancelled = 0
        for _ in 0..<400 {
            for (worker, r) in c.dispatched(to: [w]) {
                c.start([r], on: worker)
                if r.opID == "r/flaky" {
                    flakyDispatches.append(c.now)
                    c.fail([r], on: worker, error: "broken")
                } else {
                    slowAttempts += 1   // it never reports: its timeout ends each attempt
                }
            }
            c.advance(by: 10_000)
            let stop = c.cancels(to: w)
            cancelled += stop.count
            c.stopped(stop, on: w)
            let st = c.status(["flaky", "slow"], run: "r")?.ops ?? []
            if st.count == 2 && st.allSatisfy({ $0.state == .finished }) { break }
        }
        let st = Dictionary(uniqueKeysWithValues: (c.status(["flaky", "slow"], run: "r")?.ops ?? []).map { ($0.id, $0) })
        let f = try #require(st["flaky"])
        #expect(f.attempts == 3 && flakyDispatches.count == 3)
        #expect(f.outcome.failed == "failed after 3 attempts: broken")
        #expect(f.attemptErrors == ["attempt 1: broken", "attempt 2: broken", "attempt 3: broken"])
        // Delays between half and all of 200 ms, then of 400 ms.
        if flakyDispatches.count == 3 {
            let first = flakyDispatches[1] - flakyDispatches[0], second = flakyDispatches[2] - flakyDispatches[1]
            #expect((100_000...210_000).contains(first), "first delay \(first) µs")
            #expect((200_000...410_000).contains(second), "second delay \(second) µs")
        }
        #expect(f.finishedUs - submittedAt >= 300_000)
        let s = try #require(st["slow"])
        #expect(s.attempts == 2 && slowAttempts == 2)
        #expect(s.outcome.failed == "timed out after 2 attempts (limit 300ms each)")
        #expect(s.attemptErrors.count == 2)
        #expect(cancelled == 2, "each timed-out attempt is stopped on its worker")
    }

    /// From TruthfulStatusTests: operations no connected worker can run are accepted with a warning
    /// naming what is missing; status keeps saying so until a worker that can run them joins.
    @Test func operationsNoWorkerCanRunAreAcceptedWithAWarning() throws {
        var c = EmbeddedCoordinator()
        let plain = ScriptedWorker("plain", tags: ["ssd"])
        c.connect(plain)
        var tpu = op("needs-tpu")
        tpu.requires = ["tpu", "ssd"]
        let submitted = c.submit([tpu, op("fine")], run: "r")
        let reply = try #require(submitted)
        #expect(reply.accepted && reply.workers == 1)
        #expect(reply.unplaceable.map(\.opIds) == [["needs-tpu"]])
        #expect(reply.unplaceable.first?.missingTags == ["tpu"])
        let fine = c.dispatched(to: plain)
        #expect(fine.map(\.opID) == ["r/fine"])
        c.succeed(fine, on: plain)
        #expect(c.status()?.unplaceable.map(\.opIds) == [["r/needs-tpu"]], "status keeps saying so while it waits")
        let able = ScriptedWorker("tpu", tags: ["tpu", "ssd"])
        c.connect(able)
        let d = c.dispatched(to: able)
        #expect(d.map(\.opID) == ["r/needs-tpu"])
        c.succeed(d, on: able)
        #expect(c.status()?.unplaceable.isEmpty == true)
    }
}
