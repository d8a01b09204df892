@testable import Coordinator
import Testing

/// (issue 29) The role the election hands the loop: who serves when, and how the loop sees a change.
@Suite struct CoordinatorRoleTests {
    @Test func aLeaderServesUntilItsDeadlineOnly() {
        let r = CoordinatorRole.leader(epoch: 7, until: 1_000)
        #expect(r.serves(at: 999))
        #expect(!r.serves(at: 1_000))
        #expect(!CoordinatorRole.standby(leader: "tcp://b:1", epoch: 7).serves(at: 0))
        #expect(r.epoch == 7)
    }

    @Test func theBoxHandsEachChangeOnce() {
        let box = LeadershipBox()
        var seen: UInt64 = 0
        #expect(box.changed(since: &seen) == nil)
        box.set(.leader(epoch: 3, until: 10))
        #expect(box.changed(since: &seen) == .leader(epoch: 3, until: 10))
        #expect(box.changed(since: &seen) == nil)
        box.set(.standby(leader: nil, epoch: 0))
        box.set(.standby(leader: "tcp://b:1", epoch: 4))
        #expect(box.changed(since: &seen) == .standby(leader: "tcp://b:1", epoch: 4))
    }
}
