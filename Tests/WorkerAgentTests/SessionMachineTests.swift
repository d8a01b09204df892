import Testing
import WireProtocol
@testable import WorkerAgent
import WorkerRuntime

/// The worker's conversation with the coordinator as a pure state machine: inputs in, actions out, times
/// passed in (µs). No sockets, no clocks.
struct SessionMachineTests {
    typealias Action = SessionMachine.Action
    static let ms: Int64 = 1000
    static let second: Int64 = 1_000_000

    func config(slots: Int = 2, prefetch: Int = 1) -> WorkerConfig {
        var c = WorkerConfig(connect: "tcp://127.0.0.1:1", name: "box:1", slots: slots, tags: ["gpu"], prefetch: prefetch)
        c.heartbeatIntervalMs = 1000
        c.liveness = 3
        c.reconnectMinMs = 100
        c.reconnectMaxMs = 5000
        return c
    }

    func machine(slots: Int = 2, prefetch: Int = 1) -> SessionMachine {
        SessionMachine(config: config(slots: slots, prefetch: prefetch), kinds: ["sleep", "noop"])
    }

    func key(_ id: String) -> PartKey { PartKey(opID: id, part: 0, attempt: 1) }

    func welcome(_ id: String = "w1", heartbeatMs: UInt32 = 1000, liveness: UInt32 = 3) -> Message {
        var w = WireWelcome()
        w.workerID = id
        w.heartbeatIntervalMs = heartbeatMs
        w.liveness = liveness
        return .welcome(w)
    }

    func dispatch(_ ids: String..., tokens: [UInt64] = []) -> Message {
        var d = WireDispatch()
        d.records = ids.enumerated().map { i, id in
            var r = WireDispatchRecord()
            r.opID = id
            r.attempt = 1
            r.kind = "sleep"
            if i < tokens.count { r.token = tokens[i] }
            return r
        }
        return .dispatch(d)
    }

    func sent(_ actions: [Action]) -> [Message] {
        actions.compactMap { if case .send(let m) = $0 { m } else { nil } }
    }

    func hello(_ actions: [Action]) -> WireHello? {
        guard case .hello(let h)? = sent(actions).first else { return nil }
        return h
    }

    /// Connected at `at`, welcomed at `at + 1 ms`.
    func registered(_ m: inout SessionMachine, at: Int64 = 0, heartbeatMs: UInt32 = 1000, liveness: UInt32 = 3) {
        _ = m.connected(now: at)
        _ = m.received(welcome(heartbeatMs: heartbeatMs, liveness: liveness), now: at + Self.ms)
    }

    func reconnectWait(_ actions: [Action]) -> Int? {
        guard case .reconnect(let wait)? = actions.last else { return nil }
        return wait
    }

    // MARK: registration

    @Test func helloFirstThenCreditForSlotsPlusPrefetchAfterWelcome() throws {
        var m = machine()
        #expect(m.state == .connecting(backoffMs: 100))
        let onConnect = m.connected(now: 5 * Self.ms)
        #expect(onConnect.count == 1, "a first registration logs nothing and sends HELLO alone")
        let h = try #require(hello(onConnect))
        #expect(h.name == "box:1" && h.slots == 2 && h.prefetch == 1 && h.tags == ["gpu"] && h.kinds == ["sleep", "noop"])
        #expect(h.protocolVersion == UInt32(WireVersion.current))
        #expect(h.sentUs == 5 * Self.ms)
        #expect(h.running.isEmpty && h.finished.isEmpty)
        guard case .awaitingWelcome(let link, backoffMs: 100) = m.state else { Issue.record("\(m.state)"); return }
        #expect(link.heartbeat == Self.second && link.liveness == 3, "the config's until WELCOME")

        let onWelcome = m.received(welcome("w7", heartbeatMs: 500, liveness: 4), now: 10 * Self.ms)
        guard case .registered(workerID: "w7", let after) = m.state else { Issue.record("\(m.state)"); return }
        #expect(after.heartbeat == 500 * Self.ms && after.liveness == 4, "WELCOME's interval and liveness")
        var credit = WireCredit()
        credit.credit = 3
        #expect(sent(onWelcome) == [.credit(credit)])
        #expect(m.held.registered)
        #expect(m.validate().isEmpty, "\(m.validate())")
    }

