// Per-op transition log: one ring shared by all ops, each op chained through `prev` (bounded in total
// by config.storyCapacity and per op by config.storyPerOp). Overwritten entries are detected by age.
// The story is not journalled: replay records nothing and marks the op's chain as ending in a restart
// (`storyRestarted`); its story then starts with entries rebuilt from the columns the journal restores
// (History.swift) and a `restarted` entry, so "lost in a restart" is told apart from "overwritten".

/// A chain's end: the entries before it were lost in a restart.
let storyRestarted: Int32 = -2

struct StoryRaw {
    var stimulus: UInt64
    var at: Int64
    var op: Int32
    var prev: Int32
    var extra: Int32
    var part: UInt16
    var code: StoryCode
}

enum StoryCode: UInt8 {
    case submitted, ready, dispatched, started, partFinished, requeued, cancelRequested, timedOut, finished, priority
    /// A failed attempt waits out its retry delay (extra: the delay in ms).
    case retryDelay
}

public struct StoryEntry: Sendable, Equatable, CustomStringConvertible {
    public enum Event: Sendable, Equatable {
        case submitted
        case ready
        case dispatched(part: Int, worker: UInt64)
        case started(part: Int, attempt: Int)
        case partFinished(part: Int, OutcomeKind)
        case requeued(part: Int, reason: String)
        case retryDelay(part: Int, milliseconds: Int)
        case cancelRequested
        case timedOut(part: Int, attempt: Int)
        case finished(OutcomeKind)
        case priorityChanged(Int)
        /// The coordinator restarted: earlier entries are rebuilt from the journal (submission, the last
        /// ready, dispatch, start and the finish); retries and requeues before it are not recorded.
        case restarted
    }
    public var stimulus: UInt64
    public var at: Int64
    public var event: Event
    public var description: String { "[\(stimulus) @\(at)µs] \(event)" }
}

/// The ring every op's story is kept in: `capacity` entries, the oldest overwritten first; each entry
/// links to its op's previous one (`prev`), so an op's story is a chain from `OpHot.storyHead`.
struct StoryRing {
    private(set) var entries: [StoryRaw] = []
    /// Entries ever appended: the next goes to slot `appended % capacity`.
    private(set) var appended = 0
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity >= 0 && capacity <= Int(Int32.max), "story capacity \(capacity) is not an Int32 slot count")
        self.capacity = capacity
    }

    /// Stores `entry` (over the oldest when full); returns its slot.
    @inline(__always) mutating func append(_ entry: StoryRaw) -> Int32 {
        let slot = capacity & (capacity - 1) == 0 ? appended & (capacity - 1) : appended % capacity
        if entries.count < capacity { entries.append(entry) } else { entries[slot] = entry }
        appended += 1
        return Int32(truncatingIfNeeded: slot)   // < capacity ≤ Int32.max
    }

    /// Age of slot `slot` (0 = newest).
    func age(ofSlot slot: Int) -> Int {
        ((appended - 1 - slot) % capacity + capacity) % capacity
    }

    /// Op `op`'s entries from slot `head` back, newest first, at most `limit`; where the chain ended
    /// (-1: its first entry, `storyRestarted`: a restart) and whether entries are missing (overwritten
    /// by newer ones, or beyond `limit`).
    func chain(of op: Int32, from head: Int32, limit: Int) -> (entries: [StoryRaw], end: Int32, truncated: Bool) {
        var raws: [StoryRaw] = []
        var i = Int(head)
        var lastAge = -1
        while i >= 0 {
            let age = age(ofSlot: i)
            // A slot since taken by another op, or by a newer entry of the same op, ends the chain.
            guard i < entries.count, entries[i].op == op, age > lastAge, appended - age > 0 else { return (raws, Int32(i), true) }
            if raws.count >= limit { return (raws, Int32(i), true) }
            raws.append(entries[i])
            lastAge = age
            i = Int(entries[i].prev)
        }
        return (raws, Int32(i), false)
    }

    /// Compaction renumbered the ops: entries follow their op; those of dropped ops name none (-1),
    /// so no chain reaches them.
    mutating func renumberOps(_ remap: OpRemap) {
        for i in entries.indices { entries[i].op = remap[entries[i].op] }
    }
}

