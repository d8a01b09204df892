import Foundation
import OpSpec
import WorkerRuntime

/// Which handler kinds a worker runs (opworker --allow-kinds), and why, for the start-up log.
///
/// `shell` runs any command as the worker's user, so it is off by default when the coordinator is
/// reached over a network: whoever can submit to that coordinator (or pose as it) could run
/// anything here. On loopback (the demo, tests, one machine) everything stays on.
public struct AllowedKinds: Equatable, Sendable {
    /// Kinds this worker runs and announces, sorted.
    public var allowed: [String]
    /// Registered kinds it refuses, sorted.
    public var refused: [String]
    /// One line for the log: what is allowed and why.
    public var why: String

    /// - Parameters:
    ///   - list: `--allow-kinds` (comma-separated kinds, or `all`); nil when not given.
    ///   - endpoint: the coordinator endpoint the worker connects to.
    ///   - registered: every kind the worker has a handler for.
    public static func decide(_ list: String?, endpoint: String, registered: [String]) throws -> AllowedKinds {
        let all = registered.sorted()
        guard let list else {
            if Endpoint.isLoopback(endpoint) {
                return AllowedKinds(allowed: all, refused: [], why: "every kind: the coordinator \(endpoint) is on loopback (no --allow-kinds)")
            }
            if !all.contains(BuiltinKind.shell) {
                return AllowedKinds(allowed: all, refused: [], why: "every kind (no --allow-kinds; this worker has no shell kind)")
            }
            return AllowedKinds(allowed: all.filter { $0 != BuiltinKind.shell }, refused: [BuiltinKind.shell],
                                why: "every kind but shell: the coordinator \(endpoint) is not on loopback, and shell runs any "
                                    + "command; pass --allow-kinds all (or shell,…) to run shell operations")
        }
        let named = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if named == ["all"] { return AllowedKinds(allowed: all, refused: [], why: "every kind (--allow-kinds all)") }
        if named.isEmpty { throw LimitsError("--allow-kinds needs kinds (comma-separated) or 'all'") }
        if let unknown = named.first(where: { !all.contains($0) }) {
            throw LimitsError("--allow-kinds: this worker has no kind '\(unknown)' (it has: \(all.joined(separator: ", ")); or 'all')")
        }
        let allowed = Set(named)
        return AllowedKinds(allowed: all.filter(allowed.contains), refused: all.filter { !allowed.contains($0) },
                            why: "the kinds given by --allow-kinds")
    }

    /// The failure text of a part of a refused kind that still arrives.
    public static func refusal(_ kind: String) -> String {
        "kind '\(kind)' is not allowed on this worker (opworker --allow-kinds)"
    }
}

/// ZeroMQ endpoint strings, as far as the worker's defaults need them.
public enum Endpoint {
    /// Whether `endpoint` stays on this machine: `ipc://`, `inproc://`, or `tcp://` to `localhost`,
    /// `127.x.x.x` or `::1` (a `tcp://source;host:port` form is judged by its host).
    public static func isLoopback(_ endpoint: String) -> Bool {
        let lower = endpoint.lowercased()
        if lower.hasPrefix("ipc://") || lower.hasPrefix("inproc://") { return true }
        guard lower.hasPrefix("tcp://") else { return false }
        var address = lower.dropFirst("tcp://".count)
        if let semicolon = address.lastIndex(of: ";") { address = address[address.index(after: semicolon)...] }
        let host: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { return false }
            host = address[address.index(after: address.startIndex)..<close]
        } else if let colon = address.lastIndex(of: ":") {
            host = address[..<colon]
        } else {
            host = address
        }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
