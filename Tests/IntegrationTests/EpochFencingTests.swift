import ClusterTestSupport
import Foundation
import OpClient
import Testing
import WireProtocol

/// (1.9, PROTOCOL.md §14) A replaced leader's late messages are ignored: a real opworker drops a DISPATCH
/// with a lower epoch than it has seen, a client a reply with a lower epoch. The stand-in coordinator
/// plays both leaders on one connection (what a worker sees when an isolated old leader's message
/// arrives after the new leader's).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct EpochFencingTests {
    static func dispatch(_ id: String, epoch: UInt64) -> WireProtocol.Message {
        var r = WireDispatchRecord()
        r.opID = "run/\(id)"
        r.attempt = 1
        r.kind = "echo"
        r.payload = Data(id.utf8)
        var d = WireDispatch()
        d.records = [r]
        d.epoch = epoch
        return .dispatch(d)
    }

    @Test func aWorkerIgnoresADispatchOfAnOlderEpoch() throws {
        let standIn = try StandInCoordinator()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-fence-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("worker.log")
        let worker = try LocalCluster.launch("opworker", ["--connect", standIn.endpoint, "--name", "fenced", "--slots", "1", "--prefetch", "4"], log: log)
        defer { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() }
        let hello = try standIn.expect(.hello, timeout: .seconds(20))
        var w = WireWelcome()
        w.workerID = "w-1"
        w.heartbeatIntervalMs = 1000
        w.liveness = 3
        w.epoch = 7
        try standIn.reply(to: hello, .welcome(w))
        _ = try standIn.expect(.credit, timeout: .seconds(10))
        // The old leader's DISPATCH arrives after the new leader's WELCOME, then the new leader's own.
        try standIn.reply(to: hello, Self.dispatch("stale", epoch: 6))
        try standIn.reply(to: hello, Self.dispatch("fresh", epoch: 7))
        var reported: [String] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while !reported.contains("run/fresh"), ContinuousClock.now < deadline {
            guard let r = try standIn.receive(timeout: deadline - .now) else { break }
            switch r.message {
            case .started(let s): reported += s.parts.map(\.opID)
            case .finished(let f): reported += f.records.map(\.opID)
            default: break
            }
        }
        #expect(reported.contains("run/fresh"), "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        #expect(!reported.contains("run/stale"))
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(text.contains("ignored DISPATCH of epoch 6"))
    }

    @Test func aClientIgnoresARepliesOfAnOlderEpoch() throws {
        let standIn = try StandInCoordinator()
        nonisolated(unsafe) let conn = try CoordinatorConnection(endpoint: standIn.endpoint, timeout: .seconds(10))
        let answered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var replies: [WireStatusReply] = []
        let thread = Thread {
            for _ in 0..<2 {
                if case .statusReply(let r)? = try? conn.request(.status(WireStatus())) { replies.append(r) }
            }
            answered.signal()
        }
        thread.start()
        // First request: the new leader (epoch 5) answers.
        let first = try standIn.expect(.status, timeout: .seconds(10))
        var fresh = WireStatusReply()
        fresh.epoch = 5
        fresh.matched = 1
        try standIn.reply(to: first, .statusReply(fresh))
        // Second: a late reply of the old leader (epoch 4) comes first, with the right request id; ignored.
        let second = try standIn.expect(.status, timeout: .seconds(10))
        var stale = WireStatusReply()
        stale.epoch = 4
        stale.matched = 99
        try standIn.reply(to: second, .statusReply(stale))
        fresh.matched = 2
        try standIn.reply(to: second, .statusReply(fresh))
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(replies.map(\.matched) == [1, 2])
        #expect(conn.fence.highest == 5)
        #expect(conn.fence.fenced == 1)
    }
}
