// Encoding side of JournalCodec (format in JournalCodec.swift): an upper bound of an entry's size, and a
// writer that stores into memory reserved for that bound with no per-byte checks. The two walk the
// fields in the same order; keep them in step (JournalCodec checks the bound after every entry).

import SchedulerCore

struct JournalEncoder {
    private(set) var position: UnsafeMutableRawPointer

    init(_ start: UnsafeMutableRawPointer) { position = start }

    // MARK: Size bound

    /// A varint never takes more.
    private static let varint = 10

    @inline(__always) private static func size(_ s: String) -> Int { varint + s.utf8.count }

    @inline(__always) private static func size(_ list: [String]) -> Int {
        var n = varint
        for s in list { n += size(s) }
        return n
    }

    static func bound(_ entry: JournalEntry) -> Int {
        let head = 1 + varint + 1  // version, at, tag
        switch entry.record {
        case .submitted(let run, let submitter, let ops, let queues, let key):
            var n = head + size(run) + size(submitter) + varint + varint + 1 + (key.map { size($0.key) + 8 } ?? 0)
            for op in ops { n += bound(op) }
            for queue in queues { n += bound(queue) }
            return n
        case .cancelRequested(let ids, _, let reason):
            return head + size(ids) + 1 + size(reason)
        case .cancelAll(let a, let b), .cancelRun(let a, let b):
            return head + size(a) + size(b)
        case .queueSettings(let queue):
            return head + bound(queue)
        case .priorityChanged(let id, _, _):
            return head + size(id) + varint + 1
        case .finished(let id, let outcome, _, let history):
            let result: Int
            switch outcome {
            case .succeeded(let bytes): result = varint + bytes.count
            case .failed(let text), .cancelled(let text): result = size(text)
            }
            return head + size(id) + 1 + result + varint + (history.map { 1 + 5 * varint + size($0.attemptErrors) } ?? 0)
        case .workerSession(_, let name, let owner):
            return head + 8 + size(name) + size(owner)
        case .workerJoined(let name), .workerLeft(let name):
            return head + size(name)
        case .runNumber:
            return head + varint
        case .evictedRun(let name, _, _):
            return head + size(name) + 2 * varint
        case .resultsEvicted(let run):
            return head + size(run)
        case .submissionKey(let run, let key, _):
            return head + size(run) + size(key.key) + 8 + varint
        }
    }

    private static func bound(_ op: OperationSpec) -> Int {
        // flags, qos, policy: 1 byte each; priority, parts, retries, lossRetries, timeout, two delays: varints.
        size(op.id) + (op.givenName.map { size($0) } ?? 0) + size(op.queue) + size(op.kind) + varint + op.payload.count
            + size(op.after) + size(op.requires) + 3 + 7 * varint
            + (op.share.map { size($0) } ?? 0) + (op.concurrencyKey.map { size($0) } ?? 0)
    }

    private static func bound(_ queue: QueueSpec) -> Int {
        var n = size(queue.name) + varint + 2
        if let f = queue.fairness {
            n += 1 + varint + varint + 1 + 1 + 8 + varint + varint + 8 + varint
            for (share, _) in f.weights { n += size(share) + varint }
        }
        return n
    }

    // MARK: Writing

    mutating func entry(_ entry: JournalEntry) {
        byte(JournalCodec.version)
        signed(entry.at)
        switch entry.record {
        case .submitted(let run, let submitter, let ops, let queues, let key):
            tag(.submitted)
            string(run)
            string(submitter)
            unsigned(UInt64(ops.count))
            for op in ops { self.op(op) }
            unsigned(UInt64(queues.count))
            for queue in queues { self.queue(queue) }
            if let key {
                byte(1)
                self.key(key)
            } else {
                byte(0)
            }
        case .cancelRequested(let ids, let cascade, let reason):
            tag(.cancelRequested)
            strings(ids)
            bool(cascade)
            string(reason)
        case .cancelAll(let queue, let reason):
            tag(.cancelAll)
            string(queue)
            string(reason)
        case .cancelRun(let run, let reason):
            tag(.cancelRun)
            string(run)
            string(reason)
        case .queueSettings(let queue):
            tag(.queueSettings)
            self.queue(queue)
        case .priorityChanged(let id, let priority, let inherit):
            tag(.priorityChanged)
            string(id)
            signed(Int64(priority))
            bool(inherit)
        case .finished(let id, let outcome, let at, let history):
            tag(history == nil ? .finished : .finishedWithHistory)
            string(id)
            switch outcome {
            case .succeeded(let result):
                byte(OutcomeKind.succeeded.rawValue)
                bytes(result)
            case .failed(let error):
                byte(OutcomeKind.failed.rawValue)
                string(error)
            case .cancelled(let reason):
                byte(OutcomeKind.cancelled.rawValue)
                string(reason)
            }
            signed(at)
            if let history { self.history(history, finishedAt: at) }
        case .workerSession(let id, let name, let owner):
            tag(.workerSession)
            position.storeBytes(of: id.littleEndian, as: UInt64.self)
            position += 8
            string(name)
            string(owner)
        case .resultsEvicted(let run):
            tag(.resultsEvicted)
            string(run)
        case .workerJoined(let name):
            tag(.workerJoined)
            string(name)
        case .workerLeft(let name):
            tag(.workerLeft)
            string(name)
        case .runNumber(let next):
            tag(.runNumber)
            signed(Int64(next))
        case .evictedRun(let name, let finishedAt, let evictedAt):
            tag(.evictedRun)
            string(name)
            signed(finishedAt)
            signed(evictedAt)
        case .submissionKey(let run, let key, let count):
            tag(.submissionKey)
            string(run)
            self.key(key)
            signed(Int64(count))
        }
    }

