import Foundation
@testable import SchedulerCore

/// One seeded run: a random DAG submitted in batches under a random fault schedule, with the model's
/// invariants checked after every step. `run()` returns the first violation, or nil.
///
/// With `runs: true` the graph is split into consecutive runs ("r1", "r2", …, 5–25 ops each), each
/// submitted as one batch with `RunRequest(name:, mode: .create)`; dependencies on earlier runs are
/// written "rK/oJ" while rK is retained (else dropped). Retention (`retainRuns`, `retainMicros`) and
/// `compactMinimum` are small, so runs are evicted and the op table compacted many times while other
/// runs have parts in flight, retry delays, timeouts, barriers and lost workers.
struct Simulation {
    var rng: SplitMix64
    /// Share keys and concurrency keys are drawn from their own stream, so each seed's other draws (and
    /// the counts tests expect of them) stay what they were before fair share.
    var fairRng: SplitMix64
    var s: Scheduler
    var now: Int64 = 1_000
    var stimulus: UInt64 = 0
    var specs: [OperationSpec] = []
    var specIndex: [String: Int] = [:]
    var submitted = 0
    let queueNames = ["q0", "q1", "q2", "q3"]
    var limits: [String: Int] = [:]
    let kinds = ["a", "b", "c"]
    let tags = ["gpu", "ssd"]
    // model
    var finished: [Int] = []                 // times finished, per spec
    var started: [Bool] = []
    var running: [String: Set<String>] = [:] // queue -> dispatched or executing ops (they hold a queue place)
    var ready: [String: Set<String>] = [:]   // queue -> ops published ready, not dispatched
    var held: [UInt64: [Dispatch]] = [:]     // worker -> parts it holds
    var startedParts: [UInt64: Set<String>] = [:]   // worker -> held parts it said STARTED for ("op/part/attempt")
    var slots: [UInt64: Int] = [:]
    var credit: [UInt64: Int] = [:]          // granted − dispatched
    var alive: Set<UInt64> = []
    var silent: Set<UInt64> = []
    var nextWorker: UInt64 = 1
    var openWaits: Set<UInt64> = []
    var request: UInt64 = 0
    var violation: String?
    var steps = 0
    var validateEvery = 1
    /// How each queue shares (`defaultFairness`); drawn into queue settings when a queue is first used.
    var fairness = Simulation.defaultFairness
    // Core key of each spec ("rK/oJ" in run mode, else its id) and its dependencies as spec indices
    // (in run mode those on runs evicted before its submission are dropped).
    var keys: [String] = []
    var deps: [[Int]] = []
    var outcomes: [OutcomeKind] = []
    var results: [[UInt8]] = []              // result bytes of succeeded specs
    var inputsOfEvicted = 0                  // dispatches with a dependency in an evicted run (run mode)
    // runs (run mode only)
    let runMode: Bool
    struct RunPlan { var name: String; var first: Int; var count: Int }
    var plans: [RunPlan] = []
    var runOf: [Int] = []                    // run index per spec
    var runsSubmitted = 0
    var evicted: Set<Int> = []               // runs seen evicted
    var runWaits: [UInt64: Int] = [:]        // request -> run waited for
    var runWaitsDone: [(Int, WaitSummary)] = []
    var watchedRun: Int?                     // run watcher 10 is scoped to
    var compactionsSeen = 0
    var compactionsInFlight = 0              // compactions while parts were in flight
    var compactionsRetrying = 0              // … while retry delays were pending
    var compactionsTimed = 0                 // … while attempts with a timeout ran
    var compactionsMultiPart = 0             // … while a multi-part op was part-way
    var rejectedRuns = 0
    var droppedDeps = 0
    var crossRunDeps = 0
    var finishedCount = 0                    // specs finished (once)
    // crash mode (RecoverySimulation.swift)
    var crashes = false
    var journalLog: [(at: Int64, record: JournalRecord)] = []   // what the disk holds: snapshot + tail
    var hellos: [UInt64: WorkerHello] = [:]
    var lastKeyed: (ops: [OperationSpec], queues: [QueueSpec], key: SubmissionKey)?
    var crashCount = 0, snapshotCount = 0, takenBack = 0, finishedAway = 0, duplicatesAcked = 0
    // lost journal tails (RecoverySimulation.swift, `loseTails`)
    var loseTails = false
    var tail = LostTailModel()

