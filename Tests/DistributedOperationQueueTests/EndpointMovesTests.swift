@testable import DistributedOperationQueue
import Testing

/// When the API's connection thread leaves an endpoint whose link stays down (an --ha group's dead leader).
@Suite struct EndpointMovesTests {
    let t0 = ContinuousClock.now

    @Test func aLinkDownForThePatienceMovesAndThenEachPatienceUntilOneIsUp() {
        var m = EndpointMoves()
        let r1 = m.shouldMove(linkUp: true, at: t0)
        #expect(!r1)
        let r2 = m.shouldMove(linkUp: false, at: t0)
        #expect(!r2, "the first sight of a down link starts the clock")
        let r3 = m.shouldMove(linkUp: false, at: t0 + .milliseconds(999))
        #expect(!r3)
        let r4 = m.shouldMove(linkUp: false, at: t0 + EndpointMoves.patience)
        #expect(r4)
        m.moved(at: t0 + .seconds(1))
        let r5 = m.shouldMove(linkUp: false, at: t0 + .milliseconds(1500))
        #expect(!r5, "the next endpoint gets its own patience")
        let r6 = m.shouldMove(linkUp: false, at: t0 + .seconds(2))
        #expect(r6)
    }

    @Test func aLinkUpAgainResetsTheClock() {
        var m = EndpointMoves()
        _ = m.shouldMove(linkUp: false, at: t0)
        _ = m.shouldMove(linkUp: true, at: t0 + .milliseconds(900))
        let r7 = m.shouldMove(linkUp: false, at: t0 + .milliseconds(1100))
        #expect(!r7, "down again: a new outage")
    }

    @Test func theArrivalAfterAMoveIsTakenOnce() {
        var m = EndpointMoves()
        let r8 = m.takeArrival()
        #expect(!r8)
        m.moved(at: t0)
        let r9 = m.takeArrival()
        #expect(r9)
        let r10 = m.takeArrival()
        #expect(!r10, "one re-read per move")
    }
}