extension Scheduler {
    /// Appends one entry to the op's story; `at` is when it happened (default: this input's time).
    @inline(__always)
    mutating func record(_ op: Int32, _ code: StoryCode, part: Int, extra: Int32, at: Int64? = nil) {
        guard story.capacity > 0 else { return }
        if recovery.replaying { ops.hot[Int(op)].storyHead = storyRestarted; return }
        let entry = StoryRaw(stimulus: stimulus, at: at ?? now, op: op, prev: ops.hot[Int(op)].storyHead, extra: extra,
                             part: UInt16(truncatingIfNeeded: part), code: code)
        ops.hot[Int(op)].storyHead = story.append(entry)
    }

    /// The op's transitions, oldest first; earlier ones may have been overwritten (`truncated`), or lost
    /// in a restart (then the story starts with entries rebuilt from the journal and `.restarted`).
    public func story(_ id: String) -> (entries: [StoryEntry], truncated: Bool)? {
        guard let op = find(id) else { return nil }
        let chain = story.chain(of: op, from: ops.hot[Int(op)].storyHead, limit: config.storyPerOp)
        let entries = chain.entries.reversed().map(decode)
        guard chain.end == storyRestarted && !chain.truncated else { return (entries, chain.truncated) }
        return (rebuiltStory(op) + entries, false)
    }

    /// A replayed op's story up to the restart, from what the journal restored (stimulus 0: no input of
    /// this process caused them).
    private func rebuiltStory(_ op: Int32) -> [StoryEntry] {
        let i = Int(op)
        var out = [StoryEntry(stimulus: 0, at: ops.cold[i].submittedAt, event: .submitted)]
        func add(_ at: Int64, _ event: StoryEntry.Event) {
            if at > 0 && at <= recovery.recoveredAt { out.append(StoryEntry(stimulus: 0, at: at, event: event)) }
        }
        add(ops.cold[i].readyAt, .ready)
        let w = ops.cold[i].lastWorker
        if w.isWorker { add(ops.cold[i].dispatchedAt, .dispatched(part: 0, worker: workers[w].id)) }
        add(ops.cold[i].startedAt, .started(part: 0, attempt: Int(ops.hot[i].attempt)))
        if ops.hot[i].state == .finished { add(ops.cold[i].finishedAt, .finished(ops.hot[i].outcome)) }
        out.append(StoryEntry(stimulus: 0, at: recovery.recoveredAt, event: .restarted))
        return out
    }

    func decode(_ r: StoryRaw) -> StoryEntry {
        let ev: StoryEntry.Event
        switch r.code {
        case .submitted: ev = .submitted
        case .ready: ev = .ready
        case .dispatched: ev = .dispatched(part: Int(r.part), worker: workers[WorkerIndex(raw: r.extra)].id)
        case .started: ev = .started(part: Int(r.part), attempt: Int(r.extra))
        case .partFinished: ev = .partFinished(part: Int(r.part), OutcomeKind(rawValue: UInt8(r.extra)) ?? .none)
        case .requeued: ev = .requeued(part: Int(r.part), reason: RequeueReason(rawValue: r.extra)?.text ?? "?")
        case .retryDelay: ev = .retryDelay(part: Int(r.part), milliseconds: Int(r.extra))
        case .cancelRequested: ev = .cancelRequested
        case .timedOut: ev = .timedOut(part: Int(r.part), attempt: Int(r.extra))
        case .finished: ev = .finished(OutcomeKind(rawValue: UInt8(r.extra)) ?? .none)
        case .priority: ev = .priorityChanged(Int(r.extra))
        }
        return StoryEntry(stimulus: r.stimulus, at: r.at, event: ev)
    }
}
