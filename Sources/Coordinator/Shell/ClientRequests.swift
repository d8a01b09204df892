import Foundation
import SchedulerCore
import WireProtocol

extension Message {
    /// A request that changes state (refused while the journal cannot take it).
    var changesState: Bool {
        switch self {
        case .submit, .cancelOps, .queue, .setPriority: return true
        default: return false
        }
    }
}

extension CoordinatorShell {
    /// `principal`: who sent it, with keys (its name is recorded as the submitter and the canceller).
    mutating func clientRequest(_ message: Message, ref: ClientRef, key: SubmissionKey? = nil, principal: Principal? = nil) {
        if let reason = changeRefusal, message.changesState {
            replyError(.busy, reason, ref: ref, command: message.command)
            return
        }
        switch message {
        case .submit(let s):
            let run = RunRequest(name: s.run.isEmpty ? nil : s.run, mode: s.append ? .createOrAppend : .create,
                                 submitter: principal?.name ?? s.submitter,
                                 appendOwnRunOnly: principal.map { !$0.roles.contains(.admin) } ?? false)
            let (ops, unknownPriorities) = WireCoreMapping.operations(s.operations)
            var queues: [QueueSpec] = []
            for w in s.queues {
                switch queueSpec(w) {
                case .success(let q): queues.append(q)
                case .failure(let e):
                    replyError(.invalidArgument, "queues '\(w.name)': \(e.reason)", ref: ref, command: .submit)
                    return
                }
            }
            feed(.submit(ref, ops: ops, queues: queues, run: run, key: key, unknownPriorities: unknownPriorities))
        case .cancelOps(let c):
            var reason = c.reason.isEmpty ? "cancelled by client" : c.reason
            if let p = principal { reason = c.reason.isEmpty ? "cancelled by \(p.name)" : "\(c.reason) (cancelled by \(p.name))" }
            if !c.queue.isEmpty {
                feed(.cancelAll(ref, queue: c.queue, reason: reason))
            } else if c.opIds.isEmpty {
                feed(.cancelRun(ref, run: c.run, reason: reason))
            } else {
                clientBook.expect(1, repliesFor: ref)
                feed(.cancel(ref, ids: c.opIds, cascade: c.cascade, reason: reason, run: c.run.isEmpty ? nil : c.run,
                             scope: principal?.requestScope))
            }
        case .queue(let q):
            let s = q.settings
            var steps: [Event] = []
            if s.hasMaxConcurrent { steps.append(.setQueueLimit(ref, queue: s.name, maxConcurrent: Int(s.maxConcurrent))) }
            if s.hasSuspended { steps.append(s.suspended ? .suspend(ref, queue: s.name) : .resume(ref, queue: s.name)) }
            if s.hasFairness {
                // Absent fields keep the queue's current values; an unknown queue is the core's NOT_FOUND.
                switch s.fairness.applied(to: core.fairnessStatus(s.name)?.fairness ?? .default) {
                case .success(let f): steps.append(.setQueueFairness(ref, queue: s.name, f))
                case .failure(let e):
                    replyError(.invalidArgument, "queue '\(s.name)': \(e.reason)", ref: ref, command: .queue)
                    return
                }
            }
            guard !steps.isEmpty else {
                replyError(.invalidArgument, "QUEUE for '\(s.name)' changes nothing: give max_concurrent, suspended or fairness", ref: ref, command: .queue)
                return
            }
            clientBook.expect(steps.count, repliesFor: ref)
            for step in steps { feed(step) }
        case .setPriority(let p):
            clientBook.expect(p.opIds.count, repliesFor: ref)
            for id in p.opIds {
                feed(.setPriority(ref, id: id, priority: Int(p.priority), inherit: p.inherit, run: p.run.isEmpty ? nil : p.run,
                                  scope: principal?.requestScope))
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
                // A new WATCH replaces the old one (the core moves the client to the new filters' stream).
                if let old = clientBook.watch(ref.client, WatchStream(requestID: UInt32(truncatingIfNeeded: ref.request))),
                   old.stream != 0 {
                    eventStreams.left(old.stream)
                }
                feed(.watch(ref, queue: w.queue.isEmpty ? nil : w.queue, run: w.run.isEmpty ? nil : w.run,
                            withResults: w.withResults, progress: w.progress))
            }
        case .wait(let w):
            clientBook.wait(WaitRequest(ids: w.opIds, queue: w.queue, run: w.run, withResults: w.withResults,
                                        deadline: w.hasTimeoutUs ? now + w.timeoutUs : nil), for: ref)
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

    /// SUBMIT's queue settings: absent fields keep an existing queue's values (PROTOCOL.md §5.13); so do
    /// absent fields of `fairness` (a new queue's: the default's).
    private func queueSpec(_ w: WireQueueSettings) -> Result<QueueSpec, FairnessSettingError> {
        var spec = WireCoreMapping.queue(w)
        if let current = core.queueCounts(w.name) {
            if !w.hasMaxConcurrent { spec.maxConcurrent = current.maxConcurrent }
            if !w.hasSuspended { spec.suspended = current.suspended }
            if OperationQoS(wire: w.qos) == nil { spec.qos = current.qos }
        }
        if w.hasFairness {
            switch w.fairness.applied(to: core.fairnessStatus(w.name)?.fairness ?? .default) {
            case .success(let f): spec.fairness = f
            case .failure(let e): return .failure(e)
            }
        }
        return .success(spec)
    }

    /// A core reply, turned into the wire reply the request expects.
    mutating func deliver(_ coreReply: Reply, to ref: ClientRef) {
        switch clientBook.collect(coreReply, for: ref) {
        case .notCollected: break
        case .waiting: return
        case .ack(let affected, let leftAlone):
            var a = WireAck()
            a.affected = UInt32(affected)
            a.leftAlone = UInt32(leftAlone)
            reply(.ack(a), to: ref)
            return
        case .error(let e):
            replyError(e.wireCode, e.description, ref: ref, command: nil)
            return
        }
        switch coreReply {
        case .accepted(let n, let unplaceable, let run):
            var r = WireSubmitReply()
            r.accepted = true
            r.run = run
            r.acceptedCount = UInt32(n)
            r.unplaceable = unplaceable.map(WireCoreMapping.unplaceable)
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
            r.errors = problems.map(WireCoreMapping.submitProblem)
            reply(.submitReply(r), to: ref)
            if let suppressed = logLimiter.admit("rejected \(ref.client)", now: now) {
                logger.info("client \(ref.client): batch rejected with \(problems.count) problem(s): \(problems.prefix(3).map { clipped($0.description) }.joined(separator: "; "))\(heldBack(suppressed, "more rejected batches not logged"))")
            }
        case .watching(let stream):
            if clientBook.joined(ref.client, request: UInt32(truncatingIfNeeded: ref.request), stream: stream) {
                eventStreams.joined(stream)
            }
            var a = WireAck()
            a.affected = 1
            reply(.ack(a), to: ref)
        case .ok, .okOutsideScope:
            var a = WireAck()
            a.affected = 1
            if case .okOutsideScope(let n) = coreReply { a.leftAlone = UInt32(n) }
            reply(.ack(a), to: ref)
        case .error(let e):
            _ = clientBook.endWait(ref)
            // A refused WATCH (unknown queue or run) leaves no subscription behind.
            if let w = clientBook.stream(of: ref.client), w.stream == 0, w.requestID == UInt32(truncatingIfNeeded: ref.request) {
                _ = clientBook.unwatch(ref.client)
            }
            replyError(e.wireCode, e.description, ref: ref, command: nil)
        case .waitDone:
            guard let w = clientBook.endWait(ref) else { return }   // already timed out
            reply(.waitReply(waitReply(w, timedOut: false)), to: ref)
        }
    }

    mutating func reply(_ message: Message, to ref: ClientRef) {
        guard let r = peers.routing(ofClient: ref.client) else { return }
        sendToClient(message, to: r, requestID: UInt32(truncatingIfNeeded: ref.request))
    }

    mutating func replyError(_ code: WireErrorCode, _ text: String, ref: ClientRef, command: Command?) {
        reply(.error(Self.errorReply(code, text, command: command?.rawValue ?? 0)), to: ref)
    }
}
