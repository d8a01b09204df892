import Foundation
import Testing
@testable import WireProtocol

@Suite struct RoundTripTests {
    @Test func testFixturesCoverEveryCommand() {
        let covered = Set(Fixtures.all.map(\.message.command))
        #expect(covered == Set(Command.allCases), "missing: \(Set(Command.allCases).subtracting(covered))")
    }

    @Test func testEveryCommandRoundTrips() throws {
        for env in Fixtures.all {
            #expect(throws: Never.self, "\(env.message.command)") { try WireCodec.validate(env.message) }
            let frames = WireCodec.encode(env.message, requestID: env.requestID)
            #expect(frames.count == 2)
            #expect(frames[0].count == 8)
            #expect(frames[0][3] == env.message.command.rawValue)
            switch WireCodec.decode(frames) {
            case .success(let back): #expect(back == env, "\(env.message.command)")
            case .failure(let e): Issue.record("\(env.message.command): \(e)")
            }
        }
    }

    @Test func testPeekHeaderGivesRequestIDOfBadBody() {
        var frames = WireCodec.encode(.why(WireWhy()), requestID: 0xDEADBEEF)  // op_id missing
        #expect(WireCodec.decode(frames) == .failure(.missingField(.why, field: "op_id")))
        let h = WireCodec.peekHeader(frames)
        #expect(h?.requestID == 0xDEADBEEF)
        #expect(h?.command == .why)
        frames[0][0] = 0
        #expect(WireCodec.peekHeader(frames) == nil)
    }

    @Test func testBatcherDrainsWithinLimits() throws {
        var queue = (0..<20_000).map(Fixtures.dispatchRecord)
        var sent = 0
        var messages = 0
        while let m = Batcher.message(draining: &queue) {
            guard case .dispatch(let d) = m else { Issue.record("not a dispatch"); return }
            #expect(d.records.count <= WireLimits.maxBatchRecords)
            #expect(d.records.first?.opID == "op-\(sent)", "order is kept")
            sent += d.records.count
            messages += 1
            #expect(throws: Never.self) { try WireCodec.decodeThrowing(WireCodec.encode(m)) }
            if messages > 10 { break }
        }
        #expect(sent == 20_000)
        #expect(messages == 3)
    }

    @Test func testBatcherByteBudgetAndOversizedRecord() {
        let big = (0..<10).map { i -> WireFinishedRecord in
            var r = WireFinishedRecord(); r.opID = "op-\(i)"; r.attempt = 1
            r.succeeded = Data(count: 600_000)
            return r
        }
        let batches = Batcher.split(big, maxBytes: 1_000_000)
        #expect(batches.map(\.count) == Array(repeating: 1, count: 10))
        for b in Batcher.split(big) {
            var m = WireFinished(); m.records = b
            let body = WireCodec.encode(.finished(m))[1]
            #expect(body.count <= WireLimits.maxBodySize)
            #expect(body.count <= b.reduce(0) { $0 + $1.wireSizeBound }, "bound is an upper bound")
        }
        var queue = big
        guard case .finished(let f)? = Batcher.message(draining: &queue) else { Issue.record(); return }
        #expect(f.credit == UInt32(f.records.count), "one credit back per finished part")
        #expect(queue.isEmpty || f.records.count + queue.count == 10)
    }

    @Test func testSubmitsSplitKeepsQueuesOnFirst() {
        let ops = (0..<(WireLimits.maxBatchRecords + 5)).map { i -> WireOperation in
            var o = WireOperation(); o.id = "o\(i)"; o.kind = "noop"; return o
        }
        var q = WireQueueSettings(); q.name = "default"
        let msgs = Batcher.submits(ops, queues: [q])
        #expect(msgs.count == 2)
        guard case .submit(let first) = msgs[0], case .submit(let second) = msgs[1] else { Issue.record(); return }
        #expect(first.queues.count == 1)
        #expect(second.queues.count == 0)
        #expect(first.operations.count + second.operations.count == ops.count)
    }
}
