import Foundation
import OpModel

/// Field rules beyond what protobuf can express (docs/PROTOCOL.md, "Field rules").
/// `WireCodec.decode` runs this on every message, so decoded messages are valid;
/// senders may call it before encoding. It checks shape only (required fields,
/// ranges, sizes); meaning (unknown ids, cycles, duplicates) is the coordinator's job.
extension WireCodec {
    public static func validate(_ message: Message) throws(WireError) {
        let c = FieldChecks(command: message.command)
        switch message {
        case .hello(let m):
            try c.equal(m.protocolVersion, UInt32(WireVersion.current), "protocol_version")
            try c.id(m.name, "name")
            try c.positive(m.slots, "slots")
            try c.ids(m.tags, "tags")
            try c.nonEmpty(m.kinds.count, "kinds")
            try c.ids(m.kinds, "kinds")
            try c.count(m.kinds.count, WireLimits.maxWorkerKinds, "kinds")
            try c.count(m.tags.count, WireLimits.maxWorkerTags, "tags")
            try c.label(m.name, "name")
            for (i, k) in m.kinds.enumerated() { try c.label(k, "kinds[\(i)]") }
            for (i, t) in m.tags.enumerated() { try c.label(t, "tags[\(i)]") }
            // Both lists may be empty (a first registration).
            try c.count(m.running.count, WireLimits.maxBatchRecords, "running")
            for (i, r) in m.running.enumerated() { try c.part(r.opID, r.part, r.attempt, "running[\(i)]") }
            try c.count(m.finished.count, WireLimits.maxBatchRecords, "finished")
            try c.finishedRecords(m.finished, "finished")
        case .welcome(let m):
            try c.id(m.workerID, "worker_id")
            try c.positive(m.heartbeatIntervalMs, "heartbeat_interval_ms")
            try c.positive(m.liveness, "liveness")
        case .reject(let m):
            try c.nonEmpty(m.reason.utf8.count, "reason")
            try c.text(m.reason, "reason")
            try c.known(m.code, "code")
        case .credit(let m):
            try c.positive(m.credit, "credit")
            try c.atMost(m.credit, WireLimits.maxCredit, "credit")
        case .dispatch(let m):
            try c.batch(m.records.count, "records")
            // Borrow the records through a buffer: iterating by value would copy (retain) every field.
            try m.records.withUnsafeBufferPointer { (records) throws(WireError) in
                for i in records.indices {
                    try c.part(records[i].opID, records[i].part, records[i].attempt, "records[\(i)]")
                    try c.id(records[i].kind, "records[\(i)].kind")
                    try c.bytes(records[i].payload.count, WireLimits.maxPayloadSize, "records[\(i)].payload")
                    try c.priority(records[i].priority, "records[\(i)].priority")
                    try c.qos(records[i].qos, "records[\(i)].qos")
                    try c.optionalID(records[i].name, "records[\(i)].name")
                    if records[i].inputs.isEmpty { continue }
                    for (j, input) in records[i].inputs.enumerated() {
                        try c.id(input.dependencyID, "records[\(i)].inputs[\(j)].dependency_id")
                        try c.bytes(input.result.count, WireLimits.maxResultSize, "records[\(i)].inputs[\(j)].result")
                    }
                }
            }
        case .started(let m):
            try c.batch(m.parts.count, "parts")
            for (i, r) in m.parts.enumerated() { try c.part(r.opID, r.part, r.attempt, "parts[\(i)]") }
        case .progress(let m):
            try c.batch(m.records.count, "records")
            for (i, r) in m.records.enumerated() {
                try c.part(r.opID, r.part, r.attempt, "records[\(i)]")
                // Checked even when done/total is used: a NaN would make the record unequal to itself.
                guard r.fraction >= 0, r.fraction <= 1 else {  // also rejects NaN
                    throw .fieldOutOfRange(c.command, field: "records[\(i)].fraction", detail: "\(r.fraction) is not in [0, 1]")
                }
                if r.done > r.total {
                    throw .fieldOutOfRange(c.command, field: "records[\(i)].done", detail: "done \(r.done) > total \(r.total)")
                }
                try c.text(r.message, "records[\(i)].message")
            }
        case .finished(let m):
            try c.batch(m.records.count, "records")
            try c.atMost(m.credit, WireLimits.maxCredit, "credit")
            try c.finishedRecords(m.records, "records")
        case .cancel(let m):
            try c.batch(m.records.count, "records")
            for (i, r) in m.records.enumerated() {
                try c.id(r.opID, "records[\(i)].op_id")
                try c.positive(r.attempt, "records[\(i)].attempt")
                try c.text(r.reason, "records[\(i)].reason")
            }
        case .heartbeat, .workers:
            break
        case .disconnect(let m):
            try c.text(m.reason, "reason")
        case .submit(let m):
            try c.batch(m.operations.count, "operations")
            for (i, q) in m.queues.enumerated() { try c.queueSettings(q, "queues[\(i)]") }
            for (i, o) in m.operations.enumerated() { try c.operation(o, "operations[\(i)]") }
            try c.optionalID(m.run, "run")
            try c.text(m.submitter, "submitter")
            if !m.submissionKey.isEmpty {
                try c.atMost(UInt32(clamping: m.submissionKey.utf8.count), 128, "submission_key")
            }
        case .submitReply(let m):
            for (i, e) in m.errors.enumerated() {
                try c.optionalID(e.opID, "errors[\(i)].op_id")
                try c.text(e.message, "errors[\(i)].message")
                try c.known(e.problem, "errors[\(i)].problem")
            }
        case .cancelOps(let m):
            try c.target(m.opIds, m.queue, m.run)
            try c.text(m.reason, "reason")
        case .queue(let m):
            guard m.hasSettings else { throw .missingField(c.command, field: "settings") }
            try c.queueSettings(m.settings, "settings")
        case .setPriority(let m):
            try c.nonEmpty(m.opIds.count, "op_ids")
            try c.ids(m.opIds, "op_ids")
            try c.priority(m.priority, "priority")
            try c.optionalID(m.run, "run")
        case .ack(let m):
            try c.ids(m.notFound, "not_found")
        case .status(let m):
            try c.ids(m.opIds, "op_ids")
            try c.optionalID(m.queue, "queue")
            try c.text(m.after, "after")
            try c.optionalID(m.run, "run")
            try c.optionalID(m.worker, "worker")
            for (i, s) in m.states.enumerated() { try c.known(s, "states[\(i)]") }
        case .statusReply(let m):
            for (i, o) in m.ops.enumerated() { try c.optionalID(o.id, "ops[\(i)].id") }
            try c.ids(m.notFound, "not_found")
        case .why(let m):
            try c.id(m.opID, "op_id")
            try c.optionalID(m.run, "run")
        case .whyReply(let m):
            try c.optionalID(m.opID, "op_id")
        case .workersReply:
            break
        case .watch(let m):
            try c.ids(m.opIds, "op_ids")
            try c.optionalID(m.queue, "queue")
            try c.optionalID(m.run, "run")
        case .event(let m):
            try c.batch(m.events.count, "events")
            for (i, e) in m.events.enumerated() {
                try c.id(e.opID, "events[\(i)].op_id")
                if e.state == .unspecified { throw .missingField(c.command, field: "events[\(i)].state") }
                try c.known(e.state, "events[\(i)].state")
                if e.hasOutcome { try c.outcome(e.outcome, "events[\(i)].outcome") }
                guard e.fraction >= 0, e.fraction <= 1 else {  // also rejects NaN
                    throw .fieldOutOfRange(c.command, field: "events[\(i)].fraction", detail: "\(e.fraction) is not in [0, 1]")
                }
                try c.text(e.message, "events[\(i)].message")
            }
        case .wait(let m):
            try c.target(m.opIds, m.queue, m.run)
            if m.hasTimeoutUs, m.timeoutUs < 0 {
                throw .fieldOutOfRange(c.command, field: "timeout_us", detail: "\(m.timeoutUs) < 0")
            }
        case .waitReply(let m):
            for (i, o) in m.outcomes.enumerated() {
                try c.id(o.opID, "outcomes[\(i)].op_id")
                try c.outcome(o.outcome, "outcomes[\(i)].outcome")
            }
        case .error(let m):
            guard m.code != .unspecified else { throw .missingField(c.command, field: "code") }
            try c.text(m.message, "message")
        case .runs(let m):
            try c.ids(m.runs, "runs")
            try c.text(m.after, "after")
        case .runsReply(let m):
            for (i, r) in m.runs.enumerated() { try c.id(r.id, "runs[\(i)].id") }
        case .logs(let m):
            try c.id(m.opID, "op_id")
            try c.optionalID(m.run, "run")
        case .logsReply(let m):
            try c.optionalID(m.opID, "op_id")
            for (i, a) in m.attempts.enumerated() {
                try c.optionalID(a.workerID, "attempts[\(i)].worker_id")
                try c.bytes(a.stdout.count, WireLimits.maxLogTailSize, "attempts[\(i)].stdout")
                try c.bytes(a.stderr.count, WireLimits.maxLogTailSize, "attempts[\(i)].stderr")
            }
        case .story(let m):
            try c.id(m.opID, "op_id")
            try c.optionalID(m.run, "run")
        case .storyReply(let m):
            try c.optionalID(m.opID, "op_id")
            for (i, e) in m.entries.enumerated() { try c.text(e.detail, "entries[\(i)].detail") }
        case .ha:
            break
        case .haReply(let m):
            try c.text(m.leader, "leader")
            try c.text(m.group, "group")
            try c.text(m.advertise, "advertise")
            try c.text(m.store, "store")
        case .follow(let m):
            try c.id(m.name, "name")
        case .journal(let m):
            if m.records == 0 { throw .missingField(c.command, field: "records") }
            if m.frames.isEmpty { throw .missingField(c.command, field: "frames") }
        case .snapshot(let m):
            if m.offset > m.total || UInt64(m.data.count) > m.total - m.offset {
                throw .fieldOutOfRange(c.command, field: "offset", detail: "\(m.offset) + \(m.data.count) bytes > total \(m.total)")
            }
        case .replicaAck, .promote:
            break
        }
    }
}

