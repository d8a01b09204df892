import Foundation
import XCTest
@testable import WireProtocol

/// Protocol 1.5: output tails on FINISHED, LOGS and STORY.
final class LogsWireTests: XCTestCase {
    func testFinishedTailsRoundTripAndEncodeAsFields9To12() throws {
        var r = WireFinishedRecord()
        r.opID = "r/a"; r.attempt = 2; r.failed = "exit code 1"
        r.stdoutTail = Data("out".utf8); r.stderrTail = Data("err".utf8); r.stdoutDropped = 300; r.stderrDropped = 1
        var f = WireFinished(); f.records = [r]; f.credit = 1
        let frames = WireCodec.encode(.finished(f))
        // Frozen: the new fields' tags (9, 10 bytes; 11, 12 varints) after the 1.4 fields.
        XCTAssertTrue(hex(frames[1]).hasSuffix("4a036f75745203657272" + "58ac02" + "6001" + "1001"), hex(frames[1]))
        XCTAssertEqual(WireCodec.decode(frames), .success(Envelope(.finished(f))))
    }

    func testAFinishedWithoutTailsIsByteForByteWhatItWasIn14() {
        // The golden FINISHED (no tails) is unchanged: a 1.4 coordinator reads a 1.5 worker's noop reports as before.
        let env = Fixtures.all.first { $0.message.command == .finished }!
        let golden = GoldenTests.vectors.first { $0.0 == .finished }!
        XCTAssertEqual(hex(WireCodec.encode(env.message)[1]), golden.2)
    }

    func testTailsOverTheLimitAreRefusedNamingTheField() {
        var r = WireFinishedRecord(); r.opID = "a"; r.attempt = 1; r.succeeded = Data()
        r.stderrTail = Data(count: WireLimits.maxLogTailSize + 1)
        var f = WireFinished(); f.records = [r]
        XCTAssertEqual(WireCodec.decode(WireCodec.encode(.finished(f))),
                       .failure(.fieldTooLarge(.finished, field: "records[0].stderr_tail", size: WireLimits.maxLogTailSize + 1,
                                               limit: WireLimits.maxLogTailSize)))
    }

    func testTailsCountTowardsTheBatchBudget() {
        var r = WireFinishedRecord(); r.opID = "a"; r.attempt = 1; r.succeeded = Data()
        let bare = r.wireSizeBound
        r.stdoutTail = Data(count: 1000); r.stderrTail = Data(count: 500)
        XCTAssertGreaterThanOrEqual(r.wireSizeBound, bare + 1500)
        XCTAssertGreaterThanOrEqual(r.wireSizeBound, (try! r.serializedBytes() as [UInt8]).count)
        let many = Array(repeating: { var x = r; x.stdoutTail = Data(count: 900_000); return x }(), count: 40)
        for batch in Batcher.split(many) {
            var f = WireFinished(); f.records = batch
            XCTAssertLessThanOrEqual(WireCodec.encode(.finished(f))[1].count, WireLimits.maxBodySize)
        }
    }

    func testLogsAndStoryRequestsNeedAnOpID() {
        XCTAssertEqual(WireCodec.decode(WireCodec.encode(.logs(WireLogs()), requestID: 7)),
                       .failure(.missingField(.logs, field: "op_id")))
        XCTAssertEqual(WireCodec.decode(WireCodec.encode(.story(WireStory()), requestID: 7)),
                       .failure(.missingField(.story, field: "op_id")))
        XCTAssertEqual(Command(rawValue: 0x33), .logs)
        XCTAssertEqual(Command(rawValue: 0x34), .logsReply)
        XCTAssertEqual(Command(rawValue: 0x35), .story)
        XCTAssertEqual(Command(rawValue: 0x36), .storyReply)
        XCTAssertEqual("\(Command.logsReply) \(Command.storyReply)", "LOGS-REPLY STORY-REPLY")
    }

    func testRepliesRoundTripAndReadAsTheDashboardsJSON() throws {
        for m: Message in [.logsReply(Fixtures.logsReply), .storyReply(Fixtures.storyReply)] {
            XCTAssertEqual(WireCodec.decode(WireCodec.encode(m, requestID: 9)), .success(Envelope(requestID: 9, m)))
        }
        let logs = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(Message.logsReply(Fixtures.logsReply).jsonBody.utf8)) as? [String: Any])
        XCTAssertEqual(logs["op_id"] as? String, "flaky")
        XCTAssertEqual(logs["evicted"] as? Bool, true)
        let attempts = try XCTUnwrap(logs["attempts"] as? [[String: Any]])
        XCTAssertEqual(attempts.count, 2)
        XCTAssertEqual(attempts[0]["stdout_dropped"] as? String, "4013", "64-bit integers are strings")
        XCTAssertEqual(attempts[0]["stdout"] as? String, Data("out 1\n".utf8).base64EncodedString())
        XCTAssertEqual(attempts[0]["worker_id"] as? String, "w1")
        XCTAssertEqual(attempts[1]["outcome"] as? String, "succeeded")
        let story = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(Message.storyReply(Fixtures.storyReply).jsonBody.utf8)) as? [String: Any])
        let entries = try XCTUnwrap(story["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.map { $0["event"] as? String }, ["submitted", "ready", "dispatched", "started", "finished"])
        XCTAssertEqual(entries[2]["worker_id"] as? String, "w1")
        XCTAssertEqual(entries[0]["stimulus"] as? String, "1")
    }

    func testTheReplyListsAreBoundedByThePreScan() {
        var r = WireLogsReply(); r.opID = "a"
        r.attempts = Array(repeating: WireAttemptLog(), count: WireLimits.maxBatchRecords + 1)
        XCTAssertEqual(WireCodec.decode(WireCodec.encode(.logsReply(r))),
                       .failure(.batchTooLarge(.logsReply, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords)))
    }
}
