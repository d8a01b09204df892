/// A record that can be batched; `wireSizeBound` is an upper bound of its encoded
/// size inside the batch message (field contents plus at most 6 bytes of tag and
/// length per field), so a batch that fits the budget fits `maxBodySize`.
public protocol BatchRecord {
    var wireSizeBound: Int { get }
}

extension WireDispatchRecord: BatchRecord {
    public var wireSizeBound: Int {
        var n = 6 * 10 + opID.utf8.count + kind.utf8.count + payload.count + name.utf8.count + 3 * 10
        for i in inputs { n += 18 + i.dependencyID.utf8.count + i.result.count }
        return n
    }
}

extension WirePartRef: BatchRecord {
    public var wireSizeBound: Int { 6 * 4 + opID.utf8.count + 20 }
}

extension WireProgressRecord: BatchRecord {
    public var wireSizeBound: Int { 6 * 8 + opID.utf8.count + message.utf8.count + 50 }
}

extension WireFinishedRecord: BatchRecord {
    public var wireSizeBound: Int {
        let outcomeSize: Int = switch outcome {
        case .succeeded(let d)?: d.count
        case .failed(let t)?, .cancelled(let t)?: t.utf8.count
        case nil: 0
        }
        var n = 6 * 5 + opID.utf8.count + outcomeSize + 20
        // (1.5) Output tails and their dropped counts (tag, length or varint each): nothing when absent.
        if !stdoutTail.isEmpty || stdoutDropped > 0 { n += 2 * 6 + 11 + stdoutTail.count }
        if !stderrTail.isEmpty || stderrDropped > 0 { n += 2 * 6 + 11 + stderrTail.count }
        return n
    }
}

extension WireCancelRecord: BatchRecord {
    public var wireSizeBound: Int { 6 * 4 + opID.utf8.count + reason.utf8.count + 10 }
}

extension WireEvent: BatchRecord {
    public var wireSizeBound: Int {
        var n = 6 * 12 + opID.utf8.count + workerID.utf8.count + message.utf8.count + 60
        switch outcome.result {
        case .succeeded(let d)?: n += d.count
        case .failed(let t)?, .cancelled(let t)?: n += t.utf8.count
        case nil: break
        }
        return n
    }
}

extension WireOperation: BatchRecord {
    public var wireSizeBound: Int {
        var n = 6 * 18 + id.utf8.count + name.utf8.count + queue.utf8.count + kind.utf8.count + payload.count + 80
        for a in after { n += 6 + a.utf8.count }
        for r in requires { n += 6 + r.utf8.count }
        return n
    }
}

/// Coalescing: the sender keeps a queue of records and, when it can send, drains
/// as many as fit one message (≤ `WireLimits.maxBatchRecords` and ≤ `maxBytes` of bound size).
/// A single record bigger than `maxBytes` still goes, alone.
public enum Batcher {
    /// Removes and returns the longest prefix of `queue` within the limits (empty only if `queue` is).
    public static func drain<R: BatchRecord>(_ queue: inout [R], maxBytes: Int = WireLimits.batchBodyBudget) -> [R] {
        let n = prefixCount(queue[...], maxBytes: maxBytes)
        if n == queue.count {
            // The usual case: everything fits one message. Hand the buffer over instead of copying it.
            let all = queue
            queue = []
            return all
        }
        let taken = Array(queue[..<n])
        queue.removeFirst(n)
        return taken
    }

    /// Splits `records` into consecutive batches within the limits.
    public static func split<R: BatchRecord>(_ records: [R], maxBytes: Int = WireLimits.batchBodyBudget) -> [[R]] {
        var out: [[R]] = []
        var rest = records[...]
        while !rest.isEmpty {
            let n = prefixCount(rest, maxBytes: maxBytes)
            out.append(Array(rest.prefix(n)))
            rest = rest.dropFirst(n)
        }
        return out
    }

    static func prefixCount<R: BatchRecord>(_ records: ArraySlice<R>, maxBytes: Int) -> Int {
        var n = 0, bytes = 0
        for r in records {
            if n == WireLimits.maxBatchRecords { break }
            let s = r.wireSizeBound
            if n > 0 && bytes + s > maxBytes { break }
            n += 1
            bytes += s
        }
        return n
    }

    /// One message from the front of `queue` (as many records as fit), nil if it is empty.
    /// `sentUs`: the sender's clock, for STARTED and FINISHED records' `at_us` (others ignore it).
    public static func message<R: DrainedRecord>(draining queue: inout [R], sentUs: Int64 = 0) -> Message? {
        if queue.isEmpty { return nil }
        return R.message(drain(&queue), sentUs: sentUs)
    }

    /// SUBMIT messages for `operations` (queue settings go with the first), all into one run: `run`,
    /// or a fresh name made here ("c-" and 10 hex digits) so they can all be sent at once. The first
    /// creates the run and later ones append (with `appendAll`, every one joins it, creating it if
    /// needed: a client adding to its own run over time). Each message is accepted or rejected on its
    /// own: atomicity holds per message only.
    public static func submits(_ operations: [WireOperation], queues: [WireQueueSettings] = [], run: String? = nil,
                               appendAll: Bool = false, submitter: String = "") -> [Message] {
        let name = run ?? uniqueRunName(prefix: "c-")
        return split(operations).enumerated().map { i, ops in
            var m = WireSubmit()
            if i == 0 { m.queues = queues }
            m.operations = ops
            m.run = name
            m.append = appendAll || i > 0
            m.submitter = submitter
            return .submit(m)
        }
    }

    /// `prefix` and 10 random hex digits: a run name no other client picks.
    public static func uniqueRunName(prefix: String) -> String {
        let v = UInt64.random(in: 0..<(1 << 40))
        let hex = String(v, radix: 16)
        return prefix + String(repeating: "0", count: 10 - hex.count) + hex
    }
}

/// A record that goes out in batches drained from a queue: how one batch becomes its message.
public protocol DrainedRecord: BatchRecord {
    static func message(_ records: [Self], sentUs: Int64) -> Message
}

extension WireDispatchRecord: DrainedRecord {
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireDispatch()
        m.records = records
        return .dispatch(m)
    }
}

extension WirePartRef: DrainedRecord {
    /// STARTED.
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireStarted()
        m.parts = records
        m.sentUs = sentUs
        return .started(m)
    }
}

extension WireProgressRecord: DrainedRecord {
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireProgress()
        m.records = records
        return .progress(m)
    }
}

extension WireFinishedRecord: DrainedRecord {
    /// FINISHED, granting one credit back per record: a finished part frees its slot, which keeps the
    /// worker's pipeline full.
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireFinished()
        m.records = records
        m.credit = UInt32(records.count)
        m.sentUs = sentUs
        return .finished(m)
    }
}

extension WireCancelRecord: DrainedRecord {
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireCancel()
        m.records = records
        return .cancel(m)
    }
}

extension WireEvent: DrainedRecord {
    /// EVENT.
    public static func message(_ records: [Self], sentUs: Int64) -> Message {
        var m = WireEvents()
        m.events = records
        return .event(m)
    }
}
