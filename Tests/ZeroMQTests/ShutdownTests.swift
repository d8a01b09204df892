import Foundation
import Testing
import ZeroMQ

@Suite struct ShutdownTests {
    @Test func terminationWithPendingMessagesIsBounded() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.receiveHighWaterMark, 10)
        let endpoint = try bindAnywhere(router, tcp: true)
        let dealer = try makeSocket(ctx, .dealer)
        try dealer.connect(endpoint)
        // The router never reads; fill every queue on the way.
        var queued = 0
        for _ in 0..<100_000 { if try dealer.send([UInt8](repeating: 0, count: 1024), flags: .dontWait) { queued += 1 } else { break } }
        #expect(queued > 0)
        // A second dealer to a port nobody listens on keeps messages pending forever.
        let orphan = try makeSocket(ctx, .dealer)
        try orphan.set(.immediate, false)
        try orphan.connect("tcp://127.0.0.1:1")
        _ = try orphan.send(bytes("never delivered"), flags: .dontWait)

        let start = ContinuousClock.now
        dealer.close(); orphan.close(); router.close()
        try ctx.terminate(timeout: .seconds(2))
        #expect(elapsedMs(since: start) < 1000)
        #expect(ctx.isTerminated)
        try ctx.terminate()  // idempotent
        let late = #expect(throws: ZMQError.self) { _ = try Socket(ctx, type: .dealer) }
        #expect(late?.isTerminated == true)
    }

    @Test func shutdownWakesABlockedOwnerWhichThenCloses() throws {
        let ctx = try Context()
        let ready = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        let thread = TestThread {
            do {
                let s = try Socket(ctx, type: .dealer)  // no receive timeout: blocks until shutdown
                try s.bind("inproc://blocked")
                ready.signal()
                _ = try s.receive()
                outcome.set("returned")
            } catch let e as ZMQError {
                outcome.set(e.isTerminated ? "ETERM" : "\(e)")
            } catch {
                outcome.set("\(error)")
            }
            ready.signal()
        }
        #expect(ready.wait(timeout: .now() + 3) == .success)
        let start = ContinuousClock.now
        ctx.shutdown()
        try ctx.terminate(timeout: .seconds(3))  // the thread's socket is released as it unwinds
        #expect(elapsedMs(since: start) < 2000)
        #expect(thread.join())
        #expect(outcome.value == "ETERM")
    }

    @Test func terminateWithAnOpenSocketGivesUpInsteadOfHanging() throws {
        let ctx = try Context()
        let s = try Socket(ctx, type: .router)
        #expect(ctx.openSocketCount == 1)
        let start = ContinuousClock.now
        let error = #expect(throws: ZMQError.self) { try ctx.terminate(timeout: .milliseconds(50)) }
        #expect(error?.errno == EBUSY)
        #expect(elapsedMs(since: start) < 1000)
        #expect(!ctx.isTerminated)
        // After shutdown the socket reports ETERM on use; closing it lets termination finish.
        let eterm = #expect(throws: ZMQError.self) { try s.receive() }
        #expect(eterm?.isTerminated == true)
        s.close()
        #expect(ctx.openSocketCount == 0)
        try ctx.terminate(timeout: .seconds(1))
        #expect(ctx.isTerminated)
    }

    @Test func droppingEverythingTerminatesInDeinit() throws {
        var ctx: Context? = try Context()
        weak let weakCtx = ctx
        var s: Socket? = try Socket(ctx!, type: .dealer)
        try s!.connect("tcp://127.0.0.1:1")
        _ = try s!.send(bytes("pending"), flags: .dontWait)
        ctx = nil
        #expect(weakCtx != nil, "the socket keeps its context alive")
        s = nil
        #expect(weakCtx == nil)
    }
}

final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func set(_ t: String) { lock.withLock { text = t } }
    var value: String { lock.withLock { text } }
}