/// Small checks that name the offending field. Field names are built only on failure.
struct FieldChecks {
    let command: Command

    func id(_ s: String, _ field: @autoclosure () -> String) throws(WireError) {
        if s.isEmpty { throw .missingField(command, field: field()) }
        try optionalID(s, field())
    }

    func optionalID(_ s: String, _ field: @autoclosure () -> String) throws(WireError) {
        let n = s.utf8.count
        if n > WireLimits.maxIDLength { throw .fieldTooLarge(command, field: field(), size: n, limit: WireLimits.maxIDLength) }
    }

    func ids(_ list: [String], _ field: @autoclosure () -> String) throws(WireError) {
        for (i, s) in list.enumerated() { try id(s, "\(field())[\(i)]") }
    }

    /// CANCEL-OPS and WAIT name their target by exactly one of `op_ids` and `queue`, or by `run` alone
    /// (1.2; with op_ids, `run` is the run plain ids are resolved in).
    func target(_ opIDs: [String], _ queue: String, _ run: String) throws(WireError) {
        if !opIDs.isEmpty && !queue.isEmpty {
            throw .fieldOutOfRange(command, field: "queue", detail: "give op_ids or queue, not both")
        }
        if !queue.isEmpty && !run.isEmpty {
            throw .fieldOutOfRange(command, field: "run", detail: "give queue or run, not both")
        }
        if opIDs.isEmpty && queue.isEmpty && run.isEmpty { throw .missingField(command, field: "op_ids, queue or run") }
        try ids(opIDs, "op_ids")
        try optionalID(queue, "queue")
        try optionalID(run, "run")
    }

