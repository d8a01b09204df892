@testable import Coordinator
import Foundation
import Testing
import WireProtocol

/// What one pass sends workers: one DISPATCH per worker when it fits a message, cut at the protocol's
/// record and byte limits when it does not, and workers in the order they first got something.
struct OutboxTests {
    private func record(_ i: Int, payload: Int = 0) -> WireDispatchRecord {
        .with {
            $0.opID = "r/o\(i)"
            $0.attempt = 1
            $0.kind = "noop"
            $0.payload = Data(count: payload)
        }
    }

    private func records(_ m: Message) -> [WireDispatchRecord] {
        if case .dispatch(let d) = m { d.records } else { [] }
    }

    @Test func aPassFitsOneDispatchPerWorkerInTheOrderWorkersFirstGotSomething() {
        var outbox = Outbox()
        outbox.dispatch(record(1), to: 7)
        outbox.dispatch(record(2), to: 3)
        outbox.dispatch(record(3), to: 7)
        outbox.cancel(op: "r/x", attempt: 1, reason: "gone", on: 3)
        outbox.cancel(op: "r/x", attempt: 1, reason: "gone", on: 3)   // a second part of the same attempt
        let batches = outbox.drain()
        #expect(batches.map(\.worker) == [7, 3, 3])
        #expect(records(batches[0].message).map(\.opID) == ["r/o1", "r/o3"])
        #expect(records(batches[1].message).map(\.opID) == ["r/o2"])
        guard case .cancel(let c) = batches[2].message else { Issue.record("no CANCEL"); return }
        #expect(c.records.count == 1, "one cancel per (op, attempt)")
        #expect(outbox.drain().isEmpty, "drained")
    }

    @Test func aPassOverTheRecordLimitIsCutIntoMessagesInOrder() {
        var outbox = Outbox()
        let n = WireLimits.maxBatchRecords + 5
        for i in 0..<n { outbox.dispatch(record(i), to: 1) }
        let batches = outbox.drain()
        #expect(batches.map { records($0.message).count } == [WireLimits.maxBatchRecords, 5])
        #expect(batches.flatMap { records($0.message).map(\.opID) } == (0..<n).map { "r/o\($0)" })
    }

    @Test func aPassOverTheByteBudgetIsCutIntoMessagesWithinIt() {
        var outbox = Outbox()
        let payload = WireLimits.batchBodyBudget / 3
        for i in 0..<5 { outbox.dispatch(record(i, payload: payload), to: 1) }
        let batches = outbox.drain()
        #expect(batches.count == 3, "\(batches.map { records($0.message).count })")
        for b in batches {
            #expect(records(b.message).reduce(0) { $0 + $1.wireSizeBound } <= WireLimits.batchBodyBudget)
        }
        #expect(batches.flatMap { records($0.message).map(\.opID) } == (0..<5).map { "r/o\($0)" })
    }
}
