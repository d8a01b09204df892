// Op id → dense index. Open addressing with linear probing over 8-byte slots (32-bit hash tag + index),
// keys compared against the op id column: ≈ 16 B per op instead of ≈ 40 for [String: Int32], one cache
// line per probe, and FNV-1a instead of SipHash. The hash is unkeyed and deterministic: ids come from
// authenticated clients only (A7).

/// Where keys live: accepted ops' keys, plus a batch being submitted (indices ≥ base).
struct IdKeys {
    var ids: PagedColumn<String>
    var batch: UnsafeBufferPointer<String>?
    var base: Int32
    @inline(__always) func key(_ i: Int32) -> String {
        if let b = batch, i >= base { return b[Int(i - base)] }
        return ids[Int(i)]
    }
}

/// Grows without one long pause (issue 25, a loop with a bound): past 3/4 full, a table twice the size
/// takes over and the old one's entries move into it a few slots per insert (`migrateSlots`), so the
/// cost of doubling is spread over the next inserts instead of rehashing every key in one input (at
/// 786,432 keys that took tens of ms). While moving, a key is in exactly one table: the new one, or the
/// old one at a slot at or past `cursor` (old slots below it were moved and are left as they were, so
/// the old table's probe chains stay intact; a key removed from the old table leaves a tombstone).
struct IdTable {
    private(set) var slots = [UInt64](repeating: 0, count: 64)
    /// The table being moved from (empty when none) and the first of its slots not moved yet.
    private var old: [UInt64] = []
    private var cursor = 0
    /// Keys in both tables.
    private(set) var count = 0

    /// Old slots moved per insert: the old table (3/4 full at the switch) is emptied after 1/64 of its
    /// size in inserts (a few hundred instructions each). Sooner is cheaper: while moving, a lookup of a
    /// key not moved yet probes both tables (at 8 slots an insert, that was 2 % of the core's instructions).
    static let migrateSlots = 64
    /// A key removed from the old table while moving (never in the new one).
    private static let tombstone = UInt64.max

    var isMigrating: Bool { !old.isEmpty }

    /// FNV-1a over the id's bytes, read in place: stepping a `String.UTF8View` costs some 35
    /// instructions a byte (RunNames.slashOffset), and every report and dependency looks an id up.
    @inline(__always) static func tag(_ s: String) -> UInt32 {
        if let t = s.utf8.withContiguousStorageIfAvailable({ tag(bytes: $0) }) { return t }
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return finish(h)
    }

    @inline(__always) private static func tag(bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return finish(h)
    }

    @inline(__always) private static func finish(_ h: UInt64) -> UInt32 {
        var h = h
        h ^= h >> 32
        h = h &* 0x9E37_79B9_7F4A_7C15
        return UInt32(truncatingIfNeeded: h >> 32)
    }

    func find(_ key: String, _ keys: IdKeys) -> Int32? {
        let t = IdTable.tag(key)
        let mask = slots.count - 1
        var p = Int(t) & mask
        while true {
            let s = slots[p]
            if s == 0 { break }
            if UInt32(truncatingIfNeeded: s >> 32) == t {
                let i = Int32(truncatingIfNeeded: s & 0xFFFF_FFFF) - 1
                if keys.key(i) == key { return i }
            }
            p = (p + 1) & mask
        }
        if old.isEmpty { return nil }
        return findOld(key, t, keys).map { Int32(truncatingIfNeeded: old[$0] & 0xFFFF_FFFF) - 1 }
    }

    /// The old table's slot holding `key`, if not moved yet.
    private func findOld(_ key: String, _ t: UInt32, _ keys: IdKeys) -> Int? {
        let mask = old.count - 1
        var p = Int(t) & mask
        while true {
            let s = old[p]
            if s == 0 { return nil }
            if s != IdTable.tombstone, p >= cursor, UInt32(truncatingIfNeeded: s >> 32) == t,
               keys.key(Int32(truncatingIfNeeded: s & 0xFFFF_FFFF) - 1) == key { return p }
            p = (p + 1) & mask
        }
    }

