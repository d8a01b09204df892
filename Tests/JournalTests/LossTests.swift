import Glibc
@testable import Journal
import SchedulerCore
import Testing

/// Issue 25, finding 4: loss of acknowledged records is told apart from a torn final write (the durable
/// mark and the version 2 segment headers), refused with the segment, offset and count, and salvage
/// says what it gave up. Version 1 journals still recover.
struct LossTests {
    /// One closed journal in a single segment (every batch acknowledged), and its records' spans.
    struct OneSegment {
        let dir = TemporaryDirectory("loss")
        var entries: [JournalEntry] = []
        var segment = 0
        var bytes: [UInt8] = []
        var spans: [(offset: Int, length: Int)] = []

        init(batches: Int = 200, seed: UInt64 = 31) throws {
            var random = RandomEntries(seed: seed)
            let store = try JournalStore(directory: dir.state, options: JournalOptions(segmentBytes: 64 << 20, fsync: false))
            _ = try store.recover()
            entries = appendRandom(store, &random, batches: batches).entries
            store.close()
            segment = segmentNumbers(dir.state).last!
            bytes = readFile(path)
            spans = recordSpans(bytes)
        }

        var path: String { dir.state + "/" + JournalFormat.name(.segment, segment) }
        func recordsBefore(_ offset: Int) -> Int { spans.filter { $0.offset + $0.length <= offset }.count }
    }

    private func lost(_ body: () throws -> JournalRecovery) throws -> JournalLoss? {
        do {
            _ = try body()
            return nil
        } catch let error as JournalError {
            guard case .lost(let loss) = error else { Issue.record("not a loss: \(error)"); return nil }
            #expect(error.description.contains("--salvage") && error.description.contains("not a torn write"), "\(error)")
            return loss
        }
    }

    @Test func aNewestSegmentCutMidFileIsRefusedAsLossNotTakenForATornTail() throws {
        let f = try OneSegment()
        let cut = f.spans[f.spans.count / 2].offset + 7  // inside a record, as `truncate -s` leaves it
        writeFile(f.path, Array(f.bytes[..<cut]))
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let loss = try #require(try lost { try store.recover() })
        let kept = f.recordsBefore(cut)
        #expect(loss.file == f.path)
        #expect(loss.offset == f.spans[kept].offset)
        #expect(loss.records == UInt64(f.spans.count - kept))
        #expect(loss.bytes == f.bytes.count - f.spans[kept].offset)
        #expect(!loss.complete)
        #expect(FileSystem.size(f.path) == cut, "refusing changes nothing")
    }

    @Test func zeroingTheLast32KBFromARecordBoundaryIsLoss() throws {
        let f = try OneSegment(batches: 900)
        let from = try #require(f.spans.first { $0.offset >= f.bytes.count - 32 << 10 }).offset
        writeFile(f.path, Array(f.bytes[..<from]) + [UInt8](repeating: 0, count: f.bytes.count - from))
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let loss = try #require(try lost { try store.recover() })
        #expect(loss.offset == from && loss.records == UInt64(f.spans.count - f.recordsBefore(from)))
        #expect(loss.reason.contains("zeros"), "\(loss.reason)")
    }

    @Test func aNewestSegmentCutBackToItsHeaderIsLoss() throws {
        let f = try OneSegment()
        writeFile(f.path, Array(f.bytes[..<recordsStart(f.bytes)]))
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let loss = try #require(try lost { try store.recover() })
        #expect(loss.offset == recordsStart(f.bytes) && loss.records == UInt64(f.spans.count))
    }