    init(seed: UInt64, maxOps: Int = 1000, runs: Bool = false) {
        rng = SplitMix64(seed: seed)
        fairRng = SplitMix64(seed: seed &+ 0xFA12_5EED)
        runMode = runs
        var c = SchedulerConfig()
        c.heartbeatIntervalMicros = 10_000
        c.storyCapacity = 4096
        c.startTimeoutMicros = 200_000      // parts a worker sits on are taken back within the run
        if runs {
            c.retainRuns = 2 + rng.int(3)
            c.retainMicros = rng.pick([20_000, 60_000, 150_000, 400_000])
            c.compactMinimum = 8 + rng.int(25)
        }
        s = Scheduler(config: c)
        generate(maxOps)
    }

    mutating func generate(_ maxOps: Int) {
        let n = maxOps / 10 + rng.int(maxOps - maxOps / 10)
        for i in 0..<n {
            var o = OperationSpec(id: "o\(i)", queue: rng.pick(queueNames), kind: rng.pick(kinds))
            if rng.chance(0.15) { o.requires = [rng.pick(tags)] }
            o.priority = rng.pick(OperationPriority.allCases)
            if rng.chance(0.2) { o.qos = OperationQoS(rank: rng.int(5)) }
            if rng.chance(0.15) { o.parts = 2 + rng.int(2) }
            if rng.chance(0.3) { o.policy = .succeeded }
            o.retries = rng.int(3)
            o.lossRetries = rng.int(4)
            if rng.chance(runMode ? 0.15 : 0.05) { o.timeoutMicros = Int64(1_000 + rng.int(runMode ? 300_000 : 50_000)) }
            o.retryDelayMicros = rng.pick(runMode ? [0, 20_000, 100_000] : [0, 1_000, 20_000])
            o.retryDelayMaxMicros = rng.pick(runMode ? [50_000, 400_000] : [5_000, 100_000])
            if rng.chance(0.02) { o.barrier = true }
            o.share = fairRng.pick(["s1", "s2", "s3"])
            if fairRng.chance(0.4) { o.concurrencyKey = fairRng.pick(["k1", "k2"]) }
            var ds: [Int] = []
            if i > 0 {
                for _ in 0..<rng.int(4) {
                    let d = rng.chance(0.8) ? max(0, i - 1 - rng.int(min(i, 50))) : rng.int(i)
                    if !ds.contains(d) { ds.append(d) }
                }
            }
            if !runMode { o.after = ds.map { "o\($0)" } }
            deps.append(ds)
            specs.append(o)
        }
        if runMode {
            // Consecutive runs of 5–25 ops; ids are local to the run ("o0"…), keys "rK/oJ".
            var first = 0
            while first < n {
                let count = min(n - first, 5 + rng.int(21))
                let k = plans.count
                plans.append(RunPlan(name: "r\(k + 1)", first: first, count: count))
                for i in first..<first + count {
                    specs[i].id = "o\(i - first)"
                    runOf.append(k)
                    keys.append("\(plans[k].name)/o\(i - first)")
                }
                first += count
            }
        } else {
            keys = specs.map(\.id)
        }
        for (i, k) in keys.enumerated() { specIndex[k] = i }
        finished = Array(repeating: 0, count: n)
        started = Array(repeating: false, count: n)
        outcomes = Array(repeating: .none, count: n)
        results = Array(repeating: [], count: n)
    }

    /// Each queue shares in its own way (A11): q0 by submitter (one here: no sharing), q1 by the ops'
    /// share keys with weights, a key limit and a key rate, q2 by share key with a rate and a key limit that cancels
    /// the oldest holder, q3 fifo. A test may change them before `run()` (`fairness`).
    static let defaultFairness: [String: QueueFairness] = [
        "q0": QueueFairness(),
        "q1": QueueFairness(share: .key, weights: ["s1": 3], keyLimit: 2, keyRate: RateLimit(perSecond: 200, burst: 2)),
        "q2": QueueFairness(share: .key, keyLimit: 1, keyStrategy: .wait, rate: RateLimit(perSecond: 20_000, burst: 3)),
        "q3": QueueFairness(share: .fifo),
    ]

