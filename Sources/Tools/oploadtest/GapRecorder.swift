import Foundation

/// What each registered simulated worker heard from the coordinator (docs/BENCHMARKS.md, "A loop with a
/// bound"): the silences between consecutive messages (heartbeats, DISPATCHes, …), and how late each
/// due heartbeat came — a worker sent nothing for an interval is owed one then, so a message that ends
/// a silence of at least an interval (less the coordinator's 1/16 slack) is late by what the silence
/// exceeded the interval. Lateness measures a stalled loop; silences measure traffic. Sessions that
/// ended are counted apart.
struct GapRecorder {
    private var silences = MillisecondHistogram()
    private var lateness = MillisecondHistogram()
    var sessionsEnded = 0

    /// A message ended `silence` µs without one, for a worker whose heartbeat interval is `interval` µs.
    mutating func record(silence: Int64, interval: Int64) {
        silences.record(silence)
        if silence >= interval - interval / 16 { lateness.record(max(0, silence - interval)) }
    }

    func json() -> String {
        """
        {"gaps": \(silences.count), "p50_ms": \(silences.quantileMs(0.5)), "p99_ms": \(silences.quantileMs(0.99)), \
        "p999_ms": \(silences.quantileMs(0.999)), "max_ms": \(silences.maxMs), \
        "heartbeats_due": \(lateness.count), "late_p50_ms": \(lateness.quantileMs(0.5)), \
        "late_p99_ms": \(lateness.quantileMs(0.99)), "late_max_ms": \(lateness.maxMs), \
        "sessions_ended": \(sessionsEnded)}
        """
    }
}

/// Durations in 1 ms buckets up to 60 s, with the exact maximum.
struct MillisecondHistogram {
    private var buckets = [Int](repeating: 0, count: 60_001)
    private(set) var count = 0
    private(set) var maxMicros: Int64 = 0

    mutating func record(_ micros: Int64) {
        buckets[Int(min(max(0, micros / 1000), 60_000))] += 1
        count += 1
        maxMicros = max(maxMicros, micros)
    }

    /// The duration (ms) that `q` of all samples are at or below.
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

    var maxMs: Double { Double(maxMicros / 100) / 10 }
}
