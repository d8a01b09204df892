@testable import DistributedOperationQueue
import DistributedOperationWorker
import Foundation
import Testing
import TypedTestOperations
import WireProtocol

/// Typed operations without sockets: the client's encoding, the worker's handler on a context of its
/// own, and the outcome as `value` reads it — each side's half of the wire form (docs/HANDLERS.md).
@Suite struct TypedOperationCodingTests {
    /// Runs `Op`'s handler as a worker would on `payload`, with these dependency results.
    func run<Op: DistributedOperation>(_ type: Op.Type, payload: [UInt8], inputs: [DispatchedPart.Input] = [],
                                       attempt: Int = 1) async -> OperationOutcome {
        let context = OperationContext(part: DispatchedPart(key: PartKey(opID: "t", attempt: attempt), kind: Op.kind,
                                                            payload: payload, inputs: inputs))
        do { return .succeeded(try await TypedOperationHandler(type).run(context)) } catch {
            return .failed((error as? HandlerError)?.message ?? "\(error)")
        }
    }

    /// A handle that finished with `outcome` (applied as the connection thread would).
    func finished<Op: DistributedOperation>(_ input: Op, _ outcome: OperationOutcome, worker: String = "w1",
                                            attempt: Int = 1) -> TypedRemoteOperation<Op> {
        let op = TypedRemoteOperation(input)
        op.update(state: .finished, authoritative: true, cancelled: outcome.isCancelled, outcome: outcome,
                  fraction: nil, worker: worker, attempt: attempt)
        return op
    }

    /// Client encodes, worker decodes and runs, client decodes the output.
    func roundTrip<Client: DistributedOperation, Worker: DistributedOperation>(
        _ input: Client, servedBy worker: Worker.Type) async throws -> Client.Output {
        let op = TypedRemoteOperation(input)
        return try finished(input, await run(worker, payload: op.payload)).decodedOutcome()
    }

