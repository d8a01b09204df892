import Glibc
@testable import Journal
import Synchronization
import Testing

/// Appending, group commit, reopening, locking, snapshots.
struct StoreTests {
    @Test func appendedBatchesComeBackInOrderAfterClose() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 1)
        let wakes = Atomic<Int>(0)
        let appended: [JournalEntry]
        do {
            // fsync on: the real path, on the /tmp disk. Small segments: many switches.
            let store = try JournalStore(directory: dir.state, options: JournalOptions(segmentBytes: 4096),
                                         wake: { wakes.add(1, ordering: .relaxed) })
            #expect(try store.recover().entries.isEmpty)
            let (entries, last) = appendRandom(store, &random, batches: 200)
            appended = entries
            #expect(last == 200)
            #expect(store.close())
            #expect(store.durableSequence == last)
            #expect(store.bufferedBytes == 0)
            #expect(store.health == .ok)
        }
        #expect(wakes.load(ordering: .relaxed) > 0)
        #expect(segmentNumbers(dir.state).count > 5)
        let written = segmentNumbers(dir.state)
        var st = stat()
        stat(dir.state, &st)
        #expect(st.st_mode & 0o777 == 0o700)

        let store = try JournalStore(directory: dir.state)
        let recovery = try store.recover()
        #expect(recovery.entries == appended)
        #expect(recovery.notes.isEmpty)
        #expect(recovery.tailEntries == appended.count && recovery.snapshotEntries == 0 && recovery.snapshot == nil)
        #expect(recovery.segments == written)
        let before = recovery.segments
        // Appends after recovery go to a new segment.
        var batch = JournalBatch()
        batch.add(RandomEntries.smallSubmit(1))
        store.append(batch)
        #expect(store.close())
        #expect(segmentNumbers(dir.state) == before + [before.last! + 1])
    }

    @Test func whatWasDurableSurvivesACrash() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 2)
        var appended: [JournalEntry] = []
        do {
            let store = try JournalStore(directory: dir.state, options: noSync)
            _ = try store.recover()
            let (entries, last) = appendRandom(store, &random, batches: 150)
            appended = entries
            #expect(waitUntil { store.durableSequence == last })
            // No close(): the store is dropped here, as a killed process would leave it.
        }
        let store = try JournalStore(directory: dir.state, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == appended)
        store.close()
    }

    @Test func forEachDeliversTheSameEntriesWithoutCollectingThem() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 3)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        let (appended, _) = appendRandom(store, &random, batches: 40)
        store.close()
        let reopened = try JournalStore(directory: dir.state, options: noSync)
        var seen: [JournalEntry] = []
        let recovery = try reopened.recover(forEach: { seen.append($0) })
        #expect(seen == appended && recovery.entries.isEmpty && recovery.tailEntries == appended.count)
        reopened.close()
    }

    /// Decoding on its own thread: the same entries in the same order; an error of the caller's stops it
    /// and comes back, the decoder's thread ending too.
    @Test func pipelinedRecoveryDeliversTheSameEntriesAndStopsOnTheCallersError() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 4)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        var appended: [JournalEntry] = []
        for _ in 0..<10 { appended += appendRandom(store, &random, batches: 40).0 }   // several chunks' worth
        store.close()
        let reopened = try JournalStore(directory: dir.state, options: noSync)
        var seen: [JournalEntry] = []
        _ = try reopened.recover(pipelined: { seen.append($0) })
        #expect(seen == appended)
        reopened.close()

        struct Stop: Error {}
        let third = try JournalStore(directory: dir.state, options: noSync)
        var delivered = 0
        #expect(throws: Stop.self) {
            try third.recover(pipelined: { _ in delivered += 1; if delivered == 300 { throw Stop() } })
        }
        #expect(delivered == 300)
        third.close()
    }

    /// Lazy commits: a batch nobody waits for may wait for more (here up to 30 s), an urgent one takes
    /// it along at once, and `hurry` ends the wait (both well within 5 s: long before 30 s).
    @Test func aBatchNobodyWaitsForGoesWithTheNextUrgentOneOrWhenHurried() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 5)
        var lazy = noSync
        lazy.lazyCommit = .seconds(30)
        let store = try JournalStore(directory: dir.state, options: lazy)
        _ = try store.recover()
        func batch() -> JournalBatch { var b = JournalBatch(); b.add(random.entry()); return b }
        let a = store.append(batch(), urgent: false)
        let b = store.append(batch(), urgent: true)
        #expect(waitUntil(5) { store.durableSequence >= b } && b > a)
        let c = store.append(batch(), urgent: false)
        store.hurry()
        #expect(waitUntil(5) { store.durableSequence >= c })
        store.close()
    }

    @Test func aSecondStoreOnTheSameDirectoryIsToldWhoHasIt() throws {
        let dir = TemporaryDirectory()
        let first = try JournalStore(directory: dir.state)
        let error = try #require(throws: JournalError.self) { try JournalStore(directory: dir.state) }
        #expect(error == .locked(directory: dir.state, pid: getpid()))
        #expect(error.description.contains("state directory \(dir.state) is in use by another opcoord (pid \(getpid()))"))
        #expect(error.description.contains("--state-dir"))
        first.close()
        // Released on close.
        try JournalStore(directory: dir.state).close()
    }

    @Test func anUnusableDirectoryIsNamedWithTheReason() throws {
        let error = try #require(throws: JournalError.self) { try JournalStore(directory: "/dev/null/state") }
        #expect(error.description.contains("/dev/null"))
        #expect(error.description.contains("Not a directory"))
    }

    @Test func aSnapshotReplacesTheSegmentsBeforeIt() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 4)
        let snapshotEntries = (0..<100).map { _ in random.entry() }
        let later: [JournalEntry]
        let sinceSnapshot: Int, snapshotBytes: Int
        do {
            let store = try JournalStore(directory: dir.state, options: JournalOptions(segmentBytes: 2048))
            _ = try store.recover()
            let (earlier, last) = appendRandom(store, &random, batches: 30)
            #expect(waitUntil { store.durableSequence == last })
            let journalBefore = store.bytesSinceSnapshot
            #expect(journalBefore > 2048)
            // The snapshot waits until released, so the second request surely finds it in progress.
            let release = Atomic<Bool>(false)
            #expect(store.requestSnapshot {
                _ = waitUntil { release.load(ordering: .acquiring) }
                return snapshotEntries
            })
            #expect(store.snapshotInProgress)
            #expect(!store.requestSnapshot { earlier }, "one snapshot at a time")
            (later, _) = appendRandom(store, &random, batches: 20)
            release.store(true, ordering: .releasing)
            #expect(waitUntil { !store.snapshotInProgress })
            let notes = store.takeNotes()
            #expect(notes.contains { $0.contains(".snap written: 100 entries") }, "\(notes)")
            #expect(store.close())
            sinceSnapshot = store.bytesSinceSnapshot
            snapshotBytes = store.lastSnapshotBytes
        }
        let snapshots = snapshotNumbers(dir.state)
        #expect(snapshots.count == 1)
        let n = try #require(snapshots.first)
        #expect(segmentNumbers(dir.state).allSatisfy { $0 > n }, "segments ≤ \(n) deleted: \(segmentNumbers(dir.state))")
        let segmentBytes = segmentNumbers(dir.state).reduce(0) { $0 + FileSystem.size(dir.state + "/" + JournalFormat.name(.segment, $1))! }
        #expect(sinceSnapshot == segmentBytes, "bytesSinceSnapshot counts exactly the segments after the snapshot")
        #expect(snapshotBytes == FileSystem.size(dir.state + "/" + JournalFormat.name(.snapshot, n)))

        let store = try JournalStore(directory: dir.state)
        let recovery = try store.recover()
        #expect(recovery.snapshot == n)
        #expect(recovery.snapshotEntries == 100 && recovery.tailEntries == later.count)
        #expect(recovery.entries == snapshotEntries + later)
        #expect(recovery.notes.isEmpty)
        store.close()
    }

    @Test func anInterruptedSnapshotLeavesNothingThatMatters() throws {
        let dir = TemporaryDirectory()
        var random = RandomEntries(seed: 5)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        let (appended, _) = appendRandom(store, &random, batches: 30)
        store.close()
        // A snapshot that was being written when the process died, and one that was renamed into place
        // but whose segments were not deleted yet: the first is ignored, the second used.
        let segments = segmentNumbers(dir.state)
        let covered = segments[segments.count / 2]
        writeFile(dir.state + "/" + JournalFormat.name(.snapshot, segments.last! + 5) + ".tmp", [1, 2, 3])
        let coveredEntries = try entriesOfSegments(dir.state, through: covered)
        var snapshot = JournalFormat.header(.snapshot, covered)
        var batch = JournalBatch()
        for e in coveredEntries { batch.add(e) }
        snapshot += batch.bytes
        writeFile(dir.state + "/" + JournalFormat.name(.snapshot, covered), snapshot)

        let reopened = try JournalStore(directory: dir.state, options: noSync)
        let recovery = try reopened.recover()
        #expect(recovery.entries == appended)
        #expect(recovery.snapshot == covered && recovery.snapshotEntries == coveredEntries.count)
        #expect(recovery.notes.count == 1 && recovery.notes[0].contains("removed"), "\(recovery.notes)")
        #expect(segmentNumbers(dir.state).allSatisfy { $0 > covered })
        reopened.close()
    }

    @Test func batchesAppendedWhileTheWriterIsBusyShareACommit() throws {
        // One wake-up per commit: 2,000 batches appended back to back take far fewer (the group commit).
        let dir = TemporaryDirectory()
        let wakes = Atomic<Int>(0)
        let store = try JournalStore(directory: dir.state, wake: { wakes.add(1, ordering: .relaxed) })
        _ = try store.recover()
        var last: UInt64 = 0
        for i in 0..<2000 {
            var batch = JournalBatch()
            batch.add(RandomEntries.smallSubmit(i))
            last = store.append(batch)
        }
        #expect(store.close())
        #expect(store.durableSequence == last)
        #expect(wakes.load(ordering: .relaxed) < 2000, "\(wakes.load(ordering: .relaxed)) commits")
        let reopened = try JournalStore(directory: dir.state)
        #expect(try reopened.recover().entries == (0..<2000).map(RandomEntries.smallSubmit))
        reopened.close()
    }
}

/// Decodes segments 1…n of a directory (a snapshot fixture: the state as of the end of segment n).
func entriesOfSegments(_ directory: String, through n: Int) throws -> [JournalEntry] {
    var entries: [JournalEntry] = []
    for k in segmentNumbers(directory) where k <= n {
        let bytes = readFile(directory + "/" + JournalFormat.name(.segment, k))
        for span in recordSpans(bytes) {
            let payload = bytes[(span.offset + JournalFormat.frameHeaderSize)..<(span.offset + span.length)]
            entries.append(try JournalCodec.decode(payload))
        }
    }
    return entries
}
