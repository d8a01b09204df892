import Foundation
import OpModel
import Testing
@testable import WireProtocol

/// (1.8) Fair share on the wire: each bad setting refused naming its field, op keys within the id limit,
/// and a message's fields applied over a queue's settings (absent = keep).
@Suite struct FairnessWireProtocolTests {
    func queueControl(_ edit: (inout WireQueueFairness) -> Void) -> Message {
        var q = WireQueueControl()
        q.settings.name = "q"
        edit(&q.settings.fairness)
        return .queue(q)
    }

    func check(_ m: Message, _ e: WireError, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(WireCodec.decode(WireCodec.encode(m)) == .failure(e), sourceLocation: sourceLocation)
    }

    @Test func badSettingsAreRefusedNamingTheField() {
        func weight(_ n: UInt32) -> (inout WireQueueFairness) -> Void {
            { var w = WireShareWeight(); w.share = "team-a"; w.weight = n; $0.weights = [w] }
        }
        check(queueControl(weight(0)), .fieldOutOfRange(.queue, field: "settings.fairness.weights[0].weight",
                                                        detail: "0 for share 'team-a' is not in 1...1000"))
        check(queueControl(weight(1001)), .fieldOutOfRange(.queue, field: "settings.fairness.weights[0].weight",
                                                           detail: "1001 for share 'team-a' is not in 1...1000"))
        check(queueControl { var w = WireShareWeight(); w.weight = 2; $0.weights = [w] },
              .missingField(.queue, field: "settings.fairness.weights[0].share"))
        check(queueControl { $0.keyLimit = UInt32(Int32.max) + 1 },
              .fieldOutOfRange(.queue, field: "settings.fairness.key_limit", detail: "2147483648 > 2147483647"))
        check(queueControl { $0.ratePerSecond = 0 },
              .fieldOutOfRange(.queue, field: "settings.fairness.rate_per_second", detail: "0.0 is not > 0 and ≤ 1000000"))
        check(queueControl { $0.ratePerSecond = .nan },
              .fieldOutOfRange(.queue, field: "settings.fairness.rate_per_second", detail: "nan is not > 0 and ≤ 1000000"))
        check(queueControl { $0.burst = 0 }, .fieldOutOfRange(.queue, field: "settings.fairness.burst", detail: "0 is not in 1...1000000"))
        check(queueControl { $0.noRate = true; $0.ratePerSecond = 5 },
              .fieldOutOfRange(.queue, field: "settings.fairness.no_rate",
                               detail: "no_rate removes the rate limit: give no rate_per_second or burst with it"))
        check(queueControl { $0.share = .UNRECOGNIZED(9) }, .fieldOutOfRange(.queue, field: "settings.fairness.share", detail: "unknown share mode 9"))
        // Good ones pass.
        let good = queueControl { $0.keyLimit = 0; $0.ratePerSecond = 1e6; $0.burst = 1; $0.share = .fifo }
        #expect((try? WireCodec.decode(WireCodec.encode(good)).get()) != nil)
    }

    @Test func opKeysAreHeldToTheIdLimit() {
        var o = WireOperation()
        o.id = "a"
        o.kind = "noop"
        o.share = String(repeating: "s", count: WireLimits.maxIDLength + 1)
        var s = WireSubmit()
        s.operations = [o]
        check(.submit(s), .fieldTooLarge(.submit, field: "operations[0].share", size: 1025, limit: 1024))
        s.operations[0].share = "ok"
        s.operations[0].concurrencyKey = String(repeating: "k", count: 1025)
        check(.submit(s), .fieldTooLarge(.submit, field: "operations[0].concurrency_key", size: 1025, limit: 1024))
    }

    /// The per-key rate (keyRate/keyBurst) travels as `rate`/`burst` do: through the codec, applied over the
    /// current settings (burst kept, key burst alone changes it, none without a key rate), refused out of range.
    @Test func keyRateRoundTripsAndAppliesLikeTheRate() throws {
        let f = QueueFairness(keyLimit: 3, rate: RateLimit(perSecond: 5), keyRate: RateLimit(perSecond: 10, burst: 3))
        var q = WireQueueControl()
        q.settings.name = "q"
        q.settings.fairness = WireQueueFairness(f)
        guard case .queue(let back) = try WireCodec.decodeThrowing(WireCodec.encode(.queue(q))).message else { Issue.record("not decoded"); return }
        #expect(back.settings.fairness.keyRatePerSecond == 10 && back.settings.fairness.keyBurst == 3)
        #expect(try back.settings.fairness.applied(to: .default).get() == f)
        var rateOnly = WireQueueFairness()
        rateOnly.keyRatePerSecond = 20
        #expect(try rateOnly.applied(to: f).get().keyRate == RateLimit(perSecond: 20, burst: 3), "the key burst kept")
        var burstOnly = WireQueueFairness()
        burstOnly.keyBurst = 7
        #expect(try burstOnly.applied(to: f).get().keyRate == RateLimit(perSecond: 10, burst: 7))
        #expect(throws: FairnessSettingError.self) { try burstOnly.applied(to: .default).get() }
        var off = WireQueueFairness()
        off.noKeyRate = true
        #expect(try off.applied(to: f).get().keyRate == nil && off.applied(to: f).get().rate == f.rate)
        check(queueControl { $0.keyRatePerSecond = 0 }, .fieldOutOfRange(.queue, field: "settings.fairness.key_rate_per_second", detail: "0.0 is not > 0 and ≤ 1000000"))
        check(queueControl { $0.keyBurst = 0 }, .fieldOutOfRange(.queue, field: "settings.fairness.key_burst", detail: "0 is not in 1...1000000"))
        check(queueControl { $0.noKeyRate = true; $0.keyBurst = 2 },
              .fieldOutOfRange(.queue, field: "settings.fairness.no_key_rate",
                               detail: "no_key_rate removes the per-key rate: give no key_rate_per_second or key_burst with it"))
    }

    @Test func absentFieldsKeepTheCurrentSettings() throws {
        let current = QueueFairness(share: .key, weights: ["a": 3, "b": 2], keyLimit: 2, keyStrategy: .cancelNewest,
                                    rate: RateLimit(perSecond: 10, burst: 5))
        #expect(try WireQueueFairness().applied(to: current).get() == current)
        var m = WireQueueFairness()
        m.keyLimit = 4
        var w = WireShareWeight(); w.share = "c"; w.weight = 7
        m.weights = [w]
        m.ratePerSecond = 20
        var expected = current
        expected.keyLimit = 4
        expected.weights["c"] = 7
        expected.rate = RateLimit(perSecond: 20, burst: 5)   // the burst kept
        #expect(try m.applied(to: current).get() == expected)
        m.replaceWeights = true
        expected.weights = ["c": 7]
        #expect(try m.applied(to: current).get() == expected)
        var off = WireQueueFairness()
        off.noRate = true
        #expect(try off.applied(to: current).get().rate == nil)
        var burstOnly = WireQueueFairness()
        burstOnly.burst = 9
        #expect(try burstOnly.applied(to: current).get().rate == RateLimit(perSecond: 10, burst: 9))
        #expect(throws: FairnessSettingError.self) { try burstOnly.applied(to: .default).get() }
        // A whole setting replaces whatever was there.
        for f in [QueueFairness.default, current] {
            #expect(try WireQueueFairness(f).applied(to: current).get() == f)
            #expect(try WireQueueFairness(f).applied(to: .default).get() == f)
        }
    }
}