    @Test func anOlderSegmentCutBackToItsHeaderIsLossCountedByTheNextHeader() throws {
        let dir = TemporaryDirectory("loss")
        var random = RandomEntries(seed: 32)
        let store = try JournalStore(directory: dir.state, options: noSync)  // 2 KB segments
        _ = try store.recover()
        _ = appendRandom(store, &random, batches: 60)
        store.close()
        let segments = segmentNumbers(dir.state)
        let middle = segments[1]
        let file = dir.state + "/" + JournalFormat.name(.segment, middle)
        let bytes = readFile(file)
        writeFile(file, Array(bytes[..<recordsStart(bytes)]))
        let again = try JournalStore(directory: dir.state, options: noSync)
        let loss = try #require(try lost { try again.recover() })
        #expect(loss.file == file && loss.records == UInt64(recordSpans(bytes).count))
    }

    @Test func aMissingNewestSegmentIsLoss() throws {
        let dir = TemporaryDirectory("loss")
        var random = RandomEntries(seed: 33)
        let store = try JournalStore(directory: dir.state, options: noSync)
        _ = try store.recover()
        _ = appendRandom(store, &random, batches: 60)
        store.close()
        let newest = segmentNumbers(dir.state).last!
        unlink(dir.state + "/" + JournalFormat.name(.segment, newest))
        let again = try JournalStore(directory: dir.state, options: noSync)
        let loss = try #require(try lost { try again.recover() })
        #expect(loss.reason.contains(JournalFormat.name(.segment, newest)) && loss.reason.contains("missing"))
    }

