import Foundation
import Testing
@testable import WireProtocol

/// Protocol 1.5: output tails on FINISHED, LOGS and STORY.
@Suite struct LogsWireTests {
    @Test func testFinishedTailsRoundTripAndEncodeAsFields9To12() throws {
        var r = WireFinishedRecord()
        r.opID = "r/a"; r.attempt = 2; r.failed = "exit code 1"
        r.stdoutTail = Data("out".utf8); r.stderrTail = Data("err".utf8); r.stdoutDropped = 300; r.stderrDropped = 1
        var f = WireFinished(); f.records = [r]; f.credit = 1
        let frames = WireCodec.encode(.finished(f))
        // Frozen: the new fields' tags (9, 10 bytes; 11, 12 varints) after the 1.4 fields.
        #expect(hex(frames[1]).hasSuffix("4a036f75745203657272" + "58ac02" + "6001" + "1001"), "\(hex(frames[1]))")
        #expect(WireCodec.decode(frames) == .success(Envelope(.finished(f))))
    }

    @Test func testAFinishedWithoutTailsIsByteForByteWhatItWasIn14() {
        // The golden FINISHED (no tails) is unchanged: a 1.4 coordinator reads a 1.5 worker's noop reports as before.
        let env = Fixtures.all.first { $0.message.command == .finished }!
        let golden = GoldenTests.vectors.first { $0.0 == .finished }!
        #expect(hex(WireCodec.encode(env.message)[1]) == golden.2)
    }

    @Test func testTailsOverTheLimitAreRefusedNamingTheField() {
        var r = WireFinishedRecord(); r.opID = "a"; r.attempt = 1; r.succeeded = Data()
        r.stderrTail = Data(count: WireLimits.maxLogTailSize + 1)
        var f = WireFinished(); f.records = [r]
        #expect(WireCodec.decode(WireCodec.encode(.finished(f))) ==
                .failure(.fieldTooLarge(.finished, field: "records[0].stderr_tail", size: WireLimits.maxLogTailSize + 1,
                                        limit: WireLimits.maxLogTailSize)))
    }

    @Test func testTailsCountTowardsTheBatchBudget() {
        var r = WireFinishedRecord(); r.opID = "a"; r.attempt = 1; r.succeeded = Data()
        let bare = r.wireSizeBound
        r.stdoutTail = Data(count: 1000); r.stderrTail = Data(count: 500)
        #expect(r.wireSizeBound >= bare + 1500)
        #expect(r.wireSizeBound >= (try! r.serializedBytes() as [UInt8]).count)
        let many = Array(repeating: { var x = r; x.stdoutTail = Data(count: 900_000); return x }(), count: 40)
        for batch in Batcher.split(many) {
            var f = WireFinished(); f.records = batch
            #expect(WireCodec.encode(.finished(f))[1].count <= WireLimits.maxBodySize)
        }
    }

    @Test func testLogsAndStoryRequestsNeedAnOpID() {
        #expect(WireCodec.decode(WireCodec.encode(.logs(WireLogs()), requestID: 7)) ==
                .failure(.missingField(.logs, field: "op_id")))
        #expect(WireCodec.decode(WireCodec.encode(.story(WireStory()), requestID: 7)) ==
                .failure(.missingField(.story, field: "op_id")))
        #expect(Command(rawValue: 0x33) == .logs)
        #expect(Command(rawValue: 0x34) == .logsReply)
        #expect(Command(rawValue: 0x35) == .story)
        #expect(Command(rawValue: 0x36) == .storyReply)
        #expect("\(Command.logsReply) \(Command.storyReply)" == "LOGS-REPLY STORY-REPLY")
    }

    @Test func testRepliesRoundTripAndReadAsTheDashboardsJSON() throws {
        for m: Message in [.logsReply(Fixtures.logsReply), .storyReply(Fixtures.storyReply)] {
            #expect(WireCodec.decode(WireCodec.encode(m, requestID: 9)) == .success(Envelope(requestID: 9, m)))
        }
        let logs = try #require(JSONSerialization.jsonObject(with: Data(Message.logsReply(Fixtures.logsReply).jsonBody.utf8)) as? [String: Any])
        #expect(logs["op_id"] as? String == "flaky")
        #expect(logs["evicted"] as? Bool == true)
        let attempts = try #require(logs["attempts"] as? [[String: Any]])
        #expect(attempts.count == 2)
        #expect(attempts[0]["stdout_dropped"] as? String == "4013", "64-bit integers are strings")
        #expect(attempts[0]["stdout"] as? String == Data("out 1\n".utf8).base64EncodedString())
        #expect(attempts[0]["worker_id"] as? String == "w1")
        #expect(attempts[1]["outcome"] as? String == "succeeded")
        let story = try #require(JSONSerialization.jsonObject(with: Data(Message.storyReply(Fixtures.storyReply).jsonBody.utf8)) as? [String: Any])
        let entries = try #require(story["entries"] as? [[String: Any]])
        #expect(entries.map { $0["event"] as? String } == ["submitted", "ready", "dispatched", "started", "finished"])
        #expect(entries[2]["worker_id"] as? String == "w1")
        #expect(entries[0]["stimulus"] as? String == "1")
    }

    @Test func testTheReplyListsAreBoundedByThePreScan() {
        var r = WireLogsReply(); r.opID = "a"
        r.attempts = Array(repeating: WireAttemptLog(), count: WireLimits.maxBatchRecords + 1)
        #expect(WireCodec.decode(WireCodec.encode(.logsReply(r))) ==
                .failure(.batchTooLarge(.logsReply, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords)))
    }
}