    /// Random settings for the queues `batch` uses for the first time (drawn once per queue).
    mutating func drawQueueSettings(for batch: [OperationSpec]) -> [QueueSpec] {
        var qs: [QueueSpec] = []
        for q in queueNames where limits[q] == nil && batch.contains(where: { $0.queue == q }) {
            let lim = rng.pick([-1, -1, 1, 2, 3, 5])
            limits[q] = lim
            qs.append(QueueSpec(name: q, maxConcurrent: lim, qos: OperationQoS(rank: rng.int(5))!, suspended: rng.chance(0.2),
                                fairness: fairness[q]))
        }
        return qs
    }

    mutating func fail(_ msg: String) { if violation == nil { violation = "step \(steps): \(msg)" } }

    mutating func ref() -> ClientRef { request += 1; return ClientRef(client: 1, request: request) }

    @discardableResult
    mutating func send(_ e: Event) -> [Action] {
        steps += 1
        stimulus += 1
        now += Int64(rng.int(2_000))
        let compactionsBefore = s.compactions
        let out = s.handle(Input(stimulus: stimulus, now: now, e))
        if crashes {
            for a in out { if case .journal(let r) = a { journalLog.append((now, r)) } }
            tail.stepDone(steps, journalCount: journalLog.count, rederivable: LostTailModel.rederivable(e))
        }
        if let t = Self.traced { trace(t, e, out) }
        for a in out { observe(a) }
        if runMode {
            if s.compactions != compactionsBefore {
                compactionsSeen += s.compactions - compactionsBefore
                if ProcessInfo.processInfo.environment["SIM_DEBUG"] != nil {
                    print("compaction at step \(steps): live \(s.totalOperations) submitted \(submitted)/\(specs.count) finished \(finishedCount) inflight \(s.workers.map(\.inflightCount).reduce(0, +)) retry \(s.timers.retryDelays.count) event \(e)".prefix(220))
                }
                if s.workers.contains(where: { $0.inflightCount > 0 }) { compactionsInFlight += 1 }
                if !s.timers.retryDelays.isEmpty { compactionsRetrying += 1 }
                if !s.timers.attemptTimeouts.isEmpty { compactionsTimed += 1 }
                if !s.ops.multi.isEmpty { compactionsMultiPart += 1 }
            }
            checkRuns()
        }
        if validateEvery > 0 && steps % validateEvery == 0 {
            let bad = s.validate()
            if !bad.isEmpty { fail("validate after \(e): \(bad.prefix(3))") }
            // S1/S8: executing means a handler runs, so never more than a worker's slots.
            for w in s.workers where w.alive && w.running > (slots[w.id] ?? 0) {
                fail("worker \(w.id): \(w.running) executing parts on \(slots[w.id] ?? 0) slots")
            }
        }
        return out
    }

