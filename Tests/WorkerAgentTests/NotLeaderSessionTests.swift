import Testing
import WireProtocol
@testable import WorkerAgent

/// (issue 29) A standby's NOT_LEADER and a closed connection with other coordinators to try end the session.
extension SessionMachineTests {
    @Test func notLeaderBeforeWelcomeEndsTheSessionToReconnectElsewhere() {
        var m = machine()
        _ = m.connected(now: 0)
        var e = WireErrorReply()
        e.code = .notLeader
        e.message = NotLeader.text(leader: "tcp://b:7600")
        var actions = m.received(.error(e), now: Self.ms)
        #expect(reconnectWait(actions) == 100)
        // Again and again (no leader yet): the wait stays short, whatever the backoff has grown to.
        for i in 2...8 {
            _ = m.connected(now: Int64(i) * Self.second)
            actions = m.received(.error(e), now: Int64(i) * Self.second + Self.ms)
        }
        #expect(reconnectWait(actions) == SessionMachine.notLeaderWaitMs)
        guard case .connecting = m.state else { Issue.record("\(m.state)"); return }
    }

    @Test func aClosedConnectionEndsARegisteredSessionAtOnceButNotBetweenSessions() {
        var m = machine()
        registered(&m)
        let actions = m.connectionClosed(now: 2 * Self.ms)
        #expect(reconnectWait(actions) == 100)
        do { let v = m.connectionClosed(now: 3 * Self.ms); #expect(v.isEmpty) }
    }
}