    @Test func nothingButHelloGoesOutBeforeWelcome() {
        var m = machine()
        _ = m.connected(now: 0)
        // A heartbeat interval passes: no HEARTBEAT before WELCOME (PROTOCOL.md §4.1).
        #expect(m.deadline == 3 * Self.second, "only the silence limit is due")
        #expect(m.tick(now: 2 * Self.second).isEmpty)
        // A part held from nowhere cannot start, but local events are taken quietly.
        #expect(m.events([(.started(key("x")), 100)], now: 2 * Self.second).isEmpty)
        #expect(m.validate().isEmpty)
    }

    @Test func aSecondWelcomeIsIgnored() {
        var m = machine()
        registered(&m, heartbeatMs: 1000)
        let again = m.received(welcome("w9", heartbeatMs: 50, liveness: 1), now: 20 * Self.ms)
        #expect(sent(again).isEmpty, "no second CREDIT")
        guard case .log(.warning, let text)? = again.first else { Issue.record("\(again)"); return }
        #expect(text.contains("second WELCOME (w9)"))
        guard case .registered(workerID: "w1", let link) = m.state else { Issue.record("\(m.state)"); return }
        #expect(link.heartbeat == Self.second && link.liveness == 3, "the first WELCOME's timing stays")
        #expect(link.lastReceived == 20 * Self.ms, "but it counts as heard")
    }

    @Test func partsThatFinishBeforeALateWelcomeGoOutRightAfterItWithoutCredit() throws {
        var m = machine()
        registered(&m)
        _ = m.received(dispatch("a"), now: 2 * Self.ms)
        _ = m.received(.disconnect(WireDisconnect()), now: 3 * Self.ms)
        let h = try #require(hello(m.connected(now: 4 * Self.ms)))
        #expect(h.running.map(\.opID) == ["a"])
        // "a" finishes after the HELLO went out, before WELCOME: held back, nothing sent.
        #expect(m.events([(.finished(key("a"), .succeeded([1])), 5 * Self.ms)], now: 5 * Self.ms).isEmpty)
        let onWelcome = sent(m.received(welcome(), now: 6 * Self.ms))
        guard onWelcome.count == 2, case .credit(let c) = onWelcome[0], case .finished(let f) = onWelcome[1] else {
            Issue.record("\(onWelcome)"); return
        }
        #expect(c.credit == 3, "nothing held any more")
        #expect(f.records.map(\.opID) == ["a"] && f.credit == 0, "its slot is already counted free in the CREDIT")
    }

    // MARK: heartbeats

    @Test func heartbeatAfterAnIntervalWithoutSendingAnything() {
        var m = machine()
        registered(&m, at: 0, heartbeatMs: 1000)   // CREDIT sent at 1 ms
        let welcomedAt = Self.ms
        #expect(m.deadline == welcomedAt + Self.second)
        #expect(m.tick(now: welcomedAt + Self.second - 1).isEmpty)
        #expect(sent(m.tick(now: welcomedAt + Self.second)) == [.heartbeat])
        #expect(m.deadline == welcomedAt + 2 * Self.second)
        // Any message sent counts: a FINISHED moves the next heartbeat.
        _ = m.received(.heartbeat, now: welcomedAt + Self.second)
        _ = m.received(dispatch("a"), now: welcomedAt + Self.second)
        let finishedAt = welcomedAt + 1500 * Self.ms
        let report = sent(m.events([(.finished(key("a"), .succeeded([])), finishedAt)], now: finishedAt))
        guard case .finished(let f)? = report.first else { Issue.record("\(report)"); return }
        #expect(f.credit == 1 && f.records.map(\.opID) == ["a"])
        #expect(m.tick(now: welcomedAt + 2 * Self.second).isEmpty)
        #expect(sent(m.tick(now: finishedAt + Self.second)) == [.heartbeat])
    }

    @Test func anyMessageFromTheCoordinatorCountsAsHeard() {
        var m = machine()
        registered(&m, at: 0)
        _ = m.received(.heartbeat, now: 2 * Self.second)
        _ = m.receivedMalformed(WireError.badSignature, now: 4 * Self.second)
        // Silence is measured from the malformed frames at 4 s: not dead at 6.5 s.
        #expect(m.tick(now: 6500 * Self.ms) == [.send(.heartbeat)])
        #expect(m.isRegistered)
        #expect(m.deadline == 7 * Self.second, "the silence limit comes before the next heartbeat")
    }

    // MARK: losing the coordinator

