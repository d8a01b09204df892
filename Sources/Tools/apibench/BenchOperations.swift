import DistributedOperationQueue
import Foundation

// The typed operations `scripts/bench api` runs: the typed counterparts of a `noop` (the bytes rows).
// `apibench worker` serves them (with every built-in), so both kinds of rows use one worker.

/// An input and an `Int` output: encoded on the client, decoded and run on the worker, its output
/// encoded there, fetched and decoded by the client.
struct Tick: DistributedOperation {
    static let kind = "bench.tick"
    var index: Int
    var label: String
    func main(_ context: OperationContext) async throws -> Int { index }
}

/// The same input and no output (nothing to fetch).
struct Touch: DistributedOperation {
    static let kind = "bench.touch"
    var index: Int
    var label: String
    func main(_ context: OperationContext) async throws {}
}

/// A representative input for the encoding comparison: strings, a list, numbers, a flag (the fields
/// of the protocol's `Unplaceable` message, so protobuf encodes the same content).
struct Sample: Codable, Sendable {
    var kind: String
    var requires: [String]
    var missingTags: [String]
    var noWorkerKind: Bool
    var opIds: [String]
    var opCount: UInt64
}

/// Typed on the client only: the built-in `noop` serves it (it ignores the payload), so the row
/// shows the client's share of the typed cost.
struct NoopTyped: DistributedOperation {
    static let kind = "noop"
    var index: Int
    var label: String
    func main(_ context: OperationContext) async throws {}
}

/// 1 ms of waiting, typed: against the built-in `sleep` of 1 ms (also a task per part), the typed
/// layer's cost next to a little real work.
struct Pause: DistributedOperation {
    static let kind = "bench.pause"
    var milliseconds: Int
    func main(_ context: OperationContext) async throws { try await Task.sleep(for: .milliseconds(milliseconds)) }
}
