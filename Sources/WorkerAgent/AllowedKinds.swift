import Foundation
import OpSpec
import WorkerRuntime
import ZeroMQ

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
            if EndpointScope.isLoopback(endpoint) {
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