    @Test func aSilentCoordinatorIsLeftAndTheNextHelloListsTheHeldParts() throws {
        var m = machine()
        registered(&m, at: 0)
        let onDispatch = m.received(dispatch("a", "b"), now: 10 * Self.ms)
        guard case .submit(let parts)? = onDispatch.first else { Issue.record("\(onDispatch)"); return }
        #expect(parts.map(\.key) == [key("a"), key("b")])
        let startedA = sent(m.events([(.started(key("a")), 20 * Self.ms)], now: 20 * Self.ms))
        guard case .started(let s)? = startedA.first else { Issue.record("\(startedA)"); return }
        #expect(s.parts.map(\.opID) == ["a"])

        let limit = 10 * Self.ms + 3 * Self.second
        _ = m.tick(now: limit)
        // `require`: a machine that left already would trap at the next tick.
        try #require(m.isRegistered, "silence up to L × H is fine")
        let lost = m.tick(now: limit + 1)
        #expect(reconnectWait(lost) == 100, "after a registered session the backoff starts over")
        guard case .log(.warning, let text)? = lost.first else { Issue.record("\(lost)"); return }
        #expect(text.contains("coordinator silent") && text.contains("keeping 2 part(s)"))
        #expect(!lost.contains { if case .cancelHeld = $0 { true } else { false } }, "the parts keep running")
        #expect(m.state == .connecting(backoffMs: 200))
        #expect(m.validate().isEmpty)

        let h = try #require(hello(m.connected(now: limit + 200 * Self.ms)))
        #expect(h.running.map(\.opID) == ["a", "b"], "started first, then waiting")
        #expect(h.running.map(\.atUs) == [20 * Self.ms, 0])
        // The new session grants what is free besides the held parts.
        let onWelcome = sent(m.received(welcome("w1"), now: limit + 201 * Self.ms))
        guard case .credit(let c)? = onWelcome.first else { Issue.record("\(onWelcome)"); return }
        #expect(c.credit == 1)
    }

