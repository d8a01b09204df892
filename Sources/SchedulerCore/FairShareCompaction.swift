import HeapModule

// Share slots and concurrency keys live as long as an op names them (issue 28: a submitter that names a
// new share or concurrency key per op must not grow these tables for ever). `compact()` drops the ones
// no live op names any more: evicted ops name nothing. The kept ones keep their state (a share's pass
// and turn, a key's holders, waiters and rate) under new numbers; key-rate wakes follow their keys.

extension Scheduler {
    /// Drops the share slots no live op of their queue names (slot 0 stays: when sharing stops, its ops
    /// go back to the lanes' heap).
    /// Returns, per queue, old slot → new slot (−1 dropped), or an empty list where nothing moved. The
    /// caller rebuilds the lanes' heaps with it; a queue left with one slot stops sharing.
    mutating func compactShareSlots() -> [[Int32]] {
        var used = shareTables.map { [Bool](repeating: false, count: $0.slots.count) }
        for i in 0..<ops.count {
            let q = lanes[Int(ops.hot[i].lane)].queue.index
            used[q][Int(ops.hot[i].share)] = true
        }
        var remaps = [[Int32]](repeating: [], count: shareTables.count)
        for q in shareTables.indices where used[q].dropFirst().contains(false) {
            var remap = [Int32](repeating: -1, count: used[q].count)
            var kept: [ShareSlot] = []
            for (s, slot) in shareTables[q].slots.enumerated() where s == 0 || used[q][s] {
                remap[s] = Int32(kept.count)
                kept.append(slot)
            }
            shareTables[q].slots = kept
            remaps[q] = remap
        }
        guard remaps.contains(where: { !$0.isEmpty }) else { return remaps }
        for i in 0..<ops.count {
            let remap = remaps[lanes[Int(ops.hot[i].lane)].queue.index]
            if !remap.isEmpty { ops.hot[i].share = remap[Int(ops.hot[i].share)] }
        }
        for q in shareTables.indices where !remaps[q].isEmpty && shareTables[q].slots.count == 1 {
            shareTables[q].isSharing = false
            for l in queues[q].lanesByQos.joined() { lanes[Int(l)].sharing = false }
        }
        shareIndex = [:]
        for (q, table) in shareTables.enumerated() {
            for (s, slot) in table.slots.enumerated() where s > 0 || table.named {
                shareIndex[QueueScopedName(queue: QueueIndex(q), name: slot.name)] = Int32(s)
            }
        }
        return remaps
    }

    /// Drops the concurrency keys no live op names (a key's holders and waiters are live ops of it).
    mutating func compactConcurrencyKeys() {
        guard !concurrencyKeys.isEmpty else { return }
        var used = [Bool](repeating: false, count: concurrencyKeys.count)
        for i in 0..<ops.count where ops.hot[i].concurrencyKey.isKey { used[ops.hot[i].concurrencyKey.index] = true }
        guard used.contains(false) else { return }
        var remap = [Int32](repeating: -1, count: used.count)
        var kept: [ConcurrencyKey] = []
        for (k, key) in concurrencyKeys.enumerated() where used[k] {
            remap[k] = Int32(kept.count)
            kept.append(key)
        }
        for i in 0..<ops.count where ops.hot[i].concurrencyKey.isKey {
            ops.hot[i].concurrencyKey = ConcurrencyKeyIndex(raw: remap[ops.hot[i].concurrencyKey.index])
        }
        concurrencyKeys = kept
        concurrencyKeyIndex = [:]
        for (k, key) in kept.enumerated() { concurrencyKeyIndex[QueueScopedName(queue: key.queue, name: key.name)] = ConcurrencyKeyIndex(k) }
        // A dropped key has no waiters, so no wake to keep; the kept keys' current wakes are retargeted
        // (stale entries go).
        timers.keyRates = Heap(kept.enumerated().compactMap { k, key in
            key.rateWakeAt == .max ? nil : TargetDeadline(at: key.rateWakeAt, target: ConcurrencyKeyIndex(k))
        })
    }
}
