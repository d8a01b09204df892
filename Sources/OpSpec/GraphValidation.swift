/// Structural checks shared by the file reader and graphs built in code: ids, dependencies,
/// cycles, numeric ranges, queues. The coordinator validates again; these give the client
/// precise messages before anything is sent.
extension Graph {
    /// Every structural problem, in file order; empty when the graph can be submitted.
    public func problems() -> [GraphProblem] {
        GraphValidation.problems(of: self, lines: nil)
    }

    /// Throws every problem at once.
    public func validate(source: String? = nil) throws(GraphFileError) {
        let found = problems()
        if !found.isEmpty { throw GraphFileError(source: source, problems: found) }
    }
}

enum GraphValidation {
    /// Line numbers of elements and fields, when the graph came from a file.
    struct Lines {
        var operation: [Int?] = []
        var queue: [Int?] = []
        /// (operation index, field) → line
        var fields: [String: Int] = [:]
        /// Operations that were not mappings (already reported; nothing more to say about them).
        var brokenOperations: Set<Int> = []
        func field(_ index: Int, _ name: String) -> Int? { fields["\(index).\(name)"] ?? operation[index] }
    }

    static func operationLocation(_ index: Int, id: String?) -> String {
        if let id, !id.isEmpty { return "operations[\(index)] \"\(id)\"" }
        return "operations[\(index)]"
    }

    static func queueLocation(_ index: Int, name: String?) -> String {
        if let name, !name.isEmpty { return "queues[\(index)] \"\(name)\"" }
        return "queues[\(index)]"
    }

    static func problems(of graph: Graph, lines: Lines?, skipRanges: Bool = false) -> [GraphProblem] {
        var problems: [GraphProblem] = []
        func lineOf(_ index: Int, _ field: String?) -> Int? {
            guard let lines else { return nil }
            return field.map { lines.field(index, $0) } ?? lines.operation[index]
        }

        // Queues: names unique and non-empty, limits sane.
        var queueIndex: [String: Int] = [:]
        for (index, queue) in graph.queues.enumerated() {
            let location = queueLocation(index, name: queue.name)
            let line = lines?.queue[index]
            if queue.name.isEmpty {
                problems.append(GraphProblem(location: location, field: "name", line: line, message: "missing queue name"))
            } else if let first = queueIndex[queue.name] {
                problems.append(GraphProblem(location: location, field: "name", line: line,
                                             message: "duplicate queue name \"\(queue.name)\" (first at queues[\(first)])"))
            } else {
                queueIndex[queue.name] = index
            }
            if !skipRanges, queue.maxConcurrent < -1 || queue.maxConcurrent == 0 {
                problems.append(GraphProblem(location: location, field: "maxConcurrent", line: line,
                                             message: "must be -1 (unlimited) or at least 1, got \(queue.maxConcurrent)"))
            }
        }

        // Ids: present and unique.
        var indexOfID: [String: Int] = [:]
        for (index, op) in graph.operations.enumerated() {
            let location = operationLocation(index, id: op.id)
            if lines?.brokenOperations.contains(index) == true { continue }
            if op.id.isEmpty {
                problems.append(GraphProblem(location: location, field: "id", line: lineOf(index, nil), message: "missing id"))
            } else if op.id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                problems.append(GraphProblem(location: location, field: "id", line: lineOf(index, "id"),
                                             message: "id contains a control character"))
            } else if op.id.contains("/") {
                problems.append(GraphProblem(location: location, field: "id", line: lineOf(index, "id"),
                                             message: "id contains '/', which separates run and operation in RUN/OP"))
            } else if let first = indexOfID[op.id] {
                problems.append(GraphProblem(location: location, field: "id", line: lineOf(index, "id"),
                                             message: "duplicate id \"\(op.id)\" (first at operations[\(first)])"))
            } else {
                indexOfID[op.id] = index
            }
        }