    mutating func observe(_ a: Action) {
        switch a {
        case .dispatch(let d):
            guard let i = specIndex[d.op] else { return fail("dispatch of unknown op \(d.op)") }
            let spec = specs[i]
            if finished[i] > 0 { fail("\(d.op) dispatched after it finished") }
            guard alive.contains(d.worker) else { return fail("dispatch to dead worker \(d.worker)") }
            if tail.claimedFinished[d.op] != nil { reRun("\(d.op) dispatched again after a worker reported it finished") }
            credit[d.worker, default: 0] -= 1
            if credit[d.worker]! < 0 { fail("worker \(d.worker) over its credit") }
            held[d.worker, default: []].append(d)
            checkInputs(d, i)
            if !started[i] {
                started[i] = true
                for dep in deps[i] where finished[dep] == 0 { fail("\(d.op) dispatched before \(keys[dep]) finished") }
                checkBarrier(i)
            }
            let q = spec.queue
            if !running[q, default: []].contains(d.op) {
                // It takes a queue place now (first dispatch, or again after it went back to ready/pending).
                if let lim = limits[q], lim >= 0, running[q, default: []].count >= lim {
                    let coreRunning = keys.filter { k in s.status(k).map { $0.queue == q && ($0.state == .dispatched || $0.state == .executing) } ?? false }
                    fail("queue \(q) over its limit \(lim) starting \(d.op): model running \(running[q, default: []].sorted()), core \(coreRunning.sorted())")
                }
                // A11: no concurrency key over its queue's keyLimit.
                let fair = fairness[q] ?? QueueFairness()
                if let key = spec.concurrencyKey, fair.keyLimit > 0 {
                    let holding = running[q, default: []].filter { specs[specIndex[$0]!].concurrencyKey == key }.count
                    if holding >= fair.keyLimit { fail("key \(key) of queue \(q) over its limit \(fair.keyLimit) starting \(d.op)") }
                }
                running[q, default: []].insert(d.op)
                ready[q, default: []].remove(d.op)
                // S6: no ready op of the same lane goes first by priority, nor by submission order at equal
                // priority inside one share key (A11); an op waiting for its concurrency key may be passed.
                let p = s.status(d.op)!.priority
                for other in ready[q, default: []] {
                    let os = specs[specIndex[other]!]
                    guard let st = s.status(other), st.state == .ready else { continue }
                    guard os.kind == spec.kind && os.requires == spec.requires && st.qos == s.status(d.op)!.qos else { continue }
                    if case .heldByConcurrencyKey = s.why(other) { continue }
                    if case .keyRateLimited = s.why(other) { continue }
                    if fair.share == .key && os.share != spec.share && st.priority == p { continue }
                    if st.priority > p {
                        fail("\(d.op) (priority \(p)) dispatched before ready \(other) (priority \(st.priority))")
                    } else if st.priority == p && specIndex[other]! < i {
                        fail("\(d.op) dispatched before ready \(other) of equal priority submitted earlier (FIFO)")
                    }
                }
            }
        case .journal(.finished(let id, let outcome, _, _)):
            guard let i = specIndex[id] else { return fail("finished unknown op \(id)") }
            finished[i] += 1
            if finished[i] == 1 { finishedCount += 1 }
            outcomes[i] = outcome.kind
            if case .succeeded(let bytes) = outcome { results[i] = bytes }
            if finished[i] > 1 { fail("\(id) finished twice") }
            running[specs[i].queue, default: []].remove(id)
            ready[specs[i].queue, default: []].remove(id)
        case .publish(let p):
            let watchers = p.watchers, ev = p.event
            if watchers.contains(10) {
                // A watch scoped to a run sees that run's events only.
                if let k = watchedRun, specIndex[ev.op].map({ runOf[$0] }) != k {
                    fail("watcher of \(plans[k].name) got an event of \(ev.op)")
                }
                return
            }
            guard specIndex[ev.op] != nil else { return fail("event of unknown op \(ev.op)") }
            switch ev.transition {
            case .ready:
                // Ready again after a lost worker or a retry delay: it gave its queue place back.
                running[ev.queue, default: []].remove(ev.op)
                ready[ev.queue, default: []].insert(ev.op)
            case .retrying:
                // A single-part op waits out its delay in pending (no queue place); a multi-part op keeps its place.
                if specs[specIndex[ev.op]!].parts == 1 { running[ev.queue, default: []].remove(ev.op) }
            default: break
            }
        case .cancelOnWorker(let w, let op, let part, let attempt, let reason):
            // The worker stops it and does not offer it in its next HELLO (HeldParts).
            tail.cancelledOnWorker[w, default: []].insert("\(op)/\(part)/\(attempt)")
            if reason.hasPrefix("not taken back") && !reason.contains("multi-part") && !reason.contains("unknown operation") {
                reRun("\(op) attempt \(attempt) held by worker \(w) refused: \(reason)")
            }
        case .disconnectWorker(let w, _):
            tail.forget(worker: w, holding: s.isHoldingForWorkers)
            alive.remove(w); held[w] = nil; credit[w] = 0; startedParts[w] = nil
        case .reply(let r, let reply):
            if case .waitDone(let sum) = reply {
                openWaits.remove(r.request)
                if let k = runWaits.removeValue(forKey: r.request) { runWaitsDone.append((k, sum)) }
            }
        default:
            break
        }
    }

