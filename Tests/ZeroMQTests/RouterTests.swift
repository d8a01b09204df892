import Testing
import ZeroMQ

@Suite struct RouterTests {
    @Test(arguments: [false, true])
    func repliesReachTheRightPeerByRoutingId(tcp: Bool) throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.set(.routerMandatory, true)
        let endpoint = try bindAnywhere(router, tcp: tcp)

        let names = ["worker-1", "worker-2", "worker-3"]
        var dealers: [Socket] = []
        for name in names {
            let d = try makeSocket(ctx, .dealer)
            try d.set(.routingId, bytes(name))
            #expect(try d.get(.routingId) == bytes(name))
            try d.connect(endpoint)
            try d.send(bytes("hello from \(name)"))
            dealers.append(d)
        }
        var seen: Set<String> = []
        for _ in names {
            let m = try #require(try router.receiveMultipart())
            let id = String(decoding: m[0], as: UTF8.self)
            #expect(m[1] == bytes("hello from \(id)"))
            seen.insert(id)
        }
        #expect(seen == Set(names))

        // Reply in reverse order; each dealer must get only its own.
        for name in names.reversed() { try router.sendMultipart([bytes(name), bytes("for \(name)")]) }
        for (name, d) in zip(names, dealers) {
            #expect(try d.receive() == bytes("for \(name)"))
            #expect(try d.receive(flags: .dontWait) == nil)
        }
    }

    @Test func mandatoryRoutingToUnknownPeerThrowsHostUnreachable() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        try router.bind("inproc://mandatory")
        try router.set(.routerMandatory, true)
        let error = #expect(throws: ZMQError.self) {
            try router.sendMultipart([bytes("nobody"), bytes("lost")])
        }
        #expect(error?.isHostUnreachable == true)

        // Without mandatory the same message is silently dropped.
        let lax = try makeSocket(ctx, .router)
        #expect(try lax.sendMultipart([bytes("nobody"), bytes("lost")]))
    }
}
