import Foundation
import OpSpec
import WireProtocol

/// The workloads that do more than submit and wait: priority probes, random cancels, a held backlog.
extension Driver {
    /// A backlog of `ops` at mixed priorities (veryLow, low, normal, seeded) saturates every slot; then
    /// `probes` veryHigh ops arrive one at a time,
    /// at seeded random gaps of 0.5–1.5 op durations. A probe's wait is (finished − submitted − op
    /// duration) on the coordinator's clock: how long it stood behind the backlog. OperationQueue's
    /// promise, stretched over workers, is that this is bounded by the ops already running, not by the
    /// backlog: one op duration for a slot to free (the coordinator had no credit left) plus at most
    /// one more on the worker that got it (its prefetched op took the slot first). Afterwards the rest
    /// of the backlog is cancelled, so the run stays short.
    func priorityRun() throws -> [String] {
        let levels: [OperationPriority] = [.veryLow, .low, .normal]
        let backlog = (0..<o.ops).map { template.op("bg\($0)", priority: Int32(levels.randomElement(using: &rng)!.rawValue)) }
        try submit(backlog)
        // Saturated: every slot holds a backlog op and more are waiting.
        let until = now() + min(30, secondsLeft)
        while now() < until {
            if let c = try queueCounts(queue), c.executing >= UInt64(report.slotsTotal), c.ready > 0 { break }
            Thread.sleep(forTimeInterval: Double(max(o.opMs, 10)) / 4000)   // polling a remote count
        }
        var probeIDs: [String] = []
        var ahead: [UInt64] = []
        for k in 0..<o.probes {
            Thread.sleep(forTimeInterval: Double(o.opMs) / 1000 * Double.random(in: 0.5...1.5, using: &rng))
            if let c = try queueCounts(queue) { ahead.append(c.ready + c.pending) }
            let p = template.op("probe\(k)", priority: Int32(OperationPriority.veryHigh.rawValue))
            try submit([p])
            probeIDs.append(p.id)
        }
        try wait(ids: probeIDs)
        var cancel = WireCancelOps()
        cancel.queue = queue
        cancel.reason = "load test: backlog no longer needed"
        _ = try conn.request(.cancelOps(cancel))
        try wait(queue: queue)

        var probe = LatencyRecorder()
        var s = WireStatus()
        s.opIds = probeIDs
        guard case .statusReply(let r) = try conn.request(.status(s)) else { throw LoadTestError("unexpected reply to STATUS") }
        for op in r.ops where op.finishedUs > 0 {
            let wait = isTimed ? op.finishedUs - op.submittedUs - Int64(o.opMs) * 1000 : op.startedUs - op.submittedUs
            probe.record(micros: wait)
        }
        latencies["priority_wait"] = probe
        let boundMicros = UInt64(2 * o.opMs * 1000 + 50_000)
        let maxWait = probe.isEmpty ? UInt64.max : probe.histogram.max
        let fifoSeconds = Double(ahead.min() ?? 0) * Double(o.opMs) / 1000 / Double(max(1, report.slotsTotal))
        report.checks.append(Check(
            name: "veryHigh waits are bounded by running ops, not by the backlog",
            ok: probe.histogram.totalCount == UInt64(o.probes) && maxWait <= boundMicros,
            detail: String(format: "max wait %.1f ms ≤ %.1f ms (2 op durations + 50 ms) over %d probes; backlog ahead of each probe %llu–%llu ops (FIFO would wait ≥ %.1f s)",
                           Double(maxWait) / 1000, Double(boundMicros) / 1000, o.probes, ahead.min() ?? 0, ahead.max() ?? 0, fifoSeconds)))
        if (ahead.min() ?? 0) == 0 { report.notes.append("the backlog ran out before the last probe: use more --ops") }
        return backlog.map(\.id) + probeIDs
    }