    @Test func aTornFinalCommitPastTheMarkIsStillATornTail() throws {
        let f = try OneSegment()
        // A commit the writer had begun when the process died: bytes past the mark, never acknowledged.
        var next = JournalBatch()
        next.add(JournalEntry(at: 1, record: .workerJoined(name: "w")))
        writeFile(f.path, f.bytes + Array(next.bytes.prefix(next.bytes.count - 3)))
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == f.entries && recovery.loss == nil)
        #expect(recovery.notes == ["\(JournalFormat.name(.segment, f.segment)): torn tail of \(next.bytes.count - 3) bytes at offset \(f.bytes.count) truncated"])
        store.close()
    }

    @Test func aMarkThatLagsIsNoAlarmAndAnUnreadableOneIsSaid() throws {
        // After a power loss the unsynced mark may point at an earlier commit: what follows it is kept.
        let f = try OneSegment()
        markDurable(f.dir.state, segment: f.segment, offset: f.spans[3].offset)
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == f.entries && recovery.loss == nil && recovery.notes.isEmpty, "\(recovery.notes)")
        store.close()
        // A damaged mark cannot tell a torn write from loss: the start goes on and says so. (A journal of
        // its own: a recovery may open a new segment, and only the newest may end in a torn write.)
        let g = try OneSegment()
        var mark = readFile(g.dir.state + "/" + JournalFormat.markName)
        mark[20] ^= 1
        writeFile(g.dir.state + "/" + JournalFormat.markName, mark)
        writeFile(g.path, Array(readFile(g.path).dropLast(5)))
        let again = try JournalStore(directory: g.dir.state, options: noSync)
        let next = try again.recover()
        #expect(next.entries == Array(g.entries.dropLast()))
        #expect(next.notes.count == 2 && next.notes[0].contains("DURABLE is unreadable (CRC mismatch)"), "\(next.notes)")
        again.close()
    }

    @Test func salvageGoesOnAndSaysWhatWasLost() throws {
        let f = try OneSegment()
        let cut = f.spans[f.spans.count / 2].offset
        writeFile(f.path, Array(f.bytes[..<cut]))
        let store = try JournalStore(directory: f.dir.state, options: noSync)
        let recovery = try store.recover(salvage: true)
        #expect(recovery.entries == Array(f.entries[..<(f.spans.count / 2)]))
        let loss = try #require(recovery.loss)
        #expect(loss.records == UInt64(f.spans.count - f.spans.count / 2) && loss.offset == cut)
        #expect(recovery.notes.contains { $0.hasPrefix("ACKNOWLEDGED RECORDS LOST") && $0.contains("--salvage") }, "\(recovery.notes)")
        store.close()
        // The loss was accepted: the next start neither refuses nor reports it again.
        let again = try JournalStore(directory: f.dir.state, options: noSync)
        let next = try again.recover()
        #expect(next.loss == nil && next.entries == recovery.entries && next.notes.isEmpty, "\(next.notes)")
        again.close()
    }

    @Test func salvageAfterABadCRCListsTheRunsAndOperationsOfTheRecordsGivenUp() throws {
        let dir = TemporaryDirectory("loss")
        let store = try JournalStore(directory: dir.state, options: JournalOptions(segmentBytes: 64 << 20, fsync: false))
        _ = try store.recover()
        func submit(_ run: String, _ ids: [String]) {
            var batch = JournalBatch()
            let ops = ids.map { OperationSpec(id: $0) }
            batch.add(JournalEntry(at: 1, record: .submitted(run: run, submitter: "t", ops: ops, queues: [], key: nil)))
            store.append(batch)
        }
        submit("first", ["a1", "a2"])
        submit("second", ["b1", "b2"])
        var finish = JournalBatch()
        finish.add(JournalEntry(at: 2, record: .finished(id: "a1", outcome: .succeeded([]), at: 2)))
        store.append(finish)
        store.close()
        let path = dir.state + "/" + JournalFormat.name(.segment, segmentNumbers(dir.state).last!)
        var bytes = readFile(path)
        let second = recordSpans(bytes)[1]
        bytes[second.offset + JournalFormat.frameHeaderSize + 3] ^= 0x40
        writeFile(path, bytes)
        // Without salvage: corruption at the record, with what it costs.
        let refused = try JournalStore(directory: dir.state, options: noSync)
        let error = try #require(throws: JournalError.self) { try refused.recover() }
        guard case .corrupt(let file, let offset, let reason) = error else { Issue.record("\(error)"); return }
        #expect(file == path && offset == second.offset && reason.hasSuffix("(2 acknowledged records from here on)"), "\(reason)")
        refused.close()
        let again = try JournalStore(directory: dir.state, options: noSync)
        let recovery = try again.recover(salvage: true)
        let loss = try #require(recovery.loss)
        #expect(loss.offset == second.offset && loss.records == 2)
        // The damaged record itself cannot be read; the one after it can.
        #expect(loss.runs == [] && loss.operations == ["a1"] && !loss.complete, "\(loss)")
        again.close()
    }

    @Test func aVersion1JournalStillRecoversAndItsTornTailIsCutAsBefore() throws {
        let dir = TemporaryDirectory("loss")
        mkdir(dir.state, 0o700)
        var random = RandomEntries(seed: 34)
        var batch = JournalBatch()
        var entries: [JournalEntry] = []
        for _ in 0..<40 {
            let e = random.entry()
            entries.append(e)
            batch.add(e)
        }
        var v1 = JournalFormat.segmentMagic
        JournalFormat.appendLE(1, &v1)
        JournalFormat.appendLE(1, &v1)
        writeFile(dir.state + "/" + JournalFormat.name(.segment, 1), v1 + batch.bytes + [1, 2, 3])
        let store = try JournalStore(directory: dir.state, options: noSync)
        let recovery = try store.recover()
        #expect(recovery.entries == entries)
        #expect(recovery.notes == ["\(JournalFormat.name(.segment, 1)): torn tail of 3 bytes at offset \(16 + batch.bytes.count) truncated"])
        let more = JournalEntry(at: 5, record: .workerLeft(name: "w"))
        var next = JournalBatch()
        next.add(more)
        store.append(next)
        store.close()
        // New segments are version 2; the old one is read as it is.
        let written = readFile(dir.state + "/" + JournalFormat.name(.segment, 2))
        #expect(written.withUnsafeBytes { JournalFormat.loadLE($0, 8) } == 2)
        let again = try JournalStore(directory: dir.state, options: noSync)
        #expect(try again.recover().entries == entries + [more])
        again.close()
    }
}
