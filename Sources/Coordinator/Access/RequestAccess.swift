import WireProtocol

import SchedulerCore

/// Whether a principal may make a request (PROTOCOL.md §12 "Roles"). Pure: what it needs to know about
/// existing work comes through `queueOf` (the queue of the op a reference resolves to, resolved exactly as
/// the core will resolve it), `queuesOfRun` (the queues a run's ops are in) and `existingQueue`.
///
/// Workers' messages need `worker`; reading (STATUS, WHY, RUNS, WORKERS, WATCH, WAIT, LOGS, STORY) needs `view`,
/// `submit` or `admin`; SUBMIT, CANCEL and SET-PRIORITY need every queue they touch to be in the
/// principal's scope; QUEUE (limits, suspension), settings of an existing queue and cancelling everything
/// need `admin`. (Appending to another key's run, and cascades and inheritance that reach other scopes,
/// are decided by the core on the ops themselves: `RunRequest.appendOwnRunOnly`, `QueueScope`.)
enum RequestAccess {
    /// nil when allowed, else the reason it is not (sent to the peer, so it names what is missing).
    static func denial(_ message: Message, by p: Principal,
                       queueOf: (_ op: String, _ run: String?) -> String?,
                       queuesOfRun: (String) -> Set<String>?,
                       existingQueue: (String) -> QueueCounts? = { _ in nil },
                       queueFairness: (String) -> QueueFairness? = { _ in nil }) -> String? {
        switch message {
        case .hello(let h):
            guard p.has(.worker) else { return "key '\(p.name)' may not register workers (it lacks the 'worker' role)" }
            if let tag = h.tags.first(where: { !p.mayClaim(tag: $0) }) {
                return "key '\(p.name)' may not register with tag '\(tag)' (allowed: \(p.tags.map(\.pattern).joined(separator: " ")))"
            }
            if let tag = h.tags.first(where: { $0.hasPrefix(Principal.pinTagPrefix) }) {
                return "tag '\(tag)' is reserved: the coordinator gives every worker 'key:' and its key's name"
            }
            return nil
        case .credit, .started, .progress, .finished:
            return p.has(.worker) ? nil : "key '\(p.name)' may not report on work (it lacks the 'worker' role)"
        case .heartbeat, .disconnect:
            return nil   // workers and watching clients both send them
        case .ha(let h) where h.stepDown:
            return p.roles.contains(.admin) ? nil : "stepping down from leadership needs the 'admin' role"
        case .status, .why, .runs, .workers, .watch, .wait, .logs, .story, .ha:
            return p.has(.view) || p.roles.contains(.submit) ? nil : "key '\(p.name)' may not read the coordinator's state (needs 'view', 'submit' or 'admin')"
        case .submit(let s):
            guard p.has(.submit) else { return "key '\(p.name)' may not submit (it lacks the 'submit' role)" }
            var seen = Set<String>()
            for q in s.operations.lazy.map({ $0.queue.isEmpty ? "default" : $0.queue }) + s.queues.map(\.name)
                where seen.insert(q).inserted && !p.mayUse(queue: q) {
                return outOfScope(p, queue: q)
            }
            if p.roles.contains(.admin) { return nil }
            for q in s.queues {
                if let current = existingQueue(q.name), let why = settingChange(q, of: current, by: p) { return why }
                if q.hasFairness, let why = fairnessChange(q, of: queueFairness(q.name), by: p) { return why }
            }
            return nil
        case .cancelOps(let c):
            guard p.has(.submit) else { return "key '\(p.name)' may not cancel (it lacks the 'submit' role)" }
            if !c.queue.isEmpty { return p.mayUse(queue: c.queue) ? nil : outOfScope(p, queue: c.queue) }
            if c.opIds.isEmpty {
                if c.run.isEmpty { return p.roles.contains(.admin) ? nil : "cancelling every operation needs the 'admin' role" }
                for q in queuesOfRun(c.run) ?? [] where !p.mayUse(queue: q) { return outOfScope(p, queue: q, run: c.run) }
                return nil
            }
            return opsDenial(c.opIds, run: c.run, p, queueOf)
        case .setPriority(let s):
            guard p.has(.submit) else { return "key '\(p.name)' may not change priorities (it lacks the 'submit' role)" }
            return opsDenial(s.opIds, run: s.run, p, queueOf)
        case .queue(let q):
            return p.roles.contains(.admin) ? nil : "changing queue '\(q.settings.name)' (limit, suspension, fairness) needs the 'admin' role"
        case .follow, .replicaAck:
            return p.roles.contains(.coordinator) ? nil : "key '\(p.name)' may not follow the journal (it lacks the 'coordinator' role)"
        case .promote:
            return p.roles.contains(.admin) ? nil : "promoting a standby needs the 'admin' role"
        case .welcome, .reject, .dispatch, .cancel, .submitReply, .ack, .statusReply, .whyReply,
             .workersReply, .event, .waitReply, .runsReply, .logsReply, .storyReply, .haReply, .error, .journal, .snapshot:
            return nil   // answered as unexpected by the loop, whoever sends them
        }
    }

