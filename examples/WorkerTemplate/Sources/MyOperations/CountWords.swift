import DistributedOperationQueue

/// Counts the words of `text`: replace with your own work. The stored properties are the operation's
/// inputs; `Output` is what `value` returns to the client; `Failure` is the error type the client
/// catches as itself. Its kind (how client and worker agree on it) is the type's name unless you set
/// `static var kind` — do, before renaming the type while old clients or workers still run.
public struct CountWords: DistributedOperation {
    public var text: String
    public var minimumLength: Int

    public init(text: String, minimumLength: Int = 1) {
        (self.text, self.minimumLength) = (text, minimumLength)
    }

    public typealias Failure = CountWordsError

    public func main(_ context: OperationContext) async throws -> WordCount {
        guard minimumLength >= 1 else { throw CountWordsError.badMinimumLength(minimumLength) }
        var counts: [String: Int] = [:]
        for (i, word) in text.split(whereSeparator: { !$0.isLetter }).enumerated() where word.count >= minimumLength {
            if i % 10_000 == 0 { try Task.checkCancellation() }      // a cancelled operation stops here
            counts[word.lowercased(), default: 0] += 1
        }
        context.reportProgress(1, message: "\(counts.count) distinct words")
        return WordCount(total: counts.values.reduce(0, +), distinct: counts.count,
                         top: counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map(\.key))
    }
}

/// `CountWords`' output. Add fields as optionals (or with defaults in a custom decoder) so that clients
/// and workers of different versions still understand each other.
public struct WordCount: Codable, Sendable {
    public var total: Int
    public var distinct: Int
    public var top: [String]
}

public enum CountWordsError: Error, Codable, Sendable {
    case badMinimumLength(Int)
}
