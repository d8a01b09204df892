import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The environment of a `shell` child. The worker's own environment is not inherited — it may
/// hold secrets (tokens, cloud credentials) that operations must not see — so a child gets only:
/// the variables in `kept` that the worker has set (with `PATH` defaulting to `defaultPath`;
/// `HOME`, `USER`, `LOGNAME` of the run-as user when there is one), the worker's variables named by
/// `passed` (opworker --pass-env), then the operation's `env`, then the `OPQ_*` variables of the run.
/// Later entries win. docs/HANDLERS.md, "Environment", lists the same.
public struct ChildEnvironment: Sendable, Equatable {
    /// Names or globs (`*`, `?`, `[…]`, as in fnmatch) of worker variables passed on as they are.
    public var passed: [String]

    public init(passing passed: [String] = []) {
        self.passed = passed
    }

    /// Worker variables kept when set: harmless, and many programs misbehave without them.
    public static let kept = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"]
    /// `PATH` when the worker has none.
    public static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// - Parameters:
    ///   - worker: the worker's environment.
    ///   - user: the account children run as (`--run-as`); its home and name replace the worker's.
    ///   - payload: the operation's `env`.
    ///   - run: `OPQ_OP_ID`, `OPQ_TMPDIR`, `OPQ_INPUT_…` and the rest, set by the handler.
    public func build(worker: [String: String], user: RunAsUser? = nil,
                      payload: [String: String] = [:], run: [String: String] = [:]) -> [String: String] {
        var result: [String: String] = [:]
        for name in Self.kept { if let value = worker[name] { result[name] = value } }
        if result["PATH", default: ""].isEmpty { result["PATH"] = Self.defaultPath }
        if let user {
            result["HOME"] = user.home
            result["USER"] = user.name
            result["LOGNAME"] = user.name
        }
        for (name, value) in worker where passes(name) { result[name] = value }
        result.merge(payload) { _, own in own }
        result.merge(run) { _, own in own }
        return result
    }

    /// Whether `--pass-env` names this variable.
    public func passes(_ name: String) -> Bool {
        passed.contains { fnmatch($0, name, 0) == 0 }
    }

    /// `--pass-env`'s comma-separated list.
    public static func parse(_ list: String) -> ChildEnvironment {
        ChildEnvironment(passing: list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }
}
