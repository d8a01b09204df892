import Foundation
import WireProtocol

/// A `DistributedOperation` on its way through a queue: a `RemoteOperation` (priority, QoS,
/// dependencies with any operation, retries, timeout, tags, completion block, `stateChanges`,
/// `cancel()` — all as for bytes operations) whose payload is the encoded input and whose `value` is
/// the decoded output.
public final class TypedRemoteOperation<Op: DistributedOperation>: RemoteOperation, @unchecked Sendable {
    /// The operation as given (what the worker decodes and runs).
    public let input: Op
    /// The input could not be encoded: thrown when the operation is added (nothing is sent).
    private let encodingError: RemoteOperationError?

    /// `parts` > 1 (BlockOperation-style: each part runs `main`, with `context.partIndex`) needs
    /// `Output == Void`: the coordinator concatenates the parts' results.
    ///
    /// The id is the kind then a unique part (`Thumbnail:swift-1a2b3c4d-17`), so a worker finds the
    /// dependency by type (`context.output(of: Thumbnail.self)`); one given in `id` is kept as is.
    public init(_ input: Op, name: String? = nil, id: String? = nil,
                queuePriority: OperationPriority = .normal, qualityOfService: OperationQoS? = nil,
                parts: Int = 1, dependencyPolicy: DependencyPolicy = .finished, retries: Int = 0,
                timeout: Double? = nil, requiredTags: [String] = [], retryDelay: Double? = nil,
                retryDelayMax: Double? = nil, share: String? = nil, concurrencyKey: String? = nil) {
        self.input = input
        var payload: [UInt8] = []
        do {
            payload = try TypedCoding.encode(input)
            encodingError = nil
        } catch {
            let (path, detail) = TypedCoding.describe(error)
            encodingError = .unencodableInput(type: String(describing: Op.self), path: path, detail: detail)
        }
        super.init(kind: Op.kind, payload: payload, name: name,
                   id: id ?? TypedIDs.generated(kind: Op.kind, unique: RemoteOperation.generatedID()),
                   queuePriority: queuePriority, qualityOfService: qualityOfService, parts: parts,
                   dependencyPolicy: dependencyPolicy, retries: retries, timeout: timeout, requiredTags: requiredTags,
                   barrier: false, retryDelay: retryDelay, retryDelayMax: retryDelayMax,
                   wantsResult: ObjectIdentifier(Op.Output.self) != ObjectIdentifier(Void.self))
        self.share = share
        self.concurrencyKey = concurrencyKey
    }

    override var typeName: String? { String(describing: Op.self) }

    override var addError: RemoteOperationError? {
        if let encodingError { return encodingError }
        // The coordinator concatenates the parts' results, which is no single encoded output.
        if parts > 1 && wantsResult == true {
            return .invalidValue("\(Op.self) has \(parts) parts and an output: parts' results are concatenated, so only an operation whose Output is Void can have several parts")
        }
        if payload.count > WireLimits.maxPayloadSize {
            return .invalidValue("the input of \(Op.self) is \(payload.count) bytes encoded, over the limit of \(WireLimits.maxPayloadSize) bytes")
        }
        return nil
    }

    /// The decoded output, once the operation has finished (suspends until then).
    ///
    /// Throws the operation's `Failure` (decoded) when `main` threw one; otherwise a
    /// `RemoteOperationError`: `failed` (the worker's text, attempt, worker), `cancelled(reason:)`,
    /// `undecodableOutput` / `undecodableInput` (the two sides' versions of the type differ),
    /// `outputTooLarge`. Cancelling the task that awaits it ends only the wait (`CancellationError`);
    /// the operation goes on — `cancel()` cancels it.
    /// `nonisolated(nonsending)`: it runs on the caller's actor, so reading a finished operation's value
    /// from the main actor costs no hop to the global executor and back.
    public nonisolated(nonsending) var value: Op.Output {
        get async throws {
            if !fields.withLock({ $0.finishedDelivered }) { try await waitUntilFinishedOrTaskCancelled() }
            return try decodedOutcome()
        }
    }

    /// The outcome as `value` returns or throws it (finished operations only).
    func decodedOutcome() throws -> Op.Output {
        switch outcome {
        case .succeeded(let bytes)?:
            do {
                return try Op.decodeOutput(bytes)
            } catch {
                var (path, detail) = TypedCoding.describe(error)
                if bytes.isEmpty { detail += " (the result is empty)" }
                throw RemoteOperationError.undecodableOutput(type: String(describing: Op.self), path: path, detail: detail)
            }
        case .cancelled(let reason)?:
            throw RemoteOperationError.cancelled(reason: reason)
        case .failed(let text)?:
            let (worker, attempt) = lastRun
            let failed = RemoteOperationError.failed(message: text, attempt: attempt, worker: worker.isEmpty ? nil : worker)
            guard let (line, json) = TypedFailureLine.parse(text) else { throw failed }
            switch line.error {
            case .failure:
                let expected = String(describing: Op.Failure.self)
                guard line.type == expected, expected != String(describing: NoFailure.self) else { throw failed }
                let failure: Op.Failure
                do {
                    failure = try TypedFailureLine.decodeValue(Op.Failure.self, from: json)
                } catch {
                    var (path, detail) = TypedCoding.describe(error)
                    // Paths inside the line's `value`, as those of the error itself.
                    path = path == "value" ? "" : path.hasPrefix("value.") ? String(path.dropFirst(6)) : path
                    throw RemoteOperationError.undecodableFailure(type: expected, path: path, detail: detail,
                                                                  message: TypedFailureLine.message(text))
                }
                throw failure
            case .undecodableInput:
                throw RemoteOperationError.undecodableInput(type: line.type, path: line.path ?? "", detail: line.detail ?? "")
            case .outputTooLarge:
                throw RemoteOperationError.outputTooLarge(type: line.type, size: line.size ?? 0, limit: line.limit ?? 0)
            }
        case nil:
            throw RemoteOperationError.invalidValue("\(name) has not finished")
        }
    }
}