    func text(_ s: String, _ field: @autoclosure () -> String) throws(WireError) {
        let n = s.utf8.count
        if n > WireLimits.maxTextLength { throw .fieldTooLarge(command, field: field(), size: n, limit: WireLimits.maxTextLength) }
    }

    func bytes(_ n: Int, _ limit: Int, _ field: @autoclosure () -> String) throws(WireError) {
        if n > limit { throw .fieldTooLarge(command, field: field(), size: n, limit: limit) }
    }

    func nonEmpty(_ n: Int, _ field: @autoclosure () -> String) throws(WireError) {
        if n == 0 { throw .missingField(command, field: field()) }
    }

    func batch(_ n: Int, _ field: @autoclosure () -> String) throws(WireError) {
        if n == 0 { throw .missingField(command, field: field()) }
        if n > WireLimits.maxBatchRecords { throw .batchTooLarge(command, count: n, limit: WireLimits.maxBatchRecords) }
    }

    func positive(_ v: UInt32, _ field: @autoclosure () -> String) throws(WireError) {
        if v == 0 { throw .missingField(command, field: field()) }
    }

    func atMost(_ v: UInt32, _ limit: UInt32, _ field: @autoclosure () -> String) throws(WireError) {
        if v > limit { throw .fieldOutOfRange(command, field: field(), detail: "\(v) > \(limit)") }
    }

