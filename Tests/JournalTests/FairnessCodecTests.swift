@testable import Journal
import SchedulerCore
import Testing

/// Fair share in the journal (A11): a queue's fairness and an op's share and concurrency key round-trip,
/// and records written before them (no fairness, no keys) still decode.
struct FairnessCodecTests {
    static let fairness = QueueFairness(share: .key, weights: ["team-a": 3, "team-b": 1000, "é": 1], keyLimit: 2,
                                        keyStrategy: .cancelInProgress, rate: RateLimit(perSecond: 12.5, burst: 40))

    private func roundTrip(_ entry: JournalEntry) throws -> JournalEntry {
        var bytes: [UInt8] = []
        JournalCodec.encode(entry, into: &bytes)
        return try JournalCodec.decode(bytes[...])
    }

    @Test func queueSettingsCarryFairness() throws {
        for fairness in [Self.fairness, QueueFairness.default, QueueFairness(share: .fifo, rate: RateLimit(perSecond: 0.001))] {
            for suspended in [false, true] {
                let entry = JournalEntry(at: 7, record: .queueSettings(QueueSpec(name: "q", maxConcurrent: 4, qos: .utility,
                                                                                 suspended: suspended, fairness: fairness)))
                #expect(try roundTrip(entry) == entry)
            }
        }
        // nil (keep the current settings) stays distinct from the default settings.
        let none = JournalEntry(at: 7, record: .queueSettings(QueueSpec(name: "q", fairness: nil)))
        #expect(try roundTrip(none) == none)
    }

    @Test func submittedCarriesSharesKeysAndQueueFairness() throws {
        let ops = [OperationSpec(id: "a", share: "customer-42", concurrencyKey: "k"),
                   OperationSpec(id: "b", share: "", concurrencyKey: nil),
                   OperationSpec(id: "c", share: nil, concurrencyKey: "")]
        let entry = JournalEntry(at: 1, record: .submitted(run: "r", submitter: "me", ops: ops,
                                                            queues: [QueueSpec(name: "default", fairness: Self.fairness)], key: nil))
        let decoded = try roundTrip(entry)
        #expect(decoded == entry)
    }

    @Test func anOpWithoutKeysCostsNoExtraByte() {
        var plain: [UInt8] = [], keyed: [UInt8] = []
        JournalCodec.encode(JournalEntry(at: 0, record: .submitted(run: "", submitter: "", ops: [OperationSpec(id: "a")], queues: [], key: nil)), into: &plain)
        JournalCodec.encode(JournalEntry(at: 0, record: .submitted(run: "", submitter: "", ops: [OperationSpec(id: "a", share: "s")], queues: [], key: nil)), into: &keyed)
        #expect(keyed.count == plain.count + 2)  // "s" with its length byte; the flag bit was already there
    }

    /// Bytes as the format wrote them before fair share (queue: a bool `suspended`; op flags bits 0-3 only).
    @Test func recordsOfTheOldFormatDecodeWithoutFairnessOrKeys() throws {
        let qos = JournalCodec.code(.utility)
        let oldQueue: [UInt8] = [0x01, UInt8(ascii: "q"), 0x01 /* maxConcurrent -1 */, qos, 1 /* suspended */]
        let settings: [UInt8] = [1, 0, 5] + oldQueue
        let decodedSettings = try JournalCodec.decode(settings[...])
        #expect(decodedSettings.record == .queueSettings(QueueSpec(name: "q", maxConcurrent: -1, qos: .utility, suspended: true)))

        var submitted: [UInt8] = [1, 0, 1, 0, 0, 1]  // version, at 0, tag submitted, run "", submitter "", 1 op
        submitted += [1, UInt8(ascii: "a"), 0b1000 /* barrier */, 1, UInt8(ascii: "q"), 1, UInt8(ascii: "k"), 0, 0]
        submitted += [0 /* priority */, 2 /* parts 1 */, 0 /* policy */, 0 /* retries */, 6 /* lossRetries 3 */, 0 /* requires */]
        submitted += svarint(OperationSpec.defaultRetryDelayMicros) + svarint(OperationSpec.defaultRetryDelayMaxMicros)
        submitted += [1] + oldQueue + [0]  // 1 queue, no submission key
        let decoded = try JournalCodec.decode(submitted[...])
        guard case .submitted(_, _, let ops, let queues, _) = decoded.record else { Issue.record("\(decoded)"); return }
        #expect(ops == [OperationSpec(id: "a", queue: "q", kind: "k", barrier: true)])
        #expect(ops[0].share == nil && ops[0].concurrencyKey == nil)
        #expect(queues.map(\.fairness) == [nil])
    }

    @Test func unknownFairnessBytesAreErrors() throws {
        let qos = JournalCodec.code(.default)
        for (bad, words) in [([1, 0, 5, 0, 0, qos, 4] as [UInt8], "queue flags"),
                             ([1, 0, 5, 0, 0, qos, 2, 9], "share mode"),
                             ([1, 0, 5, 0, 0, qos, 2, 0, 0, 0, 7], "key strategy"),
                             ([1, 0, 5, 0, 0, qos, 2, 0, 0, 0, 0, 8], "fairness flags")] {
            let e = try #require(throws: JournalCodecError.self) { try JournalCodec.decode(bad[...]) }
            #expect(e.reason.contains(words), "\(e)")
        }
    }

    /// Ageing round-trips with and without a rate; a record written before ageing (its rate byte a bool)
    /// decodes as "no ageing".
    @Test func ageingRoundTripsAndOldRecordsHaveNone() throws {
        for fairness in [QueueFairness(ageingMicros: 30_000_000),
                         QueueFairness(rate: RateLimit(perSecond: 3, burst: 2), ageingMicros: 1_000)] {
            let entry = JournalEntry(at: 9, record: .queueSettings(QueueSpec(name: "q", fairness: fairness)))
            #expect(try roundTrip(entry) == entry)
        }
        let qos = JournalCodec.code(.default)
        let old: [UInt8] = [1, 0, 5, 0, 0, qos, 2, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 7) + [0x40, 1]  // rate 2.0/s, burst 1
        let decoded = try JournalCodec.decode(old[...])
        guard case .queueSettings(let q) = decoded.record else { Issue.record("\(decoded)"); return }
        #expect(q.fairness == QueueFairness(rate: RateLimit(perSecond: 2, burst: 1)))
        #expect(q.fairness?.ageingMicros == nil)
    }

    /// The per-key rate round-trips (with and without the others of the flag byte); older records have none.
    @Test func keyRateRoundTrips() throws {
        for fairness in [QueueFairness(keyRate: RateLimit(perSecond: 10, burst: 3)),
                         QueueFairness(keyLimit: 2, rate: RateLimit(perSecond: 3, burst: 2), ageingMicros: 1_000,
                                       keyRate: RateLimit(perSecond: 0.25, burst: 1_000_000))] {
            let entry = JournalEntry(at: 9, record: .queueSettings(QueueSpec(name: "q", fairness: fairness)))
            #expect(try roundTrip(entry) == entry)
        }
        #expect(try roundTrip(JournalEntry(at: 9, record: .queueSettings(QueueSpec(name: "q", fairness: Self.fairness))))
                    .record == .queueSettings(QueueSpec(name: "q", fairness: Self.fairness)), "no key rate stays none")
    }

    private func svarint(_ v: Int64) -> [UInt8] {
        var u = UInt64(bitPattern: (v << 1) ^ (v >> 63)), out: [UInt8] = []
        while u >= 0x80 { out.append(UInt8(truncatingIfNeeded: u) | 0x80); u >>= 7 }
        return out + [UInt8(u)]
    }
}
