import Testing
@testable import SchedulerCore

/// Issue 25 finding 3: retention by bytes. Beyond `retainBytes` the oldest finished runs lose their
/// results first (status says so; outcomes and history stay), then are evicted whole; the journal makes
/// a replay drop the same results; a finished op's payload is not kept.
@Suite struct RetainBytesTests {
    private static let result = [UInt8](repeating: 7, count: 100_000)

    /// Runs r1…rN of two ops each with 100 kB results, each run finished before the next is submitted.
    private func runs(_ n: Int, budget: Int) -> Harness {
        var config = SchedulerConfig()
        config.retainBytes = budget
        var h = Harness(config: config)
        h.join(1, slots: 2)
        for k in 1...n {
            h.now += 1_000
            let r = h.ref()
            var a = op("a"), b = op("b")
            a.payload = Self.result
            b.payload = Self.result
            let out = h.send(.submit(r, ops: [a, b], queues: [], run: RunRequest(name: "r\(k)", mode: .create)))
            for d in dispatches(out) { h.finish(d, .succeeded(Self.result)) }
        }
        return h
    }

    @Test func theOldestRunsLoseTheirResultsFirstThenAreEvicted() {
        // Room for about four runs' results (each ~200 kB): past 75 % of the budget the walk leaves 65 %.
        let h = runs(8, budget: 1_000_000)
        #expect(h.s.retainedBytes <= 750_000)
        let st = (1...8).map { h.s.status("r\($0)/a") }
        #expect(st.allSatisfy { $0 != nil }, "no run is evicted whole while dropping results is enough")
        #expect(st[0]?.resultEvicted == true && st[0]?.outcome == .succeeded && st[0]?.resultSize == 0)
        #expect(st[0]?.lastWorker == 1 && st[0]?.finishedAt != nil, "history is kept")
        #expect(st[7]?.resultEvicted == false && st[7]?.resultSize == Self.result.count)
        let evicted = (1...8).filter { h.s.status("r\($0)/a")?.resultEvicted == true }
        #expect(evicted == Array(1...evicted.count), "oldest first: \(evicted)")
        #expect(h.s.result("r1/a") == [] && h.s.result("r8/a") == Self.result)
        let info = h.s.runInfo(h.s.runs.slot(named: "r1")!)
        #expect(info.resultsEvicted && info.bytes < 1_000)
    }

    @Test func metadataGoesWhenResultsAreNotEnough() {
        // A budget smaller than the ops' metadata: whole runs go, oldest first, the newest stays.
        let h = runs(4, budget: 300)
        #expect(h.s.runLookupFailure("r1") != nil)
        #expect(h.s.status("r4/a") != nil || h.s.runLookupFailure("r4") != nil)
        #expect(h.s.retainedBytes <= 300 || h.s.runCounts.retained <= 1)
    }

    @Test(arguments: [false, true])
    func aReplayDropsTheSameResults(fromSnapshot: Bool) {
        let h = runs(8, budget: 1_000_000)
        var r = Harness()   // no budget: only the journal's records drop results
        for (at, record) in fromSnapshot ? h.s.snapshotRecords() : h.journal { r.now = at; r.send(.restore(record)) }
        r.send(.recovered)
        for k in 1...8 {
            #expect(r.s.status("r\(k)/a")?.resultEvicted == h.s.status("r\(k)/a")?.resultEvicted, "r\(k)")
            #expect(r.s.result("r\(k)/a") == h.s.result("r\(k)/a"), "r\(k)")
        }
        #expect(r.s.retainedBytes == h.s.retainedBytes)
    }

    @Test func aFinishedOpsPayloadIsNotKept() {
        let h = runs(1, budget: .max)
        #expect(h.s.ops.payloads.indices.allSatisfy { h.s.ops.payloads[$0].isEmpty })
        #expect(h.s.retainedBytes < 2 * Self.result.count + 1_000, "\(h.s.retainedBytes)")
    }
}
