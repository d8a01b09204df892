import Foundation
import OpModel
import ZeroMQ

/// What one key may do (docs/DEPLOY.md "Keys and roles"; PROTOCOL.md §12).
public enum AccessRole: String, Sendable, CaseIterable, Comparable {
    /// May register as a worker (with tags its `tag:` scopes allow) and report on the work it is sent.
    case worker
    /// May submit, cancel, re-prioritise and wait on work in the queues its scopes name; reads status.
    case submit
    /// Read-only: status, why, runs, workers, watch, wait.
    case view
    /// Everything: every queue, queue limits and suspension, cancelling anyone's work.
    case admin
    /// Another coordinator of the group: may follow this one's journal as a hot standby (FOLLOW,
    /// REPLICA-ACK; issue 29). Not implied by `admin`: a person's key is not a replica's.
    case coordinator

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// A key's holder as the allow file names it.
public struct Principal: Sendable, Equatable {
    public var name: String
    public var key: String            // Z85 public key
    public var roles: Set<AccessRole>
    /// Globs over queue names (`submit`); `*` is every queue.
    public var queues: [Glob]
    /// Globs over the placement tags a `worker` may register with; empty = any tag.
    public var tags: [Glob]

    public func has(_ role: AccessRole) -> Bool { roles.contains(role) || roles.contains(.admin) }

    /// May this principal submit to, cancel in or re-prioritise queue `name`?
    public func mayUse(queue name: String) -> Bool {
        roles.contains(.admin) || (roles.contains(.submit) && queues.contains { $0.matches(name) })
    }

    /// The queues its requests act within, for the core to stop cascades and inheritance at; nil
    /// (an admin) = every queue.
    public var requestScope: QueueScope? { roles.contains(.admin) ? nil : QueueScope(queues) }

    /// May a worker of this principal register with `tag`?
    public func mayClaim(tag: String) -> Bool {
        tags.isEmpty || tags.contains { $0.matches(tag) }
    }

    /// The tag every worker of this principal carries, so submitters can pin ops to it (`requires`).
    public var pinTag: String { Principal.pinTagPrefix + name }
    public static let pinTagPrefix = "key:"

    /// The coordinator's own HTTP side, connected in-process: reads only.
    static let httpSide = Principal(name: "http", key: "", roles: [.view], queues: [], tags: [])
}

/// The allow file: one line per key, `PUBLIC-KEY NAME ROLES [SCOPE…]` (roles comma-separated; scopes are
/// globs over queue names, or `tag:GLOB` for the tags a worker may register with). A word starting
/// with `#` begins a comment, except a key in first place (Z85 keys may contain `#`).
public struct AllowList: Sendable, Equatable {
    public private(set) var byKey: [String: Principal] = [:]
    public var count: Int { byKey.count }
    public init() {}

    public func principal(key: String) -> Principal? { byKey[key] }

    /// Parses the file's text; `source` names it in errors ("allow.txt line 3: …").
    public static func parse(_ text: String, source: String) throws(AllowListError) -> AllowList {
        var list = AllowList()
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // A word starting with `#` begins a comment, except a key in first place (Z85 has `#` in it).
            var words = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            if let c = words.indices.first(where: { words[$0].hasPrefix("#") && !($0 == 0 && words[0].utf8.count == 40 && Self.isZ85(words[0])) }) {
                words.removeSubrange(c...)
            }
            guard !words.isEmpty else { continue }
            func fail(_ why: String) -> AllowListError { AllowListError(source: source, line: n + 1, message: why) }
            guard words.count >= 3 else { throw fail("expected 'PUBLIC-KEY NAME ROLES [SCOPE…]', got \(words.count) word(s)") }
            let key = words[0]
            guard key.utf8.count == 40, Self.isZ85(key) else {
                throw fail("'\(key.prefix(48))' is not a public key (40 Z85 characters, the content of a .pub file)")
            }
            guard list.byKey[key] == nil else { throw fail("key \(key.prefix(8))… is listed twice") }
            let name = words[1]
            guard name.utf8.count <= 128, !name.contains(",") else { throw fail("name '\(name.prefix(48))' is too long or has a comma") }
            var roles = Set<AccessRole>()
            for r in words[2].split(separator: ",") {
                guard let role = AccessRole(rawValue: String(r)) else {
                    throw fail("unknown role '\(r)' (roles: \(AccessRole.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                roles.insert(role)
            }
            var queues: [Glob] = [], tags: [Glob] = []
            for scope in words.dropFirst(3) {
                if scope.hasPrefix("tag:") {
                    let t = String(scope.dropFirst(4))
                    guard !t.isEmpty else { throw fail("'tag:' needs a tag or a glob after it") }
                    tags.append(Glob(t))
                } else {
                    queues.append(Glob(scope))
                }
            }
            if roles.contains(.submit), !roles.contains(.admin), queues.isEmpty {
                throw fail("role 'submit' needs the queues it may use (globs such as team-a/* or * for every queue)")
            }
            if !tags.isEmpty, !roles.contains(.worker) { throw fail("'tag:' scopes apply to the 'worker' role, which '\(name)' does not have") }
            list.byKey[key] = Principal(name: name, key: key, roles: roles, queues: queues, tags: tags)
        }
        return list
    }

    /// Reads and parses `path`, through the reader that guards key files: a file others may write is
    /// refused (whoever can write it can add an admin key).
    public static func load(_ path: String) throws(AllowListError) -> AllowList {
        let text: String
        do { text = try KeyFile.contents(of: path, as: .allowFile) } catch {
            throw AllowListError(source: path, line: 0, message: error.description, whole: true)
        }
        return try parse(text, source: path)
    }

    private static let z85 = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
    private static func isZ85(_ s: String) -> Bool { s.allSatisfy { z85.contains($0) } }
}

public struct AllowListError: Error, Sendable, Equatable, CustomStringConvertible {
    public var source: String
    public var line: Int
    public var message: String
    /// The message names the file itself (a permission or read problem).
    public var whole = false
    public init(source: String, line: Int, message: String, whole: Bool = false) {
        self.source = source; self.line = line; self.message = message; self.whole = whole
    }
    public var description: String {
        whole ? message : line > 0 ? "\(source) line \(line): \(message)" : "\(source): \(message)"
    }
}
