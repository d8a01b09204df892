import Testing
@testable import SchedulerCore

@Suite struct IdTableTests {
    /// Inserts, removes a random half (backward-shift deletion), and checks every lookup against a Set.
    @Test func testInsertFindRemoveAgainstAModel() {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<5000).map { "id\($0 * 7919 % 5003)-\($0)" }
        let keys = IdKeys(ids: ids, batch: nil, base: 0)
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
}
