@testable import Coordinator
import Testing
import WireProtocol

/// `DurabilityGate`: client messages leave only once the journal batch they may reveal is durable, in
/// the order they were made (A5).
struct DurabilityGateTests {
    private func held(_ tag: UInt64, _ n: UInt32) -> DurabilityGate.Held {
        DurabilityGate.Held(tag: tag, routing: [1], message: .heartbeat, requestID: n)
    }

    @Test func aMessageWaitsForTheBatchItMayRevealAndLeavesInOrder() {
        var gate = DurabilityGate()
        // Nothing appended yet: a message made in a pass without records depends on nothing.
        #expect(gate.tag(batchHasRecords: false) == 0)
        #expect(gate.mayPass(0, durable: 0))
        // A reply made in a pass with records depends on that pass's batch (the next sequence).
        let t1 = gate.tag(batchHasRecords: true)
        #expect(t1 == 1 && !gate.mayPass(t1, durable: 0))
        gate.hold(held(t1, 1))
        gate.appended(1)
        // A read made in the next pass, with no records of its own, still waits for batch 1 — and would
        // anyway wait behind the message held before it.
        let t2 = gate.tag(batchHasRecords: false)
        #expect(t2 == 1 && !gate.mayPass(t2, durable: 1), "nothing overtakes a held message")
        gate.hold(held(t2, 2))
        let t3 = gate.tag(batchHasRecords: true)
        #expect(t3 == 2)
        gate.hold(held(t3, 3))
        gate.appended(2)
        #expect(gate.release(durable: 0).isEmpty)
        #expect(gate.release(durable: 1).map(\.requestID) == [1, 2])
        #expect(gate.count == 1)
        #expect(gate.release(durable: 2).map(\.requestID) == [3])
        #expect(gate.isEmpty && gate.mayPass(gate.tag(batchHasRecords: false), durable: 2))
    }

    @Test func manyHeldMessagesAreReleasedWithoutGrowingForever() {
        var gate = DurabilityGate()
        var next: UInt32 = 0
        for round in 1...50 {
            for _ in 0..<100 { gate.hold(held(UInt64(round), next)); next += 1 }
            gate.appended(UInt64(round))
            // Release the previous round's: the gate keeps about one round.
            let out = gate.release(durable: UInt64(round - 1))
            #expect(out.count == (round == 1 ? 0 : 100))
            #expect(gate.count == 100)
        }
        let last = gate.release(durable: 50)
        #expect(last.map(\.requestID) == Array(4900..<5000))
        #expect(gate.isEmpty)
    }
}