    /// `ops` sleep ops; `cancelFraction` × ops cancels are sent at seeded random moments within the
    /// run's expected span, alternately aimed at a random op that is executing (dispatched: the worker
    /// must stop it) and one still waiting (the coordinator alone finishes it), as the WATCH stream
    /// last told. Latency: CANCEL-OPS sent → the WATCH event saying it finished cancelled.
    func cancelRun() throws -> [String] {
        let ops = Graphs.independent(template, n: o.ops)
        let spanSeconds = Double(o.ops * max(o.opMs, 1)) / 1000 / Double(max(1, report.slotsTotal))
        let moments = (0..<Int((Double(o.ops) * o.cancelFraction).rounded()))
            .map { _ in Double.random(in: 0...(spanSeconds * 0.9), using: &rng) }.sorted()
        let t0 = now()
        try submit(ops)
        var sent = 0
        for (k, at) in moments.enumerated() {
            while now() < t0 + at, secondsLeft > 0 {
                absorb(try conn.nextEvents(timeout: .microseconds(Int64((t0 + at - now()) * 1e6) + 1)))
            }
            let wantRunning = k % 2 == 0
            let candidates = ops.lazy.map(\.id).filter { id in
                let s = self.state(of: id)
                return !self.isCancelPending(id) && (wantRunning ? s == .executing : (s == nil || s == .pending || s == .ready))
            }
            guard let victim = Array(candidates).randomElement(using: &rng) else { continue }
            var c = WireCancelOps()
            c.opIds = [victim]
            noteCancelSent(victim, at: monotonicMicros())
            // An op that finished meanwhile is not an error; its pending cancel is dropped when its
            // FINISHED (not cancelled) event is read.
            guard case .ack = try conn.request(.cancelOps(c)) else { throw LoadTestError("unexpected reply to CANCEL-OPS") }
            sent += 1
            drainEvents()
        }
        try wait(queue: queue)
        report.notes.append("\(sent) cancels over \(String(format: "%.1f", spanSeconds * 0.9)) s, alternately of an executing and a waiting op; at \(moments.count - sent) moments there was none left to cancel")
        return ops.map(\.id)
    }

    /// `ops` noop ops submitted into a suspended queue: the coordinator's memory per queued op (RSS
    /// before and after, as it reports in STATUS). veryHigh probes in another queue measure dispatch
    /// latency with the backlog held and again while it drains; the drain rate is the throughput.
    func queuedRun() throws -> [String] {
        var held = WireQueueSettings()
        held.name = queue
        held.suspended = true
        let ops = Graphs.independent(template, n: o.ops)
        let before = try stats()
        let t0 = now()
        try submit(ops, queues: [held])
        let submitSeconds = now() - t0
        let after = try stats()
        report.coordinatorFigures.submitOpsS = (Double(o.ops) / submitSeconds).rounded()
        if before.coordinatorRssBytes > 0, after.coordinatorRssBytes > 0 {
            report.coordinatorFigures.bytesPerQueuedOp = ((Double(after.coordinatorRssBytes) - Double(before.coordinatorRssBytes)) / Double(o.ops)).rounded()
        }

        // Probes: a veryHigh noop in another queue, submitted → finished on the coordinator's clock (it is
        // dispatched to a worker and reported back), first with the backlog held, then while it drains.
        let probeTemplate = OpTemplate(queue: queue + "-probe", idPrefix: template.idPrefix, kind: BuiltinKind.noop, opMs: 0)
        var probeIDs: [String] = []
        func probe(_ name: String) throws {
            let p = probeTemplate.op(name, priority: Int32(OperationPriority.veryHigh.rawValue))
            try submit([p])
            try wait(ids: [p.id])
            probeIDs.append(p.id)
        }
        for k in 0..<o.probes { try probe("held\(k)") }

        var resume = WireQueueControl()
        resume.settings.name = queue
        resume.settings.suspended = false
        let t1 = now()
        _ = try conn.request(.queue(resume))
        for k in 0..<o.probes { try probe("drain\(k)") }
        try wait(queue: queue)
        let drain = now() - t1
        report.throughputOpsS = (Double(o.ops) / drain).rounded()

        var s = WireStatus()
        s.opIds = probeIDs
        if !probeIDs.isEmpty, case .statusReply(let r) = try conn.request(.status(s)) {
            for op in r.ops where op.finishedUs > 0 {
                let name = op.id.contains("/held") ? "probe_held" : "probe_draining"
                latencies[name, default: LatencyRecorder()].record(micros: op.finishedUs - op.submittedUs)
            }
        }
        report.notes.append(String(format: "held %d ops: submitted at %.0f ops/s; drained in %.2f s after resume", o.ops, Double(o.ops) / submitSeconds, drain))
        return ops.map(\.id) + probeIDs
    }
}
