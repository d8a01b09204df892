import Glibc
@testable import Journal
import Testing

/// The recovery rules: a torn tail of the newest segment is cut off; any other damage is corruption,
/// reported with the file and the damaged record's offset, and salvage keeps exactly what is before it.
struct RecoveryTests {
    /// A journal of several small segments, its files, and where each entry lives.
    struct Fixture {
        let dir = TemporaryDirectory()
        var entries: [JournalEntry] = []
        var files: [String: [UInt8]] = [:]
        var segments: [Int] = []
        /// Index in `entries` of the first entry of each segment.
        var firstEntry: [Int: Int] = [:]

        init(seed: UInt64) throws {
            var random = RandomEntries(seed: seed)
            let store = try JournalStore(directory: dir.state, options: noSync)
            _ = try store.recover()
            entries = appendRandom(store, &random, batches: 60).entries
            store.close()
            files = saveFiles(dir.state)
            segments = segmentNumbers(dir.state)
            var index = 0
            for n in segments {
                firstEntry[n] = index
                index += recordSpans(files[JournalFormat.name(.segment, n)]!).count
            }
            precondition(index == entries.count && segments.count >= 4, "fixture: \(segments)")
        }

        var path: String { dir.state }
        func name(_ n: Int) -> String { JournalFormat.name(.segment, n) }
        func bytes(_ n: Int) -> [UInt8] { files[name(n)]! }

        /// The entries before record `record` of segment `n`.
        func prefix(segment n: Int, records: Int) -> [JournalEntry] { Array(entries[..<(firstEntry[n]! + records)]) }
    }

    @Test func aTornTailOfTheNewestSegmentIsCutOffAtFiftyOffsets() throws {
        let f = try Fixture(seed: 11)
        let newest = f.segments.last!
        let original = f.bytes(newest)
        let spans = recordSpans(original)
        var rng = SplitMix64(seed: 12)
        let start = recordsStart(original)
        var cuts = (0..<48).map { _ in start + rng.int(original.count - start) }
        cuts += [start, spans.last!.offset + 5]  // just the header; inside a frame header
        for cut in cuts {
            restoreFiles(f.path, f.files)
            writeFile(f.path + "/" + f.name(newest), Array(original[..<cut]))
            let complete = spans.filter { $0.offset + $0.length <= cut }
            let end = complete.last.map { $0.offset + $0.length } ?? start
            // A torn write is one never acknowledged: the last durable commit ended before it.
            markDurable(f.path, segment: newest, offset: end)

            let store = try JournalStore(directory: f.path, options: noSync)
            let recovery = try store.recover()
            #expect(recovery.entries == f.prefix(segment: newest, records: complete.count), "cut at \(cut)")
            if cut == end {
                #expect(recovery.notes.isEmpty)
            } else {
                #expect(recovery.notes == ["\(f.name(newest)): torn tail of \(cut - end) bytes at offset \(end) truncated"])
            }
            #expect(FileSystem.size(f.path + "/" + f.name(newest)) == end)
            store.close()
        }
    }

    @Test func zerosAfterTheLastRecordAreATornTail() throws {
        // What a file system can leave after a crash: the size grew, the data did not arrive.
        let f = try Fixture(seed: 13)
        let newest = f.segments.last!
        writeFile(f.path + "/" + f.name(newest), f.bytes(newest) + [UInt8](repeating: 0, count: 4096))
        let store = try JournalStore(directory: f.path, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == f.entries)
        #expect(recovery.notes == ["\(f.name(newest)): torn tail of 4096 bytes at offset \(f.bytes(newest).count) truncated"])
        store.close()
    }

