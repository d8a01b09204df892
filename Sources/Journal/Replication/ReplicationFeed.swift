import Synchronization

/// The leader's group commits as the journal writer wrote them, kept for the standbys (issue 29;
/// docs/ARCHITECTURE.md "Hot standby"). The writer thread hands each commit's bytes over after its
/// fdatasync (`committed`, one array hand-over and no per-record work); the loop thread reads them
/// (`chunks(from:)`) and sends them on. Only while a standby follows (`setActive`) is anything kept,
/// and never more than `capacityBytes`: a standby further behind than that reads from the segment
/// files instead (`JournalTailReader`), so a slow standby never holds the leader's memory or loop.
public final class ReplicationFeed: @unchecked Sendable {
    /// One group commit: records `first ..< first + records`, framed as on disk.
    public struct Chunk: Sendable, Equatable {
        public let first: UInt64
        public let records: Int
        public let bytes: [UInt8]
        public var end: UInt64 { first + UInt64(records) }
        public init(first: UInt64, records: Int, bytes: [UInt8]) {
            self.first = first
            self.records = records
            self.bytes = bytes
        }
    }

    /// What the feed holds for a standby whose next record is `position`.
    public enum Lookup: Equatable {
        /// Chunks starting exactly at the position, in order (at most `maxBytes`, at least one).
        case chunks([Chunk])
        /// The feed does not start a chunk there: read from disk up to `until` (the next chunk's start,
        /// nil: there is none yet, read up to the durable position).
        case fromDisk(until: UInt64?)
    }

    public let capacityBytes: Int
    private let wake: @Sendable () -> Void
    private let active = Atomic<Bool>(false)
    private struct State {
        var chunks: [Chunk] = []
        var head = 0
        var bytes = 0
    }
    private let state = Mutex(State())

    public init(capacityBytes: Int = 32 << 20, wake: @escaping @Sendable () -> Void = {}) {
        self.capacityBytes = capacityBytes
        self.wake = wake
    }

    /// Keep commits (a standby follows) or not (none does: drop what is kept).
    public func setActive(_ on: Bool) {
        active.store(on, ordering: .releasing)
        if !on { state.withLock { $0 = State() } }
    }

    public var isActive: Bool { active.load(ordering: .acquiring) }

    /// Writer thread: records `first ..< first + records` are durable; `bytes` is what was written.
    func committed(first: UInt64, records: Int, bytes: [UInt8]) {
        guard records > 0, active.load(ordering: .acquiring) else { return }
        state.withLock { s in
            s.chunks.append(Chunk(first: first, records: records, bytes: bytes))
            s.bytes += bytes.count
            while s.bytes > capacityBytes && s.head < s.chunks.count - 1 {
                s.bytes -= s.chunks[s.head].bytes.count
                s.head += 1
            }
            if s.head > 256 && s.head * 2 > s.chunks.count {
                s.chunks.removeFirst(s.head)
                s.head = 0
            }
        }
        wake()
    }

    /// For tests: hand a commit over as the writer would.
    public func testCommitted(first: UInt64, records: Int, bytes: [UInt8]) { committed(first: first, records: records, bytes: bytes) }

    /// Chunks from `position` on, up to `maxBytes` (at least one), or where to read from disk.
    public func chunks(from position: UInt64, maxBytes: Int) -> Lookup {
        state.withLock { s in
            let live = s.chunks[s.head...]
            guard let first = live.first, position >= first.first else {
                return .fromDisk(until: live.first?.first)
            }
            // Binary search for the chunk that starts at `position` (commits are in record order).
            var lo = s.head, hi = s.chunks.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if s.chunks[mid].first < position { lo = mid + 1 } else { hi = mid }
            }
            guard lo < s.chunks.count else { return .fromDisk(until: nil) }
            guard s.chunks[lo].first == position else { return .fromDisk(until: s.chunks[lo].first) }
            var out: [Chunk] = []
            var bytes = 0
            for i in lo..<s.chunks.count {
                if !out.isEmpty && bytes + s.chunks[i].bytes.count > maxBytes { break }
                out.append(s.chunks[i])
                bytes += s.chunks[i].bytes.count
            }
            return .chunks(out)
        }
    }
}
