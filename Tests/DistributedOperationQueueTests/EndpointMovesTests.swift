@testable import DistributedOperationQueue
import Testing

/// When the API's connection thread leaves an endpoint whose link stays down (an --ha group's dead leader).
@Suite struct EndpointMovesTests {
    let t0 = ContinuousClock.now

    @Test func aLinkDownForThePatienceMovesAndThenEachPatienceUntilOneIsUp() {
        var m = EndpointMoves()
        let whileUp = m.shouldMove(linkUp: true, at: t0)
        let firstSeenDown = m.shouldMove(linkUp: false, at: t0)
        let justBefore = m.shouldMove(linkUp: false, at: t0 + .milliseconds(999))
        let atPatience = m.shouldMove(linkUp: false, at: t0 + EndpointMoves.patience)
        #expect(!whileUp)
        #expect(!firstSeenDown, "the first sight of a down link starts the clock")
        #expect(!justBefore && atPatience)
        m.moved(at: t0 + .seconds(1))
        let soonAfterMove = m.shouldMove(linkUp: false, at: t0 + .milliseconds(1500))
        let patienceAfterMove = m.shouldMove(linkUp: false, at: t0 + .seconds(2))
        #expect(!soonAfterMove, "the next endpoint gets its own patience")
        #expect(patienceAfterMove)
    }

    @Test func aLinkUpAgainResetsTheClock() {
        var m = EndpointMoves()
        _ = m.shouldMove(linkUp: false, at: t0)
        _ = m.shouldMove(linkUp: true, at: t0 + .milliseconds(900))
        let downAgain = m.shouldMove(linkUp: false, at: t0 + .milliseconds(1100))
        #expect(!downAgain, "down again: a new outage")
    }

    @Test func theArrivalAfterAMoveIsTakenOnce() {
        var m = EndpointMoves()
        let beforeAnyMove = m.takeArrival()
        m.moved(at: t0)
        let first = m.takeArrival()
        let second = m.takeArrival()
        #expect(!beforeAnyMove && first)
        #expect(!second, "one re-read per move")
    }
}