    /// A list a peer's registration keeps (HELLO's kinds and tags): at most `limit` elements.
    func count(_ n: Int, _ limit: Int, _ field: @autoclosure () -> String) throws(WireError) {
        if n > limit { throw .fieldOutOfRange(command, field: field(), detail: "\(n) elements, at most \(limit) allowed") }
    }

    /// A HELLO label (name, kind, tag): at most `maxWorkerLabelLength` UTF-8 bytes.
    func label(_ s: String, _ field: @autoclosure () -> String) throws(WireError) {
        let n = s.utf8.count
        if n > WireLimits.maxWorkerLabelLength {
            throw .fieldOutOfRange(command, field: field(), detail: "\(n) bytes, at most \(WireLimits.maxWorkerLabelLength) allowed")
        }
    }

    func equal(_ v: UInt32, _ expected: UInt32, _ field: @autoclosure () -> String) throws(WireError) {
        if v == 0 { throw .missingField(command, field: field()) }
        if v != expected { throw .fieldOutOfRange(command, field: field(), detail: "\(v), expected \(expected)") }
    }

    /// op_id required, attempt ≥ 1, part below `WireLimits.maxParts`.
    func part(_ opID: String, _ part: UInt32, _ attempt: UInt32, _ prefix: @autoclosure () -> String) throws(WireError) {
        try id(opID, "\(prefix()).op_id")
        if attempt == 0 { throw .missingField(command, field: "\(prefix()).attempt") }
        if part >= UInt32(WireLimits.maxParts) {
            throw .fieldOutOfRange(command, field: "\(prefix()).part", detail: "\(part) ≥ \(WireLimits.maxParts)")
        }
    }

    /// FINISHED records (and HELLO's `finished`): a part each, with exactly one bounded outcome.
    func finishedRecords(_ list: [WireFinishedRecord], _ field: String) throws(WireError) {
        // Borrow the records through a buffer: iterating by value would copy (retain) every field.
        try list.withUnsafeBufferPointer { (records) throws(WireError) in
            for i in records.indices {
                try part(records[i].opID, records[i].part, records[i].attempt, "\(field)[\(i)]")
                switch records[i].outcome {
                case nil: throw .missingField(command, field: "\(field)[\(i)].outcome")
                case .succeeded(let d)?: try bytes(d.count, WireLimits.maxResultSize, "\(field)[\(i)].succeeded")
                case .failed(let t)?: try text(t, "\(field)[\(i)].failed")
                case .cancelled(let t)?: try text(t, "\(field)[\(i)].cancelled")
                }
                // (1.5) Output tails: empty on most records (one count check each).
                if !records[i].stdoutTail.isEmpty {
                    try bytes(records[i].stdoutTail.count, WireLimits.maxLogTailSize, "\(field)[\(i)].stdout_tail")
                }
                if !records[i].stderrTail.isEmpty {
                    try bytes(records[i].stderrTail.count, WireLimits.maxLogTailSize, "\(field)[\(i)].stderr_tail")
                }
            }
        }
    }

    func priority(_ p: Int32, _ field: @autoclosure () -> String) throws(WireError) {
        switch p {
        case -8, -4, 0, 4, 8: return
        default: throw .fieldOutOfRange(command, field: field(), detail: "\(p) is not one of -8, -4, 0, 4, 8")
        }
    }

    func qos(_ q: WireQoS, _ field: @autoclosure () -> String) throws(WireError) {
        if case .UNRECOGNIZED(let v) = q { throw .fieldOutOfRange(command, field: field(), detail: "unknown QoS \(v)") }
    }

    func known<E: SwiftProtobufEnumLike>(_ e: E, _ field: @autoclosure () -> String) throws(WireError) {
        if let v = e.unrecognizedValue { throw .fieldOutOfRange(command, field: field(), detail: "unknown enum value \(v)") }
    }

    func outcome(_ o: WireOutcome, _ field: @autoclosure () -> String) throws(WireError) {
        switch o.result {
        case nil: throw .missingField(command, field: field())
        case .succeeded(let d)?: try bytes(d.count, WireLimits.maxResultSize, "\(field()).succeeded")
        case .failed(let t)?: try text(t, "\(field()).failed")
        case .cancelled(let t)?: try text(t, "\(field()).cancelled")
        }
    }

