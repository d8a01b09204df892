import DistributedOperationQueue
import Foundation

// Typed operations shared by the typed test worker (Tests/TypedTestWorker) and the tests: the client
// and the worker link the same types, as a user's package would. The `…V1`/`…V2` pairs share a kind
// and stand for a client and a worker built from different versions of one type.

/// n², with the default kind ("Square").
public struct Square: DistributedOperation {
    public var n: Int
    public init(n: Int) { self.n = n }
    public func main(_ context: OperationContext) async throws -> Int { n * n }
}

/// Sums the outputs of its `Square` dependencies (`outputs(of:)`), plus `add`.
public struct SumSquares: DistributedOperation {
    public var add: Int
    public init(add: Int) { self.add = add }
    public func main(_ context: OperationContext) async throws -> Int {
        try context.outputs(of: Square.self).reduce(add) { $0 + $1.output }
    }
}

/// The output of its one `Square` dependency (`output(of:)`) plus one; `byID` looks it up by id instead.
public struct AfterSquare: DistributedOperation {
    public var byID: String?
    public init(byID: String? = nil) { self.byID = byID }
    public func main(_ context: OperationContext) async throws -> Int {
        if let byID { return try context.output(of: byID, as: Square.self) + 1 }
        return try context.output(of: Square.self) + 1
    }
}

/// Waits `milliseconds` in steps of 10 ms, reporting progress; Void output; a custom kind.
public struct Nap: DistributedOperation {
    public static let kind = "test.nap"
    public var milliseconds: Int
    public init(milliseconds: Int) { self.milliseconds = milliseconds }
    public func main(_ context: OperationContext) async throws {
        let steps = max(1, milliseconds / 10)
        for i in 0..<steps {
            try await Task.sleep(for: .milliseconds(10))
            context.reportProgress(Double(i + 1) / Double(steps))
        }
    }
}

public enum ResizeError: Error, Codable, Sendable, Equatable {
    case tooSmall(side: Int)
    case unsupported(format: String)
}

/// Throws its typed error for small sides, a plain error for side 0, else returns "WxW".
public struct Resize: DistributedOperation {
    public typealias Failure = ResizeError
    public var side: Int
    public var format: String
    public init(side: Int, format: String = "png") { self.side = side; self.format = format }
    public func main(_ context: OperationContext) async throws -> String {
        if side == 0 { throw HandlerError("side 0 is not a size") }
        if side < 16 { throw ResizeError.tooSmall(side: side) }
        if format != "png" { throw ResizeError.unsupported(format: format) }
        return "\(side)x\(side)"
    }
}

/// Fails every attempt before `succeedOn`; returns the attempt it succeeded on.
public struct Flaky: DistributedOperation {
    public var succeedOn: Int
    public init(succeedOn: Int) { self.succeedOn = succeedOn }
    public func main(_ context: OperationContext) async throws -> Int {
        guard context.attempt >= succeedOn else { throw HandlerError("attempt \(context.attempt) fails") }
        return context.attempt
    }
}

/// `bytes` bytes of output (over the 1 MiB result limit fails the attempt).
public struct Huge: DistributedOperation {
    public var bytes: Int
    public init(bytes: Int) { self.bytes = bytes }
    public func main(_ context: OperationContext) async throws -> Data { Data(repeating: 7, count: bytes) }
}

/// What its `ShellOperation` dependency printed, upper-cased.
public struct Shout: DistributedOperation {
    public init() {}
    public func main(_ context: OperationContext) async throws -> String {
        try context.output(of: ShellOperation.self).trimmed.uppercased()
    }
}

// MARK: version skew (client V1, worker V2)

/// The client's version: no `scale`.
public struct ScaleV1: DistributedOperation {
    public static let kind = "Scale"
    public var n: Int
    public init(n: Int) { self.n = n }
    public func main(_ context: OperationContext) async throws -> Int { n }
}
/// The worker's version: a required `scale` (a V1 input fails to decode there).
public struct ScaleV2: DistributedOperation {
    public static let kind = "Scale"
    public var n: Int
    public var scale: Int
    public func main(_ context: OperationContext) async throws -> Int { n * scale }
}

/// The client's version of an input without `note`.
public struct NoteV1: DistributedOperation {
    public static let kind = "Note"
    public var text: String
    public init(text: String) { self.text = text }
    public func main(_ context: OperationContext) async throws -> String { text }
}
/// The worker's version: an optional `note` (a V1 input decodes; `note` is nil).
public struct NoteV2: DistributedOperation {
    public static let kind = "Note"
    public var text: String
    public var note: String?
    public func main(_ context: OperationContext) async throws -> String { text + (note ?? " (no note)") }
}

public struct PointV1: Codable, Sendable, Equatable {
    public var x: Int, y: Int, label: String?
    public init(x: Int, y: Int, label: String?) { (self.x, self.y, self.label) = (x, y, label) }
}
/// The client's version of an output: `y` required, `label` optional (the worker's version has
/// neither, and a `z` the client does not know).
public struct PointClient: DistributedOperation {
    public static let kind = "Point"
    public var withY: Bool
    public init(withY: Bool) { self.withY = withY }
    public func main(_ context: OperationContext) async throws -> PointV1 { PointV1(x: 0, y: 0, label: nil) }
}
/// The worker's version: with `withY` it returns a point that has `y`, else one without.
public struct PointWorker: DistributedOperation {
    public static let kind = "Point"
    public var withY: Bool
    public func main(_ context: OperationContext) async throws -> [String: Int] {
        withY ? ["x": 1, "y": 2, "z": 3] : ["x": 1, "z": 3]
    }
}

/// The client expects `ParseErrorV1`; its worker version throws a `ParseErrorV2` named the same way.
public struct ParseClient: DistributedOperation {
    public static let kind = "Parse"
    public typealias Failure = ParseError
    public init() {}
    public func main(_ context: OperationContext) async throws -> Int { 0 }
    public enum ParseError: Error, Codable, Sendable, Equatable { case bad(line: Int) }
}
public struct ParseWorker: DistributedOperation {
    public static let kind = "Parse"
    public typealias Failure = ParseError
    public func main(_ context: OperationContext) async throws -> Int { throw ParseError.bad(line: "seven") }
    public enum ParseError: Error, Codable, Sendable, Equatable { case bad(line: String) }
}

/// What its handler sees of its own identity: `[context.opID, context.name]`.
public struct Identity: DistributedOperation {
    public init() {}
    public func main(_ context: OperationContext) async throws -> [String] { [context.opID, context.name] }
}

/// What the typed test worker serves.
public let typedTestWorkerOperations: [any DistributedOperation.Type] = [
    Square.self, SumSquares.self, AfterSquare.self, Nap.self, Resize.self, Flaky.self, Huge.self, Shout.self,
    ScaleV2.self, NoteV2.self, PointWorker.self, ParseWorker.self, Identity.self,
]
