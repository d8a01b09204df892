import Yams

/// A share key or concurrency key written as a template in a graph file (issue 28 item 3): `{payload.PATH}`
/// is the scalar at PATH (dot-separated keys) of the operation's `payload:` mapping, `{env.NAME}` a
/// variable of a shell operation's `env:`, `{id}` the operation's id; everything else is literal text.
/// So `concurrencyKey: "customer-{payload.customer}"` gives one key per customer without writing each.
/// Braces are reserved: a `{` that starts no placeholder is an error, not text. (The Swift API needs no
/// templates: a typed operation interpolates its own properties.)
public enum KeyTemplate {
    /// Whether `text` has a placeholder to expand.
    public static func isTemplate(_ text: String) -> Bool { text.contains("{") || text.contains("}") }

    /// `text` with its placeholders replaced, or why it cannot be.
    static func expand(_ text: String, id: String, payload: Node?, env: [String: String]?) -> Result<String, RateText.Problem> {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{", let close = rest[open...].firstIndex(of: "}") else {
                return .failure(RateText.Problem("has an unmatched brace in \"\(text)\" (braces are reserved for {payload.FIELD}, {env.NAME} and {id})"))
            }
            out += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            switch value(of: name, id: id, payload: payload, env: env) {
            case .success(let v): out += v
            case .failure(let p): return .failure(p)
            }
            rest = rest[rest.index(after: close)...]
        }
        out += rest
        return .success(out)
    }

    private static func value(of name: String, id: String, payload: Node?, env: [String: String]?) -> Result<String, RateText.Problem> {
        if name == "id" { return .success(id) }
        if name.hasPrefix("env.") {
            let variable = String(name.dropFirst(4))
            guard let env else { return .failure(RateText.Problem("names {\(name)}, but the operation has no env (env is for shell operations)")) }
            guard let v = env[variable] else { return .failure(RateText.Problem("names {\(name)}, but env has no \(variable)")) }
            return .success(v)
        }
        if name.hasPrefix("payload.") {
            let path = name.dropFirst(8).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard var node = payload, node.mapping != nil else {
                return .failure(RateText.Problem("names {\(name)}, but the operation's payload is not a mapping"))
            }
            for (k, field) in path.enumerated() {
                guard let next = node.mapping?[Node(field)] else {
                    let at = path.prefix(k).joined(separator: ".")
                    return .failure(RateText.Problem("names {\(name)}, but the payload\(at.isEmpty ? "" : " at \(at)") has no field \(field)"))
                }
                node = next
            }
            guard let scalar = node.scalar else {
                return .failure(RateText.Problem("names {\(name)}, which is a \(node.mapping != nil ? "mapping" : "list"), not a scalar"))
            }
            return .success(scalar.string)
        }
        return .failure(RateText.Problem("has an unknown placeholder {\(name)} (known: {payload.FIELD}, {env.NAME}, {id})"))
    }
}
