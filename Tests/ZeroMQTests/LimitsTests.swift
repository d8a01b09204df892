import Testing
import ZeroMQ

@Suite struct LimitsTests {
    /// What libzmq 4.3 does with a message above ZMQ_MAXMSGSIZE on tcp: the receiver's decoder rejects it,
    /// the connection is closed (monitor: disconnected), the message is lost, and the DEALER reconnects on
    /// its own; later messages flow again. The limit applies to each frame, not to the whole message.
    @Test func oversizedMessageOverTcpDisconnectsAndIsDropped() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.maxMessageSize, 100)
        try router.set(.routerHandover, true)  // the reconnecting dealer reuses its routing id at once
        #expect(try router.get(.maxMessageSize) == 100)
        let monitor = try router.monitor([.accepted, .disconnected])
        try monitor.socket.set(.receiveTimeout, patienceMs)
        let endpoint = try bindAnywhere(router, tcp: true)

        let dealer = try makeSocket(ctx, .dealer)
        try dealer.set(.routingId, bytes("d"))
        try dealer.set(.reconnectInterval, 10)
        try dealer.connect(endpoint)

        try dealer.send([UInt8](repeating: 1, count: 100))  // exactly the limit: accepted
        #expect(try router.receiveMultipart()?.last?.count == 100)
        #expect(try monitor.receive()?.kind == .accepted)

        // The limit is per frame: three 80-byte frames (240 bytes in all) pass a 100-byte limit.
        let frames = [[UInt8]](repeating: [UInt8](repeating: 7, count: 80), count: 3)
        try dealer.sendMultipart(frames)
        #expect(try router.receiveMultipart() == [bytes("d")] + frames)

        try dealer.send([UInt8](repeating: 2, count: 101))  // one byte over
        #expect(try monitor.receive()?.kind == .disconnected)
        #expect(try router.receive(flags: .dontWait) == nil, "the oversized message is never delivered")

        #expect(try monitor.receive()?.kind == .accepted, "the dealer reconnects by itself")
        try dealer.send(bytes("after"))
        #expect(try router.receiveMultipart() == [bytes("d"), bytes("after")])
    }

    /// inproc has no wire decoder, so ZMQ_MAXMSGSIZE is not enforced there.
    @Test func maxMessageSizeIsNotEnforcedOverInproc() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.maxMessageSize, 100)
        try router.bind("inproc://big")
        let dealer = try makeSocket(ctx, .dealer)
        try dealer.connect("inproc://big")
        try dealer.send([UInt8](repeating: 3, count: 1000))
        #expect(try router.receiveMultipart()?.last?.count == 1000)
    }

    @Test func highWaterMarkMakesNonBlockingSendsWouldBlock() throws {
        let ctx = try Context()
        let pull = try makeSocket(ctx, .pull)
        try pull.set(.receiveHighWaterMark, 5)
        try pull.bind("inproc://hwm")
        let push = try makeSocket(ctx, .push)
        try push.set(.sendHighWaterMark, 5)
        try push.connect("inproc://hwm")
        var sent = 0
        while sent < 1000, try push.send(bytes("m"), flags: .dontWait) { sent += 1 }
        #expect(sent >= 5 && sent < 1000, "inproc queues sndhwm + rcvhwm messages, then would block")
        for _ in 0..<sent { _ = try #require(try pull.receive(flags: .dontWait)) }
        // The reader's "room again" notice reaches the writer as a command; polling for writable processes it.
        let poller = Poller()
        poller.add(push, events: .writable)
        #expect(try poller.poll(timeout: .seconds(3)) == 1)
        #expect(try push.send(bytes("m"), flags: .dontWait))
    }
}

@Suite struct HeartbeatTests {
    /// With ZMTP heartbeats far shorter than the idle period, PING/PONG keeps an idle connection up.
    @Test func heartbeatsKeepAnIdleConnectionAlive() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.heartbeatInterval, 20)
        try router.set(.heartbeatTimeout, 60)
        let endpoint = try bindAnywhere(router, tcp: true)
        let dealer = try makeSocket(ctx, .dealer)
        try dealer.set(.heartbeatInterval, 20)
        try dealer.set(.heartbeatTimeout, 60)
        try dealer.set(.heartbeatTTL, 200)
        let monitor = try dealer.monitor([.connected, .disconnected])
        try monitor.socket.set(.receiveTimeout, patienceMs)
        try dealer.connect(endpoint)
        #expect(try monitor.receive()?.kind == .connected)
        try monitor.socket.set(.receiveTimeout, 300)  // idle for 15 heartbeat intervals
        #expect(try monitor.receive() == nil, "no disconnect while heartbeats flow")
        try dealer.send(bytes("still here"))
        #expect(try router.receiveMultipart()?.last == bytes("still here"))
    }
}
