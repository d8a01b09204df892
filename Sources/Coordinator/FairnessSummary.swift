import SchedulerCore
import WireProtocol

/// A queue's share keys and concurrency keys cut to the busiest few (A11), for STATUS (`QueueCounts.shares`,
/// `keys`) and /metrics: a queue may have a share per customer, and a reply or a label set must stay bounded.
public enum FairnessSummary {
    /// Shares listed in a STATUS reply per queue, and keys (the rest are counted as omitted).
    public static let statusLimit = 50
    /// Share keys and concurrency keys with their own /metrics series per queue; the rest are summed as "other".
    public static let metricsLimit = 20
    public static let otherName = "other"

    /// The `limit` busiest shares (running + ready, then by name), and the rest summed under "other"
    /// (weight 0 there: no single weight), nil when nothing is left over.
    public static func topShares(_ shares: [ShareStatus], limit: Int) -> (top: [ShareStatus], rest: ShareStatus?) {
        let sorted = shares.sorted { ($0.running + $0.ready, $1.name) > ($1.running + $1.ready, $0.name) }
        guard sorted.count > limit, var rest = sorted.dropFirst(limit).first else { return (sorted, nil) }
        rest.name = otherName
        rest.weight = 0
        rest.running = 0; rest.ready = 0; rest.dispatchedTotal = 0
        for s in sorted.dropFirst(limit) {
            rest.running += s.running; rest.ready += s.ready; rest.dispatchedTotal += s.dispatchedTotal
        }
        return (Array(sorted.prefix(limit)), rest)
    }

    /// The `limit` busiest keys (holding + waiting, then by name), and the rest summed under "other".
    public static func topKeys(_ keys: [ConcurrencyKeyStatus], limit: Int) -> (top: [ConcurrencyKeyStatus], rest: ConcurrencyKeyStatus?) {
        let sorted = keys.sorted { ($0.holding + $0.waiting, $1.name) > ($1.holding + $1.waiting, $0.name) }
        guard sorted.count > limit, var rest = sorted.dropFirst(limit).first else { return (sorted, nil) }
        rest.name = otherName
        rest.holders = []
        rest.holding = 0; rest.waiting = 0
        for k in sorted.dropFirst(limit) { rest.holding += k.holding; rest.waiting += k.waiting }
        return (Array(sorted.prefix(limit)), rest)
    }

    /// Fills STATUS's fair-share fields of one queue (1.8): its settings when not the default, the busiest
    /// `statusLimit` shares and keys, and when the next rate token comes.
    static func fill(_ q: inout WireQueueCounts, _ s: QueueFairnessStatus) {
        if s.fairness != .default { q.fairness = WireQueueFairness(s.fairness) }
        let shares = topShares(s.shares, limit: statusLimit)
        q.shares = shares.top.map { share in
            var w = WireShareCounts()
            w.name = share.name
            w.weight = UInt32(clamping: share.weight)
            w.ready = UInt64(max(0, share.ready))
            w.running = UInt64(max(0, share.running))
            w.dispatchedTotal = share.dispatchedTotal
            return w
        }
        q.sharesOmitted = UInt32(clamping: s.shares.count - shares.top.count)
        let keys = topKeys(s.keys, limit: statusLimit)
        q.keys = keys.top.map { key in
            var w = WireConcurrencyKeyCounts()
            w.name = key.name
            w.holding = UInt64(max(0, key.holding))
            w.waiting = UInt64(max(0, key.waiting))
            return w
        }
        q.keysOmitted = UInt32(clamping: s.keys.count - keys.top.count)
        q.nextTokenUs = s.nextTokenAt ?? 0
    }
}
