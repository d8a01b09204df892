import Glibc
import Synchronization

/// SIGINT/SIGTERM set a flag the simulated workers' loop checks (its poll wakes at least every 100 ms).
enum StopSignal {
    private static let flag = Atomic<Bool>(false)

    static func install() {
        // A parent may have started us with these blocked (the mask is inherited; Foundation's Process
        // does this): unblock them, or SIGTERM would only be pending until the time limit.
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGINT, SIGTERM] {
            sigaddset(&set, s)
            signal(s) { _ in StopSignal.flag.store(true, ordering: .relaxed) }
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    static func requested() -> Bool { flag.load(ordering: .relaxed) }
}
