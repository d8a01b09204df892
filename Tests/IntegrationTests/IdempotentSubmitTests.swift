import ClusterTestSupport
import Foundation
import OpClient
import Synchronization
import Testing
import WireProtocol

/// Clients across a lost coordinator (docs/PROTOCOL.md §5.13, §10): every SUBMIT carries a submission key
/// of its own and, when its reply cannot come, is sent again byte for byte once the coordinator is back;
/// `opctl watch` says the coordinator is away and goes on watching when it is back.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct IdempotentSubmitTests {
    let opctl = Binaries.path("opctl")

    /// `CoordinatorConnection.submit`, which opctl and the Swift API use: the two SUBMITs of a graph too
    /// big for one carry different keys; the second, lost with the connection, reaches the coordinator
    /// that came back as the same bytes (same key, same request id), and its duplicate reply is the answer.
    @Test func eachBatchHasItsOwnKeyAndARetryIsTheSameBytes() throws {
        let standIn = try StandInCoordinator()
        let messages = Batcher.submits((0...WireLimits.maxBatchRecords).map { op("k\($0)") }, run: "keys", appendAll: true)
        try #require(messages.count == 2)
        let replies = Mutex<[WireSubmitReply]>([])
        let failure = Mutex<String?>(nil)
        let retries = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        let endpoint = standIn.endpoint
        let client = Thread {
            defer { done.signal() }
            do {
                let conn = try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(10))
                for m in messages {
                    let r = try conn.submit(m, until: .now + .seconds(30)) { _ in retries.withLock { $0 += 1 } }
                    replies.withLock { $0.append(r) }
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        client.start()

        let first = try standIn.expect(.submit, timeout: .seconds(20))
        try standIn.reply(to: first, .submitReply(accepted(first, count: 8192)))
        let second = try standIn.expect(.submit, timeout: .seconds(20))
        standIn.vanish()   // before answering: the client sees its connection lost
        try standIn.comeBack()
        let again = try standIn.expect(.submit, timeout: .seconds(20))
        var reply = accepted(again, count: 1)
        reply.duplicate = true
        try standIn.reply(to: again, .submitReply(reply))
        #expect(done.wait(timeout: .now() + 20) == .success, "the client got its replies")

        guard case .submit(let s1) = first.message, case .submit(let s2) = second.message, case .submit(let s3) = again.message else {
            Issue.record("not SUBMITs")
            return
        }
        #expect(s1.submissionKey.count == 32 && s2.submissionKey.count == 32, "\(s1.submissionKey) \(s2.submissionKey)")
        #expect(s1.submissionKey != s2.submissionKey, "each batch has its own key")
        #expect(again.frames == second.frames, "sent again byte for byte, header (request id) included")
        #expect(s3.submissionKey == s2.submissionKey && s3.operations == s2.operations)
        #expect(retries.withLock { $0 } == 1)
        #expect(failure.withLock { $0 } == nil)
        let got = replies.withLock { $0 }
        #expect(got.count == 2)
        if got.count == 2 { #expect(got[1].accepted && got[1].duplicate && got[1].acceptedCount == 1) }

        // A message that has a key keeps it.
        #expect(CoordinatorConnection.keyed(again.message) == again.message)
    }

    /// `opctl submit`: the stand-in receives the SUBMIT and goes away without answering; a new one on the
    /// same port receives the same SUBMIT (same non-empty key, same operations) and answers that it is a
    /// duplicate; opctl exits 0 and prints the run.
    @Test func opctlSubmitSendsTheSameBatchAgainToACoordinatorThatCameBack() throws {
        let standIn = try StandInCoordinator()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-key-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - {id: a, kind: noop}
              - {id: b, kind: noop, after: [a]}
            """, in: dir)
        // No --timeout: the batch is sent again until the --request-timeout.
        let submit = try Spawned(opctl, ["submit", graph, "--allow-unknown-kinds"], env: ["OPCOORD": standIn.endpoint])
        let first = try standIn.expect(.submit, timeout: .seconds(20))
        standIn.vanish()
        try standIn.comeBack()
        let again = try standIn.expect(.submit, timeout: .seconds(20))
        guard case .submit(let s1) = first.message, case .submit(let s2) = again.message else {
            Issue.record("not SUBMITs")
            return
        }
        #expect(!s1.submissionKey.isEmpty)
        #expect(s2.submissionKey == s1.submissionKey)
        #expect(s2.operations == s1.operations && s2.operations.map(\.id) == ["a", "b"])
        #expect(again.frames[1] == first.frames[1], "the same body")
        var reply = accepted(again, count: 2)
        reply.run = "r-7"
        reply.duplicate = true
        try standIn.reply(to: again, .submitReply(reply))

        let r = submit.finish(timeout: 20)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("run r-7: submitted 2 operations"), "\(r.stdout)")
        #expect(r.stderr.contains("lost the connection to the coordinator at \(standIn.endpoint) before it answered the graph"), "\(r.stderr)")
        #expect(r.stderr.contains("it had received the graph before (applied once)"), "\(r.stderr)")
    }

    /// `opctl watch` while the coordinator restarts: it says the coordinator is unreachable, keeps going,
    /// and shows the state changes of the coordinator that came back (the WATCH is made again).
    @Test func watchSaysTheCoordinatorIsAwayAndGoesOnWhenItIsBack() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let watch = try Spawned(opctl, ["watch", "--interval", "0.1", "--timeout", "90"], env: ["OPCOORD": c.endpoint])
        try watch.waitUntilConnected(to: c)
        try c.restartCoordinator {
            try c.waitUntil("opctl says the coordinator is unreachable", timeout: 20) {
                watch.output("stderr").contains("coordinator at \(c.endpoint) unreachable, retrying")
            }
        }
        // It says it is back once it has sent its WATCH again: only then can the new coordinator's events
        // reach it (an operation that finished before would show only in the next snapshot's counts).
        try c.waitUntil("opctl watch is back", timeout: 20) {
            watch.output("stderr").contains("reconnected to the coordinator at \(c.endpoint) after")
        }
        // An operation of the new coordinator (no worker: it finishes by being cancelled) shows in the watch.
        #expect(try c.submit([op("after")]).accepted)
        var cancel = WireCancelOps()
        cancel.opIds = ["after"]
        cancel.run = "test"
        _ = try c.ack(.cancelOps(cancel))
        try c.waitUntil("opctl watch shows the operation finish", timeout: 20) {
            guard watch.process.isRunning else { throw ClusterError("opctl watch exited: \(watch.output("stderr"))") }
            return watch.output("stdout").split(separator: "\n").contains { $0.contains("test/after  finished") }
        }
        _ = watch.finish(timeout: 0)
    }
}

/// The coordinator's acceptance of `request` (a SUBMIT): its run, `count` operations.
private func accepted(_ request: StandInCoordinator.Request, count: UInt32) -> WireSubmitReply {
    var r = WireSubmitReply()
    r.accepted = true
    r.acceptedCount = count
    if case .submit(let s) = request.message { r.run = s.run }
    return r
}
