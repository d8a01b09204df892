import HeapModule

// A4 (docs/SEMANTICS.md): failed and timed-out attempts, retry delays with exponential backoff and
// jitter, per-attempt timeouts, and re-queueing a part (after a failure or a lost worker).

extension Scheduler {
    /// Keeps the errors of this many failed attempts per op (the newest).
    static let attemptErrorsKept = 32

    /// A failed (or timed-out) attempt of `part`: retried after its delay while `retries` allow,
    /// else the op finishes failed. Every attempt's error is kept for status.
    mutating func attemptFailed(_ op: Int32, _ part: Int, attempt: Int, error: String, timedOut: Bool, at: Int64,
                                _ out: inout [Action]) {
        let i = Int(op)
        ops.hot[i].failures &+= 1
        var errors = ops.attemptErrors.removeValue(forKey: op) ?? []
        errors.append("attempt \(attempt): \(error)")
        if errors.count > Self.attemptErrorsKept { errors.removeFirst(errors.count - Self.attemptErrorsKept) }
        ops.attemptErrors[op] = errors
        guard ops.hot[i].failRetriesLeft > 0 else {
            let n = Int(ops.hot[i].failures)
            let attempts = "\(n) attempt\(n == 1 ? "" : "s")"
            let text: String
            if timedOut {
                text = "timed out after \(attempts)" + (ops.timeouts[op].map { " (limit \(durationText($0)) each)" } ?? "")
            } else {
                text = n > 1 ? "failed after \(attempts): \(error)" : error
            }
            finishOp(op, .failed(text), at: at, &out)
            return
        }
        ops.hot[i].failRetriesLeft -= 1
        requeuePart(op, part, why: timedOut ? .timedOut : .failed, delay: retryDelay(op), error: error, &out)
    }

    /// The part goes back to be dispatched again with a new attempt number: at once (`delay` 0), or
    /// after `delay` µs, `delayed` meanwhile (a single-part op with it; a multi-part op keeps its state).
    mutating func requeuePart(_ op: Int32, _ part: Int, why: RequeueReason, delay: Int64, error: String = "",
                              _ out: inout [Action]) {
        let i = Int(op)
        ops.hot[i].attempt &+= 1
        if why == .failed || why == .timedOut { metrics.retried &+= 1 } else { metrics.requeued &+= 1 }
        let attempt = ops.hot[i].attempt
        let failedAttempt = Int(attempt) - 1
        if delay > 0 {
            timers.retryDelays.insert(AttemptDeadline(at: now &+ delay, op: OpIndex(raw: op), part: UInt16(part), attempt: attempt))
        }
        let ms = Int32(clamping: delay / 1000)
        if delay <= 0 {
            ops.hot[i].waitingParts += 1
            if ops.hot[i].parts == 1 {
                makeReady(op, code: .requeued, extra: why.rawValue, &out)
            } else {
                ops.setPartStatus(op, part, .waiting)
                record(op, .requeued, part: part, extra: why.rawValue)
                pushPartial(op)
            }
            return
        }
        ops.setPartStatus(op, part, .delayed)
        if ops.hot[i].parts == 1 {
            transition(op, to: .delayed, .retryDelay, extra: ms)
        } else {
            record(op, .retryDelay, part: part, extra: ms)
        }
        if !watchers.isEmpty {
            publish(op, .retrying(part: part, failedAttempt: failedAttempt, error: error, until: now &+ delay), &out)
        }
    }

    /// The delay before the next attempt after `failures` failed ones: base × 2^(failures−1), capped,
    /// then drawn between half and all of it. The draw hashes (op, attempt), so the core stays
    /// deterministic and a replay waits the same.
    func retryDelay(_ op: Int32) -> Int64 {
        let d = ops.retryDelays[op] ?? RetryDelay(base: OperationSpec.defaultRetryDelayMicros,
                                              max: OperationSpec.defaultRetryDelayMaxMicros)
        guard d.base > 0, d.max > 0 else { return 0 }
        let i = Int(op)
        var full = min(d.base, d.max)
        for _ in 1..<max(1, min(Int(ops.hot[i].failures), 64)) {
            full = full > d.max / 2 ? d.max : full * 2
        }
        let half = full / 2
        var h = UInt64(UInt32(bitPattern: op)) << 16 | UInt64(ops.hot[i].attempt)
        h = (h ^ (h >> 30)) &* 0xBF58_476D_1CE4_E5B9   // SplitMix64's finaliser
        h = (h ^ (h >> 27)) &* 0x94D0_49BB_1331_11EB
        h ^= h >> 31
        return full - half + Int64(h % UInt64(half + 1))
    }

    /// Retry delays that are over: the part can be dispatched again.
    mutating func fireRetries(_ out: inout [Action]) {
        while let top = timers.retryDelays.popDue(now) {
            let op = top.op.raw
            let i = Int(op)
            let part = Int(top.part)
            // Stale when the part is no longer delayed (the op finished, or was cancelled while other
            // parts run), or, single-part, when this delay was an earlier attempt's (the parts of a
            // multi-part op share one attempt counter, and each part is delayed at most once at a time).
            let currentAttempt = ops.hot[i].parts > 1 || ops.hot[i].attempt == top.attempt
            guard currentAttempt, ops.hot[i].flags & Flag.cancelled == 0, ops.partStatus(op, part) == .delayed else { continue }
            ops.hot[i].waitingParts += 1
            if ops.hot[i].parts == 1 {
                makeReady(op, &out)
            } else {
                ops.setPartStatus(op, part, .waiting)
                pushPartial(op)
            }
        }
    }

    /// Attempts that ran past their op's timeout: the worker is told to stop the part, and the
    /// attempt counts as failed (A4).
    mutating func fireTimeouts(_ out: inout [Action]) {
        while let top = timers.attemptTimeouts.popDue(now) {
            let op = top.op.raw
            let i = Int(op)
            let part = Int(top.part)
            guard ops.hot[i].state == .executing, let f = inflightGet(op, part), f.attempt == top.attempt,
                  isStarted(op, part), let limit = ops.timeouts[op] else { continue }
            record(op, .timedOut, part: part, extra: Int32(f.attempt))
            metrics.timedOut &+= 1
            out.append(.cancelOnWorker(worker: workers[f.worker].id, op: ops.ids[i], part: part,
                                       attempt: Int(f.attempt), reason: "timed out after \(durationText(limit))"))
            inflightClear(op, part)
            ops.hot[i].inflightParts -= 1
            if ops.hot[i].flags & Flag.cancelled != 0 {
                partDone(op, part, [])
                if ops.hot[i].inflightParts == 0 { finishOp(op, .cancelled(ops.reasons[op] ?? "cancelled"), &out) }
                continue
            }
            attemptFailed(op, part, attempt: Int(f.attempt), error: "timed out after \(durationText(limit))",
                          timedOut: true, at: now, &out)
        }
    }

    /// Whether the part's current attempt said STARTED. (Inlined: see Inflight.swift.)
    @inline(__always)
    func isStarted(_ op: Int32, _ part: Int) -> Bool { ops.partStatus(op, part) == .running }
}

/// "250ms", "2s", "1.5s": durations in messages (the core has no Foundation).
func durationText(_ micros: Int64) -> String {
    if micros < 1_000_000 { return "\(micros / 1000)ms" }
    let tenths = (micros / 100_000) % 10
    return "\(micros / 1_000_000)" + (tenths == 0 ? "" : ".\(tenths)") + "s"
}
