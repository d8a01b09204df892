import ClusterTestSupport
import Foundation
import OpClient
import Synchronization
import Testing
import WireProtocol
import ZeroMQ

/// Issue 23 (7): a client that does not read what it is sent costs the coordinator a bounded number of
/// bytes; its WATCH stream is ended with a notice it can act on, and everyone else is served meanwhile.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SlowReaderTests {
    /// A watcher that reads its ACK and then nothing (a receive high-water mark of one message and a
    /// 4 KiB socket buffer, so what it is sent stays on the coordinator's side).
    static func deafWatcher(_ context: Context, _ endpoint: String, keys: CurveClientKeys? = nil) throws -> Socket {
        let s = try Socket(context, type: .dealer)
        try s.set(.linger, 0)
        if let keys { try s.useCurveClient(keys) }
        try s.set(.receiveHighWaterMark, 1)
        try s.set(SocketOption<Int32>(12, name: "ZMQ_RCVBUF"), 4096)
        try s.connect(endpoint)
        var watch = WireWatch()
        watch.withResults = true   // FINISHED events carry results: much to send, quickly
        _ = try s.sendMultipart(WireCodec.encode(.watch(watch), requestID: 77))
        let p = Poller()
        _ = p.add(s)
        try p.poll(timeout: .seconds(10))
        guard let ack = try s.receiveMultipart(flags: .dontWait), case .success(let e) = WireCodec.decode(ack), case .ack = e.message else {
            throw ClusterError("the watcher got no ACK")
        }
        return s
    }

    @Test func aWatcherThatNeverReadsIsEndedWithANoticeAndOthersAreServed() throws {
        // With keys: the deaf watcher holds only a `view` key (issue 23: any view key could do this).
        let c = try LocalCluster(coordinatorArgs: ["--client-output-bytes", "65536", "--log-level", "debug"], keys: true)
        defer { c.stop() }
        try c.addKey("viewer", roles: "view")
        try c.startWorker("w", slots: 4, prefetch: 64)
        let context = try Context()
        let deaf = try Self.deafWatcher(context, c.endpoint, keys: try c.clientKeys("viewer"))
        defer { deaf.close() }

        // Far more than the budget (64 KiB) and the sockets' buffers hold: 400 results of 20 KB (8 MB).
        let result = String(repeating: "x", count: 20_000)
        let t0 = ContinuousClock.now
        for r in 0..<4 {
            let ids = (0..<100).map { "o\($0)" }
            _ = try c.submit(ids.map { op($0, kind: "echo", payload: result) }, run: "r\(r)")
            #expect(try c.wait(ids.map { "r\(r)/\($0)" }, timeout: 60).finished)
        }
        print("400 ops beside a deaf watcher: submit+wait \(ContinuousClock.now - t0)")
        func log() -> String { (try? String(contentsOf: c.dir.appendingPathComponent("opcoord.log"), encoding: .utf8)) ?? "" }
        try c.waitUntil("the coordinator to log the slow client", timeout: 20) { log().contains("does not read what it is sent") }
        #expect(log().contains("its watch ended (told: watch too slow: resubscribe)"), "\(log().suffix(2000))")

        // When it reads at last, the notice is there, answering its WATCH, after at most what was held.
        var notice: WireErrorReply?
        var events = 0
        let p = Poller()
        _ = p.add(deaf)
        defer {
            if notice == nil {
                print("read \(events) EVENT messages; the coordinator said:\n" + log().split(separator: "\n").filter {
                    $0.contains("does not read") || $0.contains("holding") || $0.contains("send")
                }.prefix(20).joined(separator: "\n"))
            }
        }
        try c.waitUntil("the deaf watcher to read the notice", timeout: 20) {
            try p.poll(timeout: .milliseconds(50))
            while let frames = try deaf.receiveMultipart(flags: .dontWait) {
                guard case .success(let e) = WireCodec.decode(frames) else { continue }
                if case .error(let m) = e.message { #expect(e.requestID == 77); notice = m }
                if case .event = e.message { events += 1 }
            }
            return notice != nil
        }
        #expect(notice?.code == .busy && notice?.message == WireLimits.watchTooSlow)
        // Nothing of the ended stream follows its notice.
        try p.poll(timeout: .milliseconds(300))
        #expect(try deaf.receiveMultipart(flags: .dontWait) == nil)
        print("the deaf watcher read \(events) EVENT messages before the notice")
    }

    /// The client library makes the WATCH again on the notice and says so (`watchRestarts`), so opctl
    /// watch and the Swift API re-read what they show.
    @Test func theClientResubscribesOnTheNotice() throws {
        let standIn = try StandInCoordinator()
        let endpoint = standIn.endpoint
        let seen = Mutex<(events: Int, restarts: Int)>((0, 0))
        let failure = Mutex<String?>(nil)
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        let client = Thread {
            defer { done.signal() }
            do {
                let conn = try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(10))
                try conn.watch()
                while !stop.load(ordering: .relaxed) {
                    let events = try conn.nextEvents(timeout: .milliseconds(50))
                    seen.withLock { $0.events += events.count; $0.restarts = conn.watchRestarts }
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        client.start()
        defer { stop.store(true, ordering: .relaxed); _ = done.wait(timeout: .now() + 10) }

        let watch = try standIn.expect(.watch, timeout: .seconds(20))
        try standIn.reply(to: watch, .ack(WireAck()))
        var e = WireEvent()
        e.sequence = 1
        e.opID = "a"
        e.state = .ready
        var batch = WireEvents()
        batch.events = [e]
        try standIn.reply(to: watch, .event(batch))
        var notice = WireErrorReply()
        notice.code = .busy
        notice.message = WireLimits.watchTooSlow
        notice.command = UInt32(Command.watch.rawValue)
        try standIn.reply(to: watch, .error(notice))
        let again = try standIn.expect(.watch, timeout: .seconds(20))
        #expect(again.requestID == watch.requestID && again.frames[1] == watch.frames[1], "the same WATCH again")
        try waitUntil("the client to count the restart", timeout: 10) { seen.withLock { $0.restarts == 1 && $0.events == 1 } }
        #expect(failure.withLock { $0 } == nil)
    }

    /// With more than 64 watchers their events are coalesced (at most every 10 ms): each still gets every
    /// event once, numbered without a gap, and exactly one FINISHED per operation.
    @Test func manyWatchersEachGetEveryEventOnceInOrder() throws {
        let c = try LocalCluster()
        defer { c.stop() }
        try c.startWorker("w", slots: 4)
        let context = try Context(ioThreads: 1, maxSockets: 256)
        var watchers: [Socket] = []
        defer { for w in watchers { w.close() } }
        for _ in 0..<70 {
            let s = try Socket(context, type: .dealer)
            try s.set(.linger, 0)
            try s.connect(c.endpoint)
            _ = try s.sendMultipart(WireCodec.encode(.watch(WireWatch()), requestID: 5))
            watchers.append(s)
        }
        for s in watchers {
            let p = Poller()
            _ = p.add(s)
            try p.poll(timeout: .seconds(10))
            guard let f = try s.receiveMultipart(flags: .dontWait), case .success(let e) = WireCodec.decode(f), case .ack = e.message else {
                throw ClusterError("a watcher got no ACK")
            }
        }
        let ids = (0..<50).map { "m\($0)" }
        _ = try c.submit(ids.map { op($0) }, run: "many")
        #expect(try c.wait(ids.map { "many/\($0)" }, timeout: 30).finished)
        for (k, s) in watchers.enumerated() {
            var sequences: [UInt64] = []
            var finished: [String: Int] = [:]
            let p = Poller()
            _ = p.add(s)
            try c.waitUntil("watcher \(k) to see every op finish", timeout: 20) {
                try p.poll(timeout: .milliseconds(50))
                while let f = try s.receiveMultipart(flags: .dontWait) {
                    guard case .success(let e) = WireCodec.decode(f), case .event(let m) = e.message else { continue }
                    for ev in m.events {
                        sequences.append(ev.sequence)
                        if ev.state == .finished { finished[ev.opID, default: 0] += 1 }
                    }
                }
                return finished.count == ids.count
            }
            #expect(sequences == Array(1...UInt64(sequences.count)), "watcher \(k): numbered without a gap")
            #expect(finished.values.allSatisfy { $0 == 1 }, "watcher \(k): one FINISHED per op")
        }
    }
}