    @Test func payloadIsTheInputAsJSONAndTheKindIsTheTypeName() throws {
        let op = TypedRemoteOperation(Resize(side: 64))
        #expect(op.kind == "Resize" && Nap.kind == "test.nap" && ShellOperation.kind == "shell")
        let json = try JSONSerialization.jsonObject(with: Data(op.payload)) as? [String: Any]
        #expect(json?["side"] as? Int == 64 && json?["format"] as? String == "png")
        #expect(op.id.hasPrefix("Resize:swift-"), "the id carries the kind: \(op.id)")
        #expect(TypedRemoteOperation(Square(n: 1), id: "mine").id == "mine")
        #expect(op.addError == nil && op.wantsResult == true && TypedRemoteOperation(Nap(milliseconds: 1)).wantsResult == false)
        #expect(TypedRemoteOperation(Nap(milliseconds: 1), parts: 3).addError == nil)
        #expect(TypedRemoteOperation(Square(n: 1), parts: 3).addError == .invalidValue(
            "Square has 3 parts and an output: parts' results are concatenated, so only an operation whose Output is Void can have several parts"))
    }

    @Test func valueRoundTrips() async throws {
        #expect(try await roundTrip(Square(n: 12), servedBy: Square.self) == 144)
        #expect(try await roundTrip(Resize(side: 32), servedBy: Resize.self) == "32x32")
        let bytes = await run(Huge.self, payload: TypedRemoteOperation(Huge(bytes: 3)).payload).result ?? []
        #expect(try finished(Huge(bytes: 3), .succeeded(bytes)).decodedOutcome() == Data([7, 7, 7]))
    }

    @Test func voidOutputIsEmptyAndAnyResultDecodes() async throws {
        let outcome = await run(Nap.self, payload: TypedRemoteOperation(Nap(milliseconds: 10)).payload)
        #expect(outcome == .succeeded([]))
        try finished(Nap(milliseconds: 1), .succeeded(Array("ignored".utf8))).decodedOutcome()
    }

    @Test func typedFailureIsCaughtAsItselfAndReadableAsText() async throws {
        let outcome = await run(Resize.self, payload: TypedRemoteOperation(Resize(side: 8)).payload)
        let text = try #require(outcome.message)
        #expect(text.hasPrefix("tooSmall(side: 8)\nopq-typed/1 {"), "description first, then the line: \(text)")
        #expect(text.contains(#""error":"failure""#) && text.contains(#""type":"ResizeError""#))
        // The line is JSON after the prefix (what a Python or shell side reads).
        let line = try #require(text.split(separator: "\n").last)
        let json = try JSONSerialization.jsonObject(with: Data(line.dropFirst("opq-typed/1 ".count).utf8)) as? [String: Any]
        #expect((json?["value"] as? [String: Any])?["tooSmall"] != nil)
        #expect(throws: ResizeError.tooSmall(side: 8)) { try finished(Resize(side: 8), outcome).decodedOutcome() }
        // A retried operation's final text is prefixed by the coordinator; the line is still last.
        #expect(throws: ResizeError.tooSmall(side: 8)) {
            try finished(Resize(side: 8), .failed("failed after 3 attempts: " + text)).decodedOutcome()
        }
        let other = await run(Resize.self, payload: TypedRemoteOperation(Resize(side: 20, format: "gif")).payload)
        #expect(throws: ResizeError.unsupported(format: "gif")) { try finished(Resize(side: 20), other).decodedOutcome() }
    }

    @Test func otherErrorsAreFailedWithMessageAttemptAndWorker() async throws {
        let outcome = await run(Resize.self, payload: TypedRemoteOperation(Resize(side: 0)).payload)
        #expect(outcome == .failed("side 0 is not a size"))
        #expect(throws: RemoteOperationError.failed(message: "side 0 is not a size", attempt: 2, worker: "w7")) {
            try finished(Resize(side: 0), outcome, worker: "w7", attempt: 2).decodedOutcome()
        }
        // A `failure` line of another type than the client's `Failure` is just a failure.
        let resize = await run(Resize.self, payload: TypedRemoteOperation(Resize(side: 8)).payload)
        #expect(throws: RemoteOperationError.failed(message: resize.message!, attempt: 1, worker: "w1")) {
            try finished(Square(n: 1), resize).decodedOutcome()
        }
    }

    @Test func cancelledHasItsReason() {
        #expect(throws: RemoteOperationError.cancelled(reason: "cancelled by client")) {
            try finished(Square(n: 1), .cancelled("cancelled by client")).decodedOutcome()
        }
    }

    @Test func versionSkewOfInputs() async throws {
        // A required field the client's version lacks: the worker says which, the client gets it precisely.
        await #expect(throws: RemoteOperationError.undecodableInput(type: "ScaleV2", path: "scale", detail: "required key 'scale' is missing")) {
            _ = try await roundTrip(ScaleV1(n: 3), servedBy: ScaleV2.self)
        }
        // An optional one decodes as nil.
        #expect(try await roundTrip(NoteV1(text: "hi"), servedBy: NoteV2.self) == "hi (no note)")
    }

    @Test func versionSkewOfOutputs() async throws {
        #expect(try await roundTrip(PointClient(withY: true), servedBy: PointWorker.self) == PointV1(x: 1, y: 2, label: nil),
                "an unknown field is ignored, a missing optional one is nil")
        await #expect(throws: RemoteOperationError.undecodableOutput(type: "PointClient", path: "y", detail: "required key 'y' is missing")) {
            _ = try await roundTrip(PointClient(withY: false), servedBy: PointWorker.self)
        }
        // A `Failure` whose two versions differ.
        do {
            _ = try await roundTrip(ParseClient(), servedBy: ParseWorker.self)
            Issue.record("no error")
        } catch RemoteOperationError.undecodableFailure(let type, let path, _, let message) {
            #expect(type == "ParseError" && path == "bad.line" && message == #"bad(line: "seven")"#)
        }
    }

    @Test func outputOverTheLimitFailsNamingTypeAndSize() async throws {
        let outcome = await run(Huge.self, payload: TypedRemoteOperation(Huge(bytes: 900_000)).payload)
        let size = try #require(outcome.message.flatMap { $0.split(separator: " ").dropFirst(5).first }.flatMap { Int($0) })
        #expect(outcome.message?.hasPrefix("the output of Huge is \(size) bytes, over the limit of \(WireLimits.maxResultSize) bytes") == true)
        #expect(throws: RemoteOperationError.outputTooLarge(type: "Huge", size: size, limit: WireLimits.maxResultSize)) {
            try finished(Huge(bytes: 900_000), outcome).decodedOutcome()
        }
    }

    @Test func unencodableInputIsThrownWhenAdded() throws {
        struct Ratio: DistributedOperation {
            var value: Double
            func main(_ context: OperationContext) async throws -> Double { value }
        }
        let op = TypedRemoteOperation(Ratio(value: .nan))
        guard case .unencodableInput(let type, let path, _)? = op.addError else { Issue.record("\(String(describing: op.addError))"); return }
        #expect(type == "Ratio" && path == "value")
        let q = RemoteOperationQueue(name: "q", coordinator: RemoteCoordinator(engine: Engine(endpoint: "tcp://127.0.0.1:1", fetchResults: false)))
        #expect(throws: op.addError!) { try q.addOperation(op) }
        #expect(op.fields.withLock { $0.queue == nil }, "nothing was claimed")
    }

    @Test func dependencyOutputsByTypeAndByID() async throws {
        let sq = Array("49".utf8)
        func context(_ inputs: [DispatchedPart.Input]) -> OperationContext {
            OperationContext(part: DispatchedPart(key: PartKey(opID: "x"), kind: "AfterSquare", inputs: inputs))
        }
        #expect(try context([.init(id: "Square:swift-1-1", result: sq)]).output(of: Square.self) == 49)
        #expect(try context([.init(id: "run7/Square:swift-1-1", result: sq)]).output(of: Square.self) == 49, "another run's")
        #expect(try context([.init(id: "Square", result: sq)]).output(of: Square.self) == 49, "an id that is the kind")
        #expect(try context([.init(id: "mine", result: sq)]).output(of: "mine", as: Square.self) == 49)
        #expect(throws: DependencyOutputError.noDependency(type: "Square", kind: "Square", available: ["SquareRoot:a", "echo-1"])) {
            try context([.init(id: "SquareRoot:a", result: sq), .init(id: "echo-1", result: [])]).output(of: Square.self)
        }
        #expect(throws: DependencyOutputError.severalDependencies(type: "Square", ids: ["Square:a", "Square:b"])) {
            try context([.init(id: "Square:a", result: sq), .init(id: "Square:b", result: sq)]).output(of: Square.self)
        }
        #expect(throws: DependencyOutputError.noOutput(id: "gone", available: ["Square:a"])) {
            try context([.init(id: "Square:a", result: sq)]).output(of: "gone", as: Square.self)
        }
        #expect(throws: DependencyOutputError.undecodable(id: "Square:a", type: "Square", path: "", detail: "expected Int: Expected to decode Int but found a string instead.")) {
            try context([.init(id: "Square:a", result: Array(#""x""#.utf8))]).output(of: Square.self)
        }
        let outputs = try context([.init(id: "Square:a", result: sq), .init(id: "Square:b", result: Array("1".utf8))]).outputs(of: Square.self)
        #expect(outputs.map(\.output) == [49, 1])
        // A shell dependency's output is its stdout as it is.
        #expect(try context([.init(id: "shell:swift-9", result: Array("hello\n".utf8))]).output(of: ShellOperation.self).trimmed == "hello")
    }

    @Test func progressIsMadeOnUseAndOnlyGrows() {
        let op = TypedRemoteOperation(Nap(milliseconds: 1))
        op.update(state: .executing, authoritative: true, cancelled: false, outcome: nil, fraction: 0.5, worker: "w", attempt: 1)
        #expect(op.progress.totalUnitCount == 100 && op.progress.completedUnitCount == 49)
        op.update(state: .executing, authoritative: true, cancelled: false, outcome: nil, fraction: 0.25, worker: "w", attempt: 2)
        #expect(op.progress.completedUnitCount == 49, "a retry's fractions do not move it back")
        op.update(state: .finished, authoritative: true, cancelled: false, outcome: .succeeded([]), fraction: nil, worker: "w", attempt: 2)
        #expect(op.progress.completedUnitCount == 100 && op.progress.isFinished)
    }

    /// Cancelling the task that awaits `value` ends the wait only (the operation is not cancelled).
    @Test func cancellingTheAwaitingTaskEndsOnlyTheWait() async throws {
        let op = TypedRemoteOperation(Square(n: 2))
        let waiting = Task { try await op.value }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(!op.isCancelled && !op.isFinished)
        // Cancelled before it starts waiting: the same.
        let late = Task { try await op.value }
        late.cancel()
        await #expect(throws: CancellationError.self) { try await late.value }
        #expect(op.fields.withLock { $0.cancellableWaiters.isEmpty }, "no wait is left behind")
    }

    @Test func workerRegistryRefusesClashingKinds() throws {
        let registry = try OpWorker.registry(operations: [Square.self, Nap.self, ShellOperation.self])
        #expect(registry.kinds.contains("Square") && registry.kinds.contains("test.nap") && registry.kinds.contains("noop"))
        #expect(throws: OpWorkerError.duplicateKind("Scale", first: "ScaleV1", second: "ScaleV2")) {
            try OpWorker.registry(operations: [ScaleV1.self, ScaleV2.self])
        }
        struct Noop: DistributedOperation { static let kind = "noop"; func main(_ context: OperationContext) async throws {} }
        #expect(throws: OpWorkerError.builtinKind("noop", type: "Noop")) { try OpWorker.registry(operations: [Noop.self]) }
    }

    @Test func failureLineSurvivesTheWireTextLimitAndTooLargeValuesAreTextOnly() {
        struct Big: Error, Codable { var blob: String }
        let text = TypedFailureLine.failureText(Big(blob: String(repeating: "x", count: 40_000)))
        #expect(TypedFailureLine.parse(text) == nil && text.contains("over the 32768 a failure can carry"))
        let small = TypedFailureLine.failureText(ResizeError.tooSmall(side: 1))
        #expect(TypedFailureLine.parse(small)?.line.type == "ResizeError")
        #expect(TypedFailureLine.parse("plain text") == nil && TypedFailureLine.parse("x\nopq-typed/1 not json") == nil)
    }
}
