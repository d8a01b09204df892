import Foundation
import SchedulerCore
import WireProtocol

/// A client request answered by several core replies (the reply goes out when the last one arrives).
struct AckAccumulator {
    var remaining: Int
    var affected = 0
    var firstError: String?
    var firstErrorIsNotFound = false
}

struct WaitRequest {
    var ids: [String]
    var queue: String
    /// The run plain ids are resolved in; with no ids and no queue, the run awaited as a whole.
    var run: String
    var withResults: Bool
    var deadline: Int64?
}

/// One client's event subscription: events are numbered so the client can see a gap.
struct WatchStream {
    var requestID: UInt32
    var withResults = false
    var progress = false
    private var sequence: UInt64 = 0

    init(requestID: UInt32, withResults: Bool = false, progress: Bool = false) {
        self.requestID = requestID
        self.withResults = withResults
        self.progress = progress
    }

    mutating func nextSequence() -> UInt64 {
        sequence += 1
        return sequence
    }
}

extension CoordinatorLoop {
    /// `principal`: who sent it, with keys (its name is recorded as the submitter and the canceller).
    func clientRequest(_ message: Message, ref: ClientRef, key: SubmissionKey? = nil, principal: Principal? = nil) {
        if !journalHealthy || journalBehind, let reason = journalRefusal(message) {
            replyError(.busy, reason, ref: ref, command: message.command)
            return
        }
        switch message {
        case .submit(let s):
            let run = RunRequest(name: s.run.isEmpty ? nil : s.run, mode: s.append ? .createOrAppend : .create,
                                 submitter: principal?.name ?? s.submitter)
            feed(.submit(ref, ops: s.operations.map(WireToCore.operation), queues: s.queues.map(queueSpec), run: run, key: key))
        case .cancelOps(let c):
            var reason = c.reason.isEmpty ? "cancelled by client" : c.reason
            if let p = principal { reason = c.reason.isEmpty ? "cancelled by \(p.name)" : "\(c.reason) (cancelled by \(p.name))" }
            if !c.queue.isEmpty {
                feed(.cancelAll(ref, queue: c.queue, reason: reason))
            } else if c.opIds.isEmpty {
                feed(.cancelRun(ref, run: c.run, reason: reason))
            } else {
                pendingAcks[ref] = AckAccumulator(remaining: 1)
                feed(.cancel(ref, ids: c.opIds, cascade: c.cascade, reason: reason, run: c.run.isEmpty ? nil : c.run))
            }
        case .queue(let q):
            let s = q.settings
            var steps: [Event] = []
            if s.hasMaxConcurrent { steps.append(.setQueueLimit(ref, queue: s.name, maxConcurrent: Int(s.maxConcurrent))) }
            if s.hasSuspended { steps.append(s.suspended ? .suspend(ref, queue: s.name) : .resume(ref, queue: s.name)) }
            guard !steps.isEmpty else {
                replyError(.invalidArgument, "QUEUE for '\(s.name)' changes nothing: give max_concurrent or suspended", ref: ref, command: .queue)
                return
            }
            pendingAcks[ref] = AckAccumulator(remaining: steps.count)
            steps.forEach(feed)
        case .setPriority(let p):
            pendingAcks[ref] = AckAccumulator(remaining: p.opIds.count)
            for id in p.opIds {
                feed(.setPriority(ref, id: id, priority: Int(p.priority), inherit: p.inherit, run: p.run.isEmpty ? nil : p.run))
            }
        case .status(let s):
            switch statusReply(s) {
            case .success(let r): reply(.statusReply(r), to: ref)
            case .failure(let f): replyError(.notFound, "\(f)", ref: ref, command: .status)
            }
        case .why(let w):
            reply(whyReply(w.opID, run: w.run), to: ref)
        case .runs(let q):
            switch runsReply(q) {
            case .success(let r): reply(.runsReply(r), to: ref)
            case .failure(let f): replyError(.notFound, "\(f)", ref: ref, command: .runs)
            }
        case .workers:
            reply(.workersReply(workersReply()), to: ref)
        case .logs(let l):
            reply(logsReply(l), to: ref)
        case .story(let s):
            reply(storyReply(s), to: ref)
        case .watch(let w):
            if w.stop {
                unwatch(ref.client)
                var a = WireAck()
                a.affected = 1
                reply(.ack(a), to: ref)
            } else {
                watchers[ref.client] = WatchStream(requestID: UInt32(truncatingIfNeeded: ref.request),
                                                   withResults: w.withResults, progress: w.progress)
                pendingAcks[ref] = AckAccumulator(remaining: 1)
                feed(.watch(ref, queue: w.queue.isEmpty ? nil : w.queue, run: w.run.isEmpty ? nil : w.run))
            }
        case .wait(let w):
            pendingWaits[ref] = WaitRequest(ids: w.opIds, queue: w.queue, run: w.run, withResults: w.withResults,
                                            deadline: w.hasTimeoutUs ? now + w.timeoutUs : nil)
            if !w.queue.isEmpty {
                feed(.waitQueue(ref, queue: w.queue))
            } else if w.opIds.isEmpty {
                feed(.waitRun(ref, run: w.run))
            } else {
                feed(.wait(ref, ids: w.opIds, run: w.run.isEmpty ? nil : w.run))
            }
            expireWaits()
        default:
            break
        }
    }

