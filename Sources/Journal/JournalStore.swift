// # The coordinator's journal: on-disk format (segments version 2, reading version 1 too)
//
// A state directory (created with mode 0700 if missing) holds:
//
//   LOCK                     flock(LOCK_EX | LOCK_NB) by the opcoord using the directory; holds its pid
//   DURABLE                  the durable mark: where the last acknowledged group commit ended (below)
//   journal-NNNNNNNN.log     segments: records in the order the core made them. NNNNNNNN is the segment
//                            number, 8 decimal digits (more past 99,999,999), increasing by one, no gaps
//   snapshot-NNNNNNNN.snap   a snapshot: records that rebuild the state as of the end of segment N
//   *.tmp                    a segment or snapshot being created (removed at recovery)
//   salvaged-<unix time>/    what a --salvage recovery set aside
//
// Every segment and snapshot starts with a header:
//
//   offset 0   8 bytes   magic "OPQJRNL1" (segment) or "OPQSNAP1" (snapshot)
//   offset 8   u32 LE    format version: segments 2 (1 is still read), snapshots 1
//   offset 12  u32 LE    file number (the N of its name)
//   version 2 segments only (the header is 32 bytes; version 1 and snapshots: 16):
//   offset 16  u64 LE    records the journal had written before this segment (counted on across
//                        segments, snapshots and restarts; recovery checks one segment against the next)
//   offset 24  u64 LE    reserved, 0
//
// followed by records, each framed as:
//
//   offset 0   u32 LE    payload length L
//   offset 4   u32 LE    L XOR 0xFFFFFFFF: a length check apart from the CRC, so a damaged length is not
//                        taken for a torn write
//   offset 8   u32 LE    CRC-32C (Castagnoli) of the payload
//   offset 12  L bytes   payload: one JournalEntry (JournalCodec.swift: version byte 1, time, record)
//
// The durable mark, DURABLE, 40 bytes, rewritten in place (one pwrite, not synced) after every group
// commit's fdatasync and before its batches are acknowledged; written and synced by recovery:
//
//   offset 0   8 bytes   magic "OPQMARK1"
//   offset 8   u32 LE    version, 1
//   offset 12  u32 LE    segment number the commit went to
//   offset 16  u64 LE    offset in that segment where the commit's records end
//   offset 24  u64 LE    records written in all by then (as the segment headers count them)
//   offset 32  u32 LE    CRC-32C of bytes 0..<32
//   offset 36  u32       0
//
// It is written after the data it points past is durable, so it can lag after a power loss (recovery
// then under-reports), never lead. A directory without it (written before version 2) recovers as before.
//
// Writing. A segment or snapshot is created under a .tmp name, its header (a snapshot: all of it) written
// and synced, then renamed into place and the directory synced, so a file with a final name always has
// its header. Records are appended to the newest segment only; a group commit is one write and one
// fdatasync, then the mark, after which its batches are acknowledged. A failed write or fdatasync truncates the segment
// back to its last durable size before the next attempt. The writer moves on to the next segment when
// the current one exceeds `segmentBytes`, and at a snapshot request. After recovery writing starts in a
// new segment (last + 1), so a truncated file is never appended to.
//
// Snapshots. Snapshot N is taken at a segment switch: every record appended before the request is in
// segments ≤ N, every later one in N+1 and on. Once snapshot-N.snap is in place and the directory synced,
// segments ≤ N and older snapshots are deleted.
//
// Recovery replays the newest snapshot that reads back whole, then every segment after it, in order:
//  - The segments after snapshot N must be N+1, N+2, … (1, 2, … without a snapshot).
//  - File by file, record by record: fewer than 12 bytes left, a consistent length pair whose payload
//    runs past the end of the file, or nothing but zero bytes left is a torn tail — a write cut short by
//    a crash before it was acknowledged. It is allowed only at the end of the newest segment, and only
//    past the durable mark: the file is truncated there (ftruncate + fsync) and a note says so
//    ("journal-00000007.log: torn tail of 37 bytes at offset 81920 truncated").
//  - Loss of acknowledged records is not a torn tail: the segment the mark names ends (or its records
//    stop: zeros, a cut record, a damaged one) before the mark's offset; a version 2 segment's header
//    counts more records before it than the segments before it hold (one was cut short or back to its
//    header); the mark names a segment after every one there is. Recovery stops with
//    `JournalError.lost(JournalLoss)`: the segment, the offset where its records end, how many records
//    (and bytes, where known) are missing, and changes nothing.
//  - Anything else is corruption: a bad file header, an inconsistent length pair, a CRC mismatch, a
//    payload that does not decode, a torn tail anywhere else (snapshots included), a missing segment.
//    Recovery stops with `JournalError.corrupt(file:offset:reason:)`, naming the file and the offset of
//    the damaged record (0: header, or the missing file), and changes nothing.
//  - A damaged newest snapshot is passed over (and moved to salvaged-<unix time>/) if the previous
//    snapshot — or, with none, the start of the journal — and every segment after it are still there;
//    otherwise it is corruption.
//  - With salvage, recovery keeps everything before the first damaged record, missing segment or loss,
//    truncates that file there (a copy of the whole file goes to salvaged-<unix time>/), moves every
//    later segment there too, and says exactly what in notes; `JournalRecovery.loss` says what was given
//    up, with the runs and operation ids of the lost records that can still be read. The mark is then
//    rewritten to what was kept, so the next start neither refuses nor reports the loss again.
//  - Leftovers of an interrupted snapshot or segment switch (segments and snapshots the replayed snapshot
//    covers, *.tmp files) are removed.

