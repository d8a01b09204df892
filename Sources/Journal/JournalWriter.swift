import Glibc
import Synchronization
import ThreadMonitor

/// Whether the journal's writes succeed. Readable from any thread.
public enum JournalHealth: Sendable, Equatable, CustomStringConvertible {
    case ok
    /// Writes fail (`since`: wall-clock µs of the first failure). Batches are kept in memory, in order,
    /// and retried every `retryInterval` and on every append; the store turns `.ok` by itself when one succeeds.
    case failing(reason: String, since: Int64)

    public var description: String {
        switch self {
        case .ok: return "ok"
        case .failing(let reason, _): return "failing: \(reason)"
        }
    }
}

/// The write side of a `JournalStore`: the queue the loop thread appends to, the writer thread that
/// empties it (group commit), and the snapshot thread.
///
/// Threads: `append`, `requestSnapshot` — the loop thread; `run` and everything it calls — the writer
/// thread (`fd`, `segment`, `unwritten`… are its alone); `writeSnapshot` — the snapshot thread;
/// the published values (`durableSequence`, `health`, …) — any thread.
final class JournalWriter: @unchecked Sendable {
    private enum Item {
        case batch([UInt8], records: Int, sequence: UInt64)
        /// Close the current segment here and snapshot the state as of its end.
        case snapshot(@Sendable () -> [JournalEntry])
    }

    private struct Failure: Error { var reason: String }

    private struct Sizes {
        /// Bytes written to segments since recovery, plus those recovered after the snapshot.
        var journalBytes = 0
        /// `journalBytes` at the end of the segment the last snapshot covers.
        var snapshotPoint = 0
        var lastSnapshotBytes = 0
    }

    /// One write covers at most this much of a backlog, so a long outage is not copied whole once more.
    private static let maxWriteBytes = 8 << 20

    let directory: String
    let options: JournalOptions
    private let wake: @Sendable () -> Void

    // Published.
    let durableSequence = Atomic<UInt64>(0)
    /// Records durable in all (as the segment headers count them): a standby's position (issue 29).
    let durableRecords = Atomic<UInt64>(0)
    /// Each group commit's bytes for the standbys, handed on once durable (ReplicationFeed.swift).
    let feed: ReplicationFeed
    let bufferedBytes = Atomic<Int>(0)
    let snapshotInProgress = Atomic<Bool>(false)
    private let healthState = Mutex<JournalHealth>(.ok)
    private let pendingNotes = Mutex<[String]>([])
    /// How long each group commit's write + fdatasync took (µs), for /metrics; bounded.
    private let syncTimes = Mutex<[Int64]>([])
    static let syncTimesKept = 10_000
    private let sizes = Mutex(Sizes())

    // Shared by the loop, writer and closing threads, under `monitor`.
    private let monitor = Monitor()
    private var queued: [Item] = []
    /// Whether a queued batch is waited for, and when the oldest queued one arrived (lazy commits).
    private var urgent = false
    private var queuedSince: UInt64 = 0
    private var queuedBytes = 0
    private var lastSequence: UInt64 = 0
    private var started = false
    private var stopping = false
    private var abandoned = false
    private var writerExited = false
    private var writerFlushed = false
    private var snapshotActive = false
    private var writerThread: pthread_t?
    private var snapshotThread: pthread_t?

    /// Set once the store is closed: from then on a snapshot still running renames and deletes nothing.
    private let snapshotsClosed = Mutex(false)

    // Writer thread only.
    private var unwritten: [Item] = []
    private var fd: Int32 = -1
    private var segment = 0
    /// Bytes of the current segment that are durable; the file is truncated back to it after a failure.
    private var segmentSize = 0
    private var needsTruncate = false
    private var needsRotation = false
    private var failing = false
    private var retryAt: UInt64 = 0
    private var writeBuffer: [UInt8] = []
    /// Records durable in all segments so far (counted on from what recovery found); the next segment's
    /// header and the durable mark carry it.
    private var recordsWritten: UInt64 = 0
    /// The durable mark's file (`DURABLE`), rewritten after every group commit; -1 if it cannot be opened.
    private var markFD: Int32 = -1

    init(directory: String, options: JournalOptions, feed: ReplicationFeed, wake: @escaping @Sendable () -> Void) {
        self.feed = feed
        self.directory = directory
        self.options = options
        self.wake = wake
    }