    /// SUBMIT's queue settings: absent fields keep an existing queue's values (PROTOCOL.md §5.13).
    private func queueSpec(_ w: WireQueueSettings) -> QueueSpec {
        var spec = WireToCore.queue(w)
        if let current = core.queueCounts(w.name) {
            if !w.hasMaxConcurrent { spec.maxConcurrent = current.maxConcurrent }
            if !w.hasSuspended { spec.suspended = current.suspended }
            if QoS(wire: w.qos) == nil { spec.qos = current.qos }
        }
        return spec
    }

    /// A core reply, turned into the wire reply the request expects.
    func deliver(_ coreReply: Reply, to ref: ClientRef) {
        if var acc = pendingAcks[ref] {
            acc.remaining -= 1
            switch coreReply {
            case .ok: acc.affected += 1
            case .error(let text):
                if acc.firstError == nil { acc.firstError = text }
            case .notFound(let text):
                if acc.firstError == nil { acc.firstError = text; acc.firstErrorIsNotFound = true }
            default: break
            }
            guard acc.remaining <= 0 else { pendingAcks[ref] = acc; return }
            pendingAcks[ref] = nil
            if let e = acc.firstError, acc.affected == 0 {
                replyError(acc.firstErrorIsNotFound ? .notFound : code(for: e), e, ref: ref, command: nil)
            } else {
                var a = WireAck()
                a.affected = UInt32(acc.affected)
                reply(.ack(a), to: ref)
            }
            return
        }
        switch coreReply {
        case .accepted(let n, let unplaceable, let run):
            var r = WireSubmitReply()
            r.accepted = true
            r.run = run
            r.acceptedCount = UInt32(n)
            r.unplaceable = unplaceable.map(WireToCore.unplaceable)
            r.workers = UInt32(core.liveWorkerCount)
            reply(.submitReply(r), to: ref)
            if let suppressed = logLimiter.admit("accepted", burst: 100, now: now) {
                logger.info("client \(ref.client): batch of \(n) operations accepted into run \(run)\(heldBack(suppressed, "more accepted batches not logged"))")
            }
        case .acceptedBefore(let n, let run):
            var r = WireSubmitReply()
            r.accepted = true
            r.duplicate = true
            r.run = run
            r.acceptedCount = UInt32(n)
            r.workers = UInt32(core.liveWorkerCount)
            reply(.submitReply(r), to: ref)
        case .rejected(let problems):
            var r = WireSubmitReply()
            r.accepted = false
            r.errors = problems.map(WireToCore.submitProblem)
            reply(.submitReply(r), to: ref)
            if let suppressed = logLimiter.admit("rejected \(ref.client)", now: now) {
                logger.info("client \(ref.client): batch rejected with \(problems.count) problem(s): \(problems.prefix(3).map { clipped($0.description) }.joined(separator: "; "))\(heldBack(suppressed, "more rejected batches not logged"))")
            }
        case .ok:
            var a = WireAck()
            a.affected = 1
            reply(.ack(a), to: ref)
        case .error(let text):
            pendingWaits[ref] = nil
            replyError(code(for: text), text, ref: ref, command: nil)
        case .notFound(let text):
            pendingWaits[ref] = nil
            replyError(.notFound, text, ref: ref, command: nil)
        case .waitDone:
            guard let w = pendingWaits.removeValue(forKey: ref) else { return }   // already timed out
            reply(.waitReply(waitReply(w, timedOut: false)), to: ref)
        }
    }

    /// Answers waits whose deadline passed with what is known now.
    func expireWaits() {
        guard !pendingWaits.isEmpty else { return }
        for (ref, w) in pendingWaits {
            guard let d = w.deadline, d <= now else { continue }
            pendingWaits[ref] = nil
            reply(.waitReply(waitReply(w, timedOut: true)), to: ref)
        }
    }

    func nextWaitDeadline() -> Int64? {
        pendingWaits.values.compactMap(\.deadline).min()
    }

    func reply(_ message: Message, to ref: ClientRef) {
        guard let r = peers.routing(ofClient: ref.client) else { return }
        sendToClient(message, to: r, requestID: UInt32(truncatingIfNeeded: ref.request))
    }

    func replyError(_ code: WireErrorCode, _ text: String, ref: ClientRef, command: Command?) {
        reply(.error(errorReply(code, text, command: command?.rawValue ?? 0)), to: ref)
    }

    private func code(for coreError: String) -> WireErrorCode {
        coreError.lowercased().contains("unknown") ? .notFound : .invalidArgument
    }
}