import Glibc
import Synchronization

public struct JournalOptions: Sendable {
    /// A segment past this size is closed and the next one started.
    public var segmentBytes: Int
    /// While writes fail, how often they are retried (besides on every append).
    public var retryInterval: Duration
    /// fdatasync after every group commit and fsync of files and directories. Off only in tests.
    public var fsync: Bool
    /// Batches nobody waits for (`append(_:urgent: false)`) may wait this long for more before they are
    /// written, so a stream of small passes (a chain of dependent operations) costs one sync per this
    /// interval, not one per pass. An urgent batch, `hurry()`, or 1 MiB queued ends the wait at once.
    public var lazyCommit: Duration

    public init(segmentBytes: Int = 64 << 20, retryInterval: Duration = .seconds(1), fsync: Bool = true,
                lazyCommit: Duration = .milliseconds(5)) {
        self.segmentBytes = segmentBytes
        self.retryInterval = retryInterval
        self.fsync = fsync
        self.lazyCommit = lazyCommit
    }
}

/// The coordinator's write-ahead journal: a checksummed append-only segment log with snapshots, in one
/// state directory that it locks (format above).
///
/// Threads. The coordinator's loop thread calls `init`, `recover` (once, before anything else), `append`,
/// `requestSnapshot` and `close`. Any thread may read `durableSequence`, `health`, `bufferedBytes`,
/// `snapshotInProgress`, `bytesSinceSnapshot`, `lastSnapshotBytes` and call `takeNotes()`. The store runs
/// a writer thread (group commit) and, during a snapshot, a snapshot thread; `wake` is called from them
/// whenever something the loop reads changed (batches durable, health, snapshot finished).
///
/// Dropping the store without `close()` abandons what is not yet durable, as a crash would.
public final class JournalStore: @unchecked Sendable {
    public let directory: String
    public let options: JournalOptions
    private let writer: JournalWriter
    private let lockFD: Int32
    private let closed = Mutex(false)

    /// Creates `directory` if missing and locks it (`JournalError.locked` if another process has it).
    /// `replicationWake`: called by the writer thread after a group commit while `replicationFeed` is
    /// active (a standby follows; issue 29).
    public init(directory: String, options: JournalOptions = JournalOptions(), wake: @escaping @Sendable () -> Void = {},
                replicationWake: @escaping @Sendable () -> Void = {}) throws {
        var path = directory
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directory = path
        self.options = options
        try FileSystem.makeDirectory(path)
        lockFD = try Self.lock(path)
        replicationFeed = ReplicationFeed(wake: replicationWake)
        writer = JournalWriter(directory: path, options: options, feed: replicationFeed, wake: wake)
    }

    /// Group commits as written, for the standbys (ReplicationFeed.swift).
    public let replicationFeed: ReplicationFeed

    /// Records durable in all, counted on across segments, snapshots and restarts (the segment headers'
    /// count): the journal's position, which standbys follow (issue 29). Set by `recover`.
    public var durableRecords: UInt64 { writer.durableRecords.load(ordering: .acquiring) }

    deinit {
        guard !closed.withLock({ $0 }) else { return }
        if writer.shutdown(flush: false, timeout: .seconds(5)).exited { Glibc.close(lockFD) }
    }

