import OpSpec

/// Runs one kind of operation. Handlers are values shared by every part of that kind, so they
/// must be `Sendable` and keep per-run state in the context or in locals.
///
/// Returning gives `succeeded(result)`; throwing gives `failed(error text)` (a `HandlerError`'s
/// message, otherwise `String(describing:)` of the error); if the part was cancelled while it
/// ran, the outcome is `cancelled(reason)` whatever the handler returns or throws.
public protocol OperationHandler: Sendable {
    /// The kind name operations use to select this handler.
    var kind: String { get }
    func run(_ context: OperationContext) async throws -> [UInt8]

    /// Optional fast path for handlers that never wait (noop, echo, fail): the outcome computed
    /// synchronously, or `nil` (the default) to run `run` in its own task. The local queue calls
    /// it on the thread that submitted the part or finished the previous one — for the worker,
    /// its socket thread — so it must take nanoseconds, not milliseconds.
    func runImmediately(_ context: OperationContext) -> Result<[UInt8], any Error>?
}

extension OperationHandler {
    public func runImmediately(_ context: OperationContext) -> Result<[UInt8], any Error>? { nil }
}

/// An error whose text is exactly the failure message the operation reports.
public struct HandlerError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A handler made from a closure, for small custom kinds and tests.
public struct ClosureHandler: OperationHandler {
    public let kind: String
    private let body: @Sendable (OperationContext) async throws -> [UInt8]

    public init(kind: String, _ body: @escaping @Sendable (OperationContext) async throws -> [UInt8]) {
        self.kind = kind
        self.body = body
    }

    public func run(_ context: OperationContext) async throws -> [UInt8] {
        try await body(context)
    }
}
