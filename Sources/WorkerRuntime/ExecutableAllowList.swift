#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The executables argv-form `shell` ops may start (opworker --shell-allow): files, and directories
/// (an entry ending in `/`) whose files at any depth are allowed.
///
/// Paths are compared canonical (realpath: no symlinks, `.` or `..`) on both sides, so
/// `/usr/bin/../../tmp/x` or a symlink in a writable place cannot pass for an allowed file,
/// and an allowed `/usr/bin/python3` that links to `python3.11` is still matched.
public struct ExecutableAllowList: Sendable, Equatable {
    /// Canonical absolute paths; directories end in `/`.
    public let entries: [String]

    /// Entries that are already canonical (tests).
    public init(entries: [String]) {
        self.entries = entries
    }

    /// `--shell-allow`'s comma-separated list. Every entry must be absolute and exist.
    public init(parsing list: String) throws {
        let given = list.split(separator: ",").map(String.init).filter { !$0.isEmpty }
        guard !given.isEmpty else { throw LimitsError("--shell-allow needs at least one absolute path") }
        entries = try given.map { entry in
            guard entry.hasPrefix("/") else { throw LimitsError("--shell-allow \(entry): not an absolute path") }
            guard let canonical = Self.canonical(entry) else {
                throw LimitsError("--shell-allow \(entry): \(String(cString: strerror(errno)))")
            }
            return entry.hasSuffix("/") ? (canonical == "/" ? "/" : canonical + "/") : canonical
        }
    }

    /// Whether the canonical path `path` is an entry or lies under a directory entry.
    public func allows(canonical path: String) -> Bool {
        entries.contains { $0.hasSuffix("/") ? path.hasPrefix($0) : path == $0 }
    }

    /// Why `program` (a path to an existing file) may not run, or nil if it may.
    public func refusal(for program: String) -> String? {
        guard let path = Self.canonical(program) else { return "cannot resolve \(program): \(String(cString: strerror(errno)))" }
        if allows(canonical: path) { return nil }
        return "executable \(path == program ? program : "\(program) (\(path))") is not allowed on this worker (opworker --shell-allow)"
    }

    /// realpath(3), or nil (errno set) if the path does not exist.
    public static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
