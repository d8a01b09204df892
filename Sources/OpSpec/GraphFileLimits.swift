import Foundation
// libyaml, as built by Yams (its C target). Yams composes a tree but does not show the events
// it is made from; only the events can measure an alias bomb without setting it off.
import CYaml

extension GraphFile {
    /// The largest graph file read, in bytes: 64 MiB. A SUBMIT carries at most 16 MiB (8,192
    /// operations), so a file that large already goes as many batches; a quarter of a million
    /// operations of 256 bytes fit. Reading costs about 12 times the file's size in memory (a 60 MiB
    /// file of 221,000 operations: 704 MiB), so 64 MiB keeps `opctl` under a gigabyte; anything
    /// far larger is more likely a mistake (a data file, /dev/zero) than a graph.
    public static let maxFileBytes = 64 << 20

    /// The most nodes that aliases may add to a file, 1,000,000. A YAML alias (`*name`) stands
    /// for a full copy of the node its anchor (`&name`) marks, and an anchor may hold aliases, so
    /// a few hundred bytes can stand for billions of nodes ("billion laughs"). Sharing settings
    /// (`env: *common` in 10,000 operations) stays far below the limit.
    public static let maxAliasNodes = 1_000_000
}

/// Checks the limits before anything is built from the text.
enum GraphFileLimits {
    /// `readSoFar`: `bytes` is where reading stopped, not the size (a pipe, a device).
    static func problem(ofSize bytes: Int, readSoFar: Bool = false) -> GraphProblem? {
        guard bytes > GraphFile.maxFileBytes else { return nil }
        let size = readSoFar ? "stopped reading at \(grouped(bytes)) bytes" : "\(grouped(bytes)) bytes"
        return GraphProblem(location: "file", message: "graph file too large: more than \(mebibytes(GraphFile.maxFileBytes)) "
                                + "(\(size)), the limit for a graph file; split it into several files")
    }

    /// Walks libyaml's events — no nodes are built — adding up how many nodes each alias stands
    /// for, and stops at the alias that takes the sum past `limit`. Syntax errors are left to the
    /// composer, which reports them with their line and column.
    static func aliasProblem(in text: String, limit: Int = GraphFile.maxAliasNodes) -> GraphProblem? {
        // Every alias starts with "*"; most files have none and need no second parse.
        guard text.utf8.contains(UInt8(ascii: "*")) else { return nil }
        var text = text   // withUTF8 is mutating: it may first make the string contiguous UTF-8
        return text.withUTF8 { buffer -> GraphProblem? in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return nil }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)

            var size: [String: Int] = [:]          // anchor → nodes in a copy of what it marks
            var open: [(anchor: String?, nodes: Int)] = []   // collections not yet ended
            var added = 0                          // nodes that aliases add, so far
            // A finished node: its size counts in the collection around it, and under its anchor.
            // Anchors count once they are complete, as in Yams (an alias inside its own anchor is undefined).
            func finished(_ nodes: Int, anchor: String?) {
                if let anchor { size[anchor] = nodes }
                if !open.isEmpty { open[open.count - 1].nodes += nodes }
            }
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    finished(1, anchor: string(event.data.scalar.anchor))
                case YAML_SEQUENCE_START_EVENT:
                    open.append((string(event.data.sequence_start.anchor), 1))
                case YAML_MAPPING_START_EVENT:
                    open.append((string(event.data.mapping_start.anchor), 1))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    if let done = open.popLast() { finished(done.nodes, anchor: done.anchor) }
                case YAML_ALIAS_EVENT:
                    let name = string(event.data.alias.anchor) ?? ""
                    let nodes = size[name] ?? 0      // undefined: the composer reports it
                    // Both sides are at most the file's nodes plus `limit`: no overflow.
                    added += nodes
                    if added > limit {
                        return GraphProblem(location: "file", line: Int(event.start_mark.line) + 1,
                                            message: "too many aliases: with *\(name) here, aliases add more than \(grouped(limit)) nodes "
                                                + "(the limit; each *alias counts as a full copy of what its &anchor marks)")
                    }
                    finished(nodes, anchor: nil)
                default:
                    continue
                }
            }
        }
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    static func grouped(_ value: Int) -> String {
        let digits = Array(String(value))
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return out
    }

    static func mebibytes(_ bytes: Int) -> String { "\(bytes >> 20) MiB" }
}