    @Test func aTornTailAnywhereButTheNewestSegmentIsCorruption() throws {
        let f = try Fixture(seed: 14)
        let middle = f.segments[1]
        let bytes = f.bytes(middle)
        let last = recordSpans(bytes).last!
        writeFile(f.path + "/" + f.name(middle), Array(bytes[..<(last.offset + 20)]))
        let store = try JournalStore(directory: f.path, options: noSync)
        let error = try #require(throws: JournalError.self) { try store.recover() }
        guard case .corrupt(let file, let offset, let reason) = error else { Issue.record("\(error)"); return }
        #expect(file == f.path + "/" + f.name(middle) && offset == last.offset)
        #expect(reason.contains("runs past the end") && reason.contains("not"), "\(reason)")
        #expect(error.description.contains("--salvage"))
        #expect(error.description.contains(f.path + "/salvaged-"))
    }

    @Test(arguments: [false, true])
    func aFlippedByteIsCorruptionAtItsRecordAndSalvageKeepsWhatIsBefore(inNewestSegment: Bool) throws {
        let f = try Fixture(seed: inNewestSegment ? 21 : 22)
        let damaged = inNewestSegment ? f.segments.last! : f.segments[f.segments.count / 2]
        let original = f.bytes(damaged)
        let spans = recordSpans(original)
        var rng = SplitMix64(seed: inNewestSegment ? 23 : 24)
        for _ in 0..<50 {
            let at = recordsStart(original) + rng.int(original.count - recordsStart(original))
            let record = spans.firstIndex { at < $0.offset + $0.length }!
            var bytes = original
            bytes[at] ^= UInt8(1 + rng.int(255))
            restoreFiles(f.path, f.files)
            writeFile(f.path + "/" + f.name(damaged), bytes)

            // Without salvage: an error naming the file and the damaged record, and nothing changed.
            let store = try JournalStore(directory: f.path, options: noSync)
            let error = try #require(throws: JournalError.self) { try store.recover() }
            #expect(error == .corrupt(file: f.path + "/" + f.name(damaged), offset: spans[record].offset,
                                      reason: corruptReason(error)), "byte \(at)")
            #expect(saveFiles(f.path).keys.sorted() == f.files.keys.sorted())

            // With salvage: exactly the records before it; the rest set aside.
            let recovery = try store.recover(salvage: true)
            #expect(recovery.entries == f.prefix(segment: damaged, records: record), "byte \(at)")
            let later = f.segments.filter { $0 > damaged }
            #expect(recovery.notes.first?.contains("\(f.name(damaged)) is damaged at offset \(spans[record].offset)") == true, "\(recovery.notes)")
            #expect(recovery.notes.contains { $0.contains("set aside \(later.count) later segment") } == !later.isEmpty)
            let salvaged = try #require(try FileSystem.list(f.path).first { $0.hasPrefix("salvaged-") })
            let setAside = try FileSystem.list(f.path + "/" + salvaged).sorted()
            #expect(setAside == ([damaged] + later).map(f.name))
            #expect(readFile(f.path + "/" + salvaged + "/" + f.name(damaged)) == bytes, "a copy of the file as it was")
            var batch = JournalBatch()
            batch.add(RandomEntries.smallSubmit(at))
            store.append(batch)
            store.close()
            // The damaged segment is kept up to its damaged record; writing went on in the next number.
            #expect(FileSystem.size(f.path + "/" + f.name(damaged)) == spans[record].offset)
            #expect(segmentNumbers(f.path) == f.segments.filter { $0 <= damaged } + [damaged + 1])