    /// Inserts `key → index` unless present; returns the existing index if it was.
    mutating func insert(_ key: String, _ index: Int32, _ keys: IdKeys) -> Int32? {
        if !old.isEmpty {
            migrate(IdTable.migrateSlots)
        } else if (count + 1) * 4 > slots.count * 3 {
            old = slots
            slots = [UInt64](repeating: 0, count: old.count * 2)
            cursor = 0
            migrate(IdTable.migrateSlots)
        }
        let t = IdTable.tag(key)
        let mask = slots.count - 1
        var p = Int(t) & mask
        while true {
            let s = slots[p]
            if s == 0 { break }
            if UInt32(truncatingIfNeeded: s >> 32) == t {
                let i = Int32(truncatingIfNeeded: s & 0xFFFF_FFFF) - 1
                if keys.key(i) == key { return i }
            }
            p = (p + 1) & mask
        }
        if !old.isEmpty, let q = findOld(key, t, keys) { return Int32(truncatingIfNeeded: old[q] & 0xFFFF_FFFF) - 1 }
        slots[p] = UInt64(t) << 32 | UInt64(UInt32(index + 1))
        count += 1
        return nil
    }

    /// Removes `key` (backward-shift deletion keeps probe chains intact; a tombstone in the old table).
    mutating func remove(_ key: String, _ keys: IdKeys) {
        let t = IdTable.tag(key)
        let mask = slots.count - 1
        var p = Int(t) & mask
        while true {
            let s = slots[p]
            if s == 0 {
                if !old.isEmpty, let q = findOld(key, t, keys) {
                    old[q] = IdTable.tombstone
                    count -= 1
                }
                return
            }
            if UInt32(truncatingIfNeeded: s >> 32) == t, keys.key(Int32(truncatingIfNeeded: s & 0xFFFF_FFFF) - 1) == key { break }
            p = (p + 1) & mask
        }
        var hole = p
        var j = (p + 1) & mask
        while slots[j] != 0 {
            let home = Int(UInt32(truncatingIfNeeded: slots[j] >> 32)) & mask
            // Move j into the hole unless its home lies cyclically in (hole, j].
            let inRange = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j)
            if !inRange {
                slots[hole] = slots[j]
                hole = j
            }
            j = (j + 1) & mask
        }
        slots[hole] = 0
        count -= 1
    }

    mutating func reserve(_ n: Int) {
        finishMigration()
        var cap = slots.count
        while n * 4 > cap * 3 { cap *= 2 }
        if cap > slots.count { rehash(cap) }
    }

    /// Moves every entry of the old table still to move (before whole-table work: reserve, remap).
    mutating func finishMigration() {
        if !old.isEmpty { migrate(old.count - cursor) }
    }

    /// Moves the next `n` old slots into the new table; drops the old table when all are moved.
    private mutating func migrate(_ n: Int) {
        let end = min(cursor + n, old.count)
        let mask = slots.count - 1
        while cursor < end {
            let s = old[cursor]
            cursor += 1
            if s == 0 || s == IdTable.tombstone { continue }
            var p = Int(UInt32(truncatingIfNeeded: s >> 32)) & mask
            while slots[p] != 0 { p = (p + 1) & mask }
            slots[p] = s
        }
        if cursor == old.count { old = []; cursor = 0 }
    }

    private mutating func rehash(_ cap: Int) {
        let old = slots
        slots = [UInt64](repeating: 0, count: cap)
        let mask = cap - 1
        for s in old where s != 0 {
            var p = Int(UInt32(truncatingIfNeeded: s >> 32)) & mask
            while slots[p] != 0 { p = (p + 1) & mask }
            slots[p] = s
        }
    }
}

extension IdTable {
    /// Rewrites every stored index through `f` (compaction renumbers ops; no key is dropped here).
    mutating func remap(_ f: (Int32) -> Int32) {
        finishMigration()
        for p in slots.indices where slots[p] != 0 {
            let s = slots[p]
            let i = Int32(truncatingIfNeeded: s & 0xFFFF_FFFF) - 1
            slots[p] = s & 0xFFFF_FFFF_0000_0000 | UInt64(UInt32(f(i) + 1))
        }
    }
}
