import HeapModule
import DequeModule

// Queues, placement classes, lanes and the per-QoS round-robin rings.

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

    /// Kinds are interned when an op uses them; live workers that named the kind in HELLO get it then.
    mutating func internKind(_ k: String) -> Int32 {
        if let i = kindIndex[k] { return i }
        let i = Int32(kindNames.count)
        kindNames.append(k); kindIndex[k] = i
        for w in workers.indices where workers[w].alive && workers[w].kindNames.contains(k) { workers[w].kinds.insert(i) }
        return i
    }

    /// Tag bit, or nil when 64 distinct tags are already in use. Interned when an op requires the tag;
    /// live workers that have it get the bit then.
    mutating func internTag(_ t: String) -> Int? {
        if let b = tagBits[t] { return b }
        guard tagBits.count < 64 else { return nil }
        let b = tagBits.count
        tagBits[t] = b
        for w in workers.indices where workers[w].alive && workers[w].tagNames.contains(t) { workers[w].tags |= 1 << UInt64(b) }
        return b
    }

    func capable(_ w: WorkerState, _ c: PlacementClass) -> Bool {
        w.alive && w.kinds.contains(c.kind) && (c.requires & ~w.tags) == 0
    }

    mutating func placementClass(kind: Int32, requires: UInt64) -> Int32 {
        // Classes are few; key mixes kind and tag mask.
        let key = UInt64(UInt32(kind)) &* 0x9E37_79B9_7F4A_7C15 ^ requires
        if let c = classIndex[key], classes[Int(c)].kind == kind, classes[Int(c)].requires == requires { return c }
        for (i, c) in classes.enumerated() where c.kind == kind && c.requires == requires { return Int32(i) }
        let c = Int32(classes.count)
        var pc = PlacementClass(kind: kind, requires: requires)
        for w in workers.indices where capable(workers[w], pc) {
            pc.capable.append(WorkerIndex(w))
            workers[w].classes.append(c)
            if workers[w].credit > 0 {
                pc.credit += workers[w].credit
                pc.rr.append((WorkerIndex(w), workers[w].creditEpoch))
            }
        }
        classes.append(pc)
        if classIndex[key] == nil { classIndex[key] = c }
        return c
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

    /// Drops stale heads; returns the valid head entry of share `s`'s heap in lane `l`.
    @inline(__always) mutating func cleanHeap(_ l: Int, _ s: Int) -> ReadyEntry? {
        if s == 0 { return cleanHeap(l) }
        while let e = lanes[l].otherHeaps[s - 1].max {
            if isLiveReady(e) { return e }
            _ = lanes[l].otherHeaps[s - 1].popMax()
        }
        return nil
    }

    @inline(__always) func isLiveReady(_ e: ReadyEntry) -> Bool {
        let i = Int(e.op)
        return ops.hot[i].state == .ready && ops.hot[i].heapKey == e.key && ops.hot[i].flags & Flag.cancelled == 0
    }

    /// Every heap entry of lane `l` (stale ones included).
    func readyEntries(_ l: Int) -> [ReadyEntry] {
        lanes[l].allHeaps.flatMap { $0.unordered }
    }

    /// Whether lane `l` has no heap entry at all (with sharing, a non-empty share heap always has a front).
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