    /// (1.10) Each report echoes its DISPATCH's token, so the coordinator finds the op without an id lookup;
    /// a part dispatched without one reports none.
    @Test func reportsEchoTheDispatchToken() {
        var m = machine()
        registered(&m, at: 0)
        _ = m.received(dispatch("a", "b", "c", tokens: [7, 9]), now: 10 * Self.ms)
        let started = sent(m.events([(.started(key("a")), 20 * Self.ms), (.started(key("c")), 20 * Self.ms)], now: 20 * Self.ms))
        guard case .started(let s)? = started.first else { Issue.record("\(started)"); return }
        #expect(s.parts.map(\.token) == [7, 0])
        let finished = sent(m.events([(.started(key("b")), 30 * Self.ms), (.finished(key("b"), .succeeded([]), nil), 31 * Self.ms),
                                      (.finished(key("a"), .failed("no"), nil), 32 * Self.ms)], now: 32 * Self.ms))
        guard case .finished(let f)? = finished.first else { Issue.record("\(finished)"); return }
        #expect(f.records.map(\.opID) == ["b", "a"] && f.records.map(\.token) == [9, 7],
                "started and finished between reports rides on FINISHED with its token")
    }

    @Test func noWelcomeDoublesTheBackoffUpToTheCapAndAWelcomeResetsIt() {
        var m = machine()
        var t: Int64 = 0
        var waits: [Int] = []
        for _ in 0..<8 {
            _ = m.connected(now: t)
            t += 3 * Self.second + 1
            let lost = m.tick(now: t)
            guard case .log(.warning, let text)? = lost.first, text.contains("no WELCOME") else { Issue.record("\(lost)"); return }
            waits.append(reconnectWait(lost) ?? -1)
        }
        #expect(waits == [100, 200, 400, 800, 1600, 3200, 5000, 5000])
        registered(&m, at: t)
        #expect(reconnectWait(m.tick(now: t + 10 * Self.second)) == 100)
    }

    @Test func holdingPartsTheBackoffStaysWithinASecond() {
        var m = machine()
        registered(&m, at: 0)
        _ = m.received(dispatch("a"), now: Self.ms)
        var t = Self.ms
        var waits: [Int] = []
        _ = m.received(.disconnect(WireDisconnect()), now: t)
        for _ in 0..<6 {
            _ = m.connected(now: t)
            t += 3 * Self.second + 1
            waits.append(reconnectWait(m.tick(now: t)) ?? -1)
        }
        #expect(waits == [200, 400, 800, 1000, 1000, 1000])
        #expect(m.held.count == 1)
    }

    @Test func disconnectRegistersAgainKeepingTheParts() throws {
        var m = machine()
        registered(&m)
        _ = m.received(dispatch("a"), now: 2 * Self.ms)
        var d = WireDisconnect()
        d.reason = "fenced"
        let lost = m.received(.disconnect(d), now: 3 * Self.ms)
        guard case .log(.warning, let text)? = lost.first else { Issue.record("\(lost)"); return }
        #expect(text.contains("coordinator said: fenced"))
        #expect(reconnectWait(lost) == 100)
        #expect(m.held.count == 1 && !m.held.registered)
        let h = try #require(hello(m.connected(now: 4 * Self.ms)))
        #expect(h.running.map(\.opID) == ["a"])
    }

    @Test func errorUnexpectedRegistersAgainOtherErrorsDoNot() {
        var m = machine()
        registered(&m)
        var e = WireErrorReply()
        e.code = .malformed
        #expect(m.received(.error(e), now: 2 * Self.ms).count == 1, "a warning only")
        #expect(m.isRegistered)
        e.code = .unexpected
        #expect(reconnectWait(m.received(.error(e), now: 3 * Self.ms)) == 100)
        #expect(m.state == .connecting(backoffMs: 200))
    }

    // MARK: ends

    @Test func rejectCancelsEverythingHeldAndEndsTheWorker() {
        var m = machine()
        registered(&m)
        _ = m.received(dispatch("a", "b"), now: 2 * Self.ms)
        var r = WireReject()
        r.reason = "kind not allowed"
        let actions = m.received(.reject(r), now: 3 * Self.ms)
        #expect(actions.contains(.cancelHeld([key("a"), key("b")], reason: "the coordinator rejected this worker")))
        #expect(actions.last == .reject("kind not allowed"))
        #expect(sent(actions).isEmpty)
        #expect(m.state == .rejected(reason: "kind not allowed"))
        #expect(m.held.isEmpty)
        #expect(m.validate().isEmpty)
    }

    @Test func aRefusedKeyEndsTheWorker() {
        var m = machine()
        _ = m.connected(now: 0)
        #expect(m.handshakeRefused("the server closed the handshake") == [.reject("authentication failed: the server closed the handshake")])
        #expect(m.state == .rejected(reason: "authentication failed: the server closed the handshake"))
    }

    @Test func stopSaysGoodbyeAndCancelsTheHeldParts() {
        var m = machine()
        registered(&m)
        _ = m.received(dispatch("a"), now: 2 * Self.ms)
        var d = WireDisconnect()
        d.reason = "worker shutting down"
        let actions = m.stop(now: 3 * Self.ms)
        #expect(actions.first == .send(.disconnect(d)))
        #expect(actions.contains(.cancelHeld([key("a")], reason: "worker shutting down")))
        #expect(actions.last == .stop)
        #expect(m.state == .stopped)
        #expect(m.validate().isEmpty)

        // Before WELCOME it says goodbye too; between connections there is no one to tell.
        var waiting = machine()
        _ = waiting.connected(now: 0)
        #expect(waiting.stop(now: 1) == [.send(.disconnect(d)), .stop])
        var between = machine()
        #expect(between.stop(now: 0) == [.stop])
    }

    @Test func coordinatorCancelMarksThePartAndCancelsItLocally() throws {
        var m = machine()
        registered(&m)
        _ = m.received(dispatch("a", "b"), now: 2 * Self.ms)
        var c = WireCancel()
        var r = WireCancelRecord()
        r.opID = "a"
        r.attempt = 1
        c.records = [r]
        #expect(m.received(.cancel(c), now: 3 * Self.ms) == [.cancel(opID: "a", attempt: 1, reason: "cancelled")])
        _ = m.tick(now: 4 * Self.second)
        let h = try #require(hello(m.connected(now: 5 * Self.second)))
        #expect(h.running.map(\.opID) == ["b"], "a cancelled part is not offered again")
    }

    /// An input the shell can never feed in the current state traps, naming it.
    @Test func impossibleInputsTrap() async {
        await #expect(processExitsWith: .failure) {
            var m = SessionMachine(config: WorkerConfig(connect: "tcp://127.0.0.1:1"), kinds: [])
            _ = m.received(.heartbeat, now: 0)   // no connection open
        }
        await #expect(processExitsWith: .failure) {
            var m = SessionMachine(config: WorkerConfig(connect: "tcp://127.0.0.1:1"), kinds: [])
            _ = m.connected(now: 0)
            _ = m.connected(now: 1)   // a second HELLO on the same connection
        }
    }
}
