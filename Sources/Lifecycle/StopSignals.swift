import Dispatch
import Glibc

/// How every opqueue process is asked to stop (docs/ARCHITECTURE.md, "One lifecycle"): SIGINT and
/// SIGTERM call `stop` with the signal, SIGHUP calls `reload` when one is given (else it stops too). The
/// handlers run on a dispatch queue, not in signal context, so `stop` may take locks, log and wake a
/// loop; each process then shuts down gracefully in its own way (opcoord tells its workers and closes
/// the journal, opworker stops its handlers and reports them, the tools end their children).
public final class StopSignals: Sendable {
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    /// Create it early in `main`: a parent may have started us with these signals blocked (the mask is
    /// inherited; Foundation's Process does this), and they are unblocked here for the threads created
    /// after it.
    public init(stop: @escaping @Sendable (Int32) -> Void, reload: (@Sendable () -> Void)? = nil) {
        var set = sigset_t()
        sigemptyset(&set)
        var handlers: [(Int32, @Sendable () -> Void)] = [(SIGINT, { stop(SIGINT) }), (SIGTERM, { stop(SIGTERM) })]
        handlers.append((SIGHUP, reload ?? { stop(SIGHUP) }))
        sources = handlers.map { sig, handler in
            sigaddset(&set, sig)
            signal(sig, SIG_IGN)   // the dispatch source sees it; the default action (exit) must not run
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler(handler: handler)
            s.resume()
            return s
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    deinit { for s in sources { s.cancel() } }
}
