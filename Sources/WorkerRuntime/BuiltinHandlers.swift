import OpSpec
import Synchronization

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

/// `burn`: keeps one core busy for the payload's milliseconds of wall time (same payload as `sleep`),
/// then succeeds with an empty result — CPU-bound load for load tests. It checks for cancellation
/// every few microseconds (a cancel ends it with the cancelled outcome) and yields to the
/// cooperative pool every millisecond, so other parts' tasks are not starved behind it.
public struct BurnHandler: OperationHandler {
    public var kind: String { BuiltinKind.burn }
    public init() {}
    public func run(_ context: OperationContext) async throws -> [UInt8] {
        let request = try SleepPayload.decode(context.payload, kind: kind)
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(request.milliseconds)
        var nextYield = clock.now + .milliseconds(1)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while true {
            if Task.isCancelled || context.isCancelled { throw CancellationError() }
            // A few microseconds of xorshift between clock reads.
            for _ in 0..<2048 {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
            }
            let now = clock.now
            if now >= deadline { break }
            if now >= nextYield {
                await Task.yield()
                nextYield = clock.now + .milliseconds(1)
            }
        }
        // Published, so the optimiser cannot drop the loop's arithmetic.
        burnSink.store(state, ordering: .relaxed)
        return []
    }
}

private let burnSink = Atomic<UInt64>(0)
