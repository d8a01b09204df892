@testable import Coordinator
import Testing

/// The hot standby's pure parts (issue 29): the leader's per-standby bookkeeping (`FollowerBook`), which
/// batches a standby holds (`SyncPoint`), and a standby's place in its leader's journal (`StandbyPosition`).
struct ReplicationBookTests {
    let a: [UInt8] = [1], b: [UInt8] = [2]

    @Test func aStandbyIsSentAtMostAWindowAheadOfWhatItAcknowledged() {
        var book = FollowerBook(window: 2)
        let (id, snapshot) = book.follow(routing: a, name: "b", from: 10, durable: 50, now: 0)
        #expect(!snapshot)
        #expect(book.followers[0].next == 10 && book.followers[0].state == "catching-up")
        book.sentRecords(id, through: 20, now: 1)
        #expect(book.mayStream(book.followers[0]))
        book.sentRecords(id, through: 30, now: 2)
        #expect(!book.mayStream(book.followers[0]))   // two in flight
        book.acknowledged(routing: a, received: 1, durable: 10, now: 3)
        #expect(book.mayStream(book.followers[0]))
        // A received count beyond what was sent (a confused peer) does not open the window further.
        book.acknowledged(routing: a, received: 99, durable: 10, now: 3)
        #expect(book.followers[0].received == 2)
    }

    @Test func aStandbyIsInSyncOnceItHoldsWhatWasDurableWhenItCaughtUp() {
        var book = FollowerBook()
        let (id, _) = book.follow(routing: a, name: "b", from: 0, durable: 30, now: 0)
        book.sentRecords(id, through: 30, now: 10)
        #expect(book.replicated == nil && !book.anyInSync)
        book.caughtUp(id, durable: 30)
        #expect(book.followers[0].state == "live")
        let got1 = book.acknowledged(routing: a, received: 1, durable: 20, now: 20)
        #expect(!got1)
        #expect(!book.anyInSync)
        let got2 = book.acknowledged(routing: a, received: 1, durable: 30, now: 40)
        #expect(got2)
        #expect(book.anyInSync && book.replicated == 30 && book.followers[0].state == "sync")
        #expect(book.ackLatency(percentile: 0.5) == 30)   // sent at 10, durable at 40
        // Dropped out of sync: it has to catch up again.
        let got3 = book.expireSync()
        #expect(got3 == ["b"])
        #expect(!book.anyInSync && book.followers[0].caughtUpAt == nil)
        book.caughtUp(id, durable: 35)
        book.sentRecords(id, through: 35, now: 50)
        let got4 = book.acknowledged(routing: a, received: 2, durable: 35, now: 60)
        #expect(got4)
    }

    @Test func aStandbyAheadOfTheLeaderGetsTheSnapshotThenStreamsAfterIt() {
        var book = FollowerBook()
        let (id, snapshot) = book.follow(routing: a, name: "b", from: 80, durable: 50, now: 0)
        #expect(snapshot)
        book.startSnapshot(id, number: 4, recordsAfter: 40, total: 3000)
        #expect(book.followers[0].state == "snapshot")
        book.sentSnapshot(id, bytes: 2000, now: 1)
        #expect(book.followers[0].phase == .snapshot(number: 4, recordsAfter: 40, offset: 2000, total: 3000))
        book.sentSnapshot(id, bytes: 1000, now: 2)
        #expect(book.followers[0].phase == .streaming && book.followers[0].next == 40)
        // Not in sync while receiving a snapshot, whatever it says.
        book.caughtUp(id, durable: 40)
        let got5 = book.acknowledged(routing: a, received: 2, durable: 40, now: 3)
        #expect(got5)
    }

    @Test func aStandbyOnAnotherHistoryGetsTheSnapshotEvenBehindTheLeader() {
        var book = FollowerBook()
        let (_, snapshot) = book.follow(routing: a, name: "b", from: 10, durable: 50, diverged: true, now: 0)
        #expect(snapshot)
        #expect(book.followers[0].durable == 0)   // what it holds counts for nothing until it acknowledges again
    }

    @Test func aStandbyFollowingAgainReplacesItsOldEntryAndSilentOnesAreForgotten() {
        var book = FollowerBook()
        _ = book.follow(routing: a, name: "b", from: 0, durable: 0, now: 0)
        _ = book.follow(routing: b, name: "b", from: 5, durable: 5, now: 1)   // reconnected: a new routing id
        #expect(book.followers.count == 1 && book.followers[0].routing == b)
        _ = book.follow(routing: a, name: "c", from: 0, durable: 5, now: 2)
        book.acknowledged(routing: b, received: 0, durable: 5, now: 100)
        let got6 = book.forgetSilent(before: 50).map(\.name)
        #expect(got6 == ["c"])
        #expect(book.followers.map(\.name) == ["b"])
        // An acknowledgement from a routing that follows nothing changes nothing.
        let got7 = book.acknowledged(routing: [9], received: 1, durable: 9, now: 101)
        #expect(!got7)
    }