    var health: JournalHealth { healthState.withLock { $0 } }
    var bytesSinceSnapshot: Int { sizes.withLock { $0.journalBytes - $0.snapshotPoint } }
    var lastSnapshotBytes: Int { sizes.withLock { $0.lastSnapshotBytes } }
    var isStarted: Bool { monitor.withLock { started } }

    func takeNotes() -> [String] {
        pendingNotes.withLock { notes in
            defer { notes.removeAll() }
            return notes
        }
    }

    private func note(_ text: String) { pendingNotes.withLock { $0.append(text) } }

    // MARK: Loop thread

    /// Starts the writer thread; appends go to segment `nextSegment` (created at once).
    func start(nextSegment: Int, journalBytes: Int, lastSnapshotBytes: Int, records: UInt64) throws(JournalError) {
        segment = nextSegment
        recordsWritten = records
        durableRecords.store(records, ordering: .releasing)
        markFD = Glibc.open(directory + "/" + JournalFormat.markName, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        sizes.withLock { $0 = Sizes(journalBytes: journalBytes, snapshotPoint: 0, lastSnapshotBytes: lastSnapshotBytes) }
        switch startThread(name: "journal-writer", { [self] in run() }) {
        case .success(let thread):
            monitor.withLock {
                started = true
                writerThread = thread
            }
        case .failure(let error):
            throw .io(path: directory, operation: "start the journal writer thread for", errno: error.errno)
        }
    }

    func append(_ bytes: [UInt8], records: Int, urgent: Bool) -> UInt64 {
        bufferedBytes.add(bytes.count, ordering: .relaxed)
        return monitor.withLock {
            precondition(started && !stopping && !abandoned, "JournalStore.append before recover() or after close()")
            lastSequence += 1
            if queued.isEmpty { queuedSince = monotonicNanos(); queuedBytes = 0 }
            queued.append(.batch(bytes, records: records, sequence: lastSequence))
            queuedBytes += bytes.count
            if urgent { self.urgent = true }
            monitor.broadcast()
            return lastSequence
        }
    }

    func hurry() {
        monitor.withLock {
            guard !urgent else { return }
            urgent = true
            monitor.broadcast()
        }
    }

    /// Called with the lock held: whether queued batches go now, or may wait for more (lazy commit).
    private func queuedMayGo() -> Bool {
        if urgent || stopping || failing || queuedBytes >= 1 << 20 || options.lazyCommit == .zero { return true }
        if queued.contains(where: { if case .snapshot = $0 { return true } else { return false } }) { return true }
        let due = queuedSince + options.lazyCommit.nanoseconds
        if monotonicNanos() >= due { return true }
        monitor.wait(until: due)
        return false
    }

    func requestSnapshot(_ produce: @escaping @Sendable () -> [JournalEntry]) -> Bool {
        guard snapshotInProgress.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        monitor.withLock {
            precondition(started && !stopping && !abandoned, "JournalStore.requestSnapshot before recover() or after close()")
            queued.append(.snapshot(produce))
            monitor.broadcast()
        }
        return true
    }

    // MARK: Writer thread

    /// A segment not created yet is work only while running: closing with nothing queued needs none.
    private var hasWork: Bool { !unwritten.isEmpty || needsTruncate || (fd < 0 && !stopping) }

    private func run() {
        while true {
            var taken: [Item] = []
            var exit = false
            monitor.withLock {
                while true {
                    if abandoned { exit = true; return }
                    // New batches: write them (and retry, if failing), unless nobody waits for them yet.
                    if !queued.isEmpty {
                        if queuedMayGo() { break }
                        continue
                    }
                    if failing {
                        if monotonicNanos() >= retryAt { break }
                        monitor.wait(until: retryAt)
                    } else if hasWork {
                        break
                    } else if stopping {
                        writerFlushed = true
                        exit = true
                        return
                    } else {
                        monitor.wait()
                    }
                }
                swap(&taken, &queued)
                urgent = false
            }
            if exit { break }
            unwritten.append(contentsOf: taken)
            process()
        }
        if fd >= 0 { close(fd) }
        fd = -1
        if markFD >= 0 { close(markFD) }
        markFD = -1
        monitor.withLock {
            writerExited = true
            monitor.broadcast()
        }
    }

    /// Writes everything unwritten, in order: one write and one fdatasync per run of batches (the group
    /// commit), a segment switch where a snapshot was requested or the segment is full. Stops at the first
    /// failure, leaving the rest for the retry.
    private func process() {
        do throws(Failure) {
            if needsTruncate { try truncateSegment() }
            if fd < 0 { try openSegment(segment) }
            while !unwritten.isEmpty {
                if case .snapshot(let produce) = unwritten[0] {
                    let covered = segment
                    let point = sizes.withLock { $0.journalBytes }
                    try rotate()
                    unwritten.removeFirst()
                    startSnapshot(number: covered, produce: produce, point: point)
                    continue
                }
                if needsRotation { try rotate() }
                writeBuffer.removeAll(keepingCapacity: true)
                var count = 0
                var records = 0
                var last: UInt64 = 0
                while count < unwritten.count, case .batch(let bytes, let batchRecords, let sequence) = unwritten[count] {
                    // A group stops where the segment is full (the next goes to a new one) or at the cap.
                    if count > 0 && (segmentSize + writeBuffer.count >= options.segmentBytes
                                     || writeBuffer.count + bytes.count > Self.maxWriteBytes) { break }
                    writeBuffer.append(contentsOf: bytes)
                    last = sequence
                    records += batchRecords
                    count += 1
                }
                if !writeBuffer.isEmpty {
                    try writeAndSync()
                    // Durable: say so in the mark before anyone is told (recovery then knows that a
                    // shorter segment lost acknowledged records). Advisory: a failure only weakens that.
                    recordsWritten += UInt64(records)
                    if markFD >= 0 { _ = DurableMark(segment: segment, offset: segmentSize, records: recordsWritten).write(to: markFD) }
                    durableRecords.store(recordsWritten, ordering: .releasing)
                    // The standbys get the commit as written (a copy only while one follows).
                    feed.committed(first: recordsWritten - UInt64(records), records: records, bytes: writeBuffer)
                }
                unwritten.removeFirst(count)
                let written = writeBuffer.count
                sizes.withLock { $0.journalBytes += written }
                bufferedBytes.subtract(written, ordering: .relaxed)
                durableSequence.store(last, ordering: .releasing)
                wake()
                if segmentSize >= options.segmentBytes { needsRotation = true }
            }
            if writeBuffer.capacity > Self.maxWriteBytes { writeBuffer = [] }  // after a backlog, give it back
            if failing {
                failing = false
                let since = healthState.withLock { state -> Int64 in
                    defer { state = .ok }
                    if case .failing(_, let since) = state { return since }
                    return wallMicros()
                }
                note("journal writes succeed again after \((wallMicros() - since) / 1000) ms; everything buffered is durable")
                wake()
            }
        } catch {
            retryAt = monotonicNanos() + options.retryInterval.nanoseconds
            let first = !failing
            failing = true
            healthState.withLock { state in
                if case .failing(_, let since) = state {
                    state = .failing(reason: error.reason, since: since)
                } else {
                    state = .failing(reason: error.reason, since: wallMicros())
                }
            }
            if first {
                note("journal writes failing: \(error.reason); batches are kept in memory and retried every \(options.retryInterval)")
                wake()
            }
        }
    }

    private var segmentPath: String { directory + "/" + JournalFormat.name(.segment, segment) }

    private func writeAndSync() throws(Failure) {
        let started = monotonicMicros()
        let e = writeBuffer.withUnsafeBytes { FileSystem.writeAll(fd, $0, at: segmentSize) }
        if e != 0 { try failed("write", e) }
        if options.fsync && fdatasync(fd) != 0 { try failed("fdatasync", errno) }
        segmentSize += writeBuffer.count
        let took = monotonicMicros() - started
        syncTimes.withLock { if $0.count < Self.syncTimesKept { $0.append(took) } }
    }

    /// The group commits' durations since the last call (µs).
    func takeSyncTimes() -> [Int64] { syncTimes.withLock { t in defer { t.removeAll() }; return t } }

    private func monotonicMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// After a failed write or sync nothing past the durable size can be trusted (Linux may drop the
    /// dirty pages of a failed fsync and report success next time): cut the file back and write again.
    private func failed(_ operation: String, _ e: Int32) throws(Failure) -> Never {
        needsTruncate = true
        try? truncateSegment()
        throw Failure(reason: "\(operation) \(segmentPath): \(errnoText(e))")
    }

    private func truncateSegment() throws(Failure) {
        guard ftruncate(fd, off_t(segmentSize)) == 0 else {
            throw Failure(reason: "truncate \(segmentPath) back to \(segmentSize) bytes: \(errnoText(errno))")
        }
        if options.fsync && fdatasync(fd) != 0 {
            throw Failure(reason: "fdatasync \(segmentPath): \(errnoText(errno))")
        }
        needsTruncate = false
    }

    /// Creates segment `n` atomically (header written and synced under a temporary name, then renamed),
    /// so a segment file always has its header, and makes it the current one.
    private func openSegment(_ n: Int) throws(Failure) {
        let path = directory + "/" + JournalFormat.name(.segment, n)
        let tmp = path + ".tmp"
        if FileSystem.exists(path) { throw Failure(reason: "\(path) already exists; refusing to overwrite it") }
        let newFD = Glibc.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard newFD >= 0 else { throw Failure(reason: "create \(tmp): \(errnoText(errno))") }
        var created = tmp
        var done = false
        defer {
            if !done {
                close(newFD)
                unlink(created)
            }
        }
        let header = JournalFormat.header(.segment, n, recordsBefore: recordsWritten)
        let e = header.withUnsafeBytes { FileSystem.writeAll(newFD, $0, at: 0) }
        guard e == 0 else { throw Failure(reason: "write \(tmp): \(errnoText(e))") }
        if options.fsync && fdatasync(newFD) != 0 { throw Failure(reason: "fdatasync \(tmp): \(errnoText(errno))") }
        guard rename(tmp, path) == 0 else { throw Failure(reason: "rename \(tmp): \(errnoText(errno))") }
        created = path
        if options.fsync {
            let e = FileSystem.syncDirectory(directory)
            guard e == 0 else { throw Failure(reason: "fsync directory \(directory): \(errnoText(e))") }
        }
        done = true
        fd = newFD
        segment = n
        segmentSize = header.count
        sizes.withLock { $0.journalBytes += header.count }
    }

    /// Closes the current segment (everything in it is durable) and opens the next.
    private func rotate() throws(Failure) {
        let old = fd
        try openSegment(segment + 1)
        close(old)
        needsRotation = false
    }

    // MARK: Snapshot thread

    private func startSnapshot(number: Int, produce: @escaping @Sendable () -> [JournalEntry], point: Int) {
        let previous = monitor.withLock { () -> pthread_t? in
            defer { snapshotThread = nil }
            return snapshotThread
        }
        // It has finished (one snapshot at a time) but may still be clearing `snapshotActive`: join first.
        if let previous { pthread_join(previous, nil) }
        monitor.withLock { snapshotActive = true }
        let finished: @Sendable () -> Void = { [self] in
            snapshotInProgress.store(false, ordering: .releasing)
            monitor.withLock {
                snapshotActive = false
                monitor.broadcast()
            }
            wake()
        }
        switch startThread(name: "journal-snap", { [self] in
            writeSnapshot(number: number, produce: produce, point: point)
            finished()
        }) {
        case .success(let thread):
            monitor.withLock { snapshotThread = thread }
        case .failure(let error):
            note("snapshot \(JournalFormat.name(.snapshot, number)) not written: cannot start its thread: \(errnoText(error.errno)); the journal segments stay, the next request tries again")
            finished()
        }
    }

    /// Writes `snapshot-N.snap.tmp`, syncs it, renames it into place, syncs the directory, then deletes
    /// what it replaces: segments ≤ N and older snapshots. A failure leaves the segments (recovery does not
    /// need the snapshot) and is reported as a note.
    private func writeSnapshot(number: Int, produce: @Sendable () -> [JournalEntry], point: Int) {
        let clock = ContinuousClock()
        let started = clock.now
        let name = JournalFormat.name(.snapshot, number)
        let path = directory + "/" + name
        let tmp = path + ".tmp"
        let entries = produce()
        let fd = Glibc.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            note("snapshot \(name) not written: create \(tmp): \(errnoText(errno)); the journal segments stay, the next request tries again")
            return
        }
        var size = 0
        var failure: String?
        var buffer = JournalFormat.header(.snapshot, number)
        buffer.reserveCapacity(1 << 20)
        func flush() {
            guard failure == nil, !buffer.isEmpty else { return }
            let e = buffer.withUnsafeBytes { FileSystem.writeAll(fd, $0, at: size) }
            if e != 0 { failure = "write \(tmp): \(errnoText(e))" }
            size += buffer.count
            buffer.removeAll(keepingCapacity: true)
        }
        for entry in entries where failure == nil {
            JournalCodec.appendRecord(entry, to: &buffer)
            if buffer.count >= 1 << 20 { flush() }
        }
        flush()
        if failure == nil && options.fsync && fdatasync(fd) != 0 { failure = "fdatasync \(tmp): \(errnoText(errno))" }
        close(fd)
        if let failure {
            unlink(tmp)
            note("snapshot \(name) not written: \(failure); the journal segments stay, the next request tries again")
            return
        }
        // Commit under the lock `close()` takes, so nothing here happens after the directory is released.
        let outcome = snapshotsClosed.withLock { closed -> String in
            if closed {
                unlink(tmp)
                return "snapshot \(name) abandoned: the store was closed while it was written"
            }
            guard rename(tmp, path) == 0 else {
                let text = errnoText(errno)
                unlink(tmp)
                return "snapshot \(name) not written: rename \(tmp): \(text); the journal segments stay, the next request tries again"
            }
            if options.fsync { FileSystem.syncDirectory(directory) }
            let removed = removeCovered(by: number)
            sizes.withLock {
                $0.snapshotPoint = point
                $0.lastSnapshotBytes = size
            }
            let ms = (clock.now - started).components
            let elapsed = ms.seconds * 1000 + ms.attoseconds / 1_000_000_000_000_000
            return "snapshot \(name) written: \(entries.count) entries, \(size) bytes in \(elapsed) ms; removed \(removed)"
        }
        note(outcome)
    }

