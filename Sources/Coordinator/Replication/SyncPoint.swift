/// Which journal batches a standby in sync holds too (issue 29, `--replication sync`): the loop tells
/// it each batch it appends (its sequence number and record count) and the records standbys hold
/// durably; it says up to which batch sequence a client may be told (`released`), and since when the
/// oldest batch waits for a standby (`waitingSince`) so the leader can stop waiting after a bound.
/// A pure value.
struct SyncPoint {
    private var batches: [(sequence: UInt64, end: UInt64, at: Int64)] = []
    private var head = 0
    /// The journal's record count after the last batch appended.
    private(set) var records: UInt64
    /// The highest batch sequence whose records standbys hold (all before it too).
    private(set) var replicatedSequence: UInt64

    /// `records`: the journal's durable record count now; `sequence`: the last batch sequence appended.
    init(records: UInt64, sequence: UInt64) {
        self.records = records
        replicatedSequence = sequence
    }

    /// `waitsForStandby`: a standby is in sync (the batch is kept until one holds it); else it counts as
    /// released at once and nothing is kept.
    mutating func appended(sequence: UInt64, records count: Int, now: Int64, waitsForStandby: Bool = true) {
        records += UInt64(count)
        if waitsForStandby {
            batches.append((sequence, records, now))
        } else if head == batches.count {
            replicatedSequence = sequence
        } else {
            batches.append((sequence, records, now))   // behind others still waiting: in order
        }
    }

    /// Standbys hold records up to `durable`.
    mutating func replicated(through durable: UInt64) {
        while head < batches.count && batches[head].end <= durable {
            replicatedSequence = batches[head].sequence
            head += 1
        }
        if head == batches.count {
            batches.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > batches.count {
            batches.removeFirst(head)
            head = 0
        }
    }

    /// Nothing waits for a standby any more (none is in sync): every batch appended counts as released.
    mutating func releaseAll() {
        if let last = batches.last { replicatedSequence = last.sequence }
        batches.removeAll(keepingCapacity: true)
        head = 0
    }

    /// When the oldest batch that is durable on the leader (sequence ≤ `leaderDurable`) but not held by
    /// a standby was appended; nil if none waits.
    func waitingSince(leaderDurable: UInt64) -> Int64? {
        guard head < batches.count, batches[head].sequence <= leaderDurable else { return nil }
        return batches[head].at
    }

    /// The sequence up to which clients may be told: durable on the leader and, while a standby is in
    /// sync, held by it too.
    func released(leaderDurable: UInt64, syncing: Bool) -> UInt64 {
        syncing ? min(leaderDurable, replicatedSequence) : leaderDurable
    }
}
