// Fair share between share keys (A11), concurrency keys and rate limits: the core's part.

extension Scheduler {
    mutating func setFairness(_ ref: ClientRef, _ name: String, _ f: QueueFairness, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        if let p = f.problem { out.append(.reply(ref, .error(.invalid("queue \(name): \(p)")))); return }
        applyFairness(q, f)
        journalQueue(q, &out)
        out.append(.reply(ref, .ok))
    }

    mutating func applyFairness(_ q: Int32, _ f: QueueFairness) {
        queues[Int(q)].fairness = f
        activateAll(q)
    }

    func fairnessStatus(_ q: Int32) -> QueueFairnessStatus {
        QueueFairnessStatus(queue: queues[Int(q)].name, fairness: queues[Int(q)].fairness, shares: [], keys: [], nextTokenAt: nil)
    }
}
