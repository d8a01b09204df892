import ClusterTestSupport
import Foundation
import Testing
import WireProtocol
import ZeroMQ

/// Issue 14 on real processes: what a hostile or buggy peer sends cannot exhaust the coordinator's
/// memory or log, hoard work, or make a reply too large for the frame limit.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HostilePeerIntegrationTests {
    /// A raw DEALER that speaks the protocol by hand.
    final class RawPeer {
        let socket: Socket
        let poller = Poller()
        init(_ ctx: Context, _ endpoint: String) throws {
            socket = try Socket(ctx, type: .dealer)
            try socket.set(.linger, 0)
            try socket.connect(endpoint)
            _ = poller.add(socket)
        }
        func send(_ m: Message) throws { _ = try socket.sendMultipart(WireCodec.encode(m)) }
        /// The next message other than HEARTBEAT within `seconds`, or nil.
        func next(within seconds: Double = 5) throws -> Message? {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline {
                try poller.poll(timeout: deadline - ContinuousClock.now)
                guard let frames = try socket.receiveMultipart(flags: .dontWait) else { continue }
                guard case .success(let env) = WireCodec.decode(frames) else { continue }
                if case .heartbeat = env.message { continue }
                return env.message
            }
            return nil
        }
        func close() { socket.close() }
    }

    static func hello(_ name: String, kinds: Int, tags: Int = 0, labelBytes: Int, slots: UInt32 = 1) -> Message {
        .hello(.with {
            $0.protocolVersion = 1
            $0.name = name
            $0.slots = slots
            $0.kinds = (0..<kinds).map { String("k\($0)-" + String(repeating: "x", count: labelBytes)).prefix(labelBytes).description }
            $0.tags = (0..<tags).map { String("t\($0)-" + String(repeating: "y", count: labelBytes)).prefix(labelBytes).description }
        })
    }

    @Test func helloSpamIsBoundedReleasedAndLoggedInBrief() throws {
        let c = try LocalCluster(heartbeatMs: 200)
        defer { c.stop() }
        let ctx = try Context()
        // Over the limits: refused at once, with the limit named.
        let over = try RawPeer(ctx, c.endpoint)
        try over.send(Self.hello("over", kinds: 2000, labelBytes: 1000))
        guard case .reject(let r)? = try over.next() else { Issue.record("expected REJECT"); return }
        #expect(r.reason.contains("kinds") && r.reason.contains("256"), "\(r.reason)")
        over.close()
        let rssBefore = try c.statusReply().coordinatorRssBytes
        // The largest HELLOs allowed, from 60 connections that then vanish, and 40 more on one connection.
        for i in 0..<60 {
            let p = try RawPeer(ctx, c.endpoint)
            try p.send(Self.hello("spam\(i)", kinds: 256, tags: 64, labelBytes: 256))
            guard case .welcome? = try p.next() else { Issue.record("expected WELCOME"); return }
            p.close()
        }
        let again = try RawPeer(ctx, c.endpoint)
        for _ in 0..<40 { try again.send(Self.hello("again", kinds: 256, tags: 64, labelBytes: 256)) }
        again.close()
        try c.waitUntil("every spamming worker declared lost", timeout: 15) { try c.workerList().isEmpty }
        let rssAfter = try c.statusReply().coordinatorRssBytes
        #expect(rssAfter < rssBefore + 40 << 20, "RSS grew by \((Int(rssAfter) - Int(rssBefore)) >> 20) MiB")
        let log = try String(contentsOf: c.dir.appendingPathComponent("opcoord.log"), encoding: .utf8)
        #expect(log.utf8.count < 200 << 10, "log of \(log.utf8.count) bytes")
        #expect(log.split(separator: "\n").allSatisfy { $0.utf8.count < 2_000 }, "no line is a peer's whole HELLO")
        #expect(c.coordinator.isRunning)
    }

    /// Replies respect the frame limit they impose on others: 30 results of 1 MiB are more than one
    /// STATUS may carry, so the reply leaves some out and names them; opctl fetches the rest.
    @Test func aStatusWithLargeResultsStaysUnderTheFrameLimitAndIsComplete() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w", slots: 2)
        let big = String(repeating: "r", count: WireLimits.maxPayloadSize - 100)
        let ids = (0..<30).map { "big\($0)" }
        for chunk in stride(from: 0, to: 30, by: 10) {
            #expect(try c.submit(ids[chunk..<chunk + 10].map { op($0, kind: "echo", payload: big) }).accepted)
        }
        try c.wait(ids)
        var s = WireStatus()
        s.opIds = ids
        s.withResults = true
        guard case .statusReply(let r) = try c.connect().request(.status(s)) else { Issue.record("no STATUS reply"); return }
        #expect(!r.omitted.isEmpty && r.ops.count + r.omitted.count == 30, "\(r.ops.count) in the reply, \(r.omitted.count) omitted")
        let opctl = try CommandLineTests.run(Binaries.path("opctl"), ["status", "--results", "--json"] + ids,
                                             env: ["OPCOORD": c.endpoint], timeout: 60)
        #expect(opctl.status == 0, "\(opctl.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(opctl.stdout.utf8)) as? [String: Any])
        let records = try #require(json["operations"] as? [[String: Any]])
        #expect(records.count == 30)
        #expect(records.allSatisfy { ($0["result"] as? String)?.utf8.count == big.utf8.count }, "every result complete")
    }
}
