import Leadership
import Testing

/// The election state machine alone: requests out, answers in, times given.
@Suite struct LeaderElectionTests {
    let config = LeaderElection.Config(ttlSeconds: 3, marginMicros: 300_000, pollIntervalMicros: 100_000,
                                       retryMicros: 50_000, stepDownHoldMicros: 1_000_000)

    /// Grants a lease at `t` and campaigns right after; returns the machine and the campaign request.
    func granted(at t: Int64 = 0, lease: Int64 = 7) -> LeaderElection {
        var e = LeaderElection(endpoint: "tcp://a:1", config: config)
        do { let v = e.next(now: t); #expect(v == .send(.grant(ttlSeconds: 3))) }
        e.answer(.granted(lease: lease, ttlSeconds: 3), to: .grant(ttlSeconds: 3), sentAt: t, now: t + 1000)
        do { let v = e.next(now: t + 1000); #expect(v == .send(.campaign(lease: lease))) }
        return e
    }

    @Test func winningMakesALeaderUntilTheLeaseLessTheMargin() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        // The lease runs from the grant's send time (0): 3 s less 0.3 s.
        #expect(e.role == .leader(epoch: 42, until: 2_700_000))
        #expect(e.termsWon == 1)
        // Next: renew at ttl/3 after the grant was sent.
        do { let v = e.next(now: 2000); #expect(v == .waitUntil(1_000_000)) }
        do { let v = e.next(now: 1_000_000); #expect(v == .send(.renew(lease: 7))) }
    }

    @Test func aRenewalMovesTheDeadlineFromItsSendTime() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        e.answer(.renewed(ttlSeconds: 3), to: .renew(lease: 7), sentAt: 1_000_000, now: 1_400_000)
        #expect(e.role == .leader(epoch: 42, until: 3_700_000))
        do { let v = e.next(now: 1_400_000); #expect(v == .waitUntil(2_000_000)) }
    }

    @Test func failedRenewalsEndServingAtTheDeadlineNotLater() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        var t: Int64 = 1_000_000
        // Every renewal fails; the machine retries, and the role ends at 2.7 s whatever happens.
        while t < 2_700_000 {
            if case .send(let r) = e.next(now: t) {
                #expect(r == .renew(lease: 7))
                e.answer(.failed(leaseGone: false), to: r, sentAt: t, now: t + 10_000)
            }
            #expect(e.isLeader)
            t += 10_000
        }
        _ = e.next(now: 2_700_000)
        #expect(e.role == .follower(leader: nil))
    }

    @Test func aWaitingLeaderWakesForItsDeadline() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        // A renewal failed late: the retry comes after the deadline, so the wait ends at the deadline.
        e.answer(.failed(leaseGone: false), to: .renew(lease: 7), sentAt: 2_690_000, now: 2_690_000)
        do { let v = e.next(now: 2_690_000); #expect(v == .waitUntil(2_700_000)) }
    }

    @Test func aLeaseThatExpiredEndsLeadershipAtOnceAndIsGrantedAgain() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        e.answer(.renewed(ttlSeconds: 0), to: .renew(lease: 7), sentAt: 1_000_000, now: 1_100_000)
        #expect(e.role == .follower(leader: nil))
        do { let v = e.next(now: 1_100_000); #expect(v == .send(.grant(ttlSeconds: 3))) }
    }

    @Test func aRevokedLeaseSeenByACampaignOrRenewalIsGrantedAgain() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        e.answer(.failed(leaseGone: true), to: .renew(lease: 7), sentAt: 1_000_000, now: 1_100_000)
        #expect(!e.isLeader)
        do { let v = e.next(now: 1_100_000); #expect(v == .send(.grant(ttlSeconds: 3))) }
    }

    @Test func aFollowerKnowsTheHolderAndPollsAgain() {
        var e = granted()
        let holder = LeaderElection.Holder(endpoint: "tcp://b:1", epoch: 9)
        e.answer(.lost(holder: holder), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        #expect(e.role == .follower(leader: holder))
        do { let v = e.next(now: 2000); #expect(v == .waitUntil(102_000)) }
        do { let v = e.next(now: 102_000); #expect(v == .send(.campaign(lease: 7))) }
        // Its own lease is kept alive on the leader's schedule, so a campaign can use it.
        do { let v = e.next(now: 1_000_000); #expect(v == .send(.renew(lease: 7))) }
    }

    @Test func steppingDownStopsServingAtOnceRevokesAndHoldsOff() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 7), sentAt: 1000, now: 2000)
        e.stepDown(now: 10_000)
        #expect(e.role == .follower(leader: nil))
        do { let v = e.next(now: 10_000); #expect(v == .send(.revoke(lease: 7))) }
        e.answer(.revoked, to: .revoke(lease: 7), sentAt: 10_000, now: 20_000)
        do { let v = e.next(now: 20_000); #expect(v == .send(.grant(ttlSeconds: 3))) }
        e.answer(.granted(lease: 8, ttlSeconds: 3), to: .grant(ttlSeconds: 3), sentAt: 20_000, now: 30_000)
        // No campaign before the hold (1 s from the step-down) is over.
        do { let v = e.next(now: 30_000); #expect(v == .waitUntil(1_010_000)) }
        do { let v = e.next(now: 1_010_000); #expect(v == .send(.campaign(lease: 8))) }
    }

    @Test func answersAboutAnOldLeaseAreIgnored() {
        var e = granted()
        e.answer(.won(epoch: 42), to: .campaign(lease: 6), sentAt: 1000, now: 2000)
        #expect(!e.isLeader)
    }

    @Test func aFailedRequestWaitsBeforeTheNextTry() {
        var e = LeaderElection(endpoint: "tcp://a:1", config: config)
        e.answer(.failed(leaseGone: false), to: .grant(ttlSeconds: 3), sentAt: 0, now: 1000)
        do { let v = e.next(now: 1000); #expect(v == .waitUntil(51_000)) }
        do { let v = e.next(now: 51_000); #expect(v == .send(.grant(ttlSeconds: 3))) }
    }

    @Test func theDefaultMarginIsAnEighthOfTheLeaseAndAtLeast100ms() {
        #expect(LeaderElection.Config.defaultMargin(ttlMicros: 2_000_000) == 250_000)
        #expect(LeaderElection.Config.defaultMargin(ttlMicros: 500_000) == 100_000)
    }
}