    /// A dispatch carries the result of every dependency that succeeded, named by its bare id in the
    /// same run and by "RUN/OP" across runs. A run is not evicted while another run's unfinished op
    /// depends on it, so every such result is there.
    mutating func checkInputs(_ d: Dispatch, _ i: Int) {
        var expected: [(String, [UInt8])] = []
        for dep in deps[i] where outcomes[dep] == .succeeded {
            // (`evicted` holds runs evicted before this step: a run evicted at the end of this input
            // was still retained when the dispatch was made.)
            if runMode && evicted.contains(runOf[dep]) { inputsOfEvicted += 1; fail("\(d.op): dependency \(keys[dep]) was evicted before it ran") }
            expected.append((runMode && runOf[dep] == runOf[i] ? specs[dep].id : keys[dep], results[dep]))
        }
        let got = d.inputs.sorted { $0.0 < $1.0 }
        expected.sort { $0.0 < $1.0 }
        if got.count != expected.count || zip(got, expected).contains(where: { $0.0 != $1.0 || $0.1 != $1.1 }) {
            fail("\(d.op) dispatched with inputs \(got), expected \(expected)")
        }
    }

    mutating func checkBarrier(_ i: Int) {
        let q = specs[i].queue
        if specs[i].barrier {
            for j in 0..<i where specs[j].queue == q && finished[j] == 0 { fail("barrier \(keys[i]) started before \(keys[j])") }
        } else if let b = (0..<i).last(where: { specs[$0].queue == q && specs[$0].barrier }), finished[b] == 0 {
            fail("\(keys[i]) started before barrier \(keys[b]) finished")
        }
    }

    mutating func join(universal: Bool = false) {
        let w = nextWorker
        nextWorker += 1
        let slots = 1 + rng.int(4)
        let ks = universal ? kinds : kinds.filter { _ in rng.chance(0.6) }
        let ts = universal ? tags : tags.filter { _ in rng.chance(0.4) }
        alive.insert(w)
        credit[w] = slots
        self.slots[w] = slots
        let hello = WorkerHello(worker: w, name: "w\(w)", slots: slots, tags: ts, kinds: ks.isEmpty ? ["a"] : ks)
        hellos[w] = hello
        send(.workerJoined(hello))
    }

    mutating func submitBatch() {
        if runMode { return submitRun() }
        guard submitted < specs.count else { return }
        let n = min(specs.count - submitted, 1 + rng.int(30))
        let batch = Array(specs[submitted..<submitted + n])
        if rng.chance(0.05) {
            // A bad batch (cycle through a fresh id): rejected whole, nothing accepted.
            let before = s.totalOperations
            let bad = [OperationSpec(id: "bad\(steps)", after: ["bad\(steps)x"]), OperationSpec(id: "bad\(steps)x", after: ["bad\(steps)"])]
            let r = ref()
            steps += 1; stimulus += 1
            let out = s.handle(Input(stimulus: stimulus, now: now, .submit(r, ops: batch + bad, queues: [])))
            let tag = steps - 1
            let named = out.contains { if case .reply(_, .rejected(let p)) = $0 {
                return p.contains { if case .cycle(let ids) = $0 { return Set(ids) == ["bad\(tag)", "bad\(tag)x"] } else { return false } }
            } else { return false } }
            if !named {
                fail("bad batch accepted")
            }
            if s.totalOperations != before { fail("rejected batch changed the op count") }
            return
        }
        let qs = drawQueueSettings(for: batch)
        submitted += n
        if crashes && (rng.chance(0.5) || loseTails) {
            let key = SubmissionKey(key: "k\(submitted)", digest: UInt64(submitted))
            lastKeyed = (batch, qs, key)
            send(.submit(ref(), ops: batch, queues: qs, key: key))
            tail.submitted(steps, ops: batch, queues: qs, key: key)
        } else {
            send(.submit(ref(), ops: batch, queues: qs))
        }
    }

