/// One thing wrong with a graph: where it is and what is wrong.
public struct GraphProblem: Sendable, Hashable, CustomStringConvertible {
    /// The element: `operations[2] "resize"`, `queues[0] "io"`, or `file`.
    public var location: String
    /// The field within it (`priority`, `after[1]`), or `nil` for the element as a whole.
    public var field: String?
    /// 1-based line in the file, when known.
    public var line: Int?
    /// What is wrong, e.g. `invalid priority "hihg"; expected one of …`.
    public var message: String

    public init(location: String, field: String? = nil, line: Int? = nil, message: String) {
        self.location = location
        self.field = field
        self.line = line
        self.message = message
    }

    public var description: String {
        var text = location
        if let field { text += ", field \(field)" }
        if let line { text += " (line \(line))" }
        return text + ": " + message
    }
}

/// A graph that cannot be submitted, with every problem found (not just the first).
public struct GraphFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file's path or other name, when known.
    public var source: String?
    public var problems: [GraphProblem]

    public init(source: String? = nil, problems: [GraphProblem]) {
        self.source = source
        self.problems = problems
    }

    public var description: String {
        let head = "\(source ?? "graph"): \(problems.count) problem\(problems.count == 1 ? "" : "s")"
        return ([head] + problems.map { "  " + $0.description }).joined(separator: "\n")
    }
}