    private mutating func op(_ op: OperationSpec) {
        string(op.id)
        var flags: UInt8 = 0
        if op.givenName != nil { flags |= JournalCodec.OpFlag.name }
        if op.qos != nil { flags |= JournalCodec.OpFlag.qos }
        if op.timeoutMicros != nil { flags |= JournalCodec.OpFlag.timeout }
        if op.barrier { flags |= JournalCodec.OpFlag.barrier }
        if op.share != nil { flags |= JournalCodec.OpFlag.share }
        if op.concurrencyKey != nil { flags |= JournalCodec.OpFlag.concurrencyKey }
        byte(flags)
        if let name = op.givenName { string(name) }
        string(op.queue)
        string(op.kind)
        bytes(op.payload)
        strings(op.after)
        signed(Int64(op.priority.rawValue))
        if let qos = op.qos { byte(JournalCodec.code(qos)) }
        signed(Int64(op.parts))
        byte(JournalCodec.code(op.policy))
        signed(Int64(op.retries))
        signed(Int64(op.lossRetries))
        if let timeout = op.timeoutMicros { signed(timeout) }
        strings(op.requires)
        // Always written, nil as the default it stands for (decoded back to nil: OperationSpec.retryDelayMicros).
        signed(op.retryDelayMicros ?? OperationSpec.defaultRetryDelayMicros)
        signed(op.retryDelayMaxMicros ?? OperationSpec.defaultRetryDelayMaxMicros)
        if let share = op.share { string(share) }
        if let key = op.concurrencyKey { string(key) }
    }

    private mutating func history(_ h: OpHistory, finishedAt at: Int64) {
        unsigned(h.worker)
        var flags: UInt8 = 0
        if h.readyAt != 0 { flags |= JournalCodec.HistoryFlag.ready }
        if h.dispatchedAt != 0 { flags |= JournalCodec.HistoryFlag.dispatched }
        if h.startedAt != 0 { flags |= JournalCodec.HistoryFlag.started }
        if !h.attemptErrors.isEmpty { flags |= JournalCodec.HistoryFlag.errors }
        byte(flags)
        if h.readyAt != 0 { signed(at &- h.readyAt) }
        if h.dispatchedAt != 0 { signed(at &- h.dispatchedAt) }
        if h.startedAt != 0 { signed(at &- h.startedAt) }
        unsigned(UInt64(truncatingIfNeeded: h.attempts))
        if !h.attemptErrors.isEmpty { strings(h.attemptErrors) }
    }

    private mutating func queue(_ queue: QueueSpec) {
        string(queue.name)
        signed(Int64(queue.maxConcurrent))
        byte(JournalCodec.code(queue.qos))
        byte((queue.suspended ? JournalCodec.QueueFlag.suspended : 0) | (queue.fairness != nil ? JournalCodec.QueueFlag.fairness : 0))
        if let f = queue.fairness { fairness(f) }
    }

    private mutating func fairness(_ f: QueueFairness) {
        byte(JournalCodec.code(f.share))
        unsigned(UInt64(f.weights.count))
        for (share, weight) in f.weights.sorted(by: { $0.key < $1.key }) {
            string(share)
            unsigned(UInt64(truncatingIfNeeded: weight))
        }
        unsigned(UInt64(truncatingIfNeeded: f.keyLimit))
        byte(JournalCodec.code(f.keyStrategy))
        byte((f.rate != nil ? JournalCodec.FairnessFlag.rate : 0) | (f.ageingMicros != nil ? JournalCodec.FairnessFlag.ageing : 0)
             | (f.keyRate != nil ? JournalCodec.FairnessFlag.keyRate : 0))
        if let rate = f.rate {
            position.storeBytes(of: rate.perSecond.bitPattern.littleEndian, as: UInt64.self)
            position += 8
            unsigned(UInt64(truncatingIfNeeded: rate.burst))
        }
        if let ageing = f.ageingMicros { signed(ageing) }
        if let rate = f.keyRate {
            position.storeBytes(of: rate.perSecond.bitPattern.littleEndian, as: UInt64.self)
            position += 8
            unsigned(UInt64(truncatingIfNeeded: rate.burst))
        }
    }

    private mutating func key(_ key: SubmissionKey) {
        string(key.key)
        position.storeBytes(of: key.digest.littleEndian, as: UInt64.self)
        position += 8
    }

    @inline(__always) private mutating func tag(_ tag: JournalCodec.Tag) { byte(tag.rawValue) }

    @inline(__always) private mutating func bool(_ b: Bool) { byte(b ? 1 : 0) }

    @inline(__always)
    private mutating func byte(_ b: UInt8) {
        position.storeBytes(of: b, as: UInt8.self)
        position += 1
    }

    @inline(__always)
    private mutating func unsigned(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            byte(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        byte(UInt8(v))
    }

    @inline(__always)
    private mutating func signed(_ value: Int64) {
        unsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    @inline(__always)
    private mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        unsigned(UInt64(bytes.count))
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        position.copyMemory(from: base, byteCount: bytes.count)
        position += bytes.count
    }

    @inline(__always)
    private mutating func string(_ s: String) {
        var s = s  // withUTF8 is mutating; a native string is not copied
        s.withUTF8 { raw(UnsafeRawBufferPointer($0)) }
    }

    private mutating func strings(_ list: [String]) {
        unsigned(UInt64(list.count))
        for s in list { string(s) }
    }

    @inline(__always)
    private mutating func bytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw($0) }
    }
}
