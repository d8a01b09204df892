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

    /// A coordinator killed and restarted on the same port: the transport closes, then a handshake with
    /// the new process succeeds, but that process never heard our HELLO (it ignores our heartbeats). Its
    /// silence is not a busy coordinator's: the session ends at the silence limit and the worker
    /// registers again, handing back what it holds (a 30 s wait here let the recovery hold expire and
    /// re-run the held ops elsewhere: found by cluster/netns/faults.sh's coordinator crashes).
    @Test func aConnectionMadeAgainAfterACloseIsNotExcusedUntilTheCoordinatorSpeaks() throws {
        var m = machine()
        _ = m.connected(now: 0)
        m.transport(answering: true)
        _ = m.received(welcome(), now: Self.ms)
        m.transport(answering: false)         // the old process died
        m.transport(answering: true)          // libzmq reconnected: a new process on the same port
        let lost = m.tick(now: Self.ms + 3 * Self.second + 1)
        #expect(!m.isRegistered, "a restarted coordinator's silence was excused as busy")
        #expect(logs(lost).first?.hasPrefix("session ended: coordinator silent for 3000 ms;") == true, "\(lost)")
        // Once the coordinator speaks on the new connection, a later stall is excused again.
        var n = machine()
        _ = n.connected(now: 0)
        n.transport(answering: true)
        _ = n.received(welcome(), now: Self.ms)
        n.transport(answering: false)
        n.transport(answering: true)
        _ = n.received(.heartbeat, now: 2 * Self.second)
        _ = n.tick(now: 2 * Self.second + 3 * Self.second + 1)
        #expect(n.isRegistered, "the same coordinator, heard after the reconnect: busy, not gone")
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