    mutating func finishOne(outcome forced: Outcome? = nil) {
        let ws = held.keys.filter { alive.contains($0) && !silent.contains($0) && !(held[$0] ?? []).isEmpty }.sorted()
        guard !ws.isEmpty else { return }
        let w = rng.pick(ws)
        let k = rng.int(held[w]!.count)
        let d = held[w]!.remove(at: k)
        startedParts[w]?.remove(partName(d))
        let r = rng.int(100)
        let outcome = forced ?? (r < 85 ? .succeeded(rng.chance(0.3) ? [UInt8(r)] : []) : r < 95 ? .failed("err\(r)") : .cancelled("handler gave up"))
        credit[w, default: 0] += 1
        let before = s.fencing.total
        let holding = s.isHoldingForWorkers   // a held attempt's report updates its claim (not fenced)
        // An op of an evicted run is unknown now: its late report is fenced as such.
        let wasInflight = s.lookup(d.op).flatMap { s.inflightGet($0, d.part) }.map { Int($0.attempt) == d.attempt && s.workers[$0.worker].id == w } ?? false
        // Run mode: half the reports carry the op's row as recovery does (stale rows: RunTests).
        let token = runMode && rng.chance(0.5) ? s.lookup(d.op).map(UInt64.init) : nil
        let at = runMode && rng.chance(0.3) ? now - Int64(rng.int(100_000)) : nil
        send(.partFinished(PartRef(worker: w, op: d.op, part: d.part, attempt: d.attempt, token: token, at: at), outcome, grant: 1))
        if crashes && s.fencing.total == before {   // taken (not fenced): the worker keeps it for its next HELLO
            tail.reported(steps, worker: w, FinishedPart(part: HeldPart(op: d.op, part: d.part, attempt: d.attempt), outcome: outcome, at: at ?? now))
        }
        if !wasInflight && !holding && s.fencing.total != before + 1 { fail("stale report of \(d.op) not fenced") }
        if wasInflight && s.fencing.total != before { fail("current report of \(d.op) fenced") }
    }

    mutating func tick() {
        for w in alive.sorted() where !silent.contains(w) { send(.heartbeat(worker: w)) }
        // Run mode: now and then the clock jumps by the retention period before the tick (a paused
        // coordinator), so one tick evicts every finished run and compacts while timeouts, retry
        // delays and silent workers (ops failed for a lost worker release their dependents) fall due.
        if runMode && rng.chance(0.05) { now += s.config.retainMicros }
        send(.tick)
    }

    mutating func randomStep() {
        let r = rng.int(1000)
        switch r {
        case 0..<150:
            // Run mode: a run is submitted while the open ops are few, so runs finish (and are
            // evicted) during the fault phase rather than only in the drain.
            if runMode && submitted - finishedCount >= 20 { finishOne() } else { submitBatch() }
        case 650..<680: finishOne()
        case 150..<500: finishOne()
        case 500..<540:
            // A worker starts a held part only while it has a free slot (as LocalOperationQueue does).
            if let w = alive.sorted().first(where: { !(held[$0] ?? []).isEmpty && !silent.contains($0) }),
               let d = held[w]!.first(where: { !startedParts[w, default: []].contains(partName($0)) }) ?? held[w]?.first {
                let at = now - Int64(rng.int(500))
                let ref = PartRef(worker: w, op: d.op, part: d.part, attempt: d.attempt, token: runMode && rng.chance(0.5) ? s.lookup(d.op).map(UInt64.init) : nil, at: at)
                if rng.chance(0.5) {
                    if !startedParts[w, default: []].contains(partName(d)) && startedParts[w, default: []].count < slots[w, default: 0] {
                        startedParts[w, default: []].insert(partName(d))
                        send(.partStarted(ref))
                    }
                } else {
                    send(.progress(ref, fraction: 0.5))
                }
            }
        case 540..<590:
            if let w = alive.sorted().filter({ !silent.contains($0) }).first { credit[w, default: 0] += 1; send(.credit(worker: w, grant: 1)) }
        case 590..<620: join()
        case 620..<640:
            if !alive.isEmpty {
                let w = rng.pick(alive.sorted())
                tail.forget(worker: w, holding: s.isHoldingForWorkers)
                if rng.chance(0.7) { alive.remove(w); held[w] = nil; startedParts[w] = nil; send(.workerLost(worker: w, reason: "sim")) } else { silent.insert(w) }
            }
        case 640..<650:
            if runMode { runCancel() }
            else if submitted > 0 { send(.cancel(ref(), ids: ["o\(rng.int(submitted))"], cascade: rng.chance(0.3))) }
        case 680..<683:
            if let q = limits.keys.sorted().first { send(.cancelAll(ref(), queue: rng.pick([q] + limits.keys.sorted()))) }
        case 683..<720:
            if !limits.isEmpty { let q = rng.pick(limits.keys.sorted()); send(rng.chance(0.5) ? .suspend(ref(), queue: q) : .resume(ref(), queue: q)) }
        case 720..<740:
            if !limits.isEmpty {
                let q = rng.pick(limits.keys.sorted()); let lim = rng.pick([-1, 1, 2, 4])
                limits[q] = lim; send(.setQueueLimit(ref(), queue: q, maxConcurrent: lim))
            }
        case 740..<780:
            if submitted > 0 { send(.setPriority(ref(), id: keys[rng.int(submitted)], priority: rng.pick([-8, -4, 0, 4, 8]), inherit: rng.chance(0.5))) }
        case 780..<790:
            if runMode { runWait() }
            else if submitted > 0 {
                let r = ref(); openWaits.insert(r.request)
                send(.wait(r, ids: (0..<1 + rng.int(5)).map { _ in "o\(rng.int(submitted))" }))
            }
        case 985..<995 where crashes: crashAndRecover()
        case 995..<1000 where crashes: takeSnapshot()
        default: tick()
        }
    }

