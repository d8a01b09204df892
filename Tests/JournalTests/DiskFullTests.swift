import Glibc
@testable import Journal
import SchedulerCore
import Testing

/// A full disk on a real (tiny) file system: appends go on being accepted, nothing past the failure is
/// acknowledged, and once there is space again everything is written, in order, by itself.
struct DiskFullTests {
    @Test func aFullDiskIsRetriedUntilThereIsSpaceAndNothingIsLostOrReordered() throws {
        guard getuid() == 0 else { try Test.cancel("skipped: mounting a tmpfs needs root") }
        let dir = TemporaryDirectory("diskfull")
        let mountPoint = dir.path + "/mnt"
        mkdir(mountPoint, 0o700)
        guard "size=256k,mode=0700".withCString({ mount("tmpfs", mountPoint, "tmpfs", 0, $0) }) == 0 else {
            try Test.cancel("skipped: cannot mount a tmpfs here (\(String(cString: strerror(errno))))")
        }
        defer {
            umount2(mountPoint, Int32(MNT_DETACH))
            removeTree(dir.path)
        }
        let state = mountPoint + "/state"
        let interval = Duration.milliseconds(100)
        var random = RandomEntries(seed: 77)
        var expected: [JournalEntry] = []
        var entriesThrough: [UInt64: Int] = [0: 0]  // batch sequence → entries up to and including it

        func appendOne(_ store: JournalStore) -> UInt64 {
            var batch = JournalBatch()
            for _ in 0..<3 {
                // ~1 KB entries: a page fills in a few batches.
                var e = random.entry()
                e.record = .finished(id: "op-\(expected.count)", outcome: .succeeded([UInt8](repeating: 7, count: 1000)), at: e.at)
                expected.append(e)
                batch.add(e)
            }
            let seq = store.append(batch)
            entriesThrough[seq] = expected.count
            return seq
        }

        let store = try JournalStore(directory: state, options: JournalOptions(segmentBytes: 1 << 20, retryInterval: interval))
        _ = try store.recover()
        var last: UInt64 = 0
        for _ in 0..<3 { last = appendOne(store) }
        #expect(waitUntil { store.durableSequence == last })

        // Fill the file system.
        let filler = mountPoint + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        try #require(fd >= 0)
        let chunk = [UInt8](repeating: 1, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)

        // Appends are accepted; soon a write fails (the segment's last page had a little room).
        var tries = 0
        while store.health == .ok && tries < 200 {
            last = appendOne(store)
            _ = waitUntil(2) { store.durableSequence == last || store.health != .ok }
            tries += 1
        }
        guard case .failing(let reason, let since) = store.health else {
            Issue.record("writes never failed on a full disk")
            return
        }
        #expect(reason.contains("No space left on device"), "\(reason)")
        #expect(since > 0)
        let durable = store.durableSequence
        #expect(durable < last)
        for _ in 0..<20 { last = appendOne(store) }  // still accepted while failing
        #expect(store.bufferedBytes > 0)

        // Nothing past the failure is durable, and the segment holds exactly the durable batches (it
        // was truncated back). Polled: a retry may be between its write and its truncation.
        #expect(waitUntil { onDiskEntries(state) == Array(expected[..<entriesThrough[durable]!]) })
        #expect(store.durableSequence == durable)
        #expect(store.health != .ok)

        // Space again: within a few retry intervals, by itself, everything is written in order.
        unlink(filler)
        #expect(waitUntil(20 * 0.1) { store.health == .ok && store.durableSequence == last })
        let notes = store.takeNotes()
        #expect(notes.contains { $0.contains("journal writes failing") } && notes.contains { $0.contains("succeed again") }, "\(notes)")
        #expect(store.close())
        #expect(store.bufferedBytes == 0)

        let reopened = try JournalStore(directory: state)
        #expect(try reopened.recover().entries == expected)
        reopened.close()
    }
}

/// Every entry in the directory's segments, read straight from the files (nil if one is not clean).
func onDiskEntries(_ directory: String) -> [JournalEntry]? {
    var entries: [JournalEntry] = []
    for n in segmentNumbers(directory) {
        let bytes = readFile(directory + "/" + JournalFormat.name(.segment, n))
        let end = bytes.withUnsafeBytes { raw in
            JournalFormat.scan(raw, from: recordsStart(raw)) { _, payload in
                guard let e = try? JournalCodec.decode(payload) else { return "undecodable" }
                entries.append(e)
                return nil
            }
        }
        guard end == .clean else { return nil }
    }
    return entries
}
