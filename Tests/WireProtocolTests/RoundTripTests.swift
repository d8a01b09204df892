import Foundation
import XCTest
@testable import WireProtocol

final class RoundTripTests: XCTestCase {
    func testFixturesCoverEveryCommand() {
        let covered = Set(Fixtures.all.map(\.message.command))
        XCTAssertEqual(covered, Set(Command.allCases), "missing: \(Set(Command.allCases).subtracting(covered))")
    }

    func testEveryCommandRoundTrips() throws {
        for env in Fixtures.all {
            XCTAssertNoThrow(try WireCodec.validate(env.message), "\(env.message.command)")
            let frames = WireCodec.encode(env.message, requestID: env.requestID)
            XCTAssertEqual(frames.count, 2)
            XCTAssertEqual(frames[0].count, 8)
            XCTAssertEqual(frames[0][3], env.message.command.rawValue)
            switch WireCodec.decode(frames) {
            case .success(let back): XCTAssertEqual(back, env, "\(env.message.command)")
            case .failure(let e): XCTFail("\(env.message.command): \(e)")
            }
        }
    }

    func testPeekHeaderGivesRequestIDOfBadBody() {
        var frames = WireCodec.encode(.why(WireWhy()), requestID: 0xDEADBEEF)  // op_id missing
        XCTAssertEqual(WireCodec.decode(frames), .failure(.missingField(.why, field: "op_id")))
        let h = WireCodec.peekHeader(frames)
        XCTAssertEqual(h?.requestID, 0xDEADBEEF)
        XCTAssertEqual(h?.command, .why)
        frames[0][0] = 0
        XCTAssertNil(WireCodec.peekHeader(frames))
    }

    func testBatcherDrainsWithinLimits() throws {
        var queue = (0..<20_000).map(Fixtures.dispatchRecord)
        var sent = 0
        var messages = 0
        while let m = Batcher.message(draining: &queue) {
            guard case .dispatch(let d) = m else { return XCTFail("not a dispatch") }
            XCTAssertLessThanOrEqual(d.records.count, WireLimits.maxBatchRecords)
            XCTAssertEqual(d.records.first?.opID, "op-\(sent)", "order is kept")
            sent += d.records.count
            messages += 1
            XCTAssertNoThrow(try WireCodec.decodeThrowing(WireCodec.encode(m)))
            if messages > 10 { break }
        }
        XCTAssertEqual(sent, 20_000)
        XCTAssertEqual(messages, 3)
    }

    func testBatcherByteBudgetAndOversizedRecord() {
        let big = (0..<10).map { i -> WireFinishedRecord in
            var r = WireFinishedRecord(); r.opID = "op-\(i)"; r.attempt = 1
            r.succeeded = Data(count: 600_000)
            return r
        }
        let batches = Batcher.split(big, maxBytes: 1_000_000)
        XCTAssertEqual(batches.map(\.count), Array(repeating: 1, count: 10))
        for b in Batcher.split(big) {
            var m = WireFinished(); m.records = b
            let body = WireCodec.encode(.finished(m))[1]
            XCTAssertLessThanOrEqual(body.count, WireLimits.maxBodySize)
            XCTAssertLessThanOrEqual(body.count, b.reduce(0) { $0 + $1.wireSizeBound }, "bound is an upper bound")
        }
        var queue = big
        guard case .finished(let f)? = Batcher.message(draining: &queue) else { return XCTFail() }
        XCTAssertEqual(f.credit, UInt32(f.records.count), "one credit back per finished part")
        XCTAssertTrue(queue.isEmpty || f.records.count + queue.count == 10)
    }

    func testSubmitsSplitKeepsQueuesOnFirst() {
        let ops = (0..<(WireLimits.maxBatchRecords + 5)).map { i -> WireOperation in
            var o = WireOperation(); o.id = "o\(i)"; o.kind = "noop"; return o
        }
        var q = WireQueueSettings(); q.name = "default"
        let msgs = Batcher.submits(ops, queues: [q])
        XCTAssertEqual(msgs.count, 2)
        guard case .submit(let first) = msgs[0], case .submit(let second) = msgs[1] else { return XCTFail() }
        XCTAssertEqual(first.queues.count, 1)
        XCTAssertEqual(second.queues.count, 0)
        XCTAssertEqual(first.operations.count + second.operations.count, ops.count)
    }
}
