import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import Testing
import TypedTestOperations

/// Typed operations end to end: a client in this process, a coordinator and a worker built with
/// `OpWorker.main(operations:)` (Tests/TypedTestWorker) as real processes. Each test starts its own
/// cluster; every wait is bounded (the suite's time limit, `waitUntil`).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TypedOperationTests {
    let cluster: TypedCluster
    init() throws { cluster = try TypedCluster() }

    @Test func valueRoundTripsAndVoidOutputs() async throws {
        let q = cluster.queue("values")
        let square = try q.addOperation(Square(n: 12))
        let nap = try q.addOperation(Nap(milliseconds: 50))
        #expect(try await square.value == 144)
        try await nap.value
        #expect(square.kind == "Square" && nap.kind == "test.nap")
        #expect(nap.progress.isFinished && nap.progress.completedUnitCount == 100)
        #expect(square.lastRun.worker == cluster.workerID)
    }

    @Test func typedErrorIsCaughtAsItself() async throws {
        let q = cluster.queue("errors")
        let small = try q.addOperation(Resize(side: 8))
        do {
            _ = try await small.value
            Issue.record("no error")
        } catch let e as ResizeError {
            #expect(e == .tooSmall(side: 8))
        }
        // The text is still readable where nothing decodes it (opctl, Python): description first.
        #expect(small.outcome?.message?.hasPrefix("tooSmall(side: 8)\nopq-typed/1 ") == true)
    }

    @Test func otherErrorIsFailedWithMessageAttemptAndWorker() async throws {
        let op = try cluster.queue("other").addOperation(Resize(side: 0))
        await #expect(throws: RemoteOperationError.failed(message: "side 0 is not a size", attempt: 1, worker: cluster.workerID)) {
            _ = try await op.value
        }
    }

    @Test func cancelledHasItsReason() async throws {
        let op = try cluster.queue("cancel").addOperation(Nap(milliseconds: 20_000))
        try cluster.waitUntil("the nap to run") { op.isExecuting }
        op.cancel()
        do {
            try await op.value
            Issue.record("no error")
        } catch RemoteOperationError.cancelled(let reason) {
            #expect(!reason.isEmpty)
        }
    }

    @Test func decodingFailuresOnBothSidesAndVersionSkew() async throws {
        let q = cluster.queue("skew")
        // The worker's version has a required field the client's lacks: the worker cannot decode it.
        let scale = try q.addOperation(ScaleV1(n: 3))
        await #expect(throws: RemoteOperationError.undecodableInput(type: "ScaleV2", path: "scale", detail: "required key 'scale' is missing")) {
            _ = try await scale.value
        }
        // An optional field added on the worker's side decodes (as nil).
        #expect(try await q.addOperation(NoteV1(text: "hi")).value == "hi (no note)")
        // The worker's output lacks a field the client's version requires: the client cannot decode it.
        let point = try q.addOperation(PointClient(withY: false))
        await #expect(throws: RemoteOperationError.undecodableOutput(type: "PointClient", path: "y", detail: "required key 'y' is missing")) {
            _ = try await point.value
        }
        #expect(try await q.addOperation(PointClient(withY: true)).value == PointV1(x: 1, y: 2, label: nil))
    }

    @Test func outputOverTheLimitFailsTheAttempt() async throws {
        let op = TypedRemoteOperation(Huge(bytes: 1_000_000), retries: 1, retryDelay: 0)
        try cluster.queue("huge").addOperation(op)
        do {
            _ = try await op.value
            Issue.record("no error")
        } catch RemoteOperationError.outputTooLarge(let type, let size, let limit) {
            #expect(type == "Huge" && size > limit && limit == 1 << 20)
        }
        #expect(op.lastRun.attempt == 2, "each attempt failed the same way: \(op.lastRun)")
        #expect(op.outcome?.message?.hasPrefix("failed after 2 attempts: the output of Huge is ") == true)
    }

    @Test func dependencyOutputsByTypeAndByID() async throws {
        let q = cluster.queue("deps")
        let squares = (1...3).map { TypedRemoteOperation(Square(n: $0)) }
        let sum = TypedRemoteOperation(SumSquares(add: 100))
        for s in squares { try sum.addDependency(s) }
        let one = TypedRemoteOperation(Square(n: 9), id: "nine")
        let byType = TypedRemoteOperation(AfterSquare())
        let byID = TypedRemoteOperation(AfterSquare(byID: "nine"))
        try byType.addDependency(one)
        try byID.addDependency(one)
        try await q.addOperations(squares + [sum, one, byType, byID], waitUntilFinished: true)
        #expect(try await sum.value == 114)
        #expect(try await byID.value == 82)
        // An id given by hand does not carry the kind: found by id only.
        do {
            _ = try await byType.value
            Issue.record("no error")
        } catch RemoteOperationError.failed(let message, _, _) {
            #expect(message.hasPrefix("no output of a Square (kind 'Square') among this operation's dependencies that succeeded ('nine')"))
        }
    }

    @Test func outputOfAMissingAndOfACancelledDependency() async throws {
        let q = cluster.queue("missing")
        let alone = try q.addOperation(AfterSquare())
        await #expect(throws: RemoteOperationError.failed(
            message: "no output of a Square (kind 'Square') among this operation's dependencies that succeeded (none): it is not a dependency, or it failed or was cancelled (those pass no output)",
            attempt: 1, worker: cluster.workerID)) { _ = try await alone.value }

        // A dependency cancelled on the coordinator: the dependent runs without it (OperationQueue's
        // rule) and `output(of:)` says so; with `.succeeded` it is cancelled instead of run.
        let held = cluster.queue("held")
        try held.setSuspended(true)
        let square = TypedRemoteOperation(Square(n: 4))
        let after = TypedRemoteOperation(AfterSquare())
        let strict = TypedRemoteOperation(AfterSquare(), dependencyPolicy: .succeeded)
        try after.addDependency(square)
        try strict.addDependency(square)
        try held.addOperation(square)
        try await q.addOperations([after, strict], waitUntilFinished: false)
        square.cancel()
        do {
            _ = try await after.value
            Issue.record("no error")
        } catch RemoteOperationError.failed(let message, _, _) {
            #expect(message.hasPrefix("no output of a Square"))
        }
        await #expect(throws: RemoteOperationError.self) { _ = try await strict.value }
        guard case .cancelled? = strict.outcome else { Issue.record("\(String(describing: strict.outcome))"); return }
    }

    @Test func typedAndShellOperationsDependOnEachOther() async throws {
        let q = cluster.queue("shell")
        // typed after shell: the shell's stdout as `ShellOutput`.
        let hello = TypedRemoteOperation(ShellOperation("echo hello"))
        let shout = TypedRemoteOperation(Shout())
        try shout.addDependency(hello)
        // shell after typed: the typed output (JSON) in $OPQ_INPUT_<ID> / $OPQ_INPUTS_DIR.
        let square = TypedRemoteOperation(Square(n: 5))
        let cat = TypedRemoteOperation(ShellOperation(#"cat "$OPQ_INPUTS_DIR"/*"#))
        try cat.addDependency(square)
        try await q.addOperations([hello, shout, square, cat], waitUntilFinished: true)
        #expect(try await shout.value == "HELLO")
        #expect(try await hello.value.trimmed == "hello")
        #expect(try await cat.value.text == "25")
        #expect(cat.payload == Array(#"{"command":"cat \"$OPQ_INPUTS_DIR\"/*"}"#.utf8), "the shell payload itself")
    }

    @Test func retriesBehaveAsForBytesOperations() async throws {
        let q = cluster.queue("retries")
        let second = try { () throws -> TypedRemoteOperation<Flaky> in
            let op = TypedRemoteOperation(Flaky(succeedOn: 2), retries: 1, retryDelay: 0)
            try q.addOperation(op)
            return op
        }()
        let never = TypedRemoteOperation(Flaky(succeedOn: 5), retries: 2, retryDelay: 0)
        try q.addOperation(never)
        #expect(try await second.value == 2)
        await #expect(throws: RemoteOperationError.failed(message: "failed after 3 attempts: attempt 3 fails", attempt: 3,
                                                          worker: cluster.workerID)) { _ = try await never.value }
    }

    @Test func warnsAtAddTimeWhenNoWorkerOffersTheKind() async throws {
        struct Unserved: DistributedOperation { func main(_ context: OperationContext) async throws {} }
        let warnings = Collected<String>()
        cluster.coordinator.warningHandler = { warnings.append($0) }
        let q = cluster.queue("unserved")
        let op = try q.addOperation(Unserved())
        _ = try q.addOperation(Square(n: 1))
        #expect(warnings.values.count == 1)
        #expect(warnings.values.first?.hasPrefix("1 Unserved operation (\(op.id)): no connected worker offers kind 'Unserved'") == true,
                "\(warnings.values)")
        op.cancel()
        await #expect(throws: RemoteOperationError.self) { try await op.value }
    }

    /// Cancelling the task that awaits `value` ends the wait; the operation runs on until `cancel()`.
    @Test func cancellingTheAwaitingTaskDoesNotCancelTheOperation() async throws {
        let op = try cluster.queue("await").addOperation(Nap(milliseconds: 20_000))
        try cluster.waitUntil("the nap to run") { op.isExecuting }
        let waiting = Task { try await op.value }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(op.isExecuting && !op.isCancelled)
        op.cancel()
        await #expect(throws: RemoteOperationError.self) { try await op.value }
    }

    /// `OpWorker.main` takes opworker's whole command line: `--allow-kinds` limits the typed kinds too.
    @Test func theOneLineWorkerTakesOpworkersOptions() async throws {
        let limited = try TypedCluster(workerArgs: ["--allow-kinds", "Square,noop", "--tags", "typed"])
        let info = try #require(try limited.local.workerList().first { $0.name == TypedCluster.workerName })
        #expect(info.kinds.sorted() == ["Square", "noop"] && info.tags == ["typed"])
        let warnings = Collected<String>()
        limited.coordinator.warningHandler = { warnings.append($0) }
        let q = limited.queue("limited")
        #expect(try await q.addOperation(Square(n: 3)).value == 9)
        let refused = try q.addOperation(Resize(side: 20))
        #expect(warnings.values.count == 1 && warnings.values.first?.contains("no connected worker offers kind 'Resize'") == true)
        refused.cancel()
        // A bad command line: the usage error, and a non-zero exit.
        let log = limited.local.dir.appendingPathComponent("bad.log")
        let bad = try LocalCluster.launch("typed-test-worker", ["--slots", "0"], log: log)
        try limited.waitUntil("the worker with a bad command line to exit") { !bad.isRunning }
        #expect(bad.terminationStatus != 0)
        #expect(try String(contentsOf: log, encoding: .utf8).contains("--slots must be ≥ 1"))
    }

    /// The wire form is enough for another language: a Python worker (python/examples/worker.py plus
    /// two typed kinds on the `opqueue` package, Tests/Fixtures/typed/typed_worker.py) serves `Square` and `Resize`, and the
    /// client gets values and the typed error as from a Swift worker.
    @Test func pythonWorkerServesTypedKinds() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let local = try LocalCluster(heartbeatMs: 200)
        defer { local.stop() }
        try PythonPackage.requireInterpreter()
        let python = try LocalCluster.launch(
            executable: PythonPackage.python,
            [root.appendingPathComponent("Tests/Fixtures/typed/typed_worker.py").path, local.endpoint, "--name", "py", "--slots", "2", "--seconds", "60"],
            log: local.dir.appendingPathComponent("py.log"))
        defer { kill(python.processIdentifier, SIGKILL); python.waitUntilExit() }
        try local.waitUntil("the Python worker registered", timeout: 20) { try local.workerList().contains { $0.name == "py" } }
        let remote = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "python", coordinator: remote)
        #expect(try await q.addOperation(Square(n: 7)).value == 49)
        #expect(try await q.addOperation(Resize(side: 32)).value == "32x32")
        await #expect(throws: ResizeError.tooSmall(side: 8)) { _ = try await q.addOperation(Resize(side: 8)).value }
    }

    @Test func progressOfTheOperationAndOfTheQueue() async throws {
        let q = cluster.queue("progress")
        let nap = try q.addOperation(Nap(milliseconds: 1_500))
        let progress = nap.progress
        try cluster.waitUntil("progress to be reported") { progress.completedUnitCount > 0 && q.progress.completedUnitCount > 0 }
        #expect(progress.completedUnitCount < 100)
        try await nap.value
        #expect(progress.completedUnitCount == 100 && q.progress.fractionCompleted == 1)
    }

    /// docs/HANDLERS.md: `context.name` is the display name given when the operation was added, the id otherwise.
    @Test func handlerSeesTheDisplayName() async throws {
        let q = cluster.queue("names")
        let named = TypedRemoteOperation(Identity(), name: "resize the holiday photos")
        try q.addOperation(named)
        let plain = try q.addOperation(Identity())
        let namedSeen = try await named.value, plainSeen = try await plain.value
        #expect(namedSeen[1] == "resize the holiday photos")
        #expect(namedSeen[0].hasSuffix(named.id))
        #expect(plainSeen[1] == plainSeen[0] && plainSeen[0].hasSuffix(plain.id))
    }
}
