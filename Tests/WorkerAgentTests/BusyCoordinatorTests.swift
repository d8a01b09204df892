import Testing
import WireProtocol
@testable import WorkerAgent

/// A coordinator that sends nothing while its connection's transport answers (libzmq's heartbeat, served
/// by its I/O thread) is busy, not gone: the worker does not end its session for the coordinator's own
/// stall, up to `busyPatience` silence limits (docs/ARCHITECTURE.md, "A loop with a bound").
extension SessionMachineTests {
    func logs(_ actions: [Action]) -> [String] {
        actions.compactMap { if case .log(_, let t) = $0 { t } else { nil } }
    }

    @Test func aBusyCoordinatorWhoseConnectionAnswersKeepsTheSessionAndHearsHeartbeats() throws {
        var m = machine()
        _ = m.connected(now: 0)
        m.transport(answering: true)          // the handshake completed
        _ = m.received(welcome(), now: Self.ms)
        let limit = Self.ms + 3 * Self.second
        #expect(m.deadline == Self.ms + Self.second, "the next heartbeat first")
        let first = m.tick(now: limit + 1)
        try #require(m.isRegistered, "silent past L × H, but its connection answers: busy, not gone")
        #expect(logs(first).count == 1 && logs(first)[0].contains("busy, not gone"), "\(first)")
        #expect(sent(first) == [.heartbeat], "still heartbeating: our messages wait for it to read them")
        let later = m.tick(now: limit + 2 * Self.second)
        #expect(logs(later).isEmpty, "logged once per silence")
        #expect(m.isRegistered)
        // It answers again: a new silence is counted from there.
        _ = m.received(.heartbeat, now: 20 * Self.second)
        let again = m.tick(now: 23 * Self.second + 1)
        #expect(logs(again).count == 1, "a new silence is logged again")
        try #require(m.isRegistered)
        // Silent for longer than 10 silence limits: it is left even though its transport answers.
        _ = m.tick(now: 20 * Self.second + 30 * Self.second)
        try #require(m.isRegistered, "exactly 10 silence limits is within patience")
        let lost = m.tick(now: 20 * Self.second + 30 * Self.second + 1)
        #expect(!m.isRegistered)
        #expect(logs(lost).first?.contains("coordinator silent for 30000 ms (its connection answered") == true, "\(lost)")
    }

    @Test func aCoordinatorWhoseConnectionClosedIsLeftAtTheSilenceLimit() {
        var m = machine()
        _ = m.connected(now: 0)
        m.transport(answering: true)
        _ = m.received(welcome(), now: Self.ms)
        m.transport(answering: false)         // no PONG within the timeout: frozen, dead or partitioned
        let limit = Self.ms + 3 * Self.second
        #expect(m.deadline == Self.ms + Self.second)
        _ = m.tick(now: limit)
        #expect(m.isRegistered)
        let lost = m.tick(now: limit + 1)
        #expect(!m.isRegistered)
        #expect(logs(lost).first?.hasPrefix("session ended: coordinator silent for 3000 ms;") == true, "\(lost)")
    }

    @Test func transportEventsWithNoConnectionOpenAreIgnoredAndNoWelcomeIsNeverExcused() {
        var m = machine()
        m.transport(answering: true)          // trailing monitor event between connections
        #expect(m.state == .connecting(backoffMs: 100))
        _ = m.connected(now: 0)
        m.transport(answering: true)
        _ = m.tick(now: 3 * Self.second + 1)
        #expect(!m.isRegistered && m.link == nil, "a connection that never got WELCOME is not waited on longer")
    }
}
