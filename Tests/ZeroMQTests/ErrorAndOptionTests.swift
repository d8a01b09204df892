import Foundation
import Testing
import ZeroMQ

@Suite struct ErrorAndOptionTests {
    @Test func errorsCarryErrnoTextAndOperation() throws {
        let ctx = try Context()
        let s = try Socket(ctx, type: .router)
        let bad = #expect(throws: ZMQError.self) { try s.bind("bogus://nowhere") }
        #expect(bad?.errno == EPROTONOSUPPORT)
        #expect(bad?.message == String(cString: strerror(EPROTONOSUPPORT)))
        #expect(bad?.operation == "zmq_bind(bogus://nowhere)")
        #expect(bad?.description.contains("bogus://nowhere") == true)

        let port = #expect(throws: ZMQError.self) { try s.bind("tcp://127.0.0.1:notaport") }
        #expect(port?.errno == EINVAL)

        try s.bind("tcp://127.0.0.1:*")
        let taken = try s.lastEndpoint()
        let other = try Socket(ctx, type: .router)
        let inUse = #expect(throws: ZMQError.self) { try other.bind(taken) }
        #expect(inUse?.errno == EADDRINUSE)

        s.close()
        let closed = #expect(throws: ZMQError.self) { try s.send(bytes("x")) }
        #expect(closed?.isClosed == true)
        s.close()  // idempotent
    }

    @Test func optionsRoundTrip() throws {
        let ctx = try Context()
        let s = try Socket(ctx, type: .dealer)
        #expect(try s.get(.linger) == 0, "the wrapper's default")
        let refused = #expect(throws: ZMQError.self) { try s.set(.linger, -1) }
        #expect(refused?.errno == EINVAL)

        try s.set(.sendHighWaterMark, 5000); #expect(try s.get(.sendHighWaterMark) == 5000)
        try s.set(.receiveHighWaterMark, 7000); #expect(try s.get(.receiveHighWaterMark) == 7000)
        try s.set(.maxMessageSize, 1 << 20); #expect(try s.get(.maxMessageSize) == 1 << 20)
        try s.set(.heartbeatInterval, 1000); #expect(try s.get(.heartbeatInterval) == 1000)
        try s.set(.heartbeatTimeout, 3000); #expect(try s.get(.heartbeatTimeout) == 3000)
        try s.set(.heartbeatTTL, 3000); #expect(try s.get(.heartbeatTTL) == 3000)
        try s.set(.reconnectInterval, 50); #expect(try s.get(.reconnectInterval) == 50)
        try s.set(.reconnectIntervalMax, 2000); #expect(try s.get(.reconnectIntervalMax) == 2000)
        try s.set(.immediate, true); #expect(try s.get(.immediate))
        try s.set(.tcpKeepalive, 1); #expect(try s.get(.tcpKeepalive) == 1)
        try s.set(.tcpKeepaliveIdle, 30); #expect(try s.get(.tcpKeepaliveIdle) == 30)
        try s.set(.routingId, bytes("me")); #expect(try s.get(.routingId) == bytes("me"))
        #expect(try s.get(.socketType) == ZMQ_DEALER_CODE)

        try s.bind("tcp://127.0.0.1:*")
        let endpoint = try s.lastEndpoint()
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        let port = try #require(try s.boundPort())
        #expect(port > 0 && endpoint.hasSuffix(":\(port)"))

        let v = libzmqVersion()
        #expect(v.major == 4 && v.minor >= 3)
    }

    @Test func curveEncryptedRoundTrip() throws {
        guard libzmqHas("curve") else { return }
        let server = try CurveKeyPair.generate()
        let client = try CurveKeyPair.generate()
        #expect(server.publicKey.count == 32 && server != client)
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.curveServer, true)
        try router.set(.curveSecretKey, server.secretKey)
        let endpoint = try bindAnywhere(router, tcp: true)
        let dealer = try makeSocket(ctx, .dealer)
        try dealer.set(.curveServerKey, server.publicKey)
        try dealer.set(.curvePublicKey, client.publicKey)
        try dealer.set(.curveSecretKey, client.secretKey)
        try dealer.connect(endpoint)
        try dealer.send(bytes("secret"))
        #expect(try router.receiveMultipart()?.last == bytes("secret"))
    }

    @Test func monitorReportsConnectAndDisconnect() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        let endpoint = try bindAnywhere(router, tcp: true)
        let dealer = try makeSocket(ctx, .dealer)
        let monitor = try dealer.monitor([.connected, .disconnected])
        try monitor.socket.set(.receiveTimeout, patienceMs)
        try dealer.connect(endpoint)
        let up = try #require(try monitor.receive())
        #expect(up.kind == .connected && up.endpoint == endpoint)
        router.close()
        #expect(try monitor.receive()?.kind == .disconnected)
        monitor.close()
    }
}

private let ZMQ_DEALER_CODE: Int32 = 5