    func queueSettings(_ q: WireQueueSettings, _ prefix: @autoclosure () -> String) throws(WireError) {
        try id(q.name, "\(prefix()).name")
        if q.hasMaxConcurrent, q.maxConcurrent < -1 {
            throw .fieldOutOfRange(command, field: "\(prefix()).max_concurrent", detail: "\(q.maxConcurrent) < -1")
        }
        try qos(q.qos, "\(prefix()).qos")
        if q.hasFairness { try fairness(q.fairness, "\(prefix()).fairness") }
    }

    /// (1.8) The ranges of `QueueFairness.problem`, checked here so a bad setting is refused with its field.
    func fairness(_ f: WireQueueFairness, _ prefix: @autoclosure () -> String) throws(WireError) {
        if case .UNRECOGNIZED(let v) = f.share { throw .fieldOutOfRange(command, field: "\(prefix()).share", detail: "unknown share mode \(v)") }
        if case .UNRECOGNIZED(let v) = f.keyStrategy {
            throw .fieldOutOfRange(command, field: "\(prefix()).key_strategy", detail: "unknown key strategy \(v)")
        }
        try count(f.weights.count, WireLimits.maxShareWeights, "\(prefix()).weights")
        for (i, w) in f.weights.enumerated() {
            try id(w.share, "\(prefix()).weights[\(i)].share")
            if w.weight < 1 || w.weight > WireLimits.maxShareWeight {
                throw .fieldOutOfRange(command, field: "\(prefix()).weights[\(i)].weight",
                                       detail: "\(w.weight) for share '\(w.share)' is not in 1...\(WireLimits.maxShareWeight)")
            }
        }
        if f.hasKeyLimit, f.keyLimit > UInt32(Int32.max) {
            throw .fieldOutOfRange(command, field: "\(prefix()).key_limit", detail: "\(f.keyLimit) > \(Int32.max)")
        }
        try tokenBucket(rate: f.hasRatePerSecond ? f.ratePerSecond : nil, burst: f.hasBurst ? f.burst : nil, removed: f.noRate,
                        names: ("rate_per_second", "burst", "no_rate", "the rate limit"), prefix())
        try tokenBucket(rate: f.hasKeyRatePerSecond ? f.keyRatePerSecond : nil, burst: f.hasKeyBurst ? f.keyBurst : nil,
                        removed: f.noKeyRate, names: ("key_rate_per_second", "key_burst", "no_key_rate", "the per-key rate"), prefix())
        let ageing = QueueFairness.ageingRange
        if f.hasAgeingUs, f.ageingUs < UInt64(ageing.lowerBound) || f.ageingUs > UInt64(ageing.upperBound) {
            throw .fieldOutOfRange(command, field: "\(prefix()).ageing_us", detail: "\(f.ageingUs) is not in \(ageing.lowerBound)...\(ageing.upperBound) (1ms...24h)")
        }
        if f.noAgeing, f.hasAgeingUs {
            throw .fieldOutOfRange(command, field: "\(prefix()).no_ageing", detail: "no_ageing turns ageing off: give no ageing_us with it")
        }
    }

    /// A rate limit's fields (the queue's, or each concurrency key's): a rate in (0, max], a burst in
    /// 1...max, and the field that removes the limit given alone. `names`: the three fields, then what they set.
    private func tokenBucket(rate: Double?, burst: UInt32?, removed: Bool,
                             names: (rate: String, burst: String, removed: String, limit: String),
                             _ prefix: String) throws(WireError) {
        let max = WireLimits.maxRatePerSecond
        if let rate, !(rate > 0 && rate <= max) {
            throw .fieldOutOfRange(command, field: "\(prefix).\(names.rate)", detail: "\(rate) is not > 0 and ≤ \(Int(max))")
        }
        if let burst, burst < 1 || burst > UInt32(max) {
            throw .fieldOutOfRange(command, field: "\(prefix).\(names.burst)", detail: "\(burst) is not in 1...\(Int(max))")
        }
        if removed, rate != nil || burst != nil {
            throw .fieldOutOfRange(command, field: "\(prefix).\(names.removed)",
                                   detail: "\(names.removed) removes \(names.limit): give no \(names.rate) or \(names.burst) with it")
        }
    }

