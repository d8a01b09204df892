import Glibc

/// What can stop the journal from opening or recovering. The descriptions are written for the operator:
/// each says what happened, to which file, and what to do.
public enum JournalError: Error, Equatable, CustomStringConvertible {
    /// Another process holds the state directory's `LOCK` (`pid` nil: it has not written its pid yet).
    case locked(directory: String, pid: Int32?)
    /// A file system call failed: `operation` ("create directory", "open", …) on `path`, with `errno`.
    case io(path: String, operation: String, errno: Int32)
    /// A damaged record, file header or missing segment. `file` is the path, `offset` the byte where the
    /// damaged record (or header: 0) starts.
    case corrupt(file: String, offset: Int, reason: String)
    /// Records that were durable and acknowledged to clients are missing (not a torn write: see
    /// `JournalLoss`). Nothing was changed.
    case lost(JournalLoss)

    public var description: String {
        switch self {
        case .locked(let directory, let pid):
            let who = pid.map { "pid \($0)" } ?? "pid not yet written"
            return "state directory \(directory) is in use by another opcoord (\(who)): stop it, or give this one another --state-dir"
        case .io(let path, let operation, let e):
            return "cannot \(operation) \(path): \(errnoText(e)); check that the state directory exists or can be created, "
                + "is writable by this user and its disk has space, or give another --state-dir"
        case .corrupt(let file, let offset, let reason):
            return "journal file \(file) is damaged at offset \(offset): \(reason). Start with --salvage to recover the records "
                + "before it; the rest is moved to \(parentDirectory(of: file))/salvaged-<timestamp>/"
        case .lost(let loss):
            return "journal file \(loss.file) has lost acknowledged records (not a torn write: clients were told of them): \(loss). "
                + "Restore the state directory from a backup, or start with --salvage to go on without them "
                + "(what follows is moved to \(parentDirectory(of: loss.file))/salvaged-<timestamp>/ and the loss is logged)"
        }
    }
}

/// "No space left on device (errno 28)".
func errnoText(_ e: Int32) -> String {
    String(cString: strerror(e)) + " (errno \(e))"
}

func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

func lastComponent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
}
