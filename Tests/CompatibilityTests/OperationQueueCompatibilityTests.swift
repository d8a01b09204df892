import DistributedOperationQueue
import Foundation
import OpClient
import Testing

/// The behaviours swift-corelibs-foundation's TestOperationQueue.swift checks, re-expressed for
/// `RemoteOperationQueue` on a real coordinator and real worker processes (docs/COMPATIBILITY.md maps
/// each row to its test). Each test starts its own cluster; waits are bounded.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct OperationQueueCompatibilityTests {
    let cluster: Cluster
    let coordinator: RemoteCoordinator

    init() throws {
        cluster = try Cluster(workers: 2, slots: 2)
        coordinator = try cluster.coordinator()
    }

    func queue(_ name: String, max: Int = -1, suspended: Bool = false) throws -> RemoteOperationQueue {
        let q = RemoteOperationQueue(name: name, coordinator: coordinator)
        if max != -1 { try q.setMaxConcurrentOperationCount(max) }
        if suspended { try q.setSuspended(true) }
        return q
    }

    /// Completion blocks that record the operation's name, in the order they run (= finish order).
    func recording(_ ops: [RemoteOperation], into r: Recorder<String>) {
        for op in ops {
            let n = op.name
            op.completionBlock = { r.append(n) }
        }
    }

    @Test func operationCount() throws {
        let q = try queue("count", suspended: true)
        #expect(q.operationCount == 0)
        try q.addOperation(kind: "noop")
        #expect(q.operationCount == 1)
        let two = [RemoteOperation(kind: "noop"), RemoteOperation(kind: "noop")]
        try q.addOperations(two, waitUntilFinished: false)
        #expect(q.operationCount == 3)
        #expect(q.operations.count == 3 && q.operations[1] === two[0] && q.operations[2] === two[1], "in the order added")
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(q.operationCount == 0)
    }

    @Test func operationLeavesTheQueueAfterFinishing() throws {
        let q = try queue("leaves")
        let op = RemoteOperation(kind: "echo", payload: "x")
        try q.addOperation(op)
        #expect(q.operations.contains { $0 === op })
        #expect(op.waitUntilFinished(timeout: .seconds(10)))
        #expect(op.isFinished)
        #expect(!q.operations.contains { $0 === op })
        #expect(q.operationCount == 0)
    }

    @Test func priorityOrderOnASerialQueue() throws {
        let q = try queue("priorities", max: 1, suspended: true)
        let r = Recorder<String>()
        let ops = [OperationPriority.veryLow, .low, .normal, .high, .veryHigh].map {
            RemoteOperation(kind: "noop", name: $0.name, queuePriority: $0)
        }
        recording(ops, into: r)
        try q.addOperations(ops, waitUntilFinished: false)
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(r.values == ["veryHigh", "high", "normal", "low", "veryLow"])
    }

    @Test func priorityOrderWhenAddedTogetherToARunningSerialQueue() throws {
        let q = try queue("priorities-together", max: 1)
        let r = Recorder<String>()
        let ops = [OperationPriority.normal, .low, .veryHigh, .veryLow].map {
            RemoteOperation(kind: "noop", name: $0.name, queuePriority: $0)
        }
        recording(ops, into: r)
        try q.addOperations(ops, waitUntilFinished: true)
        #expect(r.values == ["veryHigh", "normal", "low", "veryLow"])
    }

    @Test func priorityChangedAfterAddingReordersReadyOperations() throws {
        let q = try queue("reprioritise", max: 1, suspended: true)
        let r = Recorder<String>()
        let ops = ["a", "b", "c"].map { RemoteOperation(kind: "noop", name: $0) }
        recording(ops, into: r)
        try q.addOperations(ops, waitUntilFinished: false)
        ops[2].queuePriority = .veryHigh
        #expect(ops[2].queuePriority == .veryHigh)
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(r.values == ["c", "a", "b"])
    }

    @Test func fifoOrderOnASerialQueue() throws {
        let q = try queue("fifo", max: 1, suspended: true)
        let r = Recorder<String>()
        let ops = (0..<12).map { RemoteOperation(kind: "noop", name: "op\($0)") }
        recording(ops, into: r)
        for op in ops { try q.addOperation(op) }
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(r.values == ops.map(\.name))
    }

    @Test func isExecutingDuringExecution() throws {
        let q = try queue("executing")
        let op = sleeper(600, "slow")
        #expect(!op.isExecuting && !op.isFinished)
        try q.addOperation(op)
        try cluster.waitUntil("\(op.name) executing") { op.isExecuting }
        #expect(!op.isFinished && op.isReady && !op.isCancelled)
        #expect(op.lastRun.attempt == 1 && !op.lastRun.worker.isEmpty)
        #expect(op.waitUntilFinished(timeout: .seconds(10)))
        #expect(!op.isExecuting && op.isFinished)
        #expect(op.outcome == .succeeded([]))
    }

    @Test func stateChangesAreObservable() async throws {
        let q = try queue("kvo")
        let op = sleeper(200, "observed")
        let stream = op.stateChanges
        try q.addOperation(op)
        var states: [RemoteOperation.State] = []
        for await s in stream where states.last != s.state { states.append(s.state) }
        // The KVO analogue: observed in order, never backwards, through executing to finished (a fast
        // hop may be seen only as its next state).
        #expect(states.first == .pending && states.last == .finished && states.contains(.executing), "\(states)")
        #expect(states == states.sorted(), "\(states)")
        #expect(op.isFinished)
    }

    @Test func cancelOneOperation() throws {
        let q = try queue("cancel-one", suspended: true)
        let ops = ["a", "b", "c"].map { RemoteOperation(kind: "echo", payload: $0, name: $0) }
        try q.addOperations(ops, waitUntilFinished: false)
        ops[1].cancel()
        #expect(ops[1].isCancelled && !ops[0].isCancelled)
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(ops[0].result == Array("a".utf8))
        #expect(ops[2].result == Array("c".utf8))
        #expect(ops[1].outcome?.isCancelled == true)
        #expect(ops[1].lastRun.worker.isEmpty, "a cancelled ready operation never reaches a worker")
    }

    @Test func cancelOperationsOfOnePriority() throws {
        let q = try queue("cancel-priority", suspended: true)
        let ops = (0..<8).map { i in RemoteOperation(kind: "noop", name: "op\(i)", queuePriority: i % 2 == 0 ? .high : .normal) }
        try q.addOperations(ops, waitUntilFinished: false)
        for op in q.operations where op.queuePriority == .high { op.cancel() }
        q.isSuspended = false
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        for op in ops {
            #expect(op.isCancelled == (op.queuePriority == .high), "\(op.name)")
            #expect(op.outcome?.isSucceeded == (op.queuePriority == .normal), "\(op.name)")
        }
    }

    @Test func suspensionStartsNothingNewButRunningOperationsContinue() throws {
        let q = try queue("suspension")
        let running = sleeper(500, "running")
        try q.addOperation(running)
        try cluster.waitUntil("running executing") { running.isExecuting }
        q.isSuspended = true
        #expect(q.isSuspended)
        let held = RemoteOperation(kind: "noop", name: "held")
        try q.addOperation(held)                         // adding to a suspended queue is allowed
        #expect(running.waitUntilFinished(timeout: .seconds(10)))
        #expect(running.outcome?.isSucceeded == true)
        // The coordinator decides what to dispatch after every input it handles, so its answers now
        // come after it handled the SUBMIT of held and the finish of running (3 slots free): held is
        // still ready, not dispatched, and WHY gives the suspension as the reason.
        let heldStatus = try #require(try cluster.local.status([held.id])[held.id])
        #expect(heldStatus.state == .ready && heldStatus.dispatchedUs == 0, "a suspended queue starts nothing: \(heldStatus)")
        #expect(try cluster.local.why(held.id).reasons.contains { $0.contains("queue suspension is suspended") })
        #expect(!held.isExecuting && !held.isFinished, "a suspended queue starts nothing")
        q.isSuspended = false
        #expect(held.waitUntilFinished(timeout: .seconds(10)))
        #expect(held.outcome?.isSucceeded == true)
    }

    @Test func dependencyCount() throws {
        let a = RemoteOperation(kind: "noop", name: "a"), b = RemoteOperation(kind: "noop", name: "b"),
            c = RemoteOperation(kind: "noop", name: "c")
        try a.addDependency(b)
        try a.addDependency(b)                           // adding it again changes nothing
        #expect(a.dependencies.count == 1)
        try a.addDependency(c)
        #expect(a.dependencies.count == 2)
        try a.removeDependency(b)
        #expect(a.dependencies.count == 1 && a.dependencies[0] === c)
        #expect(!a.isReady, "an operation with an unfinished dependency is not ready")
        #expect(b.isReady)
    }

    @Test func cancelledDependencyLetsTheDependentRun() throws {
        let held = try queue("dep-held", suspended: true)
        let free = try queue("dep-free")
        let dependency = sleeper(5_000, "dependency")
        let dependent = RemoteOperation(kind: "echo", payload: "ran", name: "dependent")
        try dependent.addDependency(dependency)
        try held.addOperation(dependency)
        try free.addOperation(dependent)
        // Both SUBMITs were accepted: the coordinator holds the dependent for its unfinished dependency.
        let why = try cluster.local.why(dependent.id)
        #expect(why.state == .pending && why.waitingOn.contains { $0.hasSuffix("/" + dependency.id) }, "\(why)")
        #expect(!dependent.isReady && !dependent.isFinished)
        dependency.cancel()
        #expect(dependent.waitUntilFinished(timeout: .seconds(10)))
        #expect(dependency.outcome?.isCancelled == true)
        #expect(dependent.result == Array("ran".utf8), "cancellation releases dependents, it does not cascade")
    }

    @Test func cancelledBeforeBeingAddedFinishesWithoutRunning() throws {
        let q = try queue("cancel-out-of-queue")
        let op = sleeper(5_000, "cancelled-early")
        let dependent = RemoteOperation(kind: "noop", name: "dependent")
        try dependent.addDependency(op)
        let ran = Recorder<String>()
        recording([op, dependent], into: ran)
        op.cancel()
        #expect(op.isCancelled && !op.isFinished && op.isReady)
        try q.addOperations([op, dependent], waitUntilFinished: false)
        #expect(op.waitUntilFinished(timeout: .seconds(2)))
        #expect(op.outcome?.isCancelled == true && op.lastRun.worker.isEmpty)
        #expect(dependent.waitUntilFinished(timeout: .seconds(10)))
        #expect(dependent.outcome?.isSucceeded == true)
        #expect(ran.values == ["cancelled-early", "dependent"])
    }

    @Test func dependentAddedBeforeItsDependencyWaitsForIt() throws {
        let q = try queue("deadlock", max: 1)
        let r = Recorder<String>()
        let op1 = RemoteOperation(kind: "noop", name: "op1"), op2 = RemoteOperation(kind: "noop", name: "op2")
        try op1.addDependency(op2)
        recording([op1, op2], into: r)
        try q.addOperation(op1)                            // its dependency is in no queue yet: it waits
        // It waits in the client (decided within addOperation), never sent: the coordinator does not
        // know it, so nothing can start it until op2 is added.
        let unknown = #expect(throws: ClientError.self, "op1 was sent before its dependency") { try cluster.local.why(op1.id) }
        if case .server(let code, let text)? = unknown { #expect(code == .notFound, "\(text)") }
        #expect(!op1.isFinished && !op1.isReady && q.operationCount == 1)
        try q.addOperation(op2)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(r.values == ["op2", "op1"])
    }

    @Test func cancellingAWaitingDependentFinishesIt() throws {
        let q = try queue("waiting-cancel")
        let never = RemoteOperation(kind: "noop", name: "never-added")
        let waiting = RemoteOperation(kind: "noop", name: "waiting")
        try waiting.addDependency(never)
        try q.addOperation(waiting)
        #expect(!waiting.isFinished)
        waiting.cancel()
        #expect(waiting.waitUntilFinished(timeout: .seconds(5)))
        #expect(waiting.outcome?.isCancelled == true && q.operationCount == 0)
    }

    @Test func crossQueueDependencyAddedInEitherOrder() throws {
        let q1 = try queue("cross-a"), q2 = try queue("cross-b")
        let r = Recorder<String>()
        let op1 = RemoteOperation(kind: "noop", name: "op1"), op2 = sleeper(200, "op2")
        try op1.addDependency(op2)
        recording([op1, op2], into: r)
        try q1.addOperation(op1)                           // the dependent first, as Foundation's test does
        try q2.addOperation(op2)
        #expect(q1.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(q1.operationCount == 0)
        #expect(r.values == ["op2", "op1"])
    }

    @Test func cycleAcrossSeparateAddsIsRejected() throws {
        let q = try queue("cycle-later")
        let a = RemoteOperation(kind: "noop", name: "a"), b = RemoteOperation(kind: "noop", name: "b")
        try a.addDependency(b)
        try b.addDependency(a)
        try q.addOperation(a)                              // waits for b
        #expect(throws: RemoteOperationError.rejected(["cycle: b → a → b"])) { try q.addOperation(b) }
        a.cancel()                                         // breaks the cycle: a finishes, b may go
        try q.addOperation(b)
        #expect(b.waitUntilFinished(timeout: .seconds(10)))
        #expect(a.outcome?.isCancelled == true && b.outcome?.isSucceeded == true)
    }

    @Test func crossQueueDependency() throws {
        let q1 = try queue("cross-1"), q2 = try queue("cross-2")
        let r = Recorder<String>()
        let first = sleeper(300, "first")
        let second = RemoteOperation(kind: "noop", name: "second")
        try second.addDependency(first)
        recording([first, second], into: r)
        try q1.addOperation(first)
        try q2.addOperation(second)
        #expect(second.waitUntilFinished(timeout: .seconds(10)))
        #expect(r.values == ["first", "second"])
        #expect(second.outcome?.isSucceeded == true)
    }

    @Test func waitUntilFinishedBlockingAndAsync() async throws {
        let q = try queue("wait")
        let ops = (0..<4).map { sleeper(100 * ($0 + 1), "s\($0)") }
        try { try q.addOperations(ops, waitUntilFinished: true) }()   // the blocking form (a sync closure picks it)
        #expect(ops.allSatisfy { $0.isFinished }, "addOperations(_:waitUntilFinished: true) returns when all finished")
        let one = sleeper(200, "one")
        try q.addOperation(one)
        await one.waitUntilFinished()
        #expect(one.isFinished)
        let more = (0..<3).map { sleeper(150, "m\($0)") }
        try await q.addOperations(more, waitUntilFinished: false)
        await q.waitUntilAllOperationsAreFinished()
        #expect(more.allSatisfy { $0.isFinished } && q.operationCount == 0)
        let last = sleeper(150, "last")
        try q.addOperation(last)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(last.isFinished)
    }

    @Test func cancelWhileSuspended() throws {
        let q = try queue("cancel-suspended", suspended: true)
        let a = RemoteOperation(kind: "noop", name: "a"), b = RemoteOperation(kind: "noop", name: "b")
        try q.addOperations([a, b], waitUntilFinished: false)
        a.cancel()
        #expect(a.waitUntilFinished(timeout: .seconds(5)), "a cancelled operation finishes even in a suspended queue")
        #expect(a.outcome?.isCancelled == true && !b.isFinished)
        q.isSuspended = false
        #expect(b.waitUntilFinished(timeout: .seconds(10)))
        #expect(b.outcome?.isSucceeded == true)
    }

    @Test func executionOrderFollowsDependencies() throws {
        let q = try queue("execution-order")
        let r = Recorder<String>()
        let ops = (0..<5).map { RemoteOperation(kind: "noop", name: "step\($0)") }
        for i in 1..<ops.count { try ops[i].addDependency(ops[i - 1]) }
        recording(ops, into: r)
        try q.addOperations(ops.reversed(), waitUntilFinished: true)
        #expect(r.values == ops.map(\.name))
    }

    @Test func cycleIsRejectedWithTheCycleNamedAndCanBeBroken() throws {
        let q = try queue("cycle")
        let a = RemoteOperation(kind: "noop", name: "a"), b = RemoteOperation(kind: "noop", name: "b")
        try a.addDependency(b)
        try b.addDependency(a)
        #expect {
            try q.addOperations([a, b], waitUntilFinished: false)
        } throws: { error in
            let text = "\(error)"
            return text.contains("cycle: a → b") || text.contains("cycle: b → a")
        }
        #expect(q.operationCount == 0, "nothing of a rejected batch is accepted")
        try b.removeDependency(a)
        try q.addOperations([a, b], waitUntilFinished: true)
        #expect(a.outcome?.isSucceeded == true && b.outcome?.isSucceeded == true)
    }

    @Test func lifecycleOfACancelledRunningOperation() throws {
        let q = try queue("lifecycle")
        let op = sleeper(10_000, "long")
        let completions = Recorder<Bool>()
        op.completionBlock = { completions.append(true) }
        try q.addOperation(op)
        try cluster.waitUntil("\(op.name) executing") { op.isExecuting }
        let start = Date()
        op.cancel()
        #expect(op.isCancelled)
        #expect(op.waitUntilFinished(timeout: .seconds(5)))
        #expect(Date().timeIntervalSince(start) < 3, "cancellation is cooperative, not a wait for the end")
        #expect(op.isFinished && !op.isExecuting && op.isCancelled)
        #expect(op.outcome?.isCancelled == true)
        #expect(completions.values.count == 1)
    }

    @Test func queueObjectMayGoAwayWhileItsOperationsRun() throws {
        weak var weakQueue: RemoteOperationQueue?
        let first = sleeper(5_000, "first"), second = RemoteOperation(kind: "noop", name: "second")
        try second.addDependency(first)
        try {
            let q = try queue("released")
            weakQueue = q
            try q.addOperations([first, second], waitUntilFinished: false)
        }()
        try cluster.waitUntil("the queue object released (operations do not keep it alive)") { weakQueue == nil }
        try cluster.waitUntil("first executing") { first.isExecuting }
        first.cancel()
        #expect(second.waitUntilFinished(timeout: .seconds(5)))
        #expect(first.outcome?.isCancelled == true && second.outcome?.isSucceeded == true)
    }

    @Test func queueWithItsOwnConnectionMayGoAwayWhileItsOperationsRun() throws {
        weak var weakQueue: RemoteOperationQueue?
        weak var weakCoordinator: RemoteCoordinator?
        let op = sleeper(300, "own-connection")
        try {
            let q = try RemoteOperationQueue(name: "released-own", endpoint: cluster.endpoint)
            weakQueue = q
            weakCoordinator = q.coordinator
            try q.addOperation(op)
        }()
        try cluster.waitUntil("the queue object released (operations do not keep it alive)") { weakQueue == nil }
        #expect(op.waitUntilFinished(timeout: .seconds(10)), "the operation keeps the connection")
        #expect(op.outcome?.isSucceeded == true)
        try cluster.waitUntil("its coordinator object released once its operations have finished") { weakCoordinator == nil }
    }

    @Test func notReadyOperationDoesNotBlockOthersAndRunsWhenItCanBe() throws {
        let q = try queue("custom-ready")
        let picky = RemoteOperation(kind: "noop", name: "picky", requiredTags: ["gpu"])
        let plain = RemoteOperation(kind: "noop", name: "plain")
        try q.addOperation(picky)
        try q.addOperation(plain)
        #expect(plain.waitUntilFinished(timeout: .seconds(10)))
        #expect(!picky.isFinished && q.operationCount == 1, "no worker has tag gpu yet")
        try cluster.startWorker(name: "gpu-worker", tags: ["gpu"])
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(picky.outcome?.isSucceeded == true && picky.lastRun.worker != plain.lastRun.worker)
    }

    @Test func twoConcurrentOperationsWithDependenciesAndCompletions() throws {
        let q = try queue("concurrent", max: 2)
        let r = Recorder<String>()
        let a = sleeper(400, "a"), b = sleeper(400, "b"), c = RemoteOperation(kind: "noop", name: "c")
        try c.addDependency(a)
        try c.addDependency(b)
        recording([a, b, c], into: r)
        try q.addOperations([a, b, c], waitUntilFinished: false)
        #expect(!c.isExecuting && !c.isReady)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        // What ran when, as the coordinator recorded it: a and b overlapped, c started after both.
        let st = try cluster.local.status([a.id, b.id, c.id])
        let (sa, sb, sc) = (try #require(st[a.id]), try #require(st[b.id]), try #require(st[c.id]))
        #expect(sa.startedUs < sb.finishedUs && sb.startedUs < sa.finishedUs, "two operations run at once")
        #expect(sc.startedUs >= max(sa.finishedUs, sb.finishedUs))
        #expect(r.values.count == 3 && r.values.last == "c")
        #expect(Set(r.values.prefix(2)) == ["a", "b"])
    }

    @Test func blockOperationWithTwoParts() throws {
        let q = try queue("parts")
        let op = RemoteOperation(kind: "sleep", payload: Array("300".utf8), name: "group", parts: 2)
        let completions = Recorder<Bool>()
        op.completionBlock = { completions.append(true) }
        let start = Date()
        try q.addOperation(op)
        #expect(op.waitUntilFinished(timeout: .seconds(10)))
        #expect(Date().timeIntervalSince(start) >= 0.3)
        #expect(op.outcome?.isSucceeded == true)
        #expect(completions.values.count == 1, "finished once, when every part is")
    }

    @Test func barrierRunsAfterEarlierOperationsAndHoldsBackLaterOnes() throws {
        let q = try queue("barrier")
        let r = Recorder<String>()
        let before = [sleeper(300, "before1"), sleeper(200, "before2")]
        recording(before, into: r)
        try q.addOperations(before, waitUntilFinished: false)
        let finishedAtBarrier = Recorder<Bool>()
        let barrier = try q.addBarrierBlock {
            finishedAtBarrier.append(before.allSatisfy { $0.isFinished })
            r.append("barrier")
        }
        let after = RemoteOperation(kind: "noop", name: "after")
        recording([after], into: r)
        try q.addOperation(after)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(10)))
        #expect(barrier.isFinished && finishedAtBarrier.values == [true])
        #expect(Array(r.values.suffix(2)) == ["barrier", "after"])
        #expect(Set(r.values.prefix(2)) == ["before1", "before2"])
    }

    @Test func completionBlocksMayAddOperationsWithoutDeadlock() throws {
        let q = try queue("nested")
        let inner = Recorder<RemoteOperation>()
        let outer = RemoteOperation(kind: "noop", name: "outer")
        outer.completionBlock = {
            let op = RemoteOperation(kind: "noop", name: "inner")
            try? q.addOperation(op)
            inner.append(op)
        }
        try q.addOperation(outer)
        #expect(outer.waitUntilFinished(timeout: .seconds(10)))
        try cluster.waitUntil("the inner operation finished") { inner.values.first?.isFinished == true }
    }

    @Test func misuseIsAClearError() throws {
        let q = try queue("misuse")
        let op = RemoteOperation(kind: "noop", name: "once")
        try q.addOperation(op)
        #expect(throws: RemoteOperationError.alreadyAdded("once", queue: "misuse")) { try q.addOperation(op) }
        #expect(throws: RemoteOperationError.self) { try op.addDependency(RemoteOperation(kind: "noop", name: "late")) }
        #expect(op.waitUntilFinished(timeout: .seconds(10)))
        #expect(throws: RemoteOperationError.alreadyFinished("once")) { try q.addOperation(op) }
        let twice = RemoteOperation(kind: "noop", name: "twice")
        #expect(throws: RemoteOperationError.alreadyAdded("twice", queue: "misuse")) { try q.addOperations([twice, twice], waitUntilFinished: false) }
        let dependent = RemoteOperation(kind: "noop", name: "dependent")
        #expect(throws: RemoteOperationError.dependencyOnItself("dependent")) { try dependent.addDependency(dependent) }
        #expect(q.operationCount == 0)
        // After a refused add the operation is still usable.
        try q.addOperations([dependent], waitUntilFinished: true)
        #expect(dependent.outcome?.isSucceeded == true)
    }

    @Test func cancelAllOperations() throws {
        let q = try queue("cancel-all", max: 1)
        let ops = (0..<5).map { sleeper(5_000, "s\($0)") }
        try q.addOperations(ops, waitUntilFinished: false)
        try cluster.waitUntil("s0 executing") { ops[0].isExecuting }
        q.cancelAllOperations()
        #expect(ops.allSatisfy { $0.isCancelled })
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(5)))
        #expect(ops.allSatisfy { $0.outcome?.isCancelled == true })
    }

    @Test func cancelAllOperationsFinishesOperationsWaitingInTheClient() async throws {
        let q = try queue("cancel-all-waiting")
        let never = RemoteOperation(kind: "noop", name: "never-added")
        let waiting = RemoteOperation(kind: "noop", name: "waiting")
        try waiting.addDependency(never)
        try q.addOperation(waiting)
        let stream = waiting.stateChanges
        q.cancelAllOperations()
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(5)))
        #expect(waiting.isFinished && waiting.isCancelled && waiting.outcome?.isCancelled == true)
        guard waiting.isFinished else { return }                  // the stream ends only at `finished`
        var seen: [RemoteOperation.Snapshot] = []
        for await s in stream { seen.append(s) }
        #expect(seen.contains { $0.isCancelled && $0.state != .finished }, "the cancellation is observed before the finish")
    }

    @Test func invalidMaxConcurrentOperationCountChangesNothing() throws {
        let q = try queue("invalid-limit")
        q.maxConcurrentOperationCount = -5
        #expect(q.maxConcurrentOperationCount == -1)
        #expect(throws: RemoteOperationError.self) { try q.setMaxConcurrentOperationCount(-5) }
        #expect(q.maxConcurrentOperationCount == -1)
        q.maxConcurrentOperationCount = 2
        #expect(q.maxConcurrentOperationCount == 2)
        let op = RemoteOperation(kind: "noop", name: "after-invalid")
        try q.addOperation(op)                             // creates the queue with the valid settings
        #expect(op.waitUntilFinished(timeout: .seconds(10)))
    }

    @Test func progressAggregatesTheQueue() throws {
        let q = try queue("progress")
        try q.addOperations((0..<4).map { _ in RemoteOperation(kind: "noop") }, waitUntilFinished: true)
        #expect(q.progress.totalUnitCount == 400)
        #expect(q.progress.completedUnitCount == 400)
        #expect(q.progress.fractionCompleted == 1)
    }
}
