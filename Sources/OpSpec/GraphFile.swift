import Foundation
import Yams
#if canImport(Glibc)
import Glibc
#endif

/// Reads graph files (YAML, or JSON, which is YAML) in the format of docs/GRAPHS.md.
/// Every problem in a file is reported at once, each with where it is and what is wrong.
public enum GraphFile {
    public static let topLevelFields = ["queues", "operations"]
    public static let queueFields = ["name", "maxConcurrent", "qos", "suspended", "share", "weights", "keyLimit", "keyStrategy",
                                     "rate", "burst", "keyRate", "keyBurst", "ageing"]
    public static let operationFields = [
        "id", "name", "kind", "payload", "command", "env", "cwd", "grace", "after", "priority", "qos",
        "queue", "parts", "policy", "retries", "lossRetries", "timeout", "requires", "barrier",
        "retryDelay", "retryDelayMax", "share", "concurrencyKey",
    ]

    /// Parses `text`; `source` (a path) only labels the error. A text over `maxFileBytes`, or
    /// whose aliases add more than `maxAliasNodes` nodes, is refused before a tree is built.
    public static func parse(_ text: String, source: String? = nil) throws(GraphFileError) -> Graph {
        if let problem = GraphFileLimits.problem(ofSize: text.utf8.count) ?? GraphFileLimits.aliasProblem(in: text) {
            throw GraphFileError(source: source, problems: [problem])
        }
        var reader = GraphFileReader()
        let graph = reader.read(text)
        var problems = reader.problems
        problems += GraphValidation.problems(of: graph, lines: reader.lines)
        if !problems.isEmpty {
            // By line; problems on one line keep the order they were found in.
            problems = problems.enumerated()
                .sorted { ($0.element.line ?? 0, $0.offset) < ($1.element.line ?? 0, $1.offset) }
                .map(\.element)
            throw GraphFileError(source: source, problems: problems)
        }
        return graph
    }

    /// Reads and parses the file at `path`. Reads at most `maxFileBytes` + 1 bytes, so a huge
    /// file, a device or a pipe that never ends is refused at once.
    public static func load(path: String) throws(GraphFileError) -> Graph {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw GraphFileError(source: path, problems: [cannotRead(error)])
        }
        defer { try? handle.close() }
        return try load(handle, source: path)
    }

    /// Reads (at most `maxFileBytes` + 1 bytes) and parses what `handle` gives, e.g. standard input.
    public static func load(_ handle: FileHandle, source: String) throws(GraphFileError) -> Graph {
        func failure(_ problem: GraphProblem) -> GraphFileError { GraphFileError(source: source, problems: [problem]) }
        // A regular file too large is refused by its size, unread.
        var info = stat()
        if fstat(handle.fileDescriptor, &info) == 0, let problem = GraphFileLimits.problem(ofSize: Int(info.st_size)) {
            throw failure(problem)
        }
        let data: Data
        do {
            data = try read(handle, atMost: maxFileBytes + 1)
        } catch {
            throw failure(cannotRead(error))
        }
        if let problem = GraphFileLimits.problem(ofSize: data.count, readSoFar: true) { throw failure(problem) }
        guard let text = String(data: data, encoding: .utf8) else {
            throw failure(GraphProblem(location: "file", message: "cannot read: the file is not UTF-8 text"))
        }
        return try parse(text, source: source)
    }

    static func cannotRead(_ error: any Error) -> GraphProblem {
        let reason = (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
        return GraphProblem(location: "file", message: "cannot read: \(reason)")
    }

    /// Up to `limit` bytes: all of the file if it is shorter.
    static func read(_ handle: FileHandle, atMost limit: Int) throws -> Data {
        var data = Data()
        while data.count < limit, let chunk = try handle.read(upToCount: min(limit - data.count, 1 << 20)), !chunk.isEmpty {
            data.append(chunk)
        }
        return data
    }
}

/// Walks the YAML node tree, collecting problems instead of stopping at the first.
struct GraphFileReader {
    var problems: [GraphProblem] = []
    var lines = GraphValidation.Lines()

