import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import Testing
import TypedTestOperations
import WireProtocol

/// Closures that run in the client's process as members of the graph (`LocalOperation`,
/// `queue.addOperation { … }`), against a real coordinator and typed worker. Sleeps inside closures
/// stand for work; every wait is bounded (`waitUntilFinished(timeout:)`, the suite's time limit).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ClosureOperationTests {
    let cluster: TypedCluster
    init() throws { cluster = try TypedCluster() }

    struct Oops: Error, Equatable, CustomStringConvertible {
        let code: Int
        var description: String { "oops \(code)" }
    }

    @Test func closureAfterRemoteGetsItsOutput() async throws {
        let q = cluster.queue("closure-after")
        let square = TypedRemoteOperation(Square(n: 7))
        let seen = Collected<Int>()
        let closure = LocalOperation { context in seen.append(try context.output(of: Square.self)) }
        try closure.addDependency(square)
        // The closure is added first: it waits in the client for its dependency, like any operation.
        try q.addOperation(closure)
        try q.addOperation(square)
        #expect(closure.waitUntilFinished(timeout: .seconds(20)))
        #expect(seen.values == [49])
        #expect(closure.outcome == .succeeded([]))
        #expect(closure.kind == LocalOperation.kind && closure.kind.hasPrefix("local-closure@"))
        // It ran on this client's embedded worker, not on the typed worker.
        #expect(!closure.lastRun.worker.isEmpty && closure.lastRun.worker != cluster.workerID)
        #expect(square.lastRun.worker == cluster.workerID)
    }

    @Test func remoteAfterClosureStartsOnceItHasFinished() async throws {
        let q = cluster.queue("closure-before")
        let closureEnd = Collected<Double>()
        let closure = LocalOperation {
            try await Task.sleep(for: .milliseconds(300))
            closureEnd.append(Date().timeIntervalSince1970)
        }
        // The same machine's wall clock, read by the remote operation when it runs.
        let clock = TypedRemoteOperation(ShellOperation("date +%s.%N"))
        try clock.addDependency(closure)
        try await q.addOperations([clock, closure], waitUntilFinished: false)
        let remoteStart = try #require(Double(try await clock.value.trimmed))
        let end = try #require(closureEnd.values.first)
        #expect(closure.isFinished && closure.outcome == .succeeded([]))
        #expect(remoteStart >= end)
        #expect(clock.lastRun.worker == cluster.workerID)
    }

    /// Closures are scheduled by the coordinator like any operation: on a suspended serial queue they
    /// wait, and once it resumes they run by `queuePriority`, with a remote operation among them.
    @Test func closuresRunByPriorityOnASerialQueue() async throws {
        let q = cluster.queue("closure-priority")
        try q.setMaxConcurrentOperationCount(1)
        try q.setSuspended(true)
        let order = Collected<String>()
        let low = LocalOperation(name: "low", queuePriority: .low) { order.append("low") }
        let high = LocalOperation(name: "high", queuePriority: .veryHigh) { order.append("veryHigh") }
        let normal = LocalOperation(name: "normal") { order.append("normal") }
        let remote = TypedRemoteOperation(Square(n: 1), queuePriority: .high)
        let afterRemote = LocalOperation(name: "after-remote", queuePriority: .high) { order.append("high, after the remote one") }
        try afterRemote.addDependency(remote)
        try await q.addOperations([low, normal, high, remote, afterRemote])
        #expect(order.values.isEmpty)
        try q.setSuspended(false)
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(20)))
        #expect(order.values == ["veryHigh", "high, after the remote one", "normal", "low"])
    }

    @Test func closureCancelledBeforeItRunsNeverRuns() async throws {
        let q = cluster.queue("closure-cancel")
        let gate = TypedRemoteOperation(Nap(milliseconds: 5000))
        let ran = Collected<Bool>()
        let closure = LocalOperation { ran.append(true) }
        try closure.addDependency(gate)
        try await q.addOperations([gate, closure], waitUntilFinished: false)
        closure.cancel()
        #expect(closure.waitUntilFinished(timeout: .seconds(10)))
        #expect(closure.isCancelled)
        guard case .cancelled? = closure.outcome else { Issue.record("outcome \(String(describing: closure.outcome))"); return }
        gate.cancel()
        #expect(gate.waitUntilFinished(timeout: .seconds(10)))
        #expect(ran.values.isEmpty)
        // Cancelled before it was added: it finishes here and never starts the embedded worker's work.
        let early = LocalOperation { ran.append(true) }
        early.cancel()
        try q.addOperation(early)
        #expect(early.waitUntilFinished(timeout: .seconds(5)))
        #expect(early.isCancelled && ran.values.isEmpty)
    }

    @Test func runningClosureSeesCancellation() async throws {
        let q = cluster.queue("closure-running-cancel")
        let started = Collected<Bool>()
        let sawCancel = Collected<Bool>()
        let closure = try q.addOperation { context in
            started.append(true)
            while !context.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            sawCancel.append(Task.isCancelled)
        }
        try cluster.waitUntil("the closure started") { !started.values.isEmpty }
        closure.cancel()
        #expect(closure.waitUntilFinished(timeout: .seconds(10)))
        #expect(sawCancel.values == [true])
        guard case .cancelled? = closure.outcome else { Issue.record("outcome \(String(describing: closure.outcome))"); return }
    }

    @Test func completionBlockRunsAfterTheClosure() async throws {
        let q = cluster.queue("closure-completion")
        let events = Collected<String>()
        let closure = LocalOperation { events.append("ran") }
        closure.completionBlock = { events.append("completion") }
        try q.addOperation(closure)
        #expect(closure.waitUntilFinished(timeout: .seconds(20)))
        #expect(events.values == ["ran", "completion"])
    }

    @Test func waitUntilAllOperationsAreFinishedCoversClosures() async throws {
        let q = cluster.queue("closure-wait-all")
        let done = Collected<Int>()
        let square = try q.addOperation(Square(n: 3))
        for i in 0..<6 {
            let c = LocalOperation(name: "c\(i)") {
                try await Task.sleep(for: .milliseconds(100))
                done.append(i)
            }
            try c.addDependency(square)
            try q.addOperation(c)
        }
        try q.addOperation { done.append(99) }
        #expect(q.waitUntilAllOperationsAreFinished(timeout: .seconds(30)))
        #expect(done.values.sorted() == [0, 1, 2, 3, 4, 5, 99])
        #expect(q.operationCount == 0)
        await q.waitUntilAllOperationsAreFinished()
    }

    /// `close()` cancels the closures that have not run (their process cannot run them any more), which
    /// and the embedded worker leaves.
    @Test func closeCancelsClosuresThatHaveNotRun() async throws {
        let other = try RemoteCoordinator(endpoint: cluster.local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "closure-close", coordinator: other)
        let gate = TypedRemoteOperation(Nap(milliseconds: 30_000))
        let ran = Collected<Bool>()
        let closure = LocalOperation { ran.append(true) }
        try closure.addDependency(gate)
        try await q.addOperations([gate, closure], waitUntilFinished: false)
        let why = try cluster.local.why(closure.id)
        #expect(why.waitingOn.contains { $0.hasSuffix(gate.id) })
        other.close()
        try cluster.waitUntil("the closure is cancelled on the coordinator") {
            try cluster.local.status([closure.id])[closure.id]?.state == .finished
        }
        let record = try #require(try cluster.local.status([closure.id])[closure.id])
        #expect(record.cancelled && record.error.contains("closed its connection"))
        #expect(ran.values.isEmpty)
        #expect(!(try cluster.local.workerList()).contains { $0.kinds.contains(LocalOperation.kind) })
    }

    @Test func thrownErrorIsTheFailure() async throws {
        let q = cluster.queue("closure-throws")
        let closure = LocalOperation { throw Oops(code: 7) }
        // A remote operation that needs it to succeed is cancelled by the dependency policy (A2).
        let after = TypedRemoteOperation(Square(n: 2), dependencyPolicy: .succeeded)
        try after.addDependency(closure)
        try await q.addOperations([closure, after], waitUntilFinished: false)
        #expect(closure.waitUntilFinished(timeout: .seconds(20)))
        #expect(closure.outcome?.message?.contains("oops 7") == true)
        #expect(closure.error as? Oops == Oops(code: 7))
        do {
            _ = try await after.value
            Issue.record("no error")
        } catch RemoteOperationError.cancelled(let reason) {
            #expect(!reason.isEmpty)
        }
    }
}

