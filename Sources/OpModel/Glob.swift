// Patterns over names: a key's queue scopes and tag scopes (PROTOCOL.md §12), and the scope a
// request acts within (`QueueScope`). Here, below the core, so the core can stop a cascade or a
// priority inheritance at the edge of the caller's scopes.

/// A shell-style pattern: `*` any run of characters (`/` included), `?` one character.
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    private let chars: [Character]
    public init(_ pattern: String) { self.pattern = pattern; chars = Array(pattern) }
    public var description: String { pattern }

    public func matches(_ text: String) -> Bool {
        if pattern == "*" { return true }
        let t = Array(text)
        var p = 0, s = 0, star = -1, mark = 0
        while s < t.count {
            if p < chars.count, chars[p] == "?" || chars[p] == t[s] { p += 1; s += 1 }
            else if p < chars.count, chars[p] == "*" { star = p; mark = s; p += 1 }
            else if star >= 0 { p = star + 1; mark += 1; s = mark }
            else { return false }
        }
        while p < chars.count, chars[p] == "*" { p += 1 }
        return p == chars.count
    }
}

/// The queues a request may act on: the caller's `submit` scopes. Requests without one (an admin, or a
/// coordinator without keys) may act on every queue.
public struct QueueScope: Sendable, Equatable {
    public var globs: [Glob]
    public init(_ globs: [Glob]) { self.globs = globs }
    public func allows(queue name: String) -> Bool { globs.contains { $0.matches(name) } }
}
