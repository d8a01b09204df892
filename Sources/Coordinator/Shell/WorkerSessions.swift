import SchedulerCore
import WireProtocol

// Worker sessions (PROTOCOL.md §5.2–5.12): HELLO opens one (replacing what it replaces), the session's
// reports feed the core with times converted to the coordinator's clock, DISCONNECT closes it.

extension CoordinatorShell {
    mutating func workerHello(_ h: WireHello, from routing: [UInt8], principal: Principal?) {
        // Sessions this HELLO replaces are lost in the core together with the join, so the parts they
        // held are taken back from the new session's `running` before anything dispatches them again.
        var replaced: [UInt64] = []
        if case .worker(let old)? = peers.role(of: routing), !workerLinks.isLost(old) {
            endSession(old, reason: "re-registered on the same connection", tell: false)
            replaced.append(old)
        }
        let owner = principal.map { Principal.pinTagPrefix + $0.name } ?? h.name
        let who = WorkerIdentity(name: h.name, owner: owner)
        if let old = peers.openSession(of: who), !workerLinks.isLost(old) {
            // The same worker restarted (or a second one given the same --name): the new session takes
            // its identity, and whatever the old one held runs again.
            if let suppressed = logLimiter.admit("replaced \(h.name)", now: now) {
                logger.warning("worker \(WorkerName.sessionText(old)) '\(clipped(h.name))' replaced by a new connection with the same name\(heldBack(suppressed, "more times since the last such line"))")
            }
            endSession(old, reason: "replaced by a new connection of worker '\(h.name)'", tell: true)
            replaced.append(old)
        }
        let id = peers.newWorker(routing: routing, who: who)
        var clock = WorkerClock()
        clock.observe(sent: h.sentUs, receivedAt: now)
        // With keys every worker also carries "key:NAME", so a submitter can pin ops to a key (PROTOCOL.md §12).
        let tags = principal.map { h.tags + [$0.pinTag] } ?? h.tags
        if let p = principal { noteKey(p.key, worker: id, name: p.name) }
        // The attempts it still holds and those it finished while we were away (A5): taken back, not re-run.
        func started(_ at: Int64) -> Int64? { at > 0 ? clock.convert(at, now: now) ?? now : nil }
        let running = h.running.map { p in
            WireCoreMapping.heldPart(opID: p.opID, part: p.part, attempt: p.attempt, startedAt: started(p.atUs))
        }
        let finished = h.finished.map { r in
            FinishedPart(part: WireCoreMapping.heldPart(opID: r.opID, part: r.part, attempt: r.attempt, startedAt: started(r.startedAtUs)),
                         outcome: Outcome(wire: r), at: clock.convert(r.atUs, now: now))
        }
        workerLinks.opened(id, info: WorkerLinks.Info(name: h.name, tags: tags, kinds: h.kinds, connectedAt: now), clock: clock, now: now)
        feed(.workerJoined(WorkerHello(worker: id, name: h.name, slots: Int(h.slots), tags: tags,
                                       kinds: h.kinds, credit: 0, prefetch: h.hasPrefetch ? Int(h.prefetch) : nil,
                                       running: running, finished: finished, replaces: replaced, owner: owner)))
        // (1.5) Their output, as a FINISHED's would be kept (a coordinator that restarted has none from
        // before) — only for attempts this worker may claim: a refused claim's output is never shown.
        for r in h.finished where r.carriesOutput && core.mayClaim(r.opID, by: id) {
            keepOutput(r, worker: id, at: clock.convert(r.atUs, now: now) ?? now)
        }
        var w = WireWelcome()
        w.workerID = WorkerName.text(id)
        w.heartbeatIntervalMs = config.heartbeatIntervalMs
        w.liveness = config.liveness
        send(.welcome(w), to: routing)
        // Up to 100 join lines per window (a cluster starting), then a count.
        if let suppressed = logLimiter.admit("joined", burst: 100, now: now) {
            logger.info("worker \(WorkerName.sessionText(id)) '\(clipped(h.name))' joined: \(h.slots) slots, kinds \(clipped(h.kinds)), tags \(clipped(h.tags))\(heldBack(suppressed, "more registrations not logged"))")
        }
    }

