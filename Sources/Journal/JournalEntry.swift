import SchedulerCore

/// One journal record as written: what the core decided and when (`at`, wall-clock µs, stamped by the
/// coordinator's loop; replay hands it back to the core as the input's `now`).
public struct JournalEntry: Sendable, Equatable {
    public var at: Int64
    public var record: JournalRecord
    public init(at: Int64, record: JournalRecord) { self.at = at; self.record = record }
}

/// The records of one loop iteration, encoded and framed on the loop thread (so the writer thread only
/// copies bytes), handed to `JournalStore.append` as one unit: a batch becomes durable all at once.
public struct JournalBatch: Sendable {
    /// Framed records, exactly as they go on disk.
    public private(set) var bytes: [UInt8] = []
    /// Records in the batch.
    public private(set) var count = 0

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// Records framed already (a standby appends what its leader wrote, byte for byte).
    public init(framed bytes: [UInt8], count: Int) {
        self.bytes = bytes
        self.count = count
    }

    public var isEmpty: Bool { count == 0 }

    /// Encodes and frames `entry` (frame: u32 length, u32 ~length, u32 CRC-32C, payload).
    public mutating func add(_ entry: JournalEntry) {
        JournalCodec.appendRecord(entry, to: &bytes)
        count += 1
    }

    /// Empties the batch, keeping its buffer for the next iteration.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
    }
}
