import Testing
@testable import SchedulerCore

@Suite struct IdTableTests {
    /// Inserts, removes a random half (backward-shift deletion), and checks every lookup against a Set.
    @Test func testInsertFindRemoveAgainstAModel() {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<5000).map { "id\($0 * 7919 % 5003)-\($0)" }
        let keys = IdKeys(ids: PagedColumn(ids), batch: nil, base: 0)
        var t = IdTable()
        for (i, id) in ids.enumerated() { #expect(t.insert(id, Int32(i), keys) == nil) }
        #expect(t.insert(ids[42], 99, keys) == 42, "duplicate reports the existing index")
        var present = Set(0..<ids.count)
        for _ in 0..<2500 {
            let i = rng.int(ids.count)
            if present.remove(i) != nil { t.remove(ids[i], keys) }
        }
        #expect(t.count == present.count)
        for (i, id) in ids.enumerated() {
            #expect(t.find(id, keys) == (present.contains(i) ? Int32(i) : nil), "\(id)")
        }
        #expect(t.find("absent", keys) == nil)
    }

    /// Growth moves keys a few slots per insert: while a doubling is under way, finds, duplicate inserts
    /// and removes (of keys still in the old table and of keys already moved) agree with a model, and
    /// every key is in the table once the move ends.
    @Test func testGrowthMovesKeysIncrementally() {
        var rng = SplitMix64(seed: 11)
        let ids = (0..<20_000).map { "op\($0 &* 2_654_435_761 % 1_000_003)-\($0)" }
        let keys = IdKeys(ids: PagedColumn(ids), batch: nil, base: 0)
        var t = IdTable()
        var present = Set<Int>()
        var sawMigration = false
        for (i, id) in ids.enumerated() {
            #expect(t.insert(id, Int32(i), keys) == nil)
            present.insert(i)
            if t.isMigrating {
                sawMigration = true
                // Mid-move: a duplicate is found wherever it lives, and a random earlier key is removed.
                let j = rng.int(i + 1)
                #expect(t.insert(ids[j], Int32(j), keys) == (present.contains(j) ? Int32(j) : nil))
                if !present.contains(j) { t.remove(ids[j], keys) }
                if rng.int(4) == 0, present.remove(j) != nil { t.remove(ids[j], keys) }
                let k = rng.int(i + 1)
                #expect(t.find(ids[k], keys) == (present.contains(k) ? Int32(k) : nil), "\(ids[k]) mid-move")
            }
        }
        #expect(sawMigration)
        #expect(t.count == present.count)
        for (i, id) in ids.enumerated() {
            #expect(t.find(id, keys) == (present.contains(i) ? Int32(i) : nil), "\(id)")
        }
        // Whole-table work ends a move first; the table is no fuller than 3/4 afterwards.
        t.reserve(present.count + 1)
        #expect(!t.isMigrating)
        #expect(t.count * 4 <= t.slots.count * 3)
        for i in present { #expect(t.find(ids[i], keys) == Int32(i)) }
    }

    /// A doubling never holds the inserting call for the whole table: one insert moves at most
    /// `migrateSlots` old slots (counted here as the new table's fill right after the switch).
    @Test func testSwitchMovesOnlyAFewSlots() {
        // 1,024 slots are 3/4 full at 768 keys; the 769th switches (a table larger than migrateSlots).
        let ids = (0..<1_536).map { "k\($0)" }
        let keys = IdKeys(ids: PagedColumn(ids), batch: nil, base: 0)
        var t = IdTable()
        t.reserve(768)
        for i in 0..<768 { _ = t.insert(ids[i], Int32(i), keys) }
        #expect(!t.isMigrating && t.slots.count == 1_024)
        _ = t.insert(ids[768], 768, keys)
        #expect(t.isMigrating && t.slots.count == 2_048)
        #expect(t.slots.filter { $0 != 0 }.count <= IdTable.migrateSlots + 1)
        for i in 0...768 { #expect(t.find(ids[i], keys) == Int32(i)) }
        for i in 769..<1_536 { _ = t.insert(ids[i], Int32(i), keys) }
        #expect(!t.isMigrating)
        #expect(t.slots.filter { $0 != 0 }.count == 1_536)
    }

    /// Remapping indices (compaction) during a move ends the move and rewrites every key's index.
    @Test func testRemapDuringMigration() {
        let ids = (0..<800).map { "r\($0)" }
        let keys = IdKeys(ids: PagedColumn(ids), batch: nil, base: 0)
        var t = IdTable()
        t.reserve(768)
        for i in 0..<770 { _ = t.insert(ids[i], Int32(i), keys) }   // 1,024 slots switch at the 769th
        #expect(t.isMigrating)
        t.remap { $0 }
        #expect(!t.isMigrating)
        for i in 0..<770 { #expect(t.find(ids[i], keys) == Int32(i)) }
    }
}