/// With keys, a client's closures need its key to have the `worker` role (their embedded worker
/// registers with it); without, adding one throws why, at once.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ClosureKeyTests {
    func client(_ local: LocalCluster, key: String) throws -> RemoteCoordinator {
        let keys = try ClientKeys.resolve(key: local.keyPath(key), coordinatorKey: local.coordinatorPublicKey)
        return try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5), curve: keys)
    }

    @Test func keyWithoutWorkerRoleIsToldWhy() throws {
        let local = try LocalCluster(keys: true)
        defer { local.stop() }
        try local.addKey("alice", roles: "submit", scopes: ["*"])
        let coordinator = try client(local, key: "alice")
        defer { coordinator.close() }
        let q = RemoteOperationQueue(name: "k", coordinator: coordinator)
        let start = ContinuousClock.now
        #expect {
            try q.addOperation { }
        } throws: { error in
            let text = "\(error)"
            return text.contains("lacks the 'worker' role") && text.contains("closures")
        }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(q.operationCount == 0)
    }

    @Test func keyWithWorkerRoleRunsClosures() throws {
        let local = try LocalCluster(keys: true)
        defer { local.stop() }
        try local.addKey("bob", roles: "submit,worker", scopes: ["*"])
        let coordinator = try client(local, key: "bob")
        defer { coordinator.close() }
        let q = RemoteOperationQueue(name: "k", coordinator: coordinator)
        let ran = Collected<Bool>()
        let op = try q.addOperation { ran.append(true) }
        #expect(op.waitUntilFinished(timeout: .seconds(20)))
        #expect(ran.values == [true] && op.outcome == .succeeded([]))
    }
}

