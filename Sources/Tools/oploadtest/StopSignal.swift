import Lifecycle
import Synchronization

/// SIGINT/SIGTERM (`StopSignals`) set a flag the simulated workers' loop checks (its poll wakes at least
/// every 100 ms).
enum StopSignal {
    private static let flag = Atomic<Bool>(false)
    nonisolated(unsafe) private static var signals: StopSignals?

    static func install() {
        signals = StopSignals(stop: { _ in StopSignal.flag.store(true, ordering: .relaxed) })
    }

    static func requested() -> Bool { flag.load(ordering: .relaxed) }
}
