// Decoding side of JournalCodec: a bounds-checked cursor that throws, never traps (format in JournalCodec.swift).

import SchedulerCore

/// A bounds-checked cursor over a payload. `what` names the field in error messages.
struct JournalDecoder {
    private let base: UnsafeRawPointer?
    let count: Int
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress
        count = bytes.count
    }

    var remaining: Int { count - offset }

    private func truncated(_ what: StaticString) -> JournalCodecError {
        JournalCodecError(reason: "truncated: the payload ends inside \(what)", offset: offset)
    }

    @inline(__always)
    mutating func byte(_ what: StaticString) throws(JournalCodecError) -> UInt8 {
        guard offset < count, let base else { throw truncated(what) }
        let b = base.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        return b
    }

    @inline(__always)
    mutating func unsigned(_ what: StaticString) throws(JournalCodecError) -> UInt64 {
        let first = try byte(what)
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            let b = try byte(what)
            if shift == 63 && b > 1 {
                throw JournalCodecError(reason: "varint of \(what) longer than 64 bits", offset: offset - 1)
            }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always)
    mutating func signed(_ what: StaticString) throws(JournalCodecError) -> Int64 {
        let u = try unsigned(what)
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    @inline(__always)
    mutating func int(_ what: StaticString) throws(JournalCodecError) -> Int {
        Int(truncatingIfNeeded: try signed(what))  // Int is 64 bits on every platform we build for
    }

    mutating func bool(_ what: StaticString) throws(JournalCodecError) -> Bool {
        let b = try byte(what)
        guard b <= 1 else { throw JournalCodecError(reason: "\(what): \(b) is not a boolean (0 or 1)", offset: offset - 1) }
        return b == 1
    }

    mutating func qos(_ what: StaticString) throws(JournalCodecError) -> OperationQoS {
        let b = try byte(what)
        guard let q = OperationQoS(rank: Int(b)) else { throw JournalCodecError(reason: "\(what): unknown QoS \(b)", offset: offset - 1) }
        return q
    }

    /// A count of elements each at least `minimumElementSize` bytes long, checked against the bytes left.
    mutating func count(_ what: StaticString, minimumElementSize: Int) throws(JournalCodecError) -> Int {
        let start = offset
        let n = try unsigned(what)
        guard n <= UInt64(remaining / minimumElementSize) else {
            throw JournalCodecError(reason: "\(what): count \(n) does not fit in the \(remaining) bytes left", offset: start)
        }
        return Int(n)
    }

    @inline(__always)
    mutating func raw(_ what: StaticString) throws(JournalCodecError) -> UnsafeRawBufferPointer {
        let start = offset
        let n = try unsigned(what)
        guard n <= UInt64(remaining) else {
            throw JournalCodecError(reason: "\(what): length \(n) exceeds the \(remaining) bytes left", offset: start)
        }
        guard n > 0, let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let slice = UnsafeRawBufferPointer(start: base + offset, count: Int(n))
        offset += Int(n)
        return slice
    }

    @inline(__always)
    mutating func string(_ what: StaticString) throws(JournalCodecError) -> String {
        let start = offset
        let utf8 = try raw(what)
        if utf8.isEmpty { return "" }
        // Not String(validating:as:): it is generic across the stdlib boundary and looks up type metadata
        // on every call (40% of decoding time). ASCII is valid as it is; otherwise decoding repairs
        // invalid input, and a repair always changes the bytes.
        let units = utf8.assumingMemoryBound(to: UInt8.self)
        let s = String(decoding: units, as: UTF8.self)
        if !isASCII(utf8) && !s.utf8.elementsEqual(units) {
            throw JournalCodecError(reason: "\(what): invalid UTF-8", offset: start)
        }
        return s
    }

    @inline(__always)
    private func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        var bits: UInt64 = 0
        while i + 8 <= bytes.count {
            bits |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < bytes.count {
            bits |= UInt64(bytes[i])
            i += 1
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    mutating func strings(_ what: StaticString) throws(JournalCodecError) -> [String] {
        let n = try count(what, minimumElementSize: 1)
        if n == 0 { return [] }
        var list: [String] = []
        list.reserveCapacity(n)
        for _ in 0..<n { list.append(try string(what)) }
        return list
    }

    mutating func bytes(_ what: StaticString) throws(JournalCodecError) -> [UInt8] {
        let r = try raw(what)
        return r.isEmpty ? [] : [UInt8](r)
    }

    mutating func fixed64(_ what: StaticString) throws(JournalCodecError) -> UInt64 {
        guard remaining >= 8, let base else { throw truncated(what) }
        let v = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
        return v
    }

    /// One entry from the cursor on (the caller checks that nothing follows it).
    mutating func entry() throws(JournalCodecError) -> JournalEntry {
        let v = try byte("version")
        guard v == JournalCodec.version else {
            throw JournalCodecError(reason: "payload version \(v) (this build reads version \(JournalCodec.version))", offset: 0)
        }
        let at = try signed("at")
        let tagOffset = offset
        let tagByte = try byte("record tag")
        guard let tag = JournalCodec.Tag(rawValue: tagByte) else {
            throw JournalCodecError(reason: "unknown record tag \(tagByte)", offset: tagOffset)
        }
        let record: JournalRecord
        switch tag {
        case .submitted:
            let run = try string("run")
            let submitter = try string("submitter")
            let opCount = try count("ops", minimumElementSize: JournalCodec.minimumOpSize)
            var ops: [OperationSpec] = []
            ops.reserveCapacity(opCount)
            for _ in 0..<opCount { ops.append(try op()) }
            let queueCount = try count("queues", minimumElementSize: JournalCodec.minimumQueueSize)
            var queues: [QueueSpec] = []
            queues.reserveCapacity(queueCount)
            for _ in 0..<queueCount { queues.append(try queue()) }
            let key: SubmissionKey? = try bool("submission key present") ? try self.key() : nil
            record = .submitted(run: run, submitter: submitter, ops: ops, queues: queues, key: key)
        case .cancelRequested:
            let ids = try strings("cancel ids")
            let cascade = try bool("cascade")
            record = .cancelRequested(ids: ids, cascade: cascade, reason: try string("reason"))
        case .cancelAll:
            let queue = try string("queue")
            record = .cancelAll(queue: queue, reason: try string("reason"))
        case .cancelRun:
            let run = try string("run")
            record = .cancelRun(run: run, reason: try string("reason"))
        case .queueSettings:
            record = .queueSettings(try queue())
        case .priorityChanged:
            let id = try string("id")
            let priority = try int("priority")
            record = .priorityChanged(id: id, priority: priority, inherit: try bool("inherit"))
        case .finished, .finishedWithHistory:
            let id = try string("id")
            let kindOffset = offset
            let kind = try byte("outcome kind")
            let outcome: Outcome
            switch kind {
            case OutcomeKind.succeeded.rawValue: outcome = .succeeded(try bytes("result"))
            case OutcomeKind.failed.rawValue: outcome = .failed(try string("error"))
            case OutcomeKind.cancelled.rawValue: outcome = .cancelled(try string("cancel reason"))
            default: throw JournalCodecError(reason: "unknown outcome kind \(kind)", offset: kindOffset)
            }
            let at = try signed("finished at")
            record = .finished(id: id, outcome: outcome, at: at, history: tag == .finished ? nil : try history(finishedAt: at))
        case .workerSession:
            let id = try fixed64("worker session id")
            let name = try string("worker name")
            record = .workerSession(id: id, name: name, owner: try string("worker owner"))
        case .resultsEvicted:
            record = .resultsEvicted(run: try string("run"))
        case .workerJoined:
            record = .workerJoined(name: try string("worker name"))
        case .workerLeft:
            record = .workerLeft(name: try string("worker name"))
        case .runNumber:
            record = .runNumber(next: try int("next run number"))
        case .evictedRun:
            let name = try string("run")
            let finishedAt = try signed("finished at")
            record = .evictedRun(name: name, finishedAt: finishedAt, evictedAt: try signed("evicted at"))
        case .submissionKey:
            let run = try string("run")
            let key = try self.key()
            record = .submissionKey(run: run, key: key, count: try int("count"))
        }
        return JournalEntry(at: at, record: record)
    }

    mutating func history(finishedAt at: Int64) throws(JournalCodecError) -> OpHistory {
        let worker = try unsigned("history worker")
        let flagsOffset = offset
        let flags = try byte("history flags")
        guard flags & ~JournalCodec.HistoryFlag.all == 0 else {
            throw JournalCodecError(reason: "history flags 0x\(String(flags, radix: 16)) has unknown bits", offset: flagsOffset)
        }
        let ready = flags & JournalCodec.HistoryFlag.ready != 0 ? at &- (try signed("history ready")) : 0
        let dispatched = flags & JournalCodec.HistoryFlag.dispatched != 0 ? at &- (try signed("history dispatched")) : 0
        let started = flags & JournalCodec.HistoryFlag.started != 0 ? at &- (try signed("history started")) : 0
        let attempts = Int(truncatingIfNeeded: try unsigned("history attempts"))
        let errors = flags & JournalCodec.HistoryFlag.errors != 0 ? try strings("history attempt errors") : []
        return OpHistory(worker: worker, readyAt: ready, dispatchedAt: dispatched, startedAt: started, attempts: attempts,
                         attemptErrors: errors)
    }

    mutating func key() throws(JournalCodecError) -> SubmissionKey {
        let key = try string("submission key")
        return SubmissionKey(key: key, digest: try fixed64("submission key digest"))
    }

    mutating func queue() throws(JournalCodecError) -> QueueSpec {
        let name = try string("queue name")
        let maxConcurrent = try int("queue maxConcurrent")
        let qos = try qos("queue qos")
        let flagsOffset = offset
        let flags = try byte("queue flags")
        guard flags & ~JournalCodec.QueueFlag.all == 0 else {
            throw JournalCodecError(reason: "queue flags 0x\(String(flags, radix: 16)) has unknown bits", offset: flagsOffset)
        }
        let fairness = flags & JournalCodec.QueueFlag.fairness != 0 ? try self.fairness() : nil
        return QueueSpec(name: name, maxConcurrent: maxConcurrent, qos: qos,
                         suspended: flags & JournalCodec.QueueFlag.suspended != 0, fairness: fairness)
    }

    mutating func fairness() throws(JournalCodecError) -> QueueFairness {
        let modeByte = try byte("queue share mode")
        guard Int(modeByte) < JournalCodec.shareModes.count else {
            throw JournalCodecError(reason: "unknown share mode \(modeByte)", offset: offset - 1)
        }
        let n = try count("queue weights", minimumElementSize: 2)
        var weights: [String: Int] = [:]
        for _ in 0..<n {
            let share = try string("weight share")
            weights[share] = Int(truncatingIfNeeded: try unsigned("weight"))
        }
        let keyLimit = Int(truncatingIfNeeded: try unsigned("queue keyLimit"))
        let strategyByte = try byte("queue key strategy")
        guard Int(strategyByte) < JournalCodec.keyStrategies.count else {
            throw JournalCodecError(reason: "unknown key strategy \(strategyByte)", offset: offset - 1)
        }
        let flagsOffset = offset
        let flags = try byte("queue fairness flags")
        guard flags & ~JournalCodec.FairnessFlag.all == 0 else {
            throw JournalCodecError(reason: "queue fairness flags 0x\(String(flags, radix: 16)) has unknown bits", offset: flagsOffset)
        }
        let rate: RateLimit? = flags & JournalCodec.FairnessFlag.rate != 0
            ? RateLimit(perSecond: Double(bitPattern: try fixed64("queue rate")),
                        burst: Int(truncatingIfNeeded: try unsigned("queue rate burst")))
            : nil
        let ageing: Int64? = flags & JournalCodec.FairnessFlag.ageing != 0 ? try signed("queue ageing") : nil
        let keyRate: RateLimit? = flags & JournalCodec.FairnessFlag.keyRate != 0
            ? RateLimit(perSecond: Double(bitPattern: try fixed64("queue key rate")),
                        burst: Int(truncatingIfNeeded: try unsigned("queue key rate burst")))
            : nil
        return QueueFairness(share: JournalCodec.shareModes[Int(modeByte)], weights: weights, keyLimit: keyLimit,
                             keyStrategy: JournalCodec.keyStrategies[Int(strategyByte)], rate: rate, ageingMicros: ageing,
                             keyRate: keyRate)
    }

    mutating func op() throws(JournalCodecError) -> OperationSpec {
        let id = try string("op id")
        let flagsOffset = offset
        let flags = try byte("op flags")
        guard flags & ~JournalCodec.OpFlag.all == 0 else {
            throw JournalCodecError(reason: "op flags 0x\(String(flags, radix: 16)) has unknown bits", offset: flagsOffset)
        }
        let name: String? = flags & JournalCodec.OpFlag.name != 0 ? try string("op name") : nil
        let queue = try string("op queue")
        let kind = try string("op kind")
        let payload = try bytes("op payload")
        let after = try strings("op dependencies")
        let priorityOffset = offset
        let rawPriority = try int("op priority")
        guard let priority = OperationPriority(rawValue: rawPriority) else {
            throw JournalCodecError(reason: "op priority: \(rawPriority) is not a priority (-8, -4, 0, 4, 8)", offset: priorityOffset)
        }
        let qos: OperationQoS? = flags & JournalCodec.OpFlag.qos != 0 ? try self.qos("op qos") : nil
        let parts = try int("op parts")
        let policyByte = try byte("op policy")
        guard let policy = JournalCodec.policy(policyByte) else {
            throw JournalCodecError(reason: "unknown dependency policy \(policyByte)", offset: offset - 1)
        }
        let retries = try int("op retries")
        let lossRetries = try int("op lossRetries")
        let timeout: Int64? = flags & JournalCodec.OpFlag.timeout != 0 ? try signed("op timeout") : nil
        let requires = try strings("op requires")
        let retryDelay = try signed("op retryDelay")
        let retryDelayMax = try signed("op retryDelayMax")
        let share: String? = flags & JournalCodec.OpFlag.share != 0 ? try string("op share") : nil
        let concurrencyKey: String? = flags & JournalCodec.OpFlag.concurrencyKey != 0 ? try string("op concurrencyKey") : nil
        return OperationSpec(
            id: id, name: name, queue: queue, kind: kind, payload: payload, after: after, priority: priority,
            qos: qos, parts: parts, policy: policy, retries: retries, lossRetries: lossRetries,
            timeoutMicros: timeout, requires: requires, barrier: flags & JournalCodec.OpFlag.barrier != 0,
            retryDelayMicros: OperationSpec.retryDelayMicros(retryDelay),
            retryDelayMaxMicros: OperationSpec.retryDelayMaxMicros(retryDelayMax), share: share,
            concurrencyKey: concurrencyKey)
    }
}
