import Foundation
import Testing
import ZeroMQ

@Suite struct PollerTests {
    @Test func reportsOnlyTheReadySocketsAndTimesOut() throws {
        let ctx = try Context()
        var senders: [Socket] = []
        var receivers: [Socket] = []
        let poller = Poller()
        for i in 0..<3 {
            let r = try makeSocket(ctx, .pull)
            let s = try makeSocket(ctx, .push)
            try r.bind("inproc://poll-\(i)")
            try s.connect("inproc://poll-\(i)")
            #expect(poller.add(r) == i)
            receivers.append(r); senders.append(s)
        }
        let waker = try Waker()
        #expect(poller.add(waker) == 3)

        #expect(try poller.poll(timeout: .zero) == 0)
        let start = ContinuousClock.now
        #expect(try poller.poll(timeout: .milliseconds(30)) == 0)
        let waited = elapsedMs(since: start)
        #expect(waited >= 25 && waited < 1000)

        try senders[1].send(bytes("one"))
        try senders[2].send(bytes("two"))
        #expect(try poller.poll(timeout: .seconds(3)) == 2)
        #expect(!poller.isReadable(0) && poller.isReadable(1) && poller.isReadable(2) && !poller.isReadable(3))
        #expect(try receivers[1].receive(flags: .dontWait) == bytes("one"))
        #expect(try receivers[2].receive(flags: .dontWait) == bytes("two"))
        #expect(try poller.poll(timeout: .zero) == 0)

        // Muting an item.
        try senders[0].send(bytes("zero"))
        poller.setEvents([], at: 0)
        #expect(try poller.poll(timeout: .zero) == 0)
        poller.setEvents(.readable, at: 0)
        #expect(try poller.poll(timeout: .seconds(3)) == 1 && poller.isReadable(0))
    }

    @Test func wakerFromAnotherThreadWakesABlockedPoll() throws {
        let ctx = try Context()
        let socket = try makeSocket(ctx, .dealer)
        try socket.bind("inproc://waker")
        let waker = try Waker()
        let poller = Poller()
        let s = poller.add(socket)
        let w = poller.add(waker)
        #expect(waker.drain() == 0)

        let thread = TestThread {
            for _ in 0..<3 { waker.wake() }  // several wakes collapse into one readiness
        }
        let start = ContinuousClock.now
        #expect(try poller.poll(timeout: .seconds(3)) == 1)
        #expect(elapsedMs(since: start) < 2900)
        #expect(poller.isReadable(w) && !poller.isReadable(s))
        #expect(thread.join())
        #expect(waker.drain() >= 1)
        #expect(waker.drain() == 0)
        #expect(try poller.poll(timeout: .zero) == 0)
    }

    @Test func writableAndPlainFileDescriptors() throws {
        let ctx = try Context()
        let a = try makeSocket(ctx, .pair)
        let b = try makeSocket(ctx, .pair)
        try a.bind("inproc://writable")
        try b.connect("inproc://writable")
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }

        let poller = Poller()
        let ia = poller.add(a, events: .writable)
        let ifd = poller.add(fileDescriptor: fds[0])
        #expect(try poller.poll(timeout: .seconds(1)) == 1)
        #expect(poller.isWritable(ia) && !poller.isReadable(ifd))
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: .seconds(1)) == 2)
        #expect(poller.isReadable(ifd))
    }

    @Test func closedSocketInPollerThrowsInsteadOfCrashing() throws {
        let ctx = try Context()
        let a = try makeSocket(ctx, .pair)
        let poller = Poller()
        poller.add(a)
        a.close()
        let error = #expect(throws: ZMQError.self) { try poller.poll(timeout: .zero) }
        #expect(error?.isClosed == true)
    }
}

@Suite struct PollerReconnectTests {
    @Test func replacingASocketKeepsIndices() throws {
        let ctx = try Context()
        let router = try makeSocket(ctx, .router)
        let endpoint = try bindAnywhere(router, tcp: true)
        let waker = try Waker()
        var dealer = try makeSocket(ctx, .dealer)
        try dealer.connect(endpoint)
        let poller = Poller()
        let d = poller.add(dealer)
        let w = poller.add(waker)

        // Reconnect: close, recreate, swap in place.
        dealer.close()
        dealer = try makeSocket(ctx, .dealer)
        try dealer.connect(endpoint)
        try poller.replaceSocket(at: d, with: dealer)
        #expect(throws: ZMQError.self) { try poller.replaceSocket(at: w, with: dealer) }

        try dealer.send(bytes("hi"))
        let m = try #require(try router.receiveMultipart())
        try router.sendMultipart([m[0], bytes("back")])
        #expect(try poller.poll(timeout: .seconds(3)) == 1 && poller.isReadable(d))
        #expect(try dealer.receive(flags: .dontWait) == bytes("back"))
    }
}