/// A client process that dies without closing: its running closure fails ("worker lost", never re-run),
/// and `opctl why` for the one still waiting names the kind with that process's host and pid.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ClosureProcessGoneTests {
    @Test func closuresOfAProcessThatDied() throws {
        let cluster = try TypedCluster()
        let log = cluster.local.dir.appendingPathComponent("closure-client.log")
        let client = try LocalCluster.launch("closure-test-client", [cluster.local.endpoint], log: log)
        defer { if client.isRunning { client.terminate() } }
        var ids: [String] = []
        try cluster.waitUntil("the client's closure runs") {
            guard client.isRunning else { throw ClusterError("closure-test-client exited: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")") }
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("IDS ") }) else { return false }
            ids = line.split(separator: " ").dropFirst().map(String.init)
            return true
        }
        let (waiting, running, gate) = (ids[0], ids[1], ids[2])
        let pid = client.processIdentifier
        kill(pid, SIGKILL)
        client.waitUntilExit()
        try cluster.waitUntil("the running closure fails") { try cluster.local.status([running])[running]?.state == .finished }
        let record = try #require(try cluster.local.status([running])[running])
        #expect(!record.cancelled && record.error.contains("worker lost"))
        // The waiting one stays: nothing else offers its kind. WHY says which process it belonged to.
        let why = try cluster.local.why(waiting)
        #expect(why.state != .finished)
        #expect(why.waitingOn.count == 1 && why.waitingOn[0].hasSuffix(gate))
        try cluster.local.ack(.cancelOps({ var c = WireCancelOps(); c.opIds = [gate]; c.run = why.run; return c }()))
        try cluster.waitUntil("the gate is cancelled and the closure is ready") { try cluster.local.why(waiting).waitingOn.isEmpty }
        let reasons = try cluster.local.why(waiting).reasons.joined(separator: "\n")
        #expect(reasons.contains("needs kind 'local-closure@") && reasons.contains(":\(pid)#"))
    }
}
