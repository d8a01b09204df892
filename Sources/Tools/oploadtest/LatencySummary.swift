import Histogram

/// Percentiles of one latency, from an HdrHistogram (3 significant digits, up to one hour in µs),
/// plus points of its CDF for plotting (scripts/loadtest-plot.py).
struct LatencySummary: Codable {
    var count: UInt64
    var min: UInt64
    var mean: Double
    var p50: UInt64
    var p90: UInt64
    var p99: UInt64
    var p999: UInt64
    var max: UInt64
    /// [value µs, percentile 0…100] pairs.
    var cdf: [[Double]]
}

struct LatencyRecorder {
    private(set) var histogram = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)

    /// Negative samples (clock steps between two timestamps) count as 0.
    mutating func record(micros: Int64) {
        _ = histogram.record(UInt64(Swift.max(0, Swift.min(micros, 3_600_000_000))))
    }

    var isEmpty: Bool { histogram.totalCount == 0 }

    var summary: LatencySummary {
        let h = histogram
        var cdf: [[Double]] = []
        for v in h.percentiles(ticksPerHalfDistance: 4) {
            let point = [Double(v.value), v.percentile]
            if cdf.last != point { cdf.append(point) }
            if cdf.count >= 200 || v.percentile >= 100 { break }
        }
        return LatencySummary(count: h.totalCount, min: h.min, mean: (h.mean * 10).rounded() / 10,
                              p50: h.valueAtPercentile(50), p90: h.valueAtPercentile(90),
                              p99: h.valueAtPercentile(99), p999: h.valueAtPercentile(99.9), max: h.max, cdf: cdf)
    }
}
