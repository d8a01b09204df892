import HeapModule
import DequeModule

// Queues, lanes and the per-QoS round-robin rings (placement classes: WorkerPool.swift).

extension Scheduler {
    mutating func ensureQueue(_ spec: QueueSpec) -> QueueIndex {
        if let q = queueIndex[spec.name] { return q }
        let q = QueueIndex(queues.count)
        epochs.append(Epoch(unfinished: 0))
        queues.append(QueueState(name: spec.name, maxConcurrent: Int32(spec.maxConcurrent), qos: spec.qos,
                                 suspended: spec.suspended, currentEpoch: Int32(epochs.count - 1)))
        queueIndex[spec.name] = q
        shareTables.append(ShareTable())
        return q
    }

    mutating func laneFor(queue q: QueueIndex, qos: UInt8, cls: Int32) -> Int32 {
        let key = UInt64(UInt32(q.raw)) << 35 | UInt64(qos) << 32 | UInt64(UInt32(cls))
        if let l = laneIndex[key] { return l }
        let l = Int32(lanes.count)
        var lane = Lane(queue: q, qos: qos, cls: cls)
        lane.sharing = shareTables[q].isSharing
        lanes.append(lane)
        laneIndex[key] = l
        queues[q].lanesByQos[Int(qos)].append(l)
        return l
    }

    /// Puts `q` on the ring of `level` if it may have something to start there.
    mutating func activate(_ q: QueueIndex, level: Int) {
        let bit = UInt8(1) << UInt8(level)
        if queues[q].inRing & bit != 0 || queues[q].suspended { return }
        queues[q].inRing |= bit
        rings[level].append(q)
    }

    mutating func activateAll(_ q: QueueIndex) {
        for level in 0..<5 where !queues[q].lanesByQos[level].isEmpty { activate(q, level: level) }
    }

    /// Puts a ready op on its lane's heap, at its place by priority and submission order.
    mutating func pushReady(_ op: Int32) {
        let i = Int(op)
        let key = readyKey(op, ops.hot[i].priority)
        ops.hot[i].heapKey = key
        let l = Int(ops.hot[i].lane)
        if isSharing(lane: l) {
            pushShared(l, Int(ops.hot[i].share), ReadyEntry(key: key, op: op))
        } else {
            lanes[l].heap.insert(ReadyEntry(key: key, op: op))
        }
        activate(lanes[l].queue, level: Int(lanes[l].qos))
    }

    mutating func pushPartial(_ op: Int32) {
        let i = Int(op)
        guard ops.hot[i].flags & Flag.inPartials == 0 else { return }
        ops.hot[i].flags |= Flag.inPartials
        let l = Int(ops.hot[i].lane)
        lanes[l].partials.append(op)
        activate(lanes[l].queue, level: Int(lanes[l].qos))
    }

    /// The lane's next ready op (by share turns when the queue shares, FairShare.swift); stale entries are dropped.
    @inline(__always) mutating func cleanHead(_ l: Int) -> ReadyEntry? {
        isSharing(lane: l) ? cleanSharedHead(l) : cleanHeap(l)
    }

    /// Drops stale heads; returns the valid head entry of the lane's slot-0 heap.
    @inline(__always) mutating func cleanHeap(_ l: Int) -> ReadyEntry? {
        while let e = lanes[l].heap.max {
            if isLiveReady(e) { return e }
            _ = lanes[l].heap.popMax()
        }
        return nil
    }

    /// Drops stale heads; returns the valid head entry of share `s`'s queue in (sharing) lane `l`.
    @inline(__always) mutating func cleanHeap(_ l: Int, _ s: Int) -> ReadyEntry? {
        while let e = lanes[l].shares[s].max {
            if isLiveReady(e) { return e }
            _ = lanes[l].shares[s].popMax()
        }
        return nil
    }

    @inline(__always) func isLiveReady(_ e: ReadyEntry) -> Bool {
        let i = Int(e.op)
        return ops.hot[i].state == .ready && ops.hot[i].heapKey == e.key && ops.hot[i].flags & Flag.cancelled == 0
    }

    /// Every heap entry of lane `l` (stale ones included).
    func readyEntries(_ l: Int) -> [ReadyEntry] {
        lanes[l].entriesBySlot.flatMap { $0 }
    }

    /// Whether lane `l` has no heap entry at all (with sharing, a non-empty share queue always has a front).
    @inline(__always) func heapsEmpty(_ l: Int) -> Bool {
        isSharing(lane: l) ? lanes[l].fronts.isEmpty : lanes[l].heap.isEmpty
    }

    mutating func cleanPartials(_ l: Int) -> Int32? {
        while let op = lanes[l].partials.first {
            let i = Int(op)
            if ops.hot[i].state.occupiesQueue && ops.hot[i].waitingParts > 0 && ops.hot[i].flags & Flag.cancelled == 0 { return op }
            lanes[l].partials.removeFirst()
            ops.hot[i].flags &= ~Flag.inPartials
        }
        return nil
    }
}
