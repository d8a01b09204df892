/// How a queue shares its dispatches between submitters, and the limits it puts on concurrency keys and
/// on its dispatch rate (docs/SEMANTICS.md A11, docs/GRAPHS.md "queues"). The default: fair share by
/// submitter, no key limit, no rate limit. Inside one share key the order is S6's (priority, then FIFO).
public struct QueueFairness: Sendable, Hashable {
    /// What an op's share key is.
    public enum ShareMode: String, Sendable, Hashable, CaseIterable {
        /// The submitting key's name (keys on) or `user@host` (keys off): the default.
        case submitter
        /// The run: each run gets its turn.
        case run
        /// The op's own `share` (its submitter when it names none).
        case key
        /// No sharing: priority, then FIFO across everything (the order before fair share).
        case fifo
    }

    /// What happens to an op whose concurrency key is at `keyLimit` when its turn comes.
    public enum KeyStrategy: String, Sendable, Hashable, CaseIterable {
        /// It waits, ready, until a holder of its key finishes (the default).
        case wait
        /// It is cancelled (the newest loses).
        case cancelNewest = "cancel-newest"
        /// The oldest holder of the key is cancelled; the op waits for the place it frees.
        case cancelInProgress = "cancel-in-progress"
    }

    public var share: ShareMode
    /// Relative weights of share keys (1…`maxWeight`); a key not named weighs 1.
    public var weights: [String: Int]
    /// Most ops of one concurrency key dispatched or executing at once, cluster-wide; 0 = no limit.
    public var keyLimit: Int
    public var keyStrategy: KeyStrategy
    /// Dispatches of new ops per second (token bucket); nil = unlimited.
    public var rate: RateLimit?
    /// New ops each concurrency key of the queue starts per second (token bucket per key, checked after
    /// `keyLimit`); nil = unlimited. An op without a token waits ready in its key's FIFO, whatever
    /// `keyStrategy` says (the cancel strategies are about the limit only).
    public var keyRate: RateLimit?
    /// Ageing (µs): a ready op that has waited this long is raised one priority level, and again after
    /// each further period, up to `veryHigh`, so a steady stream of higher priorities cannot starve it
    /// forever. nil = off (the default: OperationQueue's strict priorities).
    public var ageingMicros: Int64?

    public static let maxWeight = 1_000
    /// Bounds of `ageingMicros`: 1 ms … 1 day.
    public static let ageingRange: ClosedRange<Int64> = 1_000...86_400_000_000
    public static let `default` = QueueFairness()

    public init(share: ShareMode = .submitter, weights: [String: Int] = [:], keyLimit: Int = 0,
                keyStrategy: KeyStrategy = .wait, rate: RateLimit? = nil, ageingMicros: Int64? = nil,
                keyRate: RateLimit? = nil) {
        self.share = share; self.weights = weights; self.keyLimit = keyLimit
        self.keyStrategy = keyStrategy; self.rate = rate; self.ageingMicros = ageingMicros; self.keyRate = keyRate
    }

    /// What is wrong with these settings, or nil.
    public var problem: String? {
        for (key, w) in weights.sorted(by: { $0.key < $1.key }) where w < 1 || w > Self.maxWeight {
            return "weight of share \(key) must be 1...\(Self.maxWeight), got \(w)"
        }
        if keyLimit < 0 || keyLimit > Int(Int32.max) { return "keyLimit must be ≥ 0 (0 = none), got \(keyLimit)" }
        if let rate, let p = rate.problem { return p }
        if let keyRate, let p = keyRate.problem { return "key " + p }
        if let a = ageingMicros, !Self.ageingRange.contains(a) {
            return "ageing must be 1ms...24h, got \(a)µs"
        }
        return nil
    }

    public func weight(of share: String) -> Int { weights[share] ?? 1 }
}

/// A token bucket: `perSecond` tokens a second, at most `burst` saved; each dispatch of a new op takes one.
public struct RateLimit: Sendable, Hashable {
    public var perSecond: Double
    public var burst: Int

    public init(perSecond: Double, burst: Int = 1) { self.perSecond = perSecond; self.burst = burst }

    public var problem: String? {
        if !(perSecond > 0 && perSecond <= 1_000_000) { return "rate must be > 0 and ≤ 1000000 per second, got \(perSecond)" }
        if burst < 1 || burst > 1_000_000 { return "rate burst must be 1...1000000, got \(burst)" }
        return nil
    }

    /// Microseconds between two tokens.
    public var intervalMicros: Double { 1_000_000 / perSecond }
}