    mutating func run() -> String? {
        send(.watch(ClientRef(client: 9, request: 0), queue: nil))
        join(); join()
        // Fault phase: submissions spread over it, every kind of event mixed in.
        for _ in 0..<(specs.count * (runMode ? 5 : 3)) where violation == nil { randomStep() }
        // Drain: everything submitted, queues resumed, a worker that can run anything; no more faults.
        while submitted < specs.count && violation == nil { submitBatch() }
        for q in limits.keys.sorted() { send(.resume(ref(), queue: q)) }
        join(universal: true)
        var guardSteps = specs.count * 40 + 1000
        while finished.contains(0) && guardSteps > 0 && violation == nil {
            guardSteps -= 1
            if held.contains(where: { alive.contains($0.key) && !silent.contains($0.key) && !$0.value.isEmpty }) {
                finishOne(outcome: .succeeded([]))
            } else {
                now += 50_000
                tick()
                if alive.subtracting(silent).isEmpty { join(universal: true) }
            }
        }
        if violation == nil, let i = finished.firstIndex(of: 0) {
            fail("\(keys[i]) never finished: \(s.why(keys[i])), status \(String(describing: s.status(keys[i])))")
        }
        if runMode && violation == nil { finishRuns() }
        if ProcessInfo.processInfo.environment["SIM_VERBOSE"] != nil { print("ops \(specs.count) steps \(steps)\(runMode ? " runs \(plans.count) evicted \(evicted.count) compactions \(compactionsSeen) (in flight \(compactionsInFlight), retrying \(compactionsRetrying), timeouts \(compactionsTimed), multi-part \(compactionsMultiPart)) outcomes ok/failed/cancelled \(outcomes.filter { $0 == .succeeded }.count)/\(outcomes.filter { $0 == .failed }.count)/\(outcomes.filter { $0 == .cancelled }.count) inputs of evicted \(inputsOfEvicted) rejected \(rejectedRuns) cross-run deps \(crossRunDeps) dropped \(droppedDeps) retain \(s.config.retainRuns)/\(s.config.retainMicros)µs" : "") fenced \(s.fencing.total) failed/cancelled \(s.queueNames.compactMap { s.queueCounts($0) }.map { "\($0.failed)/\($0.cancelled)" })") }
        if violation == nil, !openWaits.isEmpty { fail("waits never answered: \(openWaits.sorted().prefix(5))") }
        return violation
    }
}

extension Simulation {
    /// SIM_TRACE=ID prints every event and action naming ID ("o19", "q1"): what a failing seed did to it.
    static let traced = ProcessInfo.processInfo.environment["SIM_TRACE"].map { "\"\($0)\"" }

    func trace(_ quoted: String, _ e: Event, _ out: [Action]) {
        let event = "\(e)"
        if event.contains(quoted) { print("TRACE step \(steps) now \(now) event: \(event.prefix(6000))") }
        for a in out where "\(a)".contains(quoted) { print("TRACE step \(steps)   action: \("\(a)".prefix(300))") }
    }
}

func partName(_ d: Dispatch) -> String { "\(d.op)/\(d.part)/\(d.attempt)" }
