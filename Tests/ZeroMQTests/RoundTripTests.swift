import Testing
import ZeroMQ

@Suite struct RoundTripTests {
    @Test(arguments: [false, true])
    func dealerRouterRoundTrip(tcp: Bool) throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        let dealer = try makeSocket(ctx, .dealer)
        try dealer.connect(try bindAnywhere(router, tcp: tcp))

        #expect(try dealer.send(bytes("ping")))
        let request = try #require(try router.receiveMultipart())
        #expect(request.count == 2)
        #expect(request[1] == bytes("ping"))
        #expect(!router.moreToReceive)

        #expect(try router.sendMultipart([request[0], bytes("pong")]))
        #expect(try dealer.receive() == bytes("pong"))
        router.close(); dealer.close()
        try ctx.terminate(timeout: .seconds(2))
    }

    @Test(arguments: [false, true])
    func multipartKeepsFramesAndMoreFlags(tcp: Bool) throws {
        let ctx = try Context()
        let a = try makeSocket(ctx, .pair)
        let b = try makeSocket(ctx, .pair)
        try b.connect(try bindAnywhere(a, tcp: tcp))

        let big = [UInt8]((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let frames: [[UInt8]] = [bytes("header"), [], big, [0]]
        #expect(try a.sendMultipart(frames))
        #expect(try b.receiveMultipart() == frames)

        // Frame by frame, with the more flag visible after each one.
        try a.send(bytes("x"), flags: .more)
        try a.send(bytes("y"))
        #expect(try b.receive() == bytes("x"))
        #expect(b.moreToReceive)
        #expect(try b.get(.receiveMore))
        #expect(try b.receive() == bytes("y"))
        #expect(!b.moreToReceive)
    }

    @Test func messageFramesAvoidCopiesAndTrackMore() throws {
        let ctx = try Context()
        let a = try makeSocket(ctx, .pair)
        let b = try makeSocket(ctx, .pair)
        try b.connect(try bindAnywhere(a, tcp: true))

        let out = Frame(bytes("zero-copy payload that is longer than thirty-three bytes"))
        #expect(try a.send(out, flags: .more))
        #expect(out.count == 0, "libzmq owns the content after a send")
        #expect(try a.send(Frame([1, 2, 3])))

        let into = Frame()
        #expect(try b.receive(into: into))
        #expect(into.more)
        #expect(into.bytes == bytes("zero-copy payload that is longer than thirty-three bytes"))
        #expect(try b.receive(into: into))
        #expect(!into.more)
        #expect(into.withUnsafeBytes { Array($0) } == [1, 2, 3])
    }

    /// One body sent to several peers behind their own frames, content shared (the coordinator's EVENT
    /// bodies): each peer gets the whole message; the original frame stays whole for the next send.
    @Test func aSharedFrameGoesToSeveralPeersWhole() throws {
        let ctx = try Context()
        let a = try makeSocket(ctx, .pair), b = try makeSocket(ctx, .pair)
        let c = try makeSocket(ctx, .pair), d = try makeSocket(ctx, .pair)
        try b.connect(try bindAnywhere(a, tcp: true))
        try d.connect(try bindAnywhere(c, tcp: true))
        let payload = [UInt8](repeating: 7, count: 1_000)
        let body = Frame(payload)
        #expect(try a.sendMultipart([bytes("to b")], last: body.sharingContent()))
        #expect(try c.sendMultipart([bytes("to d"), bytes("h")], last: body.sharingContent()))
        #expect(body.bytes == payload, "the original keeps its content")
        #expect(try b.receiveMultipart() == [bytes("to b"), payload])
        #expect(try d.receiveMultipart() == [bytes("to d"), bytes("h"), payload])
    }

    @Test func nonBlockingOnEmptyAndUnconnectedSockets() throws {
        let ctx = try Context()
        let dealer = try Socket(ctx, type: .dealer)
        let start = ContinuousClock.now
        #expect(try dealer.receive(flags: .dontWait) == nil)
        #expect(try dealer.receive(into: Frame(), flags: .dontWait) == false)
        #expect(try dealer.receiveMultipart(flags: .dontWait) == nil)
        // A DEALER with no peer has no pipe to queue into: a send would block.
        #expect(try dealer.send(bytes("nowhere"), flags: .dontWait) == false)
        #expect(try dealer.sendMultipart([bytes("a"), bytes("b")], flags: .dontWait) == false)
        #expect(elapsedMs(since: start) < 500)
    }

    @Test func receiveTimeoutReturnsNilNotError() throws {
        let ctx = try Context()
        let s = try Socket(ctx, type: .pull)
        try s.set(.receiveTimeout, 20)
        try s.bind("inproc://timeout")
        let start = ContinuousClock.now
        #expect(try s.receive() == nil)
        #expect(elapsedMs(since: start) >= 15)
    }

    @Test func handoffMovesASocketToAnotherThread() throws {
        let ctx = try Context()
        let pull = try makeSocket(ctx, .pull)
        try pull.bind("inproc://handoff")
        let push = try makeSocket(ctx, .push)
        try push.connect("inproc://handoff")
        let handoff = SocketHandoff(push)
        let thread = TestThread {
            guard let s = handoff.take() else { return }
            _ = try? s.send(bytes("from the other thread"))
            s.close()
        }
        #expect(try pull.receive() == bytes("from the other thread"))
        #expect(thread.join())
        #expect(handoff.take() == nil)
    }
}
