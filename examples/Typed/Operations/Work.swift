import DistributedOperationQueue

/// A stand-in for any long job (the seeds' `MyLengthOperation`): works for `milliseconds` in steps,
/// checking `context.isCancelled` between steps as the seeds' `main` checks `self.isCancelled`, and
/// reports its progress. Returns what it did.
public struct Work: DistributedOperation {
    public var label: String
    public var milliseconds: Int

    public init(_ label: String, milliseconds: Int) { (self.label, self.milliseconds) = (label, milliseconds) }

    public func main(_ context: OperationContext) async throws -> WorkReport {
        let step = 20, start = ContinuousClock.now
        var done = 0
        while done < milliseconds {
            if context.isCancelled { break }                   // a cancelled operation stops early
            try? await Task.sleep(for: .milliseconds(min(step, milliseconds - done)))
            done += step
            context.reportProgress(Double(min(done, milliseconds)) / Double(milliseconds), message: nil)
        }
        let elapsed = ContinuousClock.now - start
        return WorkReport(label: label, elapsedMs: Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000),
                          attempt: context.attempt)
    }
}

/// `Work`'s output.
public struct WorkReport: Codable, Sendable, CustomStringConvertible {
    public var label: String
    public var elapsedMs: Int
    public var attempt: Int
    public var description: String { "\(label): worked \(elapsedMs) ms (attempt \(attempt))" }
}

/// The seeds' `MySyncOperation`/`MyLengthOperation`: a synchronous loop in `main` that adds up
/// square roots, checking for cancellation every thousand steps. A count below 1 is a typed failure
/// (the seeds print "count must be more than 1" and return).
public struct SquareRoots: DistributedOperation {
    public var count: Int
    public init(count: Int) { self.count = count }

    public typealias Failure = SquareRootsError

    public func main(_ context: OperationContext) async throws -> Double {
        guard count >= 1 else { throw SquareRootsError.countTooSmall(count) }
        var sum = 0.0
        for i in 0..<count {
            if i % 1000 == 0, context.isCancelled { break }
            sum += Double(i).squareRoot()
        }
        return sum
    }
}

public enum SquareRootsError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    case countTooSmall(Int)
    public var description: String {
        switch self { case .countTooSmall(let n): "count must be at least 1 (was \(n))" }
    }
}
