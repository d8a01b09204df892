import ClusterTestSupport
import Foundation
import OpClient
import Synchronization
import Testing
import WireProtocol
import ZeroMQ

/// Issue 14, items 7 and 8: a request over the protocol's limits is refused by the client, at once and
/// by name; a reply the client cannot accept is reported as that; a wait survives a lost coordinator
/// until its own deadline, and ends at once when a restarted coordinator no longer knows its operations.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct ClientLimitsTests {
    typealias Run = CommandLineTests.Run
    let opctl = Binaries.path("opctl")

    // MARK: requests over the limits (item 7)

    /// A payload over 1 MiB: `opctl submit` names the operation and the limit before sending anything,
    /// also when the operation is in a later batch than others that would have been accepted first.
    @Test func aPayloadOverTheLimitIsRefusedBeforeAnythingIsSent() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let env = ["OPCOORD": c.endpoint]
        let graph = try CommandLineTests.writeGraph("""
            operations:
              - {id: fine, kind: echo, payload: ok}
              - id: big
                kind: echo
                payload: \(String(repeating: "x", count: 3 << 19))
            """, in: c.dir)
        let (r, elapsed) = try timed { try CommandLineTests.run(opctl, ["submit", graph, "--wait", "--timeout", "30"], env: env, timeout: 40) }
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(elapsed < .seconds(2), "refused at once, not after a round trip or a timeout")
        #expect(r.stderr.contains("payload of operation 'big' is 1.5 MiB (1572864 bytes); the limit is 1 MiB"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was sent"), "\(r.stderr)")
        #expect(try c.statusReply().totalOperations == 0)

        // 8,193 fine operations fill the first SUBMIT; the oversized one is in the second.
        let split = try CommandLineTests.writeGraph(
            "operations:\n" + (0...WireLimits.maxBatchRecords).map { "  - {id: n\($0), kind: noop}" }.joined(separator: "\n")
                + "\n  - {id: late, kind: echo, payload: \(String(repeating: "y", count: WireLimits.maxPayloadSize + 1))}\n",
            in: c.dir, name: "split.yaml")
        let late = try CommandLineTests.run(opctl, ["submit", split], env: env, timeout: 90)
        #expect(late.status == 2, "\(late.stdout)\(late.stderr)")
        #expect(late.stderr.contains("payload of operation 'late' is 1.0 MiB (1048577 bytes); the limit is 1 MiB"), "\(late.stderr)")
        #expect(try c.statusReply().totalOperations == 0, "no batch of the graph was accepted")
    }

    /// A request body over 16 MiB would be dropped by the coordinator's libzmq with the connection
    /// (a silent timeout); the client refuses it at once and names the limit. Too many ids likewise.
    @Test func aRequestOverTheFrameLimitIsRefusedAtOnce() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let conn = try c.connect()
        var submit = WireSubmit()
        submit.operations = (0..<17).map { op("p\($0)", kind: "echo", payload: String(repeating: "x", count: WireLimits.maxPayloadSize - 100)) }
        var status = WireStatus()
        status.opIds = (0..<17_000).map { String(format: "%05d", $0) + String(repeating: "i", count: 995) }
        for message in [WireProtocol.Message.submit(submit), .status(status)] {
            let start = ContinuousClock.now
            let error = #expect(throws: ClientError.self) { _ = try conn.request(message) }
            #expect(ContinuousClock.now - start < .seconds(2))
            let text = "\(String(describing: error))"
            #expect(text.contains("\(message.command) request not sent: request body of "), "\(text)")
            #expect(text.contains("over the 16 MiB frame limit"), "\(text)")
        }
        guard case .workersReply = try conn.request(.workers) else { Issue.record("no WORKERS reply"); return }
        #expect(try c.statusReply().totalOperations == 0)

        // More ids than one message may hold.
        var priority = WireSetPriority()
        priority.opIds = (0..<9000).map { "c\($0)" }
        let error = #expect(throws: ClientError.self) { _ = try conn.request(.setPriority(priority)) }
        #expect("\(String(describing: error))".contains("SET-PRIORITY request not sent: 9000 operation ids in one request; the limit is 8192"))

        // An id over 1024 bytes from the command line: refused here (exit 64), not by the coordinator.
        let long = String(repeating: "i", count: 2000)
        let why = try CommandLineTests.run(opctl, ["why", long], env: ["OPCOORD": c.endpoint], timeout: 30)
        #expect(why.status == 64, "\(why.stderr)")
        #expect(why.stderr.contains("WHY request not sent: op_id is 2000 bytes of UTF-8; the limit is 1024"), "\(why.stderr)")
    }

    /// A dense graph: 8,192 operations with 33 list elements each are over the 262,144 elements one
    /// SUBMIT may hold, though under its record and byte limits. `opctl submit` splits it further.
    @Test func aDenseGraphIsSplitWithinTheElementLimit() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 4, prefetch: 64)
        let roots = (0..<32).map { "r\($0)" }
        let text = "operations:\n" + roots.map { "  - {id: \($0), kind: noop}" }.joined(separator: "\n") + "\n"
            + (0..<8200).map { "  - {id: d\($0), kind: noop, after: [\(roots.joined(separator: ", "))]}" }.joined(separator: "\n") + "\n"
        let graph = try CommandLineTests.writeGraph(text, in: c.dir, name: "dense.yaml")
        let r = try CommandLineTests.run(opctl, ["submit", graph, "--wait", "--timeout", "90"], env: ["OPCOORD": c.endpoint], timeout: 150)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("8232 succeeded"), "\(r.stdout)")
    }

    // MARK: replies the client cannot accept (item 7)

    /// A peer that answers with a frame over the 16 MiB limit (our coordinator pages its replies, so a
    /// stand-in ROUTER plays that peer): the client's libzmq drops it and closes the connection. Reported
    /// as that, at once, not as a timeout; the next request is answered on a new socket.
    @Test func aReplyOverTheFrameLimitFromAPeerIsReportedAsSuch() throws {
        let ctx = try Context()
        let bound = Mutex<String?>(nil)
        let finished = Mutex(false)
        let listening = DispatchSemaphore(value: 0)
        // The stand-in owns its socket on its own thread: the first request gets 17 MiB back, the next
        // one a WORKERS reply.
        let served = Thread {
            guard let router = try? Socket(ctx, type: .router) else { return }
            defer { router.close() }
            try? router.set(.linger, 0)
            guard (try? router.bind("tcp://127.0.0.1:*")) != nil, let endpoint = try? router.lastEndpoint() else { return }
            bound.withLock { $0 = endpoint }
            listening.signal()
            let poller = Poller()
            _ = poller.add(router)
            var answered = 0
            let deadline = ContinuousClock.now + .seconds(20)
            // Serves until the test is done: closing (linger 0) right after the last answer could drop
            // it before it left, and the client would see the connection end instead of the reply.
            while !finished.withLock({ $0 }) && ContinuousClock.now < deadline {
                guard (try? poller.poll(timeout: .milliseconds(100))) != nil,
                      let frames = try? router.receiveMultipart(flags: .dontWait), frames.count >= 3,
                      case .success(let env) = WireCodec.decode(Array(frames[1...])) else { continue }
                let body: [[UInt8]] = answered == 0
                    ? [frames[1], [UInt8](repeating: 0, count: 17 << 20)]
                    : WireCodec.encode(.workersReply(WireWorkersReply()), requestID: env.requestID)
                _ = try? router.sendMultipart([frames[0]] + body)
                answered += 1
            }
        }
        served.start()
        _ = listening.wait(timeout: .now() + 5)
        let standIn = try #require(bound.withLock { $0 }, "the stand-in did not bind")
        let conn = try CoordinatorConnection(endpoint: standIn, timeout: .seconds(10))
        let start = ContinuousClock.now
        do {
            _ = try conn.request(.status(WireStatus()))
            Issue.record("a 17 MiB reply was accepted")
        } catch {
            #expect("\(error)".contains("over the protocol's 16 MiB frame limit"), "\(error)")
        }
        #expect(ContinuousClock.now - start < .seconds(8), "not a timeout")
        defer { finished.withLock { $0 = true }; served.cancel() }
        guard case .workersReply = try conn.request(.workers) else { Issue.record("no reply on the new socket"); return }
    }

    /// 20 results of almost 1 MiB are more than one STATUS reply may carry: the coordinator leaves some
    /// out and names them, and opctl fetches the rest — complete, and at once.
    @Test func aStatusOfLargeResultsStaysUnderTheFrameLimit() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 4)
        let result = String(repeating: "r", count: WireLimits.maxResultSize - 1000)
        let ids = (0..<20).map { "e\($0)" }
        for half in [ids[..<10], ids[10...]] {
            #expect(try c.submit(half.map { op($0, kind: "echo", payload: result) }).accepted)
        }
        try c.wait(ids, timeout: 60)

        let conn = try c.connect()
        var s = WireStatus()
        s.opIds = ids
        s.withResults = true
        let start = ContinuousClock.now
        do {
            _ = try conn.request(.status(s))
            // A coordinator that keeps its replies under the limit is fine too.
        } catch {
            #expect("\(error)".contains("the reply to STATUS from the coordinator at \(c.endpoint) is over the protocol's 16 MiB frame limit"), "\(error)")
        }
        #expect(ContinuousClock.now - start < .seconds(5), "not a timeout")
        guard case .workersReply = try conn.request(.workers) else { Issue.record("no WORKERS reply"); return }

        let (r, elapsed) = try timed {
            try CommandLineTests.run(opctl, ["status", "--json", "--results"] + ids, env: ["OPCOORD": c.endpoint], timeout: 30)
        }
        #expect(elapsed < .seconds(5), "\(r.stderr)")
        #expect(!r.stderr.contains("no reply"), "\(r.stderr)")
        if r.status != 0 {
            #expect(r.status == 3)
            #expect(r.stderr.contains("the reply to STATUS from the coordinator at \(c.endpoint) is over the protocol's 16 MiB frame limit"), "\(r.stderr)")
        }
    }

    // MARK: waits across a lost coordinator (item 8)

    /// The coordinator restarts while `opctl wait` waits; it runs --ephemeral, so the new one does not
    /// know the operation. opctl notices the lost connection, reconnects, asks again and ends at once.
    @Test func aWaitEndsWhenARestartedCoordinatorNoLongerKnowsTheOperation() throws {
        let c = try LocalCluster(journal: false)
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("long", kind: "sleep", payload: "60000")]).accepted)
        let wait = try Spawned(opctl, ["wait", "long"], env: ["OPCOORD": c.endpoint])
        try wait.waitUntilConnected(to: c)
        try c.restartCoordinator()
        let restarted = ContinuousClock.now
        let r = wait.finish(timeout: 30)
        #expect(ContinuousClock.now - restarted < .seconds(10), "ended within a few seconds of the restart")
        #expect(r.status == 5, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("lost the connection to the coordinator at \(c.endpoint) while waiting"), "\(r.stderr)")
        #expect(r.stderr.contains("restarted and no longer knows 1 of the 1 operation still awaited (it was started without its state directory"), "\(r.stderr)")
    }

    /// Issue 14 item 8 with the journal (A5): the coordinator is killed with SIGKILL while `opctl wait`
    /// (no --timeout) waits for a running shell op, and restarted on its state directory. opctl notices,
    /// reconnects, asks again, and ends 0 when the op finishes — which ran once: its worker kept it
    /// running and handed it back.
    @Test func aWaitSurvivesACoordinatorKilledAndRestartedOnItsStateDirectory() throws {
        let c = try LocalCluster(heartbeatMs: 100)
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        let marker = c.dir.appendingPathComponent("ran").path
        let command = #"{"command": "sleep 1.5; echo once >> "# + marker + #""}"#
        #expect(try c.submit([op("slow", kind: "shell", payload: command)]).accepted)
        try c.waitUntil("the op runs", timeout: 20) { try c.status(["slow"])["slow"]?.state == .executing }
        let wait = try Spawned(opctl, ["wait", "slow", "--run", "test"], env: ["OPCOORD": c.endpoint])
        try wait.waitUntilConnected(to: c)
        try c.restartCoordinator(crash: true)
        let r = wait.finish(timeout: 60)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("lost the connection"), "\(r.stderr)")
        #expect(r.stdout.contains("1 succeeded"), "\(r.stdout)")
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "once\n", "the op ran exactly once")
    }

    /// The coordinator stops while `opctl wait --timeout 3` waits and never comes back: opctl keeps
    /// trying until its own deadline and exits 4 then — not at the request timeout, not never. And
    /// against a coordinator that is not there at all, also at the deadline.
    @Test func aWaitGivesUpAtItsTimeoutWhenTheCoordinatorIsGone() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("a", slots: 1)
        #expect(try c.submit([op("long", kind: "sleep", payload: "60000")]).accepted)
        let env = ["OPCOORD": c.endpoint]
        let wait = try Spawned(opctl, ["wait", "long", "--timeout", "3"], env: env)
        try wait.waitUntilConnected(to: c)
        kill(c.coordinator.processIdentifier, SIGTERM)
        let r = wait.finish(timeout: 30)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(wait.elapsed >= .milliseconds(2500) && wait.elapsed < .seconds(6), "\(wait.elapsed)")
        #expect(r.stderr.contains("lost the connection"), "\(r.stderr)")
        #expect(r.stderr.contains("gave up at the --timeout: the coordinator at \(c.endpoint) did not come back"), "\(r.stderr)")
        #expect(r.stdout.contains("timed out with 1 still unfinished"), "\(r.stdout)")

        let (absent, elapsed) = try timed { try CommandLineTests.run(opctl, ["wait", "long", "--timeout", "2"], env: env, timeout: 30) }
        #expect(absent.status == 4, "\(absent.stdout)\(absent.stderr)")
        #expect(elapsed >= .milliseconds(1500) && elapsed < .seconds(5), "\(elapsed)")
        #expect(absent.stderr.contains("gave up at the --timeout: could not reach the coordinator"), "\(absent.stderr)")
    }
}

private func timed<T>(_ body: () throws -> T) rethrows -> (T, Duration) {
    let start = ContinuousClock.now
    let value = try body()
    return (value, ContinuousClock.now - start)
}

