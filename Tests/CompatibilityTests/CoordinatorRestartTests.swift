import ClusterTestSupport
import DistributedOperationQueue
import Foundation
import OpClient
import Synchronization
import Testing
import WireProtocol

/// The Swift API across a lost coordinator (docs/PROTOCOL.md §5.13, §10): an add whose SUBMIT was lost
/// with the connection is sent again with the same submission key; after a reconnection the client goes
/// on, and re-reads what it waits for.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CoordinatorRestartTests {
    /// A stand-in coordinator receives the SUBMIT of `addOperation` and goes away without answering; the
    /// one that comes back on the same port receives the same bytes (same non-empty key) and answers that
    /// it is a duplicate: `addOperation` returns without an error.
    @Test func anAddLostWithTheConnectionIsSentAgainWithTheSameKey() throws {
        let standIn = try StandInCoordinator()
        let endpoint = standIn.endpoint
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let op = RemoteOperation(kind: "noop", name: "once")
        let client = Thread {
            defer { done.signal() }
            do {
                let remote = try RemoteCoordinator(endpoint: endpoint, timeout: .seconds(10))
                let q = RemoteOperationQueue(name: "retried", coordinator: remote)
                try q.addOperation(op)
                remote.close()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        client.start()
        // What the client asks besides: WATCH (ACK), STATUS of the queue (unknown) and of its operation (pending).
        let others = { (r: StandInCoordinator.Request) -> WireProtocol.Message? in
            switch r.message {
            case .watch: return .ack(WireAck())
            case .status(let s):
                var reply = WireStatusReply()
                reply.ops = s.opIds.map { id in
                    var o = WireOpStatus()
                    o.id = id
                    o.run = s.run
                    o.state = .pending
                    return o
                }
                return .statusReply(reply)
            default: return nil
            }
        }
        let first = try standIn.expect(.submit, timeout: .seconds(20), others: others)
        standIn.vanish()
        try standIn.comeBack()
        let again = try standIn.expect(.submit, timeout: .seconds(20), others: others)
        guard case .submit(let s) = again.message else { Issue.record("not a SUBMIT"); return }
        #expect(s.submissionKey.count == 32, "\(s.submissionKey)")
        #expect(again.frames == first.frames, "sent again byte for byte")
        var reply = WireSubmitReply()
        reply.accepted = true
        reply.acceptedCount = 1
        reply.run = s.run
        reply.duplicate = true
        try standIn.reply(to: again, .submitReply(reply))
        // Serves until the client is done (closing earlier could drop the reply before it left).
        try waitUntil("the client to finish", timeout: 20, interval: .zero) {
            if done.wait(timeout: .now()) == .success { return true }
            if let r = try standIn.receive(timeout: .milliseconds(50)), let answer = others(r) { try standIn.reply(to: r, answer) }
            return false
        }
        #expect(failure.withLock { $0 } == nil)
    }

    /// The coordinator restarts (without a journal yet) while an operation waits: the client reconnects,
    /// re-reads what it waits for and, as the new coordinator does not know it, finishes it as failed
    /// instead of waiting forever; an operation added afterwards gets its events (no worker: it finishes
    /// by being cancelled).
    @Test func afterARestartTheClientGoesOnAndWhatTheCoordinatorForgotFails() throws {
        let local = try LocalCluster(heartbeatMs: 200, journal: false)   // --ephemeral: the restart forgets
        defer { local.stop() }
        let remote = try RemoteCoordinator(endpoint: local.endpoint, timeout: .seconds(5))
        let q = RemoteOperationQueue(name: "restart", coordinator: remote)
        let forgotten = RemoteOperation(kind: "noop", name: "forgotten")
        try q.addOperation(forgotten)
        try local.restartCoordinator()
        #expect(forgotten.waitUntilFinished(timeout: .seconds(20)))
        guard case .failed(let why)? = forgotten.outcome else { Issue.record("\(String(describing: forgotten.outcome))"); return }
        #expect(why.contains("restarted and no longer knows this operation"), "\(why)")

        let after = RemoteOperation(kind: "noop", name: "after")
        try q.addOperation(after)
        after.cancel()
        #expect(after.waitUntilFinished(timeout: .seconds(20)))
        #expect(after.outcome?.isCancelled == true, "\(String(describing: after.outcome))")
    }
}