            // And the next start reads the salvaged journal back without complaint.
            let again = try JournalStore(directory: f.path, options: noSync)
            let second = try again.recover()
            #expect(second.entries == recovery.entries + [RandomEntries.smallSubmit(at)] && second.notes.isEmpty)
            again.close()
        }
    }

    @Test func aMissingSegmentIsCorruptionAndSalvageKeepsTheSegmentsBeforeIt() throws {
        let f = try Fixture(seed: 31)
        let missing = f.segments[2]
        unlink(f.path + "/" + f.name(missing))
        let store = try JournalStore(directory: f.path, options: noSync)
        let error = try #require(throws: JournalError.self) { try store.recover() }
        #expect(error == .corrupt(file: f.path + "/" + f.name(missing), offset: 0, reason: corruptReason(error)))
        #expect(error.description.contains("\(f.name(missing)) is missing"))
        let recovery = try store.recover(salvage: true)
        #expect(recovery.entries == f.prefix(segment: missing, records: 0))
        // Writing resumes in the missing segment's place, so the numbers stay consecutive.
        var batch = JournalBatch()
        batch.add(RandomEntries.smallSubmit(0))
        store.append(batch)
        store.close()
        #expect(segmentNumbers(f.path) == f.segments.filter { $0 <= missing })
    }

    @Test func aBadFileHeaderIsCorruptionAtOffsetZero() throws {
        let f = try Fixture(seed: 32)
        let n = f.segments[1]
        var bytes = f.bytes(n)
        bytes[12] ^= 1  // the file number
        writeFile(f.path + "/" + f.name(n), bytes)
        let store = try JournalStore(directory: f.path, options: noSync)
        let error = try #require(throws: JournalError.self) { try store.recover() }
        #expect(error == .corrupt(file: f.path + "/" + f.name(n), offset: 0, reason: corruptReason(error)))
        #expect(corruptReason(error).contains("file number"))
        let recovery = try store.recover(salvage: true)
        #expect(recovery.entries == f.prefix(segment: n, records: 0))
        #expect(recovery.notes.first?.contains("the whole file") == true, "\(recovery.notes)")
        store.close()
    }

    @Test func aDamagedSnapshotFallsBackOnlyWhenTheSegmentsItReplacedAreThere() throws {
        let f = try Fixture(seed: 41)
        let covered = f.segments[1]
        let snapshotEntries = try entriesOfSegments(f.path, through: covered)
        var batch = JournalBatch()
        for e in snapshotEntries { batch.add(e) }
        var snapshot = JournalFormat.header(.snapshot, covered) + batch.bytes
        snapshot[snapshot.count - 3] ^= 0x40
        let snapshotName = JournalFormat.name(.snapshot, covered)

        // Segments 1…covered still there: recover from them instead, and move the snapshot aside.
        writeFile(f.path + "/" + snapshotName, snapshot)
        let store = try JournalStore(directory: f.path, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == f.entries && recovery.snapshot == nil)
        #expect(recovery.notes.count == 1 && recovery.notes[0].contains("\(snapshotName) is damaged"), "\(recovery.notes)")
        #expect(snapshotNumbers(f.path).isEmpty)
        store.close()

        // The segments it replaced are gone: corruption.
        restoreFiles(f.path, f.files)
        writeFile(f.path + "/" + snapshotName, snapshot)
        for n in f.segments where n <= covered { unlink(f.path + "/" + f.name(n)) }
        let again = try JournalStore(directory: f.path, options: noSync)
        let error = try #require(throws: JournalError.self) { try again.recover() }
        let lastRecord = recordSpans(JournalFormat.header(.snapshot, covered) + batch.bytes).last!
        #expect(error == .corrupt(file: f.path + "/" + snapshotName, offset: lastRecord.offset, reason: corruptReason(error)))
        // Salvage keeps the snapshot's records before the damage and sets every later segment aside.
        let salvaged = try again.recover(salvage: true)
        #expect(salvaged.entries == Array(snapshotEntries.dropLast()))
        var batch2 = JournalBatch()
        batch2.add(RandomEntries.smallSubmit(0))
        again.append(batch2)
        again.close()
        #expect(segmentNumbers(f.path) == [covered + 1], "the later segments were set aside; writing resumed after the snapshot")
        #expect(FileSystem.size(f.path + "/" + snapshotName) == lastRecord.offset)
    }
}

func corruptReason(_ error: JournalError) -> String {
    if case .corrupt(_, _, let reason) = error { return reason }
    return "not corruption: \(error)"
}