    mutating func read(_ text: String) -> Graph {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            problems.append(Self.syntaxProblem(error))
            return Graph()
        }
        guard let root else {
            problems.append(GraphProblem(location: "file", message: "the file is empty; expected a mapping with operations:"))
            return Graph()
        }
        guard let mapping = root.mapping else {
            problems.append(GraphProblem(location: "file", line: root.mark?.line,
                                         message: "expected a mapping with queues: and operations:, got \(Self.describe(root))"))
            return Graph()
        }
        var graph = Graph()
        var sawOperations = false
        for (keyNode, value) in mapping {
            guard let key = keyNode.scalar?.string else {
                problems.append(GraphProblem(location: "file", line: keyNode.mark?.line, message: "a key must be a plain name"))
                continue
            }
            switch key {
            case "queues":
                graph.queues = readList(value, location: "file", field: "queues").enumerated().map { readQueue($1, index: $0) }
            case "operations":
                sawOperations = true
                graph.operations = readList(value, location: "file", field: "operations").enumerated().map { readOperation($1, index: $0) }
            default:
                unknownField(key, known: GraphFile.topLevelFields, location: "file", line: keyNode.mark?.line)
            }
        }
        if !sawOperations {
            problems.append(GraphProblem(location: "file", line: root.mark?.line, message: "missing operations:"))
        }
        return graph
    }

    // MARK: elements

    mutating func readQueue(_ node: Node, index: Int) -> QueueSpec {
        lines.queue.append(node.mark?.line)
        guard let mapping = node.mapping else {
            problems.append(GraphProblem(location: "queues[\(index)]", line: node.mark?.line,
                                         message: "expected a mapping (name:, maxConcurrent:, qos:, suspended:), got \(Self.describe(node))"))
            return QueueSpec(name: "")
        }
        let name = mapping.first { $0.key.scalar?.string == "name" }.flatMap { $0.value.scalar?.string }
        let location = GraphValidation.queueLocation(index, name: name)
        var queue = QueueSpec(name: "")
        for (keyNode, value) in mapping {
            let key = keyNode.scalar?.string ?? ""
            switch key {
            case "name": queue.name = readString(value, location, key) ?? ""
            case "maxConcurrent": queue.maxConcurrent = readInt(value, location, key) ?? -1
            case "qos": queue.qos = readQoS(value, location, key) ?? .default
            case "suspended": queue.suspended = readBool(value, location, key) ?? false
            default:
                if !readFairnessField(key, value, location, into: &queue.fairness) {
                    unknownField(key, known: GraphFile.queueFields, location: location, line: keyNode.mark?.line)
                }
            }
        }
        checkBurst(queue.fairness, mapping, location)
        return queue
    }

    mutating func readOperation(_ node: Node, index: Int) -> OperationSpec {
        lines.operation.append(node.mark?.line)
        var op = OperationSpec(id: "", kind: "")
        guard let mapping = node.mapping else {
            problems.append(GraphProblem(location: "operations[\(index)]", line: node.mark?.line,
                                         message: "expected a mapping (id:, kind:, …), got \(Self.describe(node))"))
            lines.brokenOperations.insert(index)
            return op
        }
        let rawID = mapping.first { $0.key.scalar?.string == "id" }.flatMap { $0.value.scalar?.string }
        let location = GraphValidation.operationLocation(index, id: rawID)
        var name: String?
        var kind: String?
        var payload: (bytes: [UInt8], node: Node)?
        var command: (program: ShellCommand.Program, node: Node)?
        var env: [String: String]?, cwd: String?, grace: Double?
        var shellOnly: [(field: String, line: Int?)] = []
        var keyNodes: [String: Node] = [:]   // share, concurrencyKey: templates are expanded once payload and env are read

        for (keyNode, value) in mapping {
            let key = keyNode.scalar?.string ?? ""
            if GraphFile.operationFields.contains(key) { lines.fields["\(index).\(key)"] = value.mark?.line }
            switch key {
            case "id": op.id = readString(value, location, key) ?? ""
            case "name": name = readString(value, location, key)
            case "kind": kind = readString(value, location, key)
            case "payload": if let bytes = readPayload(value, location, key) { payload = (bytes, value) }
            case "command":
                if let program = readCommand(value, location, key) { command = (program, value) }
            case "env":
                env = readStringMap(value, location, key); shellOnly.append((key, value.mark?.line))
            case "cwd":
                cwd = readString(value, location, key); shellOnly.append((key, value.mark?.line))
            case "grace":
                grace = readNumber(value, location, key)
                if let g = grace, g < 0 { problem(location, key, value, "must not be negative, got \(Self.format(g))") }
                shellOnly.append((key, value.mark?.line))
            case "after": op.after = readStringList(value, location, key) ?? []
            case "priority": op.priority = readPriority(value, location, key) ?? .normal
            case "qos": op.qos = readQoS(value, location, key)
            case "queue": op.queue = readString(value, location, key) ?? OperationSpec.defaultQueue
            case "parts": op.parts = readInt(value, location, key) ?? 1
            case "policy": op.policy = readPolicy(value, location, key) ?? .finished
            case "retries": op.retries = readInt(value, location, key) ?? 0
            case "lossRetries": op.lossRetries = readInt(value, location, key) ?? OperationSpec.defaultLossRetries
            case "timeout": op.timeout = readNumber(value, location, key)
            case "retryDelay": op.retryDelay = readNumber(value, location, key)
            case "retryDelayMax": op.retryDelayMax = readNumber(value, location, key)
            case "requires": op.requires = readStringList(value, location, key) ?? []
            case "barrier": op.barrier = readBool(value, location, key) ?? false
            case "share": op.share = readKey(value, location, key); keyNodes[key] = value
            case "concurrencyKey": op.concurrencyKey = readKey(value, location, key); keyNodes[key] = value
            default: unknownField(key, known: GraphFile.operationFields, location: location, line: keyNode.mark?.line)
            }
        }
        op.givenName = name

        // kind, payload and command: `command` makes a shell operation and is its payload.
        if let command {
            if let payload {
                problems.append(GraphProblem(location: location, field: "command", line: payload.node.mark?.line,
                                             message: "has both command and payload; a shell operation's payload is built from command, env, cwd and grace, so give one of them"))
            }
            if let kind, kind != BuiltinKind.shell {
                problems.append(GraphProblem(location: location, field: "kind", line: command.node.mark?.line,
                                             message: "command is only for kind shell, but kind is \"\(kind)\""))
            }
            op.kind = BuiltinKind.shell
            op.payload = ShellCommand(command.program, env: env ?? [:], cwd: cwd, grace: grace).encoded()
        } else {
            for (field, line) in shellOnly {
                problems.append(GraphProblem(location: location, field: field, line: line,
                                             message: "\(field) is only valid together with command"))
            }
            // "?" when missing or invalid: reported here, so the structural check need not repeat it.
            op.kind = kind ?? "?"
            op.payload = payload?.bytes ?? []
            if kind == nil, !mapping.contains(where: { ["command", "kind"].contains($0.key.scalar?.string) }) {
                problems.append(GraphProblem(location: location, field: "kind", line: node.mark?.line,
                                             message: "missing kind (or command, for a shell operation)"))
            }
            checkBuiltinPayload(op, location: location, line: payload?.node.mark?.line ?? node.mark?.line)
        }
        if let text = op.share, let n = keyNodes["share"] {
            op.share = expandKey(text, op: op, payload: payload?.node, env: command == nil ? nil : env ?? [:], location, "share", n)
        }
        if let text = op.concurrencyKey, let n = keyNodes["concurrencyKey"] {
            op.concurrencyKey = expandKey(text, op: op, payload: payload?.node, env: command == nil ? nil : env ?? [:], location, "concurrencyKey", n)
        }
        return op
    }

    /// Built-in kinds whose payload format is known are checked here, for an early message.
    mutating func checkBuiltinPayload(_ op: OperationSpec, location: String, line: Int?) {
        do {
            switch op.kind {
            case BuiltinKind.sleep, BuiltinKind.burn: _ = try SleepPayload.decode(op.payload, kind: op.kind)
            case BuiltinKind.shell:
                if op.payload.isEmpty {
                    problems.append(GraphProblem(location: location, field: "command", line: line,
                                                 message: "a shell operation needs command (a string or an argv list)"))
                } else {
                    _ = try ShellCommand.decode(op.payload)
                }
            default: break
            }
        } catch {
            problems.append(GraphProblem(location: location, field: "payload", line: line, message: error.description))
        }
    }

    // MARK: fields

    mutating func problem(_ location: String, _ field: String, _ node: Node, _ message: String) {
        problems.append(GraphProblem(location: location, field: field, line: node.mark?.line, message: message))
    }

    mutating func unknownField(_ key: String, known: [String], location: String, line: Int?) {
        problems.append(GraphProblem(location: location, field: key, line: line,
                                     message: "unknown field \"\(key)\"" + GraphValidation.suggestion(key, known)
                                        + " (known: \(known.joined(separator: ", ")))"))
    }

    mutating func readList(_ node: Node, location: String, field: String) -> [Node] {
        if let sequence = node.sequence { return Array(sequence) }
        if node.tagName == .null { return [] }
        problem(location, field, node, "expected a list, got \(Self.describe(node))")
        return []
    }

    /// Strings; whole numbers are taken as their text (so `id: 7` works), nothing else.
    mutating func readString(_ node: Node, _ location: String, _ field: String) -> String? {
        if let scalar = node.scalar, node.tagName == .str || node.tagName == .int { return scalar.string }
        problem(location, field, node, "expected a string, got \(Self.describe(node))")
        return nil
    }

    mutating func readInt(_ node: Node, _ location: String, _ field: String) -> Int? {
        if node.tagName == .int, let value = node.int { return value }
        if node.tagName == .int {
            problem(location, field, node, "number \(node.scalar?.string ?? "") is out of range")
        } else {
            problem(location, field, node, "expected a whole number, got \(Self.describe(node))")
        }
        return nil
    }

    mutating func readNumber(_ node: Node, _ location: String, _ field: String) -> Double? {
        if node.tagName == .int, let value = node.int { return Double(value) }
        if node.tagName == .float, let value = node.float, value.isFinite { return value }
        problem(location, field, node, "expected a number of seconds, got \(Self.describe(node))")
        return nil
    }

    mutating func readBool(_ node: Node, _ location: String, _ field: String) -> Bool? {
        if node.tagName == .bool, let value = node.bool { return value }
        problem(location, field, node, "expected true or false, got \(Self.describe(node))")
        return nil
    }

    mutating func readStringList(_ node: Node, _ location: String, _ field: String) -> [String]? {
        guard let sequence = node.sequence else {
            if node.tagName == .null { return [] }
            problem(location, field, node, "expected a list of strings, got \(Self.describe(node))")
            return nil
        }
        var result: [String] = []
        for (position, element) in sequence.enumerated() {
            if let text = readString(element, location, "\(field)[\(position)]") { result.append(text) }
        }
        return result
    }

    mutating func readStringMap(_ node: Node, _ location: String, _ field: String) -> [String: String]? {
        guard let mapping = node.mapping else {
            problem(location, field, node, "expected a mapping of names to strings, got \(Self.describe(node))")
            return nil
        }
        var result: [String: String] = [:]
        for (key, value) in mapping {
            guard let name = key.scalar?.string, !name.isEmpty, !name.contains("=") else {
                problem(location, field, key, "variable names must be non-empty and contain no \"=\"")
                continue
            }
            if let scalar = value.scalar, [.str, .int, .float, .bool].contains(value.tagName) {
                result[name] = scalar.string
            } else {
                problem(location, "\(field).\(name)", value, "expected a string, got \(Self.describe(value))")
            }
        }
        return result
    }

    mutating func readPriority(_ node: Node, _ location: String, _ field: String) -> OperationPriority? {
        let expected = "expected one of \(OperationPriority.allNames.joined(separator: ", ")) or -8, -4, 0, 4, 8"
        if node.tagName == .int, let raw = node.int {
            if let priority = OperationPriority(rawValue: raw) { return priority }
            problem(location, field, node, "invalid priority \(raw); \(expected)")
            return nil
        }
        if node.tagName == .str, let text = node.scalar?.string {
            if let priority = OperationPriority.allCases.first(where: { $0.name == text }) { return priority }
            problem(location, field, node, "invalid priority \"\(text)\"; \(expected)"
                        + GraphValidation.suggestion(text, OperationPriority.allNames))
            return nil
        }
        problem(location, field, node, "invalid priority: \(expected), got \(Self.describe(node))")
        return nil
    }

    mutating func readQoS(_ node: Node, _ location: String, _ field: String) -> OperationQoS? {
        if node.tagName == .str, let text = node.scalar?.string {
            if let qos = OperationQoS(name: text) { return qos }
            problem(location, field, node, "invalid qos \"\(text)\"; expected one of \(OperationQoS.allNames.joined(separator: ", "))"
                        + GraphValidation.suggestion(text, OperationQoS.allNames))
            return nil
        }
        problem(location, field, node, "invalid qos: expected one of \(OperationQoS.allNames.joined(separator: ", ")), got \(Self.describe(node))")
        return nil
    }

    mutating func readPolicy(_ node: Node, _ location: String, _ field: String) -> DependencyPolicy? {
        if node.tagName == .str, let text = node.scalar?.string, let policy = DependencyPolicy(rawValue: text) { return policy }
        let shown = node.tagName == .str ? "\"\(node.scalar?.string ?? "")\"" : Self.describe(node)
        problem(location, field, node, "invalid policy \(shown); expected finished or succeeded")
        return nil
    }

    /// A string or argv list.
    mutating func readCommand(_ node: Node, _ location: String, _ field: String) -> ShellCommand.Program? {
        if node.tagName == .str, let text = node.scalar?.string {
            guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                problem(location, field, node, "command is empty")
                return nil
            }
            return .script(text)
        }
        if node.sequence != nil {
            guard let argv = readStringList(node, location, field) else { return nil }
            guard let first = argv.first, !first.isEmpty else {
                problem(location, field, node, "argv list is empty or starts with an empty string")
                return nil
            }
            return .argv(argv)
        }
        problem(location, field, node, "expected a command string or an argv list, got \(Self.describe(node))")
        return nil
    }

    /// Scalars become their text's bytes; mappings and lists become JSON.
    mutating func readPayload(_ node: Node, _ location: String, _ field: String) -> [UInt8]? {
        if node.tagName == .null { return [] }
        if let scalar = node.scalar { return Array(scalar.string.utf8) }
        var json = ""
        guard Self.writeJSON(node, into: &json) else {
            problem(location, field, node, "payload contains a value that cannot be written as JSON")
            return nil
        }
        return Array(json.utf8)
    }

    static func writeJSON(_ node: Node, into out: inout String) -> Bool {
        switch node {
        case .scalar(let scalar):
            switch node.tagName {
            case .int, .float: out += scalar.string
            case .bool: out += (node.bool ?? false) ? "true" : "false"
            case .null: out += "null"
            default: out += jsonString(scalar.string)
            }
            return true
        case .sequence(let sequence):
            out += "["
            for (i, element) in sequence.enumerated() {
                if i > 0 { out += "," }
                guard writeJSON(element, into: &out) else { return false }
            }
            out += "]"
            return true
        case .mapping(let mapping):
            out += "{"
            for (i, (key, value)) in mapping.enumerated() {
                guard let name = key.scalar?.string else { return false }
                if i > 0 { out += "," }
                out += jsonString(name) + ":"
                guard writeJSON(value, into: &out) else { return false }
            }
            out += "}"
            return true
        case .alias:
            return false
        }
    }

    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    // MARK: descriptions

    static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            switch node.tagName {
            case .null: return "nothing (null)"
            case .bool: return "a boolean (\(scalar.string))"
            case .int: return "a whole number (\(scalar.string))"
            case .float: return "a number (\(scalar.string))"
            default: return "a string (\"\(scalar.string)\")"
            }
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func syntaxProblem(_ error: any Error) -> GraphProblem {
        if let yaml = error as? YamlError {
            switch yaml {
            case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
                return GraphProblem(location: "file", line: mark.line, message: "not valid YAML or JSON: \(problem) at column \(mark.column)")
            case .duplicatedKeysInMapping(let duplicates, let context):
                return GraphProblem(location: "file", line: context.mark.line,
                                    message: "a mapping has the same key twice: \(duplicates.joined(separator: ", "))")
            default:
                break
            }
        }
        return GraphProblem(location: "file", message: "not valid YAML or JSON: \(error)")
    }
}

extension Node {
    /// The resolved tag's name (Yams keeps `Tag.name` internal).
    var tagName: Tag.Name { Tag.Name(rawValue: tag.rawValue) }
}
