import Glibc
@testable import Journal
import Testing

/// What the journal gives a hot standby (issue 29): the group commits as written (`ReplicationFeed`),
/// any position read back from the segments (`JournalTailReader`), the newest snapshot
/// (`SnapshotFile`), and a standby's directory started from that snapshot (`StandbyJournal`).
struct ReplicationTests {
    /// Everything `read` gives from `from` up to `limit`, decoded.
    private func readAll(_ reader: JournalTailReader, from: UInt64, to limit: UInt64, maxBytes: Int = 300) throws -> [JournalEntry] {
        var out: [JournalEntry] = []
        var at = from
        while at < limit {
            guard case .records(let first, let count, let bytes) = reader.read(from: at, upTo: limit, maxBytes: maxBytes) else {
                Issue.record("nothing at \(at) of \(limit)")
                return out
            }
            #expect(first == at && count >= 1)
            out += try StandbyJournal.entries(framed: bytes, count: count)
            at += UInt64(count)
        }
        return out
    }

    @Test func theFeedHandsOverEachDurableCommitInRecordOrder() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 29)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        // Nothing is kept while no standby follows.
        _ = appendRandom(store, &random, batches: 5)
        #expect(waitUntil { store.durableSequence == 5 })
        let before = store.durableRecords
        #expect(store.replicationFeed.chunks(from: before, maxBytes: 1 << 20) == .fromDisk(until: nil))
        store.replicationFeed.setActive(true)
        let (entries, last) = appendRandom(store, &random, batches: 100)
        #expect(waitUntil { store.durableSequence == last })
        #expect(store.durableRecords == before + UInt64(entries.count))
        var got: [JournalEntry] = []
        var at = before
        while at < store.durableRecords {
            guard case .chunks(let cs) = store.replicationFeed.chunks(from: at, maxBytes: 500) else {
                Issue.record("no chunk at \(at)")
                break
            }
            for c in cs {
                #expect(c.first == at)
                got += try StandbyJournal.entries(framed: c.bytes, count: c.records)
                at = c.end
            }
        }
        #expect(got == entries)
        // Older than the feed: from disk, up to the feed's first commit.
        #expect(store.replicationFeed.chunks(from: 0, maxBytes: 1 << 20) == .fromDisk(until: before))
        #expect(store.close())
    }

    @Test func theFeedKeepsAtMostItsCapacityAndSendsTheRestToDisk() {
        let feed = ReplicationFeed(capacityBytes: 100)
        feed.setActive(true)
        for i in 0..<10 { feed.testCommitted(first: UInt64(i * 2), records: 2, bytes: [UInt8](repeating: UInt8(i), count: 30)) }
        // 30 bytes each, at most 100 kept: the last three (records 14…19) and the one that crossed.
        guard case .chunks(let cs) = feed.chunks(from: 14, maxBytes: 1 << 20) else { Issue.record("not kept"); return }
        #expect(cs.map(\.first) == [14, 16, 18])
        #expect(feed.chunks(from: 0, maxBytes: 1 << 20) == .fromDisk(until: 14))
        // Inside a commit: read from disk up to the next commit.
        #expect(feed.chunks(from: 15, maxBytes: 1 << 20) == .fromDisk(until: 16))
        // maxBytes bounds a reply, but never below one chunk.
        guard case .chunks(let one) = feed.chunks(from: 14, maxBytes: 1) else { Issue.record("not kept"); return }
        #expect(one.count == 1)
        feed.setActive(false)
        #expect(feed.chunks(from: 18, maxBytes: 1 << 20) == .fromDisk(until: nil))
    }

    @Test func aTailReaderReadsFromAnyRecordAcrossSegments() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 7)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        let (entries, last) = appendRandom(store, &random, batches: 150)
        #expect(waitUntil { store.durableSequence == last })
        #expect(segmentNumbers(dir.state).count > 5)
        let total = store.durableRecords
        #expect(total == UInt64(entries.count))
        for start in [0, 1, 37, entries.count / 2, entries.count - 1] {
            let reader = JournalTailReader(directory: dir.state)
            #expect(try readAll(reader, from: UInt64(start), to: total) == Array(entries[start...]), "from \(start)")
        }
        // A record's CRC as framed: what a standby and its leader compare.
        let one = JournalTailReader(directory: dir.state)
        guard case .records(_, 1, let frame) = one.read(from: 37, upTo: 38, maxBytes: 1) else { Issue.record("no record 37"); return }
        var alone = JournalBatch()
        alone.add(entries[37])
        #expect(frame == alone.bytes)
        #expect(JournalTailReader(directory: dir.state).crc(ofRecord: 37) == frame.withUnsafeBytes { JournalFormat.loadLE($0, 8) })
        #expect(JournalTailReader(directory: dir.state).crc(ofRecord: 38) != JournalTailReader(directory: dir.state).crc(ofRecord: 37))
        #expect(JournalTailReader(directory: dir.state).crc(ofRecord: total) == nil)
        // A limit short of the end stops there; nothing past it.
        let reader = JournalTailReader(directory: dir.state)
        #expect(try readAll(reader, from: 3, to: 10) == Array(entries[3..<10]))
        #expect(reader.read(from: 10, upTo: 10, maxBytes: 100) == .nothing)
        // Records appended later are read on from where it was.
        let (more, last2) = appendRandom(store, &random, batches: 20)
        #expect(waitUntil { store.durableSequence == last2 })
        #expect(try readAll(reader, from: 10, to: store.durableRecords) == Array((entries + more)[10...]))
        #expect(store.close())
    }

    @Test func aSnapshotStartsAStandbyDirectoryThatCountsOnFromIt() throws {
        let leaderDir = TemporaryDirectory("leader")
        var random = RandomEntries(seed: 11)
        let leader = try JournalStore(directory: leaderDir.state, options: noSync)
        _ = try leader.recover()
        let (entries, last) = appendRandom(leader, &random, batches: 60)
        #expect(waitUntil { leader.durableSequence == last })
        let state = Array(entries.prefix(7))   // stands for the state the snapshot rebuilds
        let requested = leader.requestSnapshot({ state })
        #expect(requested)
        #expect(waitUntil { !leader.snapshotInProgress })
        let (tail, last2) = appendRandom(leader, &random, batches: 10)
        #expect(waitUntil { leader.durableSequence == last2 })

        guard let snap = SnapshotFile.newest(in: leaderDir.state) else { Issue.record("no snapshot"); return }
        #expect(snap.recordsAfter == UInt64(entries.count))
        // The segments before it are gone: a standby at 0 needs the snapshot.
        #expect(JournalTailReader(directory: leaderDir.state).read(from: 0, upTo: leader.durableRecords, maxBytes: 100) == .gone)

        // The standby had a state of its own: it is moved aside, not lost.
        let standbyDir = TemporaryDirectory("standby")
        do {
            let own = try JournalStore(directory: standbyDir.state, options: noSync)
            _ = try own.recover()
            _ = appendRandom(own, &random, batches: 3)
            #expect(own.close())
        }
        let moved = try StandbyJournal.install(snapshot: snap.bytes(0, snap.size), number: snap.number,
                                               recordsAfter: snap.recordsAfter, in: standbyDir.state)
        #expect(moved != nil && !segmentNumbers(moved!).isEmpty)
        let standby = try JournalStore(directory: standbyDir.state, options: noSync)
        let recovery = try standby.recover()
        #expect(recovery.entries == state)
        #expect(standby.durableRecords == snap.recordsAfter)
        // The tail after the snapshot, as the leader's segments hold it, continues the count.
        let reader = JournalTailReader(directory: leaderDir.state)
        guard case .records(let first, let count, let bytes) = reader.read(from: snap.recordsAfter, upTo: leader.durableRecords, maxBytes: 1 << 20) else {
            Issue.record("no tail"); return
        }
        #expect(first == snap.recordsAfter && count == tail.count)
        let last3 = standby.append(JournalBatch(framed: bytes, count: count))
        #expect(waitUntil { standby.durableSequence == last3 })
        #expect(standby.durableRecords == leader.durableRecords)
        #expect(standby.close() && leader.close())
        let again = try JournalStore(directory: standbyDir.state, options: noSync)
        #expect(try again.recover().entries == state + tail)
        #expect(again.durableRecords == snap.recordsAfter + UInt64(tail.count))
        #expect(again.close())
    }

    @Test func damagedRecordsOrSnapshotsFromTheLeaderAreRefused() throws {
        var batch = JournalBatch()
        batch.add(RandomEntries.smallSubmit(1))
        batch.add(RandomEntries.smallSubmit(2))
        #expect(try StandbyJournal.entries(framed: batch.bytes, count: 2).count == 2)
        #expect(throws: StandbyJournal.Problem.self) { try StandbyJournal.entries(framed: batch.bytes, count: 3) }
        var damaged = batch.bytes
        damaged[damaged.count - 2] ^= 0xFF
        #expect(throws: StandbyJournal.Problem.self) { try StandbyJournal.entries(framed: damaged, count: 2) }
        #expect(throws: StandbyJournal.Problem.self) { try StandbyJournal.entries(framed: Array(batch.bytes.dropLast()), count: 2) }
        let dir = TemporaryDirectory()
        #expect(throws: StandbyJournal.Problem.self) {
            try StandbyJournal.install(snapshot: Array("OPQSNAP1 not really".utf8), number: 3, recordsAfter: 9, in: dir.state)
        }
    }
}
