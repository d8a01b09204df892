import Glibc
import Synchronization

/// SIGINT/SIGTERM set a flag the simulated workers' loop checks (its poll wakes at least every 100 ms).
enum StopSignal {
    private static let flag = Atomic<Bool>(false)

    static func install() {
        for s in [SIGINT, SIGTERM] {
            signal(s) { _ in StopSignal.flag.store(true, ordering: .relaxed) }
        }
    }

    static func requested() -> Bool { flag.load(ordering: .relaxed) }
}
