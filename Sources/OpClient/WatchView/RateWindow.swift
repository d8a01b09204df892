/// Operations finished per second over a sliding window of samples (time, finished count), and the
/// ETA that follows. Times are injected (seconds on any monotonic clock), so the arithmetic is tested
/// without waiting.
public struct RateWindow: Sendable {
    /// Seconds of history the rate averages over.
    public let span: Double
    /// Below this much history the rate is unknown: two samples 0.1 s apart say little.
    public let minimumSpan: Double
    private var samples: [(t: Double, count: UInt64)] = []
    /// The last count as given, and what counts that went down have lost (added back: see `add`).
    private var lastGiven: UInt64?
    private var lost: UInt64 = 0

    public init(span: Double = 10, minimumSpan: Double = 1) {
        self.span = span
        self.minimumSpan = minimumSpan
    }

    /// Records that `count` operations had finished at time `t`. A count that went down (a queue whose
    /// finished runs were evicted, a coordinator that came back without its journal) keeps the window:
    /// the drop is not progress, and the rate goes on from what it was. (Starting afresh made a queue's
    /// rate cover only the last second or two after each eviction, unlike its runs' rates beside it.)
    public mutating func add(_ count: UInt64, at t: Double) {
        if let last = samples.last, t < last.t { samples.removeAll(); lost = 0 }
        if let given = lastGiven, count < given { lost += given - count }
        lastGiven = count
        samples.append((t, count + lost))
        // Keep one sample at or before the window's start, so the rate covers the whole span.
        var drop = 0
        while samples.count - drop >= 2 && samples[drop + 1].t <= t - span { drop += 1 }
        if drop > 0 { samples.removeFirst(drop) }
        // Redraws several times a second add many samples; a window needs only a few hundred.
        if samples.count > 512 { samples = stride(from: 0, to: samples.count, by: 2).map { samples[$0] } + [samples.last!] }
    }

    /// Finished per second over the window; nil until it covers `minimumSpan`.
    public var rate: Double? {
        guard let first = samples.first, let last = samples.last, last.t - first.t >= minimumSpan else { return nil }
        return Double(last.count - first.count) / (last.t - first.t)
    }

    /// Seconds until `remaining` operations have finished at `rate`: 0 when none remain, nil when it
    /// cannot be said (no rate yet, or nothing finished within the window).
    public static func eta(remaining: UInt64, rate: Double?) -> Double? {
        if remaining == 0 { return 0 }
        guard let rate, rate > 0 else { return nil }
        return Double(remaining) / rate
    }
}
