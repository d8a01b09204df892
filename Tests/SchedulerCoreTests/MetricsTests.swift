import Testing
@testable import SchedulerCore

/// The counters and latency samples behind /metrics (docs/METRICS.md), counted where the core makes
/// each change.
@Suite struct MetricsTests {
    @Test func testCountersAndSamplesFollowTheOpsThroughTheirLives() {
        var config = SchedulerConfig()
        config.metricsSampleCapacity = 100
        var h = Harness(config: config)
        h.join(1, slots: 4, credit: 8)
        var retried = op("r"); retried.retries = 1; retried.retryDelayMicros = 0
        let (_, first) = h.submit([op("a"), op("b", ["a"]), op("long"), retried])
        #expect(h.s.metrics.submitted == 4)
        #expect(h.s.metrics.dispatched == 3)   // a, long, r; b waits for a
        func named(_ id: String, in ds: [Dispatch]) -> Dispatch { ds.first { $0.op == id || $0.op.hasSuffix("/" + id) }! }
        let a = named("a", in: first), long = named("long", in: first), r = named("r", in: first)
        h.now += 500
        h.start(a)
        let b = dispatches(h.finish(a)).first!
        h.now += 2_000
        h.start(b, at: h.now)
        h.finish(b)
        // The retried op fails once, runs again (not a first attempt: no second queue-wait sample).
        h.start(r)
        let again = named("r", in: dispatches(h.finish(r, .failed("boom"))))
        h.start(again)
        h.finish(again)
        // A running op is cancelled; its worker reports it stopped 7 ms later.
        h.start(long)
        h.send(.cancel(h.ref(), ids: ["long"], cascade: false))
        h.now += 7_000
        h.finish(long, .cancelled("cancelled"))

        var m = h.s.takeMetrics()
        #expect(m.dispatched == 5)
        #expect(m.started == 5)
        #expect(m.succeeded == 3)
        #expect(m.failed == 0)
        #expect(m.cancelled == 1)
        #expect(m.retried == 1)
        #expect(m.queueWait.take().count == 4, "first attempts only")
        #expect(m.dependencyHop.take() == [2_000], "b: from a's finish to b's start")
        #expect(m.cancelLatency.take() == [7_000])
        // Taken: the next read starts empty, the counters stay.
        #expect(h.s.metrics.queueWait.values.isEmpty)
        #expect(h.s.metrics.submitted == 4)
    }

    @Test func testSamplesAreBoundedAndOffWithoutAReader() {
        var config = SchedulerConfig()
        config.metricsSampleCapacity = 2
        var h = Harness(config: config)
        h.join(1, slots: 8, credit: 8)
        h.submit((0..<5).map { op("o\($0)") })
        #expect(h.s.metrics.queueWait.values.count == 2)
        #expect(h.s.metrics.queueWait.dropped == 3)

        var off = Harness()
        off.join(1, slots: 8, credit: 8)
        off.submit((0..<5).map { op("o\($0)") })
        #expect(off.s.metrics.queueWait.values.isEmpty)
        #expect(off.s.metrics.dispatched == 5)
    }
}
