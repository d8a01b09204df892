import Foundation
// The worker-side types a typed operation's `main` uses, so a client that imports only this module
// can declare operations (the worker imports them the same way).
@_exported import class WorkerRuntime.OperationContext
@_exported import struct WorkerRuntime.HandlerError

/// An operation written the Swift way: a `Codable` value whose stored properties are its inputs and
/// whose `main` does the work on a worker — `Operation`'s subclass-and-override, as a value.
///
/// ```swift
/// struct Thumbnail: DistributedOperation {
///     var url: String
///     var side: Int
///     func main(_ context: OperationContext) async throws -> Data { … }
/// }
/// let thumb = try queue.addOperation(Thumbnail(url: u, side: 128))   // TypedRemoteOperation<Thumbnail>
/// let data = try await thumb.value
/// ```
///
/// The client and the worker share the type (one module both link), so they agree on the kind and the
/// wire form. Wire form (docs/HANDLERS.md, "Typed operations"): the payload is the input encoded as
/// JSON, the result the output encoded as JSON (`Void`: empty), a thrown `Failure` the failure text
/// with an `opq-typed/1` line holding it.
public protocol DistributedOperation: Codable, Sendable {
    /// What `main` returns: `Codable`, or `Void`. Any other type fails to compile (no
    /// `encodeOutput`/`decodeOutput`).
    associatedtype Output: Sendable = Void
    /// The error type `main` throws that the client catches as itself (`catch let e as Failure`).
    /// Any other error arrives as `RemoteOperationError.failed`.
    associatedtype Failure: Error & Codable & Sendable = NoFailure

    /// The handler kind: the type's name unless overridden (`static let kind = "thumbnail"`). Client and
    /// worker take it from the same type, so they cannot disagree by a typo.
    static var kind: String { get }

    /// The work, on a worker. `context` gives cancellation (`isCancelled`, `onCancel`; the task is
    /// cancelled too), progress (`reportProgress`), dependency outputs (`output(of:)`), the attempt.
    func main(_ context: OperationContext) async throws -> Output

    /// The output's wire form. Defaults: JSON for a `Codable` output, empty for `Void`; override both
    /// for a custom form (e.g. raw bytes, as `ShellOperation` does).
    static func encodeOutput(_ output: Output) throws -> [UInt8]
    /// Reads the wire form back; throws a `DecodingError` (reported with its coding path) when it cannot.
    static func decodeOutput(_ bytes: [UInt8]) throws -> Output
}

/// The `Failure` of an operation that declares none: never thrown.
public struct NoFailure: Error, Codable, Sendable, Hashable {}

extension DistributedOperation {
    public static var kind: String { String(describing: Self.self) }
}

extension DistributedOperation where Output: Codable {
    public static func encodeOutput(_ output: Output) throws -> [UInt8] { try TypedCoding.encode(output) }
    public static func decodeOutput(_ bytes: [UInt8]) throws -> Output { try TypedCoding.decode(Output.self, from: bytes) }
}

extension DistributedOperation where Output == Void {
    public static func encodeOutput(_ output: Output) throws -> [UInt8] { [] }
    /// Whatever the result (a `noop` returns none), there is nothing to decode.
    public static func decodeOutput(_ bytes: [UInt8]) throws -> Output { () }
}
