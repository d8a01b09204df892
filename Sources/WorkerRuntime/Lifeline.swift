import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ties every `shell` child's process group to the life of this worker process: when the worker
/// dies — however, SIGKILL and the OOM killer included — each group is killed within milliseconds.
///
/// How: one pipe per worker process (a socket pair on Linux, which behaves the same here). Only the
/// worker holds one end (close-on-exec, never written, never closed); every child gets the other
/// end as its stdin. The child is not the command itself but `/bin/sh` running `script`, which
///  1. moves that end to fd 3 and gives the command `/dev/null` as stdin, as before;
///  2. starts a watcher in the background, in the child's process group, that blocks reading fd 3.
///     Nothing is ever written, so the read only returns at end of file — when the worker's end
///     closes, which is when the worker process is gone. The watcher then runs `kill -s KILL 0`:
///     every process of its group, the command and whatever it started, dies with it;
///  3. `exec`s the command, which keeps the pid, so the child still leads its group.
///
/// Why not the alternatives:
/// - `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process, and
///   swift-subprocess forks from whichever cooperative-pool thread runs the handler (such threads
///   can come and go); it is not inherited by the child's own children either (`sh -c 'a; b'`
///   would leave `a` running), and swift-subprocess has no pre-exec hook to set it. `setpriv
///   --pdeathsig` has the same thread and grandchild problems.
/// - A subreaper (`PR_SET_CHILD_SUBREAPER`) only changes who adopts orphans while the worker lives;
///   when the worker itself dies they go to PID 1 and keep running.
/// - A watchdog outside the group, told about each child after it was spawned, misses a child
///   spawned just before the worker died. Here the child's end is inherited at spawn, so there is
///   no such gap: a watcher that starts after the worker died sees end of file at once.
/// - cgroups need a delegated hierarchy, which a worker usually does not have.
///
/// The watcher is started with a double fork (`( ( … ) & )`), so it is not a child of the command:
/// a command that waits for all its children is not kept waiting by it. It ignores SIGTERM, SIGINT
/// and SIGHUP so that it outlives a cancel's SIGTERM (the worker could die during the grace period);
/// the handler's SIGKILL to the group at the end of every run ends it. While it lives, the group id
/// cannot be reused, so that final SIGKILL cannot reach an unrelated group. Orphaned and killed, it
/// is reaped by PID 1 (tini in the container image, systemd otherwise), like any background job a
/// command left behind.
///
/// The cost is one `sh` exec and two forks per run (measured in docs/HANDLERS.md).
enum Lifeline {
    /// `sh -c script opqueue-shell PROGRAM ARGS…`. `exec` looks `PROGRAM` up in `PATH` unless it
    /// contains `/`, and passes it on as argv[0].
    static let script = """
        exec 3<&0 </dev/null
        ( ( trap '' HUP INT TERM; read -r _ <&3; kill -s KILL 0 ) >/dev/null 2>&1 & )
        exec "$@" 3<&-
        """

    /// `$0` of the wrapper shell; its own errors (rare: the program vanished after it was looked up)
    /// start with it.
    static let shellName = "opqueue-shell"

    /// -1 until the pipe exists; then the children's end, for the life of the process.
    private static let readEndStorage = Mutex<Int32>(-1)

    /// The end to give a child as stdin. Created on first use; a failure (no file descriptors
    /// left) is reported to that run and retried by the next.
    static func readEnd() throws -> Int32 {
        try readEndStorage.withLock { fd in
            if fd >= 0 { return fd }
            var ends: [Int32] = [-1, -1]
            #if os(Linux)
            // Close-on-exec atomically, so no child that another thread spawns meanwhile inherits
            // the worker's end (it would keep the line open after the worker died). A socket pair,
            // because Swift's Glibc module does not declare pipe2 (it needs _GNU_SOURCE); for this
            // it is the same: reading one end gives end of file once the other is closed.
            let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
            #else
            let made = pipe(&ends)
            if made == 0 { _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC); _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC) }
            #endif
            guard made == 0 else {
                throw HandlerError("cannot create the pipe that ties children to this worker: \(String(cString: strerror(errno)))")
            }
            // ends[1], the worker's end, stays open and unused until the process ends.
            fd = ends[0]
            return fd
        }
    }
}