    @Test func syncReleasesABatchOnlyOnceAStandbyHoldsAllItsRecords() {
        var sync = SyncPoint(records: 100, sequence: 7)
        sync.appended(sequence: 8, records: 3, now: 10)    // records 100..<103
        sync.appended(sequence: 9, records: 2, now: 20)    // 103..<105
        #expect(sync.released(leaderDurable: 9, syncing: false) == 9)
        #expect(sync.released(leaderDurable: 9, syncing: true) == 7)
        #expect(sync.waitingSince(leaderDurable: 7) == nil)     // not durable here yet: not the standby's wait
        #expect(sync.waitingSince(leaderDurable: 9) == 10)
        sync.replicated(through: 102)                          // part of batch 8: not enough
        #expect(sync.released(leaderDurable: 9, syncing: true) == 7)
        sync.replicated(through: 103)
        #expect(sync.released(leaderDurable: 9, syncing: true) == 8)
        #expect(sync.released(leaderDurable: 7, syncing: true) == 7)   // and never ahead of this disk
        #expect(sync.waitingSince(leaderDurable: 9) == 20)
        sync.releaseAll()
        #expect(sync.released(leaderDurable: 9, syncing: true) == 9 && sync.waitingSince(leaderDurable: 9) == nil)
        #expect(sync.records == 105)
    }

    @Test func withNoStandbyInSyncNothingIsKeptPerBatch() {
        var sync = SyncPoint(records: 0, sequence: 0)
        for s in 1...1000 { sync.appended(sequence: UInt64(s), records: 2, now: Int64(s), waitsForStandby: false) }
        #expect(sync.records == 2000 && sync.replicatedSequence == 1000 && sync.waitingSince(leaderDurable: 1000) == nil)
        // One that waits, then one that does not: the second stays behind the first (in order).
        sync.appended(sequence: 1001, records: 1, now: 5, waitsForStandby: true)
        sync.appended(sequence: 1002, records: 1, now: 6, waitsForStandby: false)
        #expect(sync.replicatedSequence == 1000)
        sync.replicated(through: 2002)
        #expect(sync.replicatedSequence == 1002)
    }

    @Test func aStandbyAppliesRecordsInOrderOnlyAndAsksAgainOnAGap() {
        var p = StandbyPosition(position: 10)
        let got8 = p.journal(first: 10, records: 5)
        #expect(got8 == .apply(skip: 0))
        #expect(p.position == 15)
        let got9 = p.journal(first: 12, records: 5)
        #expect(got9 == .apply(skip: 3))   // overlaps what it holds
        let got10 = p.journal(first: 12, records: 2)
        #expect(got10 == .ignore)
        let got11 = p.journal(first: 30, records: 1)
        #expect(got11 == .refollow)         // a gap: never applied out of order
        #expect(p.position == 17 && p.received == 4)
        p.followed()
        #expect(p.received == 0)
    }

    @Test func aStandbyCollectsASnapshotInOrderThenGoesOnAfterIt() {
        var p = StandbyPosition(position: 3)
        let got12 = p.snapshotPiece(number: 2, recordsAfter: 40, offset: 0, total: 5, data: [1, 2])
        #expect(got12 == .collecting)
        let got13 = p.journal(first: 3, records: 1)
        #expect(got13 == .refollow)           // records in the middle of a snapshot
        var q = StandbyPosition(position: 3)
        let got14 = q.snapshotPiece(number: 2, recordsAfter: 40, offset: 0, total: 5, data: [1, 2])
        #expect(got14 == .collecting)
        let got15 = q.snapshotPiece(number: 2, recordsAfter: 40, offset: 3, total: 5, data: [9])
        #expect(got15 == .refollow)  // a gap
        var r = StandbyPosition(position: 3)
        _ = r.snapshotPiece(number: 2, recordsAfter: 40, offset: 0, total: 5, data: [1, 2])
        let got16 = r.snapshotPiece(number: 2, recordsAfter: 40, offset: 2, total: 5, data: [3, 4, 5])
        #expect(got16 == .install(number: 2, recordsAfter: 40))
        #expect(r.snapshotBytes == [1, 2, 3, 4, 5])
        r.installed(recordsAfter: 40)
        #expect(r.position == 40 && r.snapshotBytes.isEmpty)
        let got17 = r.journal(first: 40, records: 2)
        #expect(got17 == .apply(skip: 0))
    }
}