    /// Deletes segments ≤ n and snapshots < n; says what it removed.
    private func removeCovered(by n: Int) -> String {
        guard let names = try? FileSystem.list(directory) else { return "nothing (cannot list \(directory))" }
        var removed: [String] = []
        for name in names {
            let covered = (JournalFormat.number(of: name, .segment).map { $0 <= n } ?? false)
                || (JournalFormat.number(of: name, .snapshot).map { $0 < n } ?? false)
            if covered && unlink(directory + "/" + name) == 0 { removed.append(name) }
        }
        if options.fsync && !removed.isEmpty { FileSystem.syncDirectory(directory) }
        removed.sort()
        switch removed.count {
        case 0: return "nothing"
        case 1...3: return removed.joined(separator: ", ")
        default: return "\(removed.count) files (\(removed.first!) … \(removed.last!))"
        }
    }

    // MARK: Shutdown (any thread but the writer's)

    /// Stops the threads. `flush`: let the writer write everything queued first (until `timeout`);
    /// otherwise (the store was dropped without `close()`) stop at once, as a crash would.
    /// Returns whether the writer thread has exited (only then may the directory's lock be released)
    /// and whether everything appended is durable.
    func shutdown(flush: Bool, timeout: Duration) -> (exited: Bool, flushed: Bool) {
        let deadline = monotonicNanos() + timeout.nanoseconds
        let (exited, flushed, snapshotDone, writer, snapshot, appended) = monitor.withLock {
            if flush { stopping = true } else { abandoned = true }
            monitor.broadcast()
            while started && !writerExited && monotonicNanos() < deadline { monitor.wait(until: deadline) }
            if started && !writerExited {
                abandoned = true  // it is stuck in a write or sync, or failing: give up on what is queued
                monitor.broadcast()
                let grace = monotonicNanos() + 200_000_000
                while !writerExited && monotonicNanos() < grace { monitor.wait(until: grace) }
            }
            // A snapshot under way is worth finishing on close (the next start reads less); not on a drop.
            while flush && snapshotActive && monotonicNanos() < deadline { monitor.wait(until: deadline) }
            return (!started || writerExited, !started || writerFlushed, !snapshotActive, writerThread, snapshotThread, lastSequence)
        }
        snapshotsClosed.withLock { $0 = true }
        for (thread, done) in [(writer, exited), (snapshot, snapshotDone)] {
            guard let thread else { continue }
            if done { pthread_join(thread, nil) } else { pthread_detach(thread) }
        }
        if !flushed {
            let pending = bufferedBytes.load(ordering: .relaxed)
            note("journal closed with \(appended - durableSequence.load(ordering: .acquiring)) batches (\(pending) bytes) not durable")
        }
        return (exited, flushed)
    }
}