    /// flock is held as long as the descriptor is open (and dies with the process, so no stale locks).
    private static func lock(_ directory: String) throws(JournalError) -> Int32 {
        let path = directory + "/LOCK"
        let fd = try FileSystem.open(path, O_RDWR | O_CREAT)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            defer { Glibc.close(fd) }
            if e == EWOULDBLOCK { throw .locked(directory: directory, pid: readPID(fd)) }
            throw .io(path: path, operation: "lock", errno: e)
        }
        let text = Array("\(getpid())\n".utf8)
        let e = ftruncate(fd, 0) == 0 ? text.withUnsafeBytes { FileSystem.writeAll(fd, $0, at: 0) } : errno
        guard e == 0 else {
            Glibc.close(fd)
            throw .io(path: path, operation: "write", errno: e)
        }
        return fd
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer[..<n], as: UTF8.self).trimmingSpaces)
    }

    // MARK: Recovery (loop thread, once, before appending)

    /// Reads the directory back: the entries to replay, in order, and notes on what was repaired.
    /// Throws `JournalError.corrupt` on damage and `JournalError.lost` on missing acknowledged records (see
    /// the format above); `salvage` keeps what is before either and reports the loss in `loss`.
    public func recover(salvage: Bool = false) throws -> JournalRecovery {
        var entries: [JournalEntry] = []
        var report = try recover(salvage: salvage, forEach: { entries.append($0) })
        report.entries = entries
        return report
    }

    /// Like `recover(salvage:)`, handing each entry to `body` as it is decoded instead of collecting them
    /// (a million ops need not be held twice). If it throws, the entries already given were a prefix of a
    /// journal that cannot be used: discard whatever was built from them.
    public func recover(salvage: Bool = false, forEach body: (JournalEntry) throws -> Void) throws -> JournalRecovery {
        precondition(!writer.isStarted, "JournalStore.recover() called twice")
        let result = try Recoverer(directory: directory, salvage: salvage).run(body)
        try writer.start(nextSegment: result.nextSegment, journalBytes: result.journalBytes,
                         lastSnapshotBytes: result.snapshotBytes, records: result.records)
        return result.report
    }

    /// Like `recover(salvage:forEach:)`, with reading and decoding on a second thread while `body`
    /// runs on this one (the coordinator's start: replaying a million operations into the core takes
    /// about as long as decoding them). The same rules; if anything throws, discard what was built.
    public func recover(salvage: Bool = false, pipelined body: (JournalEntry) throws -> Void) throws -> JournalRecovery {
        precondition(!writer.isStarted, "JournalStore.recover() called twice")
        let pipeline = RecoveryPipeline()
        let directory = self.directory
        try pipeline.start { deliver in try Recoverer(directory: directory, salvage: salvage).run(deliver) }
        var failure: Error?
        while let chunk = pipeline.take() {
            guard failure == nil else { continue }
            do {
                for entry in chunk { try body(entry) }
            } catch {
                failure = error
                pipeline.cancel()
            }
        }
        if let failure { throw failure }
        let result = try pipeline.result()
        try writer.start(nextSegment: result.nextSegment, journalBytes: result.journalBytes,
                         lastSnapshotBytes: result.snapshotBytes, records: result.records)
        return result.report
    }

    // MARK: Writing (loop thread)

    /// Queues one loop iteration's records; never waits for the disk. Returns the batch's sequence number
    /// (1, 2, …): the batch is durable once `durableSequence` reaches it.
    ///
    /// `urgent`: someone waits for it (a reply held until it is durable): written at once. Otherwise it may
    /// wait up to `options.lazyCommit` for more (see there).
    @discardableResult
    public func append(_ batch: JournalBatch, urgent: Bool = true) -> UInt64 {
        writer.append(batch.bytes, records: batch.count, urgent: urgent)
    }

    /// Someone now waits for what was appended: write it without waiting for more.
    public func hurry() { writer.hurry() }

    /// How long each group commit's write and fdatasync took since the last call, µs (for /metrics).
    public func takeSyncTimes() -> [Int64] { writer.takeSyncTimes() }

    /// Everything appended up to this sequence number is on disk (fdatasync returned).
    public var durableSequence: UInt64 { writer.durableSequence.load(ordering: .acquiring) }

    public var health: JournalHealth { writer.health }

    /// Bytes appended and not yet durable (grows while writes fail: the loop may push back on clients).
    public var bufferedBytes: Int { writer.bufferedBytes.load(ordering: .relaxed) }

    /// Starts a snapshot at this point of the append order: the current segment N is closed, `produce` is
    /// called on a background thread and what it returns becomes snapshot-N.snap, replacing segments ≤ N.
    /// `produce` must return the state as of this call (capture a copy of the core). Returns false, doing
    /// nothing, while another snapshot is in progress.
    @discardableResult
    public func requestSnapshot(_ produce: @escaping @Sendable () -> [JournalEntry]) -> Bool {
        writer.requestSnapshot(produce)
    }

    public var snapshotInProgress: Bool { writer.snapshotInProgress.load(ordering: .acquiring) }

    /// Journal bytes written since the last snapshot (or since the start of the journal).
    public var bytesSinceSnapshot: Int { writer.bytesSinceSnapshot }

    /// Size of the newest snapshot (0: none).
    public var lastSnapshotBytes: Int { writer.lastSnapshotBytes }

    /// Notes from the writer and snapshot threads since the last call (failures, recoveries, snapshots),
    /// for the caller to log.
    public func takeNotes() -> [String] { writer.takeNotes() }

    /// Writes and syncs what is queued (waiting at most `timeout`), stops the threads and releases the
    /// directory. Returns whether everything appended is durable; if not, a note says what was not.
    /// If the writer thread is stuck in a system call the directory stays locked until the process exits,
    /// so that no other coordinator can start on files still being written.
    @discardableResult
    public func close(timeout: Duration = .seconds(5)) -> Bool {
        guard !closed.withLock({ was in defer { was = true }; return was }) else { return true }
        let (exited, flushed) = writer.shutdown(flush: true, timeout: timeout)
        if exited { Glibc.close(lockFD) }
        return flushed
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
