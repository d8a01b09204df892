@testable import Coordinator
@testable import SchedulerCore
import Testing
import WireProtocol

/// Fair share between the wire and the core (A11): SUBMIT's op keys, who may set a queue's fairness, and
/// the bounded lists STATUS and /metrics show.
struct FairnessAccessTests {
    func principal(_ roles: Set<AccessRole>) -> Principal {
        Principal(name: "p", key: AllowListTests.keyA, roles: roles, queues: [Glob("team-a/*")], tags: [])
    }

    func submit(_ queue: String, _ fairness: WireQueueFairness) -> Message {
        var q = WireQueueSettings()
        q.name = queue
        q.fairness = fairness
        var o = WireOperation()
        o.id = "x"
        o.kind = "noop"
        o.queue = queue
        var s = WireSubmit()
        s.queues = [q]
        s.operations = [o]
        return .submit(s)
    }

    func denial(_ m: Message, _ p: Principal, current: QueueFairness?) -> String? {
        RequestAccess.denial(m, by: p, queueOf: { _, _ in nil }, queuesOfRun: { _ in nil },
                             queueFairness: { $0 == "team-a/q" ? current : nil })
    }

    /// Fairness is the cluster's policy: a submitter may repeat it (or give the default to a new queue), only
    /// an admin changes it or gives a new queue another.
    @Test func fairnessInSubmitIsAdmins() {
        let user = principal([.submit]), admin = principal([.admin])
        let current = QueueFairness(share: .key, keyLimit: 2)
        var limit3 = WireQueueFairness()
        limit3.keyLimit = 3
        let why = denial(submit("team-a/q", limit3), user, current: current)
        #expect(why?.contains("queue 'team-a/q': this submission changes its fair-share settings") == true, "\(why ?? "allowed")")
        #expect(why?.contains("needs the 'admin' role") == true)
        #expect(denial(submit("team-a/q", WireQueueFairness(current)), user, current: current) == nil, "the same settings again")
        #expect(denial(submit("team-a/new", limit3), user, current: nil)?.contains("creates it with fair-share settings") == true)
        #expect(denial(submit("team-a/new", WireQueueFairness(.default)), user, current: nil) == nil, "the default for a new queue")
        #expect(denial(submit("team-a/q", limit3), admin, current: current) == nil)
        var q = WireQueueControl()
        q.settings.name = "team-a/q"
        q.settings.fairness = limit3
        #expect(denial(.queue(q), user, current: current)?.contains("(limit, suspension, fairness) needs the 'admin' role") == true)
        #expect(denial(.queue(q), admin, current: current) == nil)
    }

    @Test func opKeysMapToTheSpecAndEmptyIsNone() {
        var w = WireOperation()
        w.id = "a"
        w.kind = "noop"
        #expect(WireCoreMapping.operation(w, priority: .normal).share == nil)
        #expect(WireCoreMapping.operation(w, priority: .normal).concurrencyKey == nil)
        w.share = "customer-42"
        w.concurrencyKey = "k"
        let spec = WireCoreMapping.operation(w, priority: .normal)
        #expect(spec.share == "customer-42" && spec.concurrencyKey == "k")
    }
}

struct FairnessSummaryTests {
    func share(_ name: String, running: Int, ready: Int, dispatched: UInt64 = 1) -> ShareStatus {
        ShareStatus(name: name, weight: 1, ready: ready, running: running, dispatchedTotal: dispatched)
    }

    /// /metrics' cap: 20 series per queue by running + ready, the rest summed as "other".
    @Test func theBusiestTwentySharesAndTheRestAsOther() {
        let shares = (0..<50).map { share("s\($0)", running: $0 % 7, ready: $0) }
        let (top, rest) = FairnessSummary.topShares(shares, limit: FairnessSummary.metricsLimit)
        #expect(top.count == 20)
        let others = shares.filter { s in !top.contains { $0.name == s.name } }
        #expect(top.map { $0.running + $0.ready }.min()! >= others.map { $0.running + $0.ready }.max()!, "the busiest are kept")
        #expect(rest?.name == "other")
        #expect(rest?.running == others.map(\.running).reduce(0, +))
        #expect(rest?.ready == others.map(\.ready).reduce(0, +))
        #expect(rest?.dispatchedTotal == 30)
        #expect(top.reduce(0) { $0 + $1.running + $1.ready } + rest!.running + rest!.ready
                == shares.reduce(0) { $0 + $1.running + $1.ready }, "nothing lost")
        let few = FairnessSummary.topShares(Array(shares.prefix(3)), limit: 20)
        #expect(few.top.count == 3 && few.rest == nil)
    }

    @Test func keysAreCutTheSameWay() {
        let keys = (0..<30).map { ConcurrencyKeyStatus(name: "k\($0)", holding: 1, waiting: $0, holders: ["r/\($0)"]) }
        let (top, rest) = FairnessSummary.topKeys(keys, limit: 20)
        #expect(top.first?.name == "k29" && top.count == 20)
        #expect(rest?.name == "other" && rest?.holding == 10 && rest?.waiting == (0..<10).reduce(0, +) && rest?.holders == [])
    }

    /// STATUS lists at most 50 of each and counts the rest; settings only when not the default.
    @Test func statusCarriesTheBusiestFiftyAndCountsTheRest() {
        let status = QueueFairnessStatus(queue: "q", fairness: QueueFairness(share: .run, rate: RateLimit(perSecond: 5, burst: 2)),
                                         shares: (0..<60).map { share("s\($0)", running: 1, ready: $0) },
                                         keys: [ConcurrencyKeyStatus(name: "k", holding: 2, waiting: 3, holders: [])], nextTokenAt: 77)
        var q = WireQueueCounts()
        FairnessSummary.fill(&q, status)
        #expect(q.shares.count == 50 && q.sharesOmitted == 10 && q.shares.first?.name == "s59")
        #expect(q.keys.map(\.name) == ["k"] && q.keys[0].holding == 2 && q.keys[0].waiting == 3 && q.keysOmitted == 0)
        #expect(q.fairness.share == .run && q.fairness.ratePerSecond == 5 && q.fairness.burst == 2)
        #expect(q.nextTokenUs == 77)
        var plain = WireQueueCounts()
        FairnessSummary.fill(&plain, QueueFairnessStatus(queue: "p", fairness: .default, shares: [], keys: [], nextTokenAt: nil))
        #expect(!plain.hasFairness && plain.shares.isEmpty && plain.nextTokenUs == 0)
    }
}
