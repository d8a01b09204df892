import Journal
import SchedulerCore

/// Small seeded PRNG (no system randomness: every failure reproduces).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in 0..<n (n > 0).
    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func bool() -> Bool { next() & 1 == 1 }
    mutating func pick<T>(_ xs: [T]) -> T { xs[int(xs.count)] }
}

/// Random journal entries covering every record case, field and edge value (nil vs empty, extremes,
/// non-ASCII text).
struct RandomEntries {
    var rng: SplitMix64
    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    static let caseCount = 15

    mutating func entry() -> JournalEntry { entry(case: rng.int(Self.caseCount)) }

    mutating func entry(case c: Int) -> JournalEntry {
        let record: JournalRecord
        switch c {
        case 0: record = .submitted(run: string(), submitter: string(), ops: list(4) { $0.op() },
                                    queues: list(3) { $0.queue() }, key: rng.bool() ? key() : nil)
        case 1: record = .cancelRequested(ids: list(5) { $0.string() }, cascade: rng.bool(), reason: string())
        case 2: record = .cancelAll(queue: string(), reason: string())
        case 3: record = .cancelRun(run: string(), reason: string())
        case 4: record = .queueSettings(queue())
        case 5: record = .priorityChanged(id: string(), priority: int(), inherit: rng.bool())
        case 6: record = .finished(id: string(), outcome: outcome(), at: int64())
        case 7: record = .workerJoined(name: string())
        case 8: record = .workerLeft(name: string())
        case 9: record = .runNumber(next: int())
        case 10: record = .evictedRun(name: string(), finishedAt: int64(), evictedAt: int64())
        case 12: record = .finished(id: string(), outcome: outcome(), at: int64(), history: history())
        case 14: record = .resultsEvicted(run: string())
        case 13: record = .workerSession(id: rng.bool() ? rng.next() : UInt64(rng.int(1 << 30)), name: string(), owner: string())
        default: record = .submissionKey(run: string(), key: key(), count: int())
        }
        return JournalEntry(at: int64(), record: record)
    }

    /// A small noop op as clients submit them most (the benchmark's and recovery's typical record).
    static func smallSubmit(_ i: Int) -> JournalEntry {
        JournalEntry(at: 1_760_000_000_000_000 + Int64(i),
                     record: .submitted(run: "r-1", submitter: "client-7", ops: [OperationSpec(id: "op-\(i)")],
                                        queues: [], key: nil))
    }

    mutating func op() -> OperationSpec {
        OperationSpec(
            id: string(), name: rng.bool() ? string() : nil, queue: string(), kind: string(), payload: bytes(),
            after: list(3) { $0.string() }, priority: rng.pick(OperationPriority.allCases), qos: rng.bool() ? rng.pick(OperationQoS.allCases) : nil,
            parts: int(), policy: rng.bool() ? .finished : .succeeded, retries: int(), lossRetries: int(),
            timeoutMicros: rng.bool() ? int64() : nil, requires: list(3) { $0.string() }, barrier: rng.bool(),
            retryDelayMicros: int64(), retryDelayMaxMicros: int64(), share: rng.bool() ? string() : nil,
            concurrencyKey: rng.bool() ? string() : nil)
    }

    /// Times 0 (never) or anything, so the differences from the finish wrap too.
    mutating func history() -> OpHistory {
        func time(_ r: inout RandomEntries) -> Int64 { r.rng.bool() ? 0 : r.int64() }
        return OpHistory(worker: rng.bool() ? 0 : rng.next(), readyAt: time(&self), dispatchedAt: time(&self),
                         startedAt: time(&self), attempts: rng.bool() ? 1 : Int(truncatingIfNeeded: rng.next()),
                         attemptErrors: list(3) { $0.string() })
    }

    mutating func queue() -> QueueSpec {
        QueueSpec(name: string(), maxConcurrent: int(), qos: rng.pick(OperationQoS.allCases), suspended: rng.bool(),
                  fairness: rng.bool() ? fairness() : nil)
    }

    /// Any values, valid or not: the codec keeps what it is given (the core validates).
    mutating func fairness() -> QueueFairness {
        var weights: [String: Int] = [:]
        for _ in 0..<rng.int(4) { weights[string()] = int() }
        return QueueFairness(share: rng.pick(QueueFairness.ShareMode.allCases), weights: weights, keyLimit: int(),
                             keyStrategy: rng.pick(QueueFairness.KeyStrategy.allCases),
                             rate: rng.bool() ? RateLimit(perSecond: Double(rng.int(1_000_000)) / 7, burst: int()) : nil,
                             ageingMicros: rng.bool() ? int64() : nil,
                             keyRate: rng.bool() ? RateLimit(perSecond: Double(rng.int(1_000_000)) / 3, burst: int()) : nil)
    }

    mutating func key() -> SubmissionKey { SubmissionKey(key: string(), digest: rng.next()) }

    mutating func outcome() -> Outcome {
        switch rng.int(3) {
        case 0: return .succeeded(bytes())
        case 1: return .failed(string())
        default: return .cancelled(string())
        }
    }

    mutating func list<T>(_ max: Int, _ make: (inout RandomEntries) -> T) -> [T] {
        (0..<rng.int(max + 1)).map { _ in make(&self) }
    }

    mutating func string() -> String {
        switch rng.int(6) {
        case 0: return ""
        case 1: return rng.pick(["default", "noop", "é", "名前", "🚀 launch", "a/b", "\u{0}"])
        case 2: return String(repeating: "x", count: rng.int(300))  // past the small-string and 1-byte-varint sizes
        default:
            let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789-_/.ÄÖü€")
            return String((0..<rng.int(20)).map { _ in rng.pick(alphabet) })
        }
    }

    mutating func bytes() -> [UInt8] {
        rng.int(4) == 0 ? [] : (0..<rng.int(200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    mutating func int() -> Int { Int(truncatingIfNeeded: int64()) }

    mutating func int64() -> Int64 {
        switch rng.int(5) {
        case 0: return rng.pick([0, -1, 1, Int64.min, Int64.max, 63, 64, -64, -65, 127, 128])
        case 1: return Int64(rng.int(1000)) - 500
        case 2: return 1_760_000_000_000_000 + Int64(rng.int(1 << 30))
        default: return Int64(bitPattern: rng.next())
        }
    }
}
