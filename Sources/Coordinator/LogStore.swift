import Foundation

/// The output of finished attempts (PROTOCOL.md §5.26, `opctl logs`): what workers sent with FINISHED
/// (`stdout_tail`, `stderr_tail` and the counts dropped before them), kept per operation key ("RUN/OP"),
/// attempt and part. A plain value owned by the coordinator's loop, outside the core (logs are not
/// scheduling state) and not journalled: a restarted coordinator has none.
///
/// Bounded by `capacity` bytes in total (output bytes plus a fixed overhead per entry and its key):
/// adding past it evicts the oldest entries first, whichever operation they belong to, and the
/// operations that lost one say so (`evicted`). An operation whose every entry was evicted is
/// remembered as such for a while (the last `emptiedMemory` of them). Evicted runs are left to this
/// bound: their entries can no longer be asked for (the op no longer resolves) and age out.
struct LogStore {
    struct Entry: Equatable, Sendable {
        var attempt: Int
        var part: Int
        var worker: String
        /// "succeeded", "failed" or "cancelled".
        var outcome: String
        var stdout: Data
        var stderr: Data
        var stdoutDropped: UInt64
        var stderrDropped: UInt64
        var finishedAt: Int64

        init(attempt: Int, part: Int = 0, worker: String, outcome: String, stdout: Data = Data(), stderr: Data = Data(),
             stdoutDropped: UInt64 = 0, stderrDropped: UInt64 = 0, finishedAt: Int64) {
            self.attempt = attempt
            self.part = part
            self.worker = worker
            self.outcome = outcome
            self.stdout = stdout
            self.stderr = stderr
            self.stdoutDropped = stdoutDropped
            self.stderrDropped = stderrDropped
            self.finishedAt = finishedAt
        }
    }

    /// What one entry costs beyond its bytes (the entry, its place in the order, dictionary slots).
    static let entryOverhead = 128
    /// Operations remembered as "all their output was evicted".
    static let emptiedMemory = 1024

    /// Total bytes kept at most; 0 keeps nothing.
    let capacity: Int
    /// Bytes kept now, as counted by `cost`.
    private(set) var bytes = 0
    /// Entries kept now.
    private(set) var count = 0
    /// Entries evicted so far.
    private(set) var evictedEntries = 0

    private struct OpLogs {
        var entries: [(seq: UInt64, entry: Entry)] = []
        var evicted = false
    }
    private var ops: [String: OpLogs] = [:]
    /// Insertion order (oldest first from `head`), for eviction.
    private var order: [(op: String, seq: UInt64)] = []
    private var head = 0
    private var nextSeq: UInt64 = 0
    private var emptied: Set<String> = []
    private var emptiedOrder: [String] = []

    init(capacity: Int) { self.capacity = max(0, capacity) }

    static func cost(op: String, _ e: Entry) -> Int {
        entryOverhead + op.utf8.count + e.worker.utf8.count + e.outcome.utf8.count + e.stdout.count + e.stderr.count
    }

    /// Keeps `entry` for `op`, evicting the oldest entries as needed. False when it is not kept: the
    /// store is off, the same attempt and part is kept already (a repeated FINISHED), or the entry alone
    /// is over the capacity (the op then reads as `evicted`).
    @discardableResult
    mutating func add(op: String, _ entry: Entry) -> Bool {
        guard capacity > 0 else { return false }
        if let kept = ops[op], kept.entries.contains(where: { $0.entry.attempt == entry.attempt && $0.entry.part == entry.part }) {
            return false
        }
        let size = Self.cost(op: op, entry)
        guard size <= capacity else {
            if ops[op] != nil { ops[op]!.evicted = true } else { rememberEmptied(op) }
            evictedEntries += 1
            return false
        }
        while bytes + size > capacity, evictOldest() {}
        let seq = nextSeq
        nextSeq += 1
        var logs = ops[op] ?? OpLogs(evicted: emptied.contains(op))
        logs.entries.append((seq, entry))
        ops[op] = logs
        order.append((op, seq))
        bytes += size
        count += 1
        return true
    }

    /// The entries kept for `op` (only `attempt`'s when given), oldest attempt first, parts in order;
    /// `evicted`: some of its entries were dropped by the bound.
    func logs(op: String, attempt: Int? = nil) -> (entries: [Entry], evicted: Bool) {
        guard let logs = ops[op] else { return ([], emptied.contains(op)) }
        let entries = logs.entries.lazy.map(\.entry).filter { attempt == nil || $0.attempt == attempt }
            .sorted { ($0.attempt, $0.part) < ($1.attempt, $1.part) }
        return (entries, logs.evicted)
    }

    /// Drops the oldest entry; false when there is none.
    private mutating func evictOldest() -> Bool {
        guard head < order.count else { return false }
        let (op, seq) = order[head]
        head += 1
        if head >= 1024 && head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
        guard var logs = ops[op], let i = logs.entries.firstIndex(where: { $0.seq == seq }) else { return true }
        bytes -= Self.cost(op: op, logs.entries[i].entry)
        count -= 1
        evictedEntries += 1
        logs.entries.remove(at: i)
        if logs.entries.isEmpty {
            ops[op] = nil
            rememberEmptied(op)
        } else {
            logs.evicted = true
            ops[op] = logs
        }
        return true
    }

    private mutating func rememberEmptied(_ op: String) {
        guard emptied.insert(op).inserted else { return }
        emptiedOrder.append(op)
        if emptiedOrder.count > Self.emptiedMemory {
            emptied.remove(emptiedOrder.removeFirst())
        }
    }
}