    /// A SUBMIT's settings for a queue that exists already: only an admin changes them (as with QUEUE). A
    /// setting equal to the current one is no change, so the same graph file can be submitted again.
    private static func settingChange(_ q: WireQueueSettings, of current: QueueCounts, by p: Principal) -> String? {
        var field: (name: String, now: String, given: String)?
        if q.hasMaxConcurrent, Int(q.maxConcurrent) != current.maxConcurrent {
            field = ("maxConcurrent", "\(current.maxConcurrent)", "\(q.maxConcurrent)")
        } else if q.hasSuspended, q.suspended != current.suspended {
            field = ("suspended", "\(current.suspended)", "\(q.suspended)")
        } else if let qos = OperationQoS(wire: q.qos), qos != current.qos {
            field = ("qos", current.qos.name, qos.name)
        }
        guard let field else { return nil }
        return "queue '\(q.name)' exists with \(field.name) \(field.now); this submission sets it to \(field.given), "
            + "which needs the 'admin' role (key '\(p.name)' may set a queue's settings only in the submission that creates it): "
            + "remove \(field.name) from the graph's queues entry, or ask an admin (opctl limit/suspend/resume)"
    }

    /// A SUBMIT's fairness (A11) needs `admin` when it changes an existing queue's (`current`) or gives a new
    /// queue other than the default: fair share between teams is the cluster's policy, not a submitter's.
    private static func fairnessChange(_ q: WireQueueSettings, of current: QueueFairness?, by p: Principal) -> String? {
        if q.fairness.isNoChange(of: current ?? .default) { return nil }
        let what = current == nil ? "creates it with fair-share settings other than the default" : "changes its fair-share settings"
        return "queue '\(q.name)': this submission \(what) (share, weights, keyLimit, keyStrategy, rate, burst, keyRate, keyBurst, ageing), which needs the 'admin' role "
            + "(key '\(p.name)'): remove them from the graph's queues entry, or ask an admin (opctl share)"
    }

    /// Unknown ops pass: the core answers "not found" as it would to anyone.
    private static func opsDenial(_ ids: [String], run: String, _ p: Principal,
                                  _ queueOf: (String, String?) -> String?) -> String? {
        if p.roles.contains(.admin) { return nil }
        for id in ids {
            if let q = queueOf(id, run.isEmpty ? nil : run), !p.mayUse(queue: q) { return outOfScope(p, queue: q, op: id) }
        }
        return nil
    }

    private static func outOfScope(_ p: Principal, queue: String, op: String? = nil, run: String? = nil) -> String {
        let what = op.map { "operation '\($0)' is in queue '\(queue)'" } ?? run.map { "run '\($0)' has operations in queue '\(queue)'" }
            ?? "queue '\(queue)'"
        return "\(what), outside the scope of key '\(p.name)' (\(p.queues.map(\.pattern).joined(separator: " ")))"
    }
}
