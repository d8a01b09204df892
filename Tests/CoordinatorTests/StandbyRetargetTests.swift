import ClusterTestSupport
@testable import Coordinator
import Foundation
import Logging
import Synchronization
import Testing
import WireProtocol
import ZeroMQ

/// The entry points an election calls, in process (issue 29): `CoordinatorServer.promote()` and
/// `follow(leader:)`. Three coordinators: A leads, B and C follow it; A stops, B is promoted, C is told
/// to follow B instead, and goes on from its own position: nothing acknowledged by A or B is missing
/// when C is promoted in turn.
@Suite(.serialized) struct StandbyRetargetTests {
    final class Node: @unchecked Sendable {
        let server: CoordinatorServer
        let endpoint: String
        let thread: Thread
        let dir: String

        init(_ name: String, follow leader: String? = nil) throws {
            var template = Array("/tmp/opq-standby-\(name)-XXXXXX".utf8CString)
            let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
            var config = CoordinatorConfig(bind: "tcp://127.0.0.1:*")
            config.heartbeatIntervalMs = 100
            config.liveness = 5
            config.stateDirectory = dir + "/state"
            if let leader { config.replication.follow = FollowConfig(leader: leader, name: name) }
            var logger = Logger(label: "opcoord-\(name)")
            logger.logLevel = .warning
            let server = try CoordinatorServer(config: config, logger: logger)
            let bound = Mutex<String?>(nil)
            thread = Thread { try? server.run(ready: { e in bound.withLock { $0 = e } }) }
            thread.start()
            let deadline = ContinuousClock.now + .seconds(20)
            while bound.withLock({ $0 }) == nil && ContinuousClock.now < deadline { usleep(2_000) }
            guard let e = bound.withLock({ $0 }) else { throw ClientFailure("coordinator \(name) did not start") }
            self.server = server
            self.dir = dir
            endpoint = e
        }

        func stop() {
            server.stop()
            let deadline = ContinuousClock.now + .seconds(10)
            while !thread.isFinished && ContinuousClock.now < deadline { usleep(2_000) }
            if thread.isFinished { try? FileManager.default.removeItem(atPath: dir) }
        }
    }

    struct ClientFailure: Error { var text: String; init(_ t: String) { text = t } }

    /// One request, one reply (bounded).
    private func ask(_ endpoint: String, _ message: Message) throws -> Message {
        let context = try Context()
        let socket = try Socket(context, type: .dealer)
        defer { try? socket.set(.linger, 0); socket.close(); try? context.terminate(timeout: .seconds(1)) }
        try socket.connect(endpoint)
        _ = try socket.sendMultipart(WireCodec.encode(message, requestID: 7))
        let poller = Poller()
        poller.add(socket)
        guard try poller.poll(timeout: .seconds(10)) > 0, let frames = try socket.receiveMultipart(flags: .dontWait) else {
            throw ClientFailure("no reply from \(endpoint)")
        }
        switch WireCodec.decode(frames) {
        case .success(let e): return e.message
        case .failure(let e): throw ClientFailure("\(e)")
        }
    }

    private func standbys(_ endpoint: String) throws -> [WireStandbyInfo] {
        guard case .statusReply(let r) = try ask(endpoint, .status(WireStatus())) else { return [] }
        return r.standbys
    }


    private func submit(_ endpoint: String, _ ids: [String]) throws -> Bool {
        var s = WireSubmit()
        s.run = "r"
        s.append = true
        s.operations = ids.map { var o = WireOperation(); o.id = $0; o.kind = "noop"; return o }
        guard case .submitReply(let r) = try ask(endpoint, .submit(s)) else { return false }
        return r.accepted
    }

    @Test func aStandbyToldToFollowTheNewLeaderGoesOnFromItsOwnPosition() throws {
        let a = try Node("a")
        let b = try Node("b", follow: a.endpoint)
        let c = try Node("c", follow: a.endpoint)
        defer { for n in [a, b, c] { n.stop() } }
        try waitUntil("both standbys in sync") { try standbys(a.endpoint).filter { $0.state == "sync" }.count == 2 }
        #expect(try submit(a.endpoint, ["x1", "x2", "x3"]))
        a.stop()
        b.server.promote()
        c.server.follow(leader: b.endpoint)
        try waitUntil("c in sync with b") { try standbys(b.endpoint).contains { $0.name == "c" && $0.state == "sync" } }
        #expect(try submit(b.endpoint, ["y1", "y2"]))
        try waitUntil("c to hold b's records") { try standbys(b.endpoint).contains { $0.name == "c" && $0.lagRecords == 0 && $0.state == "sync" } }
        // A serving coordinator is not made a standby by follow(leader:): it goes on serving.
        b.server.follow(leader: a.endpoint)
        #expect(try submit(b.endpoint, ["z1"]))
        try waitUntil("c to hold z1") { try standbys(b.endpoint).contains { $0.name == "c" && $0.lagRecords == 0 } }
        c.server.promote()
        try waitUntil("c to serve") { if case .statusReply = try ask(c.endpoint, .status(WireStatus())) { return true } else { return false } }
        guard case .statusReply(let r) = try ask(c.endpoint, .status(WireStatus())) else { Issue.record("no STATUS"); return }
        #expect(r.totalOperations == 6)
    }
}
