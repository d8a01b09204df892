import Foundation
import WireProtocol
import WorkerRuntime

/// Runs a `DistributedOperation` type as a handler kind on a worker: decodes the payload into the
/// operation, runs its `main`, encodes the output (wire form: docs/HANDLERS.md, "Typed operations").
/// `OpWorker.main(operations:)` registers one per type; `HandlerRegistry.register(_:)` does it in a
/// worker of your own.
public struct TypedOperationHandler<Op: DistributedOperation>: OperationHandler {
    public init(_ type: Op.Type = Op.self) {}

    public var kind: String { Op.kind }

    public func run(_ context: OperationContext) async throws -> [UInt8] {
        var type: String { String(describing: Op.self) }     // for errors only: it costs a microsecond
        let input: Op
        do {
            input = try TypedCoding.decode(Op.self, from: context.payload)
        } catch {
            let (path, detail) = TypedCoding.describe(error)
            throw HandlerError(TypedFailureLine.undecodableInputText(type: type, path: path, detail: detail))
        }
        let output: Op.Output
        do {
            output = try await input.main(context)
        } catch let failure as Op.Failure {
            throw HandlerError(TypedFailureLine.failureText(failure))
        }
        let bytes: [UInt8]
        do {
            bytes = try Op.encodeOutput(output)
        } catch {
            let (path, detail) = TypedCoding.describe(error)
            throw HandlerError("cannot encode the output of \(type)\(path.isEmpty ? "" : " at '\(path)'"): \(detail)")
        }
        guard bytes.count <= WireLimits.maxResultSize else {
            throw HandlerError(TypedFailureLine.outputTooLargeText(type: type, size: bytes.count, limit: WireLimits.maxResultSize))
        }
        return bytes
    }
}

extension HandlerRegistry {
    /// Registers `type`'s handler under `type.kind` (replacing a handler of that kind).
    public mutating func register<Op: DistributedOperation>(_ type: Op.Type) {
        register(TypedOperationHandler(type))
    }
}
