import OpModel

// A queue's fairness (A11) on the wire (1.8): the enums each way, a whole `QueueFairness` as a message
// that sets every field, and a message's fields applied over the queue's current settings (absent = keep).

extension QueueFairness.ShareMode {
    /// Nil for UNSPECIFIED ("unchanged") and unknown values.
    public init?(wire: WireShareMode) {
        switch wire {
        case .submitter: self = .submitter
        case .run: self = .run
        case .key: self = .key
        case .fifo: self = .fifo
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }

    public var wire: WireShareMode {
        switch self {
        case .submitter: .submitter
        case .run: .run
        case .key: .key
        case .fifo: .fifo
        }
    }
}

extension QueueFairness.KeyStrategy {
    public init?(wire: WireKeyStrategy) {
        switch wire {
        case .wait: self = .wait
        case .cancelNewest: self = .cancelNewest
        case .cancelInProgress: self = .cancelInProgress
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }

    public var wire: WireKeyStrategy {
        switch self {
        case .wait: .wait
        case .cancelNewest: .cancelNewest
        case .cancelInProgress: .cancelInProgress
        }
    }
}

extension WireQueueFairness {
    /// Every field set: applied over any current settings, the result is `f` itself.
    public init(_ f: QueueFairness) {
        self.init()
        share = f.share.wire
        weights = f.weights.sorted { $0.key < $1.key }.map { name, weight in
            var w = WireShareWeight()
            w.share = name
            w.weight = UInt32(clamping: weight)
            return w
        }
        replaceWeights = true
        keyLimit = UInt32(clamping: f.keyLimit)
        keyStrategy = f.keyStrategy.wire
        if let rate = f.rate {
            ratePerSecond = rate.perSecond
            burst = UInt32(clamping: rate.burst)
        } else {
            noRate = true
        }
        if let a = f.ageingMicros { ageingUs = UInt64(clamping: a) } else { noAgeing = true }
        if let rate = f.keyRate {
            keyRatePerSecond = rate.perSecond
            keyBurst = UInt32(clamping: rate.burst)
        } else {
            noKeyRate = true
        }
    }

    /// The settings this message makes of `current` (absent fields keep it), or why it cannot: a burst with
    /// no rate given or in place (or a key burst with no key rate). Ranges are `WireValidation`'s and `QueueFairness.problem`'s.
    public func applied(to current: QueueFairness) -> Result<QueueFairness, FairnessSettingError> {
        var f = current
        if let mode = QueueFairness.ShareMode(wire: share) { f.share = mode }
        if replaceWeights { f.weights = [:] }
        for w in weights {
            f.weights[w.share] = Int(w.weight)
        }
        if hasKeyLimit { f.keyLimit = Int(keyLimit) }
        if let s = QueueFairness.KeyStrategy(wire: keyStrategy) { f.keyStrategy = s }
        if noRate {
            f.rate = nil
        } else if hasRatePerSecond {
            f.rate = RateLimit(perSecond: ratePerSecond, burst: hasBurst ? Int(burst) : (current.rate?.burst ?? 1))
        } else if hasBurst {
            guard var rate = f.rate else { return .failure(FairnessSettingError(reason: "burst \(burst) without a rate: the queue has no rate limit; give rate_per_second too")) }
            rate.burst = Int(burst)
            f.rate = rate
        }
        if noKeyRate {
            f.keyRate = nil
        } else if hasKeyRatePerSecond {
            f.keyRate = RateLimit(perSecond: keyRatePerSecond, burst: hasKeyBurst ? Int(keyBurst) : (current.keyRate?.burst ?? 1))
        } else if hasKeyBurst {
            guard var rate = f.keyRate else { return .failure(FairnessSettingError(reason: "key burst \(keyBurst) without a key rate: the queue has no per-key rate limit; give key_rate_per_second too")) }
            rate.burst = Int(keyBurst)
            f.keyRate = rate
        }
        if noAgeing { f.ageingMicros = nil } else if hasAgeingUs { f.ageingMicros = Int64(clamping: ageingUs) }
        return .success(f)
    }

    /// True when the message changes nothing of `current`.
    public func isNoChange(of current: QueueFairness) -> Bool {
        (try? applied(to: current).get()) == current
    }
}

public struct FairnessSettingError: Error, Equatable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
