@testable import Coordinator
import Testing

/// What the coordinator forgets about its peers over time (docs/ARCHITECTURE.md, "What a peer can make
/// it hold is bounded").
struct PeerTableTests {
    @Test func idleClientsOwedNothingAreForgottenAndComeBackAsNewClients() {
        var peers = PeerTable()
        let a = peers.client(for: [1], now: 0)
        let b = peers.client(for: [2], now: 0)
        let c = peers.client(for: [3], now: 0)
        #expect(peers.client(for: [2], now: 50) == b, "the same routing id is the same client")
        // a is silent and owed nothing; b spoke recently; c is silent but owed a reply (a WAIT, say).
        let gone = peers.forgetIdleClients(idleSince: 40) { $0 == c }
        #expect(gone == 1)
        #expect(peers.routing(ofClient: a) == nil && peers.role(of: [1]) == nil)
        #expect(peers.routing(ofClient: b) == [2] && peers.routing(ofClient: c) == [3])
        #expect(peers.clientCount == 2)
        let again = peers.client(for: [1], now: 60)
        #expect(again != a, "a forgotten client that speaks again is a new client")
        #expect(peers.routing(ofClient: again) == [1])
    }

    @Test func aLostWorkersRoutingIsKeptForLateMessagesThenForgotten() {
        var peers = PeerTable()
        let w = peers.newWorker(routing: [9], name: "alpha")
        peers.workerLost(w, now: 100)
        #expect(peers.role(of: [9]) == .worker(w), "late messages still reach the core (fenced)")
        #expect(peers.openSession(named: "alpha") == nil)
        #expect(peers.forgetLostWorkers(lostBefore: 100).isEmpty)
        #expect(peers.forgetLostWorkers(lostBefore: 101) == [w])
        #expect(peers.role(of: [9]) == nil && peers.routing(ofWorker: w) == nil)
        // The name keeps its number across the loss.
        let again = peers.newWorker(routing: [10], name: "alpha")
        #expect(WorkerName.number(again) == WorkerName.number(w) && again != w)
    }
}