        for (index, op) in graph.operations.enumerated() {
            let location = operationLocation(index, id: op.id)
            if lines?.brokenOperations.contains(index) == true { continue }
            if op.kind.isEmpty {
                problems.append(GraphProblem(location: location, field: "kind", line: lineOf(index, nil), message: "missing kind"))
            }
            if !skipRanges {
                if op.parts < 1 {
                    problems.append(GraphProblem(location: location, field: "parts", line: lineOf(index, "parts"),
                                                 message: "must be at least 1, got \(op.parts)"))
                }
                if op.retries < 0 {
                    problems.append(GraphProblem(location: location, field: "retries", line: lineOf(index, "retries"),
                                                 message: "must not be negative, got \(op.retries)"))
                }
                if op.lossRetries < 0 {
                    problems.append(GraphProblem(location: location, field: "lossRetries", line: lineOf(index, "lossRetries"),
                                                 message: "must not be negative, got \(op.lossRetries)"))
                }
                if let timeout = op.timeout, !(timeout > 0 && timeout.isFinite) {
                    problems.append(GraphProblem(location: location, field: "timeout", line: lineOf(index, "timeout"),
                                                 message: "must be a positive number of seconds, got \(GraphFileReader.format(timeout))"))
                }
                for (field, value) in [("retryDelay", op.retryDelay), ("retryDelayMax", op.retryDelayMax)] {
                    if let v = value, !(v >= 0 && v.isFinite) {
                        problems.append(GraphProblem(location: location, field: field, line: lineOf(index, field),
                                                     message: "must be a number of seconds ≥ 0, got \(GraphFileReader.format(v))"))
                    }
                }
            }
            if !graph.queues.isEmpty, op.queue != OperationSpec.defaultQueue, queueIndex[op.queue] == nil {
                let declared = graph.queues.map(\.name).joined(separator: ", ")
                problems.append(GraphProblem(location: location, field: "queue", line: lineOf(index, "queue"),
                                             message: "queue \"\(op.queue)\" is not declared under queues: (declared: \(declared))"))
            }
            var seen = Set<String>()
            for (position, dependency) in op.after.enumerated() {
                let field = "after[\(position)]"
                if !seen.insert(dependency).inserted {
                    problems.append(GraphProblem(location: location, field: field, line: lineOf(index, "after"),
                                                 message: "dependency \"\(dependency)\" is listed twice"))
                } else if indexOfID[dependency] == nil && !dependency.contains("/") {
                    // RUN/OP names another run's operation: the coordinator checks it.
                    problems.append(GraphProblem(location: location, field: field, line: lineOf(index, "after"),
                                                 message: "unknown dependency \"\(dependency)\"" + suggestion(dependency, Array(indexOfID.keys))))
                }
            }
        }

        for cycle in cycles(graph.operations, indexOfID: indexOfID) {
            let first = cycle[0]
            let names = (cycle + [first]).map { "\"\(graph.operations[$0].id)\"" }.joined(separator: " → ")
            problems.append(GraphProblem(location: operationLocation(first, id: graph.operations[first].id), field: "after",
                                         line: lineOf(first, "after"),
                                         message: "dependency cycle: \(names) (each runs after the next; none could ever start)"))
        }
        return problems
    }

    /// One cycle per strongly connected component that has one (`DependencyCycles`), each listing
    /// operation indices from the lowest index in it, in "runs after" order. A duplicate id's
    /// dependencies are not followed; at each step the lowest index is tried first.
    static func cycles(_ operations: [OperationSpec], indexOfID: [String: Int]) -> [[Int]] {
        let dependencies = operations.enumerated().map { index, op in
            indexOfID[op.id] == index ? Set(op.after.compactMap { indexOfID[$0] }).sorted() : []
        }
        return DependencyCycles.find(dependencies)
    }

    /// `; did you mean "x"?` when a close name exists.
    static func suggestion(_ word: String, _ candidates: [String]) -> String {
        let scored = candidates.map { ($0, editDistance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) else { return "" }
        let limit = max(1, min(3, word.count / 3))
        return best.1 <= limit ? "; did you mean \"\(best.0)\"?" : ""
    }

    /// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}
