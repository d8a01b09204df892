import Glibc
import SchedulerCore

/// What a hold over budget spent its time on (docs/BENCHMARKS.md, "loop"): with `OPQ_LOOP_TRACE=1` in
/// opcoord's environment the loop marks the steps of a pass (a message's decode and handling, the core,
/// the tick, flushes, the journal commit…) and, for a hold over budget, logs the wall time of each step
/// and the thread's CPU time over the hold (`CLOCK_THREAD_CPUTIME_ID`): wall ≫ CPU is the machine's
/// scheduler preempting the loop, not work of ours. Off by default: reading the thread's CPU clock is a
/// system call, which the loop makes before every message when tracing.
struct HoldTrace {
    static let enabledByEnvironment = getenv("OPQ_LOOP_TRACE").map { String(cString: $0) == "1" } ?? false

    let enabled: Bool
    /// Thread CPU time (µs) when the loop last read, and the wall time of the last mark.
    private var cpuAtRead: Int64 = 0
    private var lastMark: Int64 = 0
    /// Wall µs per step since the last read, in first-seen order.
    private var steps: [(name: String, micros: Int64, count: Int)] = []

    init(enabled: Bool = HoldTrace.enabledByEnvironment) { self.enabled = enabled }

    static func threadCPUMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// The step `name` ended now (wall `now`, µs): the time since the previous mark is its.
    @inline(__always) mutating func mark(_ name: @autoclosure () -> String, now: @autoclosure () -> Int64) {
        guard enabled else { return }
        let t = now()
        let n = name()
        if let i = steps.firstIndex(where: { $0.name == n }) {
            steps[i].micros += t - lastMark
            steps[i].count += 1
        } else {
            steps.append((n, t - lastMark, 1))
        }
        lastMark = t
    }

    /// The loop reads at wall `now`. Returns, for a hold that was over budget (`over`), the line that
    /// says where it went; starts the next hold.
    mutating func reading(at now: Int64, over: Bool) -> String? {
        guard enabled else { return nil }
        let cpu = Self.threadCPUMicros()
        defer { cpuAtRead = cpu; lastMark = now; steps.removeAll(keepingCapacity: true) }
        guard over else { return nil }
        mark("unmarked", now: now)
        let parts = steps.filter { $0.micros >= 1000 }.sorted { $0.micros > $1.micros }
            .map { "\($0.name) \($0.micros / 1000) ms" + ($0.count > 1 ? " ×\($0.count)" : "") }
        return "thread CPU \((cpu - cpuAtRead) / 1000) ms; steps: \(parts.isEmpty ? "none over 1 ms" : parts.joined(separator: ", "))"
    }

    /// `zmq_poll` returned: waiting there is not part of any hold.
    mutating func woke(at now: Int64) {
        guard enabled else { return }
        cpuAtRead = Self.threadCPUMicros()
        lastMark = now
        steps.removeAll(keepingCapacity: true)
    }
}

extension HoldTrace {
    /// The name of the core's step for one input.
    static func coreStep(_ event: Event) -> String {
        switch event {
        case .submit: "core SUBMIT"
        case .partFinished: "core finished"
        case .partStarted: "core started"
        case .credit: "core credit"
        case .heartbeat: "core heartbeat"
        case .tick: "core tick"
        case .coordinatorPaused: "core paused"
        case .workerJoined: "core joined"
        case .wait, .waitRun, .waitQueue: "core wait"
        default: "core other"
        }
    }
}
