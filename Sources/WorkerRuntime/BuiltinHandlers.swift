import OpSpec

/// `noop`: succeeds at once with an empty result.
public struct NoopHandler: OperationHandler {
    public var kind: String { BuiltinKind.noop }
    public init() {}
    public func run(_ context: OperationContext) async throws -> [UInt8] { [] }
    public func runImmediately(_ context: OperationContext) -> Result<[UInt8], any Error>? { .success([]) }
}

/// `echo`: succeeds with its payload as the result.
public struct EchoHandler: OperationHandler {
    public var kind: String { BuiltinKind.echo }
    public init() {}
    public func run(_ context: OperationContext) async throws -> [UInt8] { context.payload }
    public func runImmediately(_ context: OperationContext) -> Result<[UInt8], any Error>? { .success(context.payload) }
}

/// `fail`: fails with its payload (UTF-8) as the error text.
public struct FailHandler: OperationHandler {
    public var kind: String { BuiltinKind.fail }
    public init() {}
    public func run(_ context: OperationContext) async throws -> [UInt8] {
        throw HandlerError(PayloadText.text(context.payload))
    }
    public func runImmediately(_ context: OperationContext) -> Result<[UInt8], any Error>? {
        .failure(HandlerError(PayloadText.text(context.payload)))
    }
}

/// `sleep`: waits the payload's milliseconds (see `SleepPayload`), then succeeds with an empty
/// result. `Task.sleep` resumes as soon as the task is cancelled (its continuation is resumed by
/// the cancellation handler), so a cancel is observed within microseconds — no polling.
public struct SleepHandler: OperationHandler {
    public var kind: String { BuiltinKind.sleep }
    public init() {}
    public func run(_ context: OperationContext) async throws -> [UInt8] {
        let request = try SleepPayload.decode(context.payload)
        try await Task.sleep(for: .milliseconds(request.milliseconds))
        return []
    }
}