    /// Ends the shell's side of a worker session that a new HELLO replaces (the core loses it with that
    /// HELLO: `WorkerHello.replaces`): late messages from it are fenced, and with `tell` it hears DISCONNECT.
    private mutating func endSession(_ id: UInt64, reason: String, tell: Bool) {
        if tell {
            var d = WireDisconnect()
            d.reason = reason
            send(.disconnect(d), toWorker: id)
        }
        workerLinks.markLost(id)          // what its HELLO said goes with it
        peers.workerLost(id, now: now)
    }

    mutating func workerMessage(_ message: Message, from routing: [UInt8]) {
        guard case .worker(let w)? = peers.role(of: routing) else {
            if case .heartbeat = message { return }   // a watching client's heartbeat
            if case .disconnect = message, case .client(let c)? = peers.role(of: routing) {
                unwatch(c)
                return
            }
            sendError(.unexpected, "\(message.command) before HELLO: register first", requestID: 0,
                      command: message.command.rawValue, to: routing)
            return
        }
        switch message {
        case .credit(let c): feed(.credit(worker: w, grant: Int(c.credit)))
        case .started(let s):
            // One clock lookup per message, not per record (this is every operation's path).
            var clock = workerLinks.clocks[w]
            clock?.observe(sent: s.sentUs, receivedAt: now)
            for p in s.parts {
                let at = clock?.convert(p.atUs, now: now)
                feed(.partStarted(WireCoreMapping.partRef(worker: w, p.opID, part: p.part, attempt: p.attempt, token: p.token, at: at)))
            }
            if let clock { workerLinks.update(clock, of: w) }
        case .progress(let p):
            for r in p.records {
                let fraction = r.total > 0 ? Double(r.done) / Double(r.total) : r.fraction
                feed(.progress(WireCoreMapping.partRef(worker: w, r.opID, part: r.part, attempt: r.attempt), fraction: fraction,
                               message: r.message))
            }
        case .finished(let f):
            var clock = workerLinks.clocks[w]
            clock?.observe(sent: f.sentUs, receivedAt: now)
            // The records are read in place: `for r in f.records` copied each (a retain per field, and a release).
            f.records.withUnsafeBufferPointer { records in
                for i in records.indices {
                    // The credit rides on the last record so the core applies it once, fenced or not.
                    let grant = i == records.count - 1 ? Int(f.credit) : 0
                    if records[i].startedAtUs > 0 {
                        // Started and finished between two reports: its start rides on the record.
                        let started = clock?.convert(records[i].startedAtUs, now: now)
                        feed(.partStarted(WireCoreMapping.partRef(worker: w, records[i].opID, part: records[i].part, attempt: records[i].attempt,
                                                                  token: records[i].token, at: started)))
                    }
                    let at = clock?.convert(records[i].atUs, now: now)
                    // (1.5) Output tails, when the record has any (a noop's has none: nothing is done for it).
                    if records[i].carriesOutput { keepOutput(records[i], worker: w, at: at ?? now) }
                    feed(.partFinished(WireCoreMapping.partRef(worker: w, records[i].opID, part: records[i].part, attempt: records[i].attempt,
                                                               token: records[i].token, at: at),
                                       Outcome(wire: records[i]), grant: grant))
                }
            }
            if let clock { workerLinks.update(clock, of: w) }
        case .heartbeat: feed(.heartbeat(worker: w))
        case .disconnect(let d):
            if !workerLinks.isLost(w) {
                feed(.workerLost(worker: w, reason: "worker left: \(d.reason)"))
                if let suppressed = logLimiter.admit("left", burst: 100, now: now) {
                    logger.info("worker \(WorkerName.sessionText(w)) left: \(clipped(d.reason))\(heldBack(suppressed, "more departures not logged"))")
                }
            }
            peers.forgetWorker(w)
            workerLinks.closed(w)
            return
        default: return
        }
        if workerLinks.isLost(w) {
            // Its messages were fenced by the core; make it start a new session.
            var d = WireDisconnect()
            d.reason = "you were declared lost; register again"
            send(.disconnect(d), to: routing)
        }
    }
}