    func operation(_ o: WireOperation, _ prefix: @autoclosure () -> String) throws(WireError) {
        try id(o.id, "\(prefix()).id")
        try optionalID(o.name, "\(prefix()).name")
        try optionalID(o.queue, "\(prefix()).queue")
        try id(o.kind, "\(prefix()).kind")
        try bytes(o.payload.count, WireLimits.maxPayloadSize, "\(prefix()).payload")
        try ids(o.after, "\(prefix()).after")
        try priority(o.priority, "\(prefix()).priority")
        try qos(o.qos, "\(prefix()).qos")
        if o.parts > UInt32(WireLimits.maxParts) {
            throw .fieldOutOfRange(command, field: "\(prefix()).parts", detail: "\(o.parts) > \(WireLimits.maxParts)")
        }
        if case .UNRECOGNIZED(let v) = o.policy {
            throw .fieldOutOfRange(command, field: "\(prefix()).policy", detail: "unknown policy \(v)")
        }
        if o.timeoutUs < 0 { throw .fieldOutOfRange(command, field: "\(prefix()).timeout_us", detail: "\(o.timeoutUs) < 0") }
        try ids(o.requires, "\(prefix()).requires")
        try optionalID(o.share, "\(prefix()).share")
        try optionalID(o.concurrencyKey, "\(prefix()).concurrency_key")
    }
}

/// The generated enums' `UNRECOGNIZED(Int)` case, seen generically.
protocol SwiftProtobufEnumLike { var unrecognizedValue: Int? { get } }
extension WireErrorCode: SwiftProtobufEnumLike {
    var unrecognizedValue: Int? { if case .UNRECOGNIZED(let v) = self { v } else { nil } }
}
extension WireSubmitProblem: SwiftProtobufEnumLike {
    var unrecognizedValue: Int? { if case .UNRECOGNIZED(let v) = self { v } else { nil } }
}
extension WireOpState: SwiftProtobufEnumLike {
    var unrecognizedValue: Int? { if case .UNRECOGNIZED(let v) = self { v } else { nil } }
}

// MARK: checks before sending

extension WireCodec {
    /// The frames of `message` after every check a receiver's `decode` makes, so a sender finds out
    /// *before* sending what the peer would refuse (or what libzmq would drop: a frame over the limit
    /// closes the connection without a word). Checks, in this order: the field rules (`validate`), a
    /// lower bound of the body size (so that, say, 8,192 payloads of 1 MiB are refused before 8 GiB is
    /// encoded), then the encoded body's size and the pre-scan's element counts (§3.1 steps 7–8).
    /// Decoding is unchanged; a message this accepts, `decode` accepts.
    public static func encodeChecked(_ message: Message, requestID: UInt32 = 0) throws(WireError) -> [[UInt8]] {
        try validate(message)
        let atLeast = bodySizeLowerBound(message)
        if atLeast > WireLimits.maxBodySize { throw .bodyTooLarge(size: atLeast, limit: WireLimits.maxBodySize) }
        let frames = encode(message, requestID: requestID)
        let body = frames[1]
        if body.count > WireLimits.maxBodySize { throw .bodyTooLarge(size: body.count, limit: WireLimits.maxBodySize) }
        try StructureScan.check(body, command: message.command)
        return frames
    }

    /// Bytes the body takes at least: every non-empty string or bytes field costs its length plus a tag
    /// and a length byte. Counted only for the messages that can grow large (lists and payloads); 0 for
    /// the rest, whose fields `validate` has already bounded.
    static func bodySizeLowerBound(_ message: Message) -> Int {
        func field(_ n: Int) -> Int { n == 0 ? 0 : n + 2 }
        func list(_ strings: [String]) -> Int { strings.reduce(0) { $0 + $1.utf8.count + 2 } }
        switch message {
        case .submit(let m):
            var n = 0
            for o in m.operations {
                n += 2 + field(o.id.utf8.count) + field(o.name.utf8.count) + field(o.queue.utf8.count)
                    + field(o.kind.utf8.count) + field(o.payload.count) + list(o.after) + list(o.requires)
            }
            return n
        case .status(let m): return list(m.opIds)
        case .wait(let m): return list(m.opIds)
        case .cancelOps(let m): return list(m.opIds)
        case .setPriority(let m): return list(m.opIds)
        case .watch(let m): return list(m.opIds)
        default: return 0
        }
    }
}
