import Foundation

/// Gaps between consecutive messages each registered simulated worker got from the coordinator (its
/// heartbeats, DISPATCHes, …): how long a worker went without hearing from it, in 1 ms buckets up to
/// 60 s (docs/BENCHMARKS.md, "A loop with a bound"). Sessions that ended are counted apart.
struct GapRecorder {
    private var buckets = [Int](repeating: 0, count: 60_001)
    private(set) var count = 0
    private(set) var maxMicros: Int64 = 0
    var sessionsEnded = 0

    mutating func record(_ micros: Int64) {
        buckets[Int(min(max(0, micros / 1000), 60_000))] += 1
        count += 1
        maxMicros = max(maxMicros, micros)
    }

    /// The gap (ms) that `q` of all gaps are at or below.
    func quantileMs(_ q: Double) -> Int {
        guard count > 0 else { return 0 }
        let target = Int((Double(count) * q).rounded(.up))
        var seen = 0
        for (ms, n) in buckets.enumerated() {
            seen += n
            if seen >= target { return ms }
        }
        return 60_000
    }

    func json() -> String {
        """
        {"gaps": \(count), "p50_ms": \(quantileMs(0.5)), "p99_ms": \(quantileMs(0.99)), "p999_ms": \(quantileMs(0.999)), \
        "max_ms": \(Double(maxMicros / 100) / 10), "sessions_ended": \(sessionsEnded)}
        """
    }
}
