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

extension Scheduler {
    /// Appends one entry to the op's story; `at` is when it happened (default: this input's time).
    @inline(__always)
    mutating func record(_ op: Int32, _ code: StoryCode, part: Int, extra: Int32, at: Int64? = nil) {
        let cap = config.storyCapacity
        guard cap > 0 else { return }
        if replaying { ops.hot[Int(op)].storyHead = storyRestarted; return }
        let entry = StoryRaw(stimulus: stimulus, at: at ?? now, op: op, prev: ops.hot[Int(op)].storyHead, extra: extra,
                             part: UInt16(truncatingIfNeeded: part), code: code)
        let idx = cap & (cap - 1) == 0 ? storyPos & (cap - 1) : storyPos % cap
        if story.count < cap { story.append(entry) } else { story[idx] = entry }
        ops.hot[Int(op)].storyHead = Int32(idx)
        storyPos += 1
    }

    /// Age of ring slot i (0 = newest).
    func storyAge(_ i: Int) -> Int {
        let cap = config.storyCapacity
        return ((storyPos - 1 - i) % cap + cap) % cap
    }

    /// The op's transitions, oldest first; earlier ones may have been overwritten (`truncated`), or lost
    /// in a restart (then the story starts with entries rebuilt from the journal and `.restarted`).
    public func story(_ id: String) -> (entries: [StoryEntry], truncated: Bool)? {
        guard let op = find(id) else { return nil }
        var raws: [StoryRaw] = []
        var i = Int(ops.hot[Int(op)].storyHead)
        var lastAge = -1
        var truncated = false
        while i >= 0 {
            let age = storyAge(i)
            guard i < story.count, story[i].op == op, age > lastAge, storyPos - age > 0 else { truncated = true; break }
            if raws.count >= config.storyPerOp { truncated = true; break }
            raws.append(story[i])
            lastAge = age
            i = Int(story[i].prev)
        }
        let entries = raws.reversed().map(decode)
        guard i == Int(storyRestarted) && !truncated else { return (entries, truncated) }
        return (rebuiltStory(op) + entries, false)
    }

    /// A replayed op's story up to the restart, from what the journal restored (stimulus 0: no input of
    /// this process caused them).
    private func rebuiltStory(_ op: Int32) -> [StoryEntry] {
        let i = Int(op)
        var out = [StoryEntry(stimulus: 0, at: ops.cold[i].submittedAt, event: .submitted)]
        func add(_ at: Int64, _ event: StoryEntry.Event) {
            if at > 0 && at <= recoveredAt { out.append(StoryEntry(stimulus: 0, at: at, event: event)) }
        }
        add(ops.cold[i].readyAt, .ready)
        let w = ops.cold[i].lastWorker
        if w.isWorker { add(ops.cold[i].dispatchedAt, .dispatched(part: 0, worker: workers[w].id)) }
        add(ops.cold[i].startedAt, .started(part: 0, attempt: Int(ops.hot[i].attempt)))
        if ops.hot[i].state == .finished { add(ops.cold[i].finishedAt, .finished(ops.hot[i].outcome)) }
        out.append(StoryEntry(stimulus: 0, at: recoveredAt, event: .restarted))
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
