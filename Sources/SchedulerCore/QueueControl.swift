// S6/S8/S9: suspension, limits and re-prioritisation after submit.

extension Scheduler {
    mutating func setSuspended(_ ref: ClientRef, _ name: String, _ on: Bool, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        queues[q].suspended = on
        if !on { activateAll(q) }
        journalQueue(q, &out)
        out.append(.reply(ref, .ok))
    }

    mutating func setLimit(_ ref: ClientRef, _ name: String, _ n: Int, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        guard n >= -1, n <= Int(Int32.max) else {
            out.append(.reply(ref, .error(.invalid("maxConcurrent must be -1 or ≥ 0, got \(n)")))); return
        }
        queues[q].maxConcurrent = Int32(n)
        activateAll(q)
        journalQueue(q, &out)
        out.append(.reply(ref, .ok))
    }

    func journalQueue(_ q: QueueIndex, _ out: inout [Action]) {
        guard journaling else { return }
        let s = queues[q]
        out.append(.journal(.queueSettings(QueueSpec(name: s.name, maxConcurrent: Int(s.maxConcurrent), qos: s.qos, suspended: s.suspended, fairness: s.fairness))))
    }

    /// The op takes its place in its new level by submission order (S6). With `inherit`, a raise is passed on to every unfinished
    /// (transitive) dependency with a lower priority, so prerequisites are not left behind.
    /// With a `scope` (a caller limited to some queues), inheritance stops at dependencies outside it; the
    /// journal then records each op raised, so replay needs no scope.
    mutating func setPriority(_ ref: ClientRef, _ ref0: String, _ p: Int, _ inherit: Bool, _ run: String?,
                              scope: QueueScope? = nil, _ out: inout [Action]) {
        let op: Int32
        switch resolve(ref0, in: run) {
        case .success(let o): op = o
        case .failure(let f): out.append(.reply(ref, .error(.notFound("\(f)")))); return
        }
        let id = ops.ids[Int(op)]
        guard OperationPriority(rawValue: p) != nil else {
            out.append(.reply(ref, .error(.invalid("invalid priority \(p) (use -8, -4, 0, 4, 8)")))); return
        }
        let scoped = inherit && scope != nil
        if journaling { out.append(.journal(.priorityChanged(id: id, priority: p, inherit: inherit && !scoped))) }
        let raise = p > Int(ops.hot[Int(op)].priority)
        reprioritise(op, Int8(p))
        var leftAlone = 0
        if inherit && raise {
            var work: [Int32] = [op]
            var passed = Set<Int32>()
            while let v = work.popLast() {
                let i = Int(v)
                let s = Int(ops.cold[i].depStart)
                for d in ops.depList[s..<s + Int(ops.cold[i].depCount)] {
                    let di = Int(d)
                    guard ops.hot[di].state != .finished && Int(ops.hot[di].priority) < p else { continue }
                    if let scope, !scope.allows(queue: queueName(of: d)) {
                        if passed.insert(d).inserted { leftAlone += 1 }
                        continue
                    }
                    if scoped && journaling { out.append(.journal(.priorityChanged(id: ops.ids[di], priority: p, inherit: false))) }
                    reprioritise(d, Int8(p))
                    work.append(d)
                }
            }
        }
        out.append(.reply(ref, leftAlone > 0 ? .okOutsideScope(leftAlone: leftAlone) : .ok))
    }

    mutating func reprioritise(_ op: Int32, _ p: Int8) {
        let i = Int(op)
        guard ops.hot[i].state != .finished else { return }
        ops.hot[i].priority = p
        if queues[lanes[Int(ops.hot[i].lane)].queue].fairness.ageingMicros != nil { agedAt[op] = now }
        record(op, .priority, part: 0, extra: Int32(p))
        // Its old heap entry goes stale; one waiting for its concurrency key keeps waiting (its new
        // priority counts when it goes back).
        if ops.hot[i].state == .ready && ops.hot[i].heapKey != Scheduler.heldForKey { pushReady(op) }
    }
}
