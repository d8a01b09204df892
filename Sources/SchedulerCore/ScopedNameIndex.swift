// Names scoped to a queue (share keys, concurrency keys) → their index. Open addressing with linear
// probing over 8-byte slots (a 32-bit hash tag and the entry's place + 1), the hash IdTable's FNV-1a:
// a batch with many share keys looks one up per change of key, and a Dictionary's SipHash cost some 250
// instructions a lookup. The hash is unkeyed: names come from authenticated clients only (A7), as op ids.
// Entries are never removed one at a time (re-sharing and compaction rebuild the index).

struct ScopedNameIndex<Value> {
    private var slots = [UInt64](repeating: 0, count: 16)
    private var keys: [QueueScopedName] = []
    private var values: [Value] = []

    var count: Int { keys.count }

    @inline(__always) private static func tag(_ key: QueueScopedName) -> UInt32 {
        IdTable.tag(key.name) ^ UInt32(bitPattern: key.queue.raw) &* 0x9E37_79B9
    }

    subscript(key: QueueScopedName) -> Value? {
        get { find(key).map { values[$0] } }
        set {
            guard let newValue else { preconditionFailure("ScopedNameIndex: an entry is not removed alone (rebuild it)") }
            if let e = find(key) { values[e] = newValue } else { insert(key, newValue) }
        }
    }

    /// The entries whose key `keep` accepts, in a new index (a rare, admin-made change).
    func filter(_ keep: (QueueScopedName) -> Bool) -> ScopedNameIndex {
        var kept = ScopedNameIndex()
        for (k, v) in zip(keys, values) where keep(k) { kept[k] = v }
        return kept
    }

    private func find(_ key: QueueScopedName) -> Int? {
        let t = Self.tag(key)
        let mask = slots.count - 1
        var p = Int(t) & mask
        while true {
            let s = slots[p]
            if s == 0 { return nil }
            if UInt32(truncatingIfNeeded: s >> 32) == t {
                let e = Int(UInt32(truncatingIfNeeded: s)) - 1
                if keys[e] == key { return e }
            }
            p = (p + 1) & mask
        }
    }

    private mutating func insert(_ key: QueueScopedName, _ value: Value) {
        if (keys.count + 1) * 4 > slots.count * 3 {
            // Twice the size; the tags are in the slots, so no name is hashed again.
            let old = slots
            slots = [UInt64](repeating: 0, count: old.count * 2)
            for s in old where s != 0 { place(s) }
        }
        keys.append(key)
        values.append(value)
        place(UInt64(Self.tag(key)) << 32 | UInt64(keys.count))
    }

    private mutating func place(_ slot: UInt64) {
        let mask = slots.count - 1
        var p = Int(UInt32(truncatingIfNeeded: slot >> 32)) & mask
        while slots[p] != 0 { p = (p + 1) & mask }
        slots[p] = slot
    }
}

extension ScopedNameIndex: Sendable where Value: Sendable {}
