@testable import Coordinator
import Testing

/// What the coordinator forgets about its peers over time (docs/ARCHITECTURE.md, "What a peer can make
/// it hold is bounded").
struct PeerTableTests {
    private let alpha = WorkerIdentity(name: "alpha", owner: "alpha")

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
        let w = peers.newWorker(routing: [9], who: alpha)
        peers.workerLost(w, now: 100)
        #expect(peers.role(of: [9]) == .worker(w), "late messages still reach the core (fenced)")
        #expect(peers.openSession(of: alpha) == nil)
        #expect(peers.forgetLostWorkers(lostBefore: 100).isEmpty)
        #expect(peers.forgetLostWorkers(lostBefore: 101) == [w])
        #expect(peers.role(of: [9]) == nil && peers.routing(ofWorker: w) == nil)
        // The name keeps its number across the loss.
        let again = peers.newWorker(routing: [10], who: alpha)
        #expect(WorkerName.number(again) == WorkerName.number(w) && again != w)
    }

    /// Issue 25 finding 5: a worker named "wN" is wN unless another worker holds N; the same name with
    /// another key is another worker; numbers given back from the journal after a restart stay with
    /// their workers, and new sessions continue their count.
    @Test func workerNumbersAreStableByNameAndKeyAndAcrossARestart() {
        var peers = PeerTable()
        let b = peers.newWorker(routing: [1], who: WorkerIdentity(name: "builder", owner: "key:k1"))
        #expect(WorkerName.text(b) == "w1")
        let w1 = peers.newWorker(routing: [2], who: WorkerIdentity(name: "w1", owner: "key:k1"))
        #expect(WorkerName.text(w1) == "w2", "w1 is held by builder: the next free number")
        let w7 = peers.newWorker(routing: [3], who: WorkerIdentity(name: "w7", owner: "key:k1"))
        #expect(WorkerName.text(w7) == "w7")
        let other = peers.newWorker(routing: [4], who: WorkerIdentity(name: "builder", owner: "key:k2"))
        #expect(WorkerName.number(other) != WorkerName.number(b), "same name, another key: another worker")
        #expect(WorkerName.number(other) == 8)

        // A restart: the journal's sessions give the numbers back, whatever order workers come in.
        var restarted = PeerTable()
        for (id, who) in [(other, WorkerIdentity(name: "builder", owner: "key:k2")), (b, WorkerIdentity(name: "builder", owner: "key:k1")),
                          (w7, WorkerIdentity(name: "w7", owner: "key:k1"))] {
            restarted.restore(session: id, who: who)
        }
        let back = restarted.newWorker(routing: [9], who: WorkerIdentity(name: "builder", owner: "key:k1"))
        #expect(WorkerName.number(back) == 1)
        #expect(back != b, "a new session id, not the journalled one")
        #expect(WorkerName.session(back) == WorkerName.session(b) + 1)
        let fresh = restarted.newWorker(routing: [10], who: WorkerIdentity(name: "newcomer", owner: "key:k1"))
        #expect(WorkerName.number(fresh) == 9, "after every journalled number")
    }
}
