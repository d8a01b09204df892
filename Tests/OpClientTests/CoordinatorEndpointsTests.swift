import OpClient
import Testing

/// (issue 29) Several coordinators: which one a client or worker asks next.
@Suite struct CoordinatorEndpointsTests {
    @Test func aListIsSplitAndNormalised() {
        let e = CoordinatorEndpoints("a:7600, tcp://b:7600")
        #expect(e.all == ["tcp://a:7600", "tcp://b:7600"])
        #expect(e.current == "tcp://a:7600")
        #expect(e.isSeveral)
        #expect(!CoordinatorEndpoints("tcp://a:7600").isSeveral)
    }

    @Test func aRedirectGoesToTheLeaderNamedUnlessItFailed() {
        var e = CoordinatorEndpoints("tcp://a:1,tcp://b:1")
        do { let v = e.redirect(to: "tcp://b:1"); #expect(v) }
        #expect(e.current == "tcp://b:1")
        do { let v = e.redirect(to: nil); #expect(!v) }   // no leader yet: stay and ask again
        do { let v = e.redirect(to: "tcp://b:1"); #expect(!v) }   // already there
        // b cannot be reached: the next is a; a standby naming b (its lease not expired yet) is not
        // followed until it named it `redirectPatience` times (the standby may be right: b is back).
        do { let v = e.unreachable(); #expect(v) }
        #expect(e.current == "tcp://a:1")
        for _ in 1..<CoordinatorEndpoints.redirectPatience { do { let v = e.redirect(to: "tcp://b:1"); #expect(!v) } }
        do { let v = e.redirect(to: "tcp://b:1"); #expect(v) }
        #expect(e.current == "tcp://b:1")
    }

    @Test func unreachableEndpointsAreSkippedRoundRobinAndForgivenWhenAllFailed() {
        var e = CoordinatorEndpoints("tcp://a:1,tcp://b:1,tcp://c:1")
        do { let v = e.unreachable(); #expect(v) }
        #expect(e.current == "tcp://b:1")
        do { let v = e.unreachable(); #expect(v) }
        #expect(e.current == "tcp://c:1")
        // All three failed: the marks are cleared and it goes round again.
        do { let v = e.unreachable(); #expect(v) }
        #expect(e.current == "tcp://a:1")
        var one = CoordinatorEndpoints("tcp://a:1")
        do { let v = one.unreachable(); #expect(!v) }
        #expect(one.current == "tcp://a:1")
    }

    @Test func aBadEndpointInTheListIsNamed() {
        #expect(CoordinatorEndpoints("tcp://a:1,tcp://b").problem()?.endpoint == "tcp://b")
        #expect(CoordinatorEndpoints("tcp://a:1,tcp://b:2").problem() == nil)
    }
}
