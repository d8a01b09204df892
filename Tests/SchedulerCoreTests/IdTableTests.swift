import XCTest
@testable import SchedulerCore

final class IdTableTests: XCTestCase {
    /// Inserts, removes a random half (backward-shift deletion), and checks every lookup against a Set.
    func testInsertFindRemoveAgainstAModel() {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<5000).map { "id\($0 * 7919 % 5003)-\($0)" }
        let keys = IdKeys(ids: ids, batch: nil, base: 0)
        var t = IdTable()
        for (i, id) in ids.enumerated() { XCTAssertNil(t.insert(id, Int32(i), keys)) }
        XCTAssertEqual(t.insert(ids[42], 99, keys), 42, "duplicate reports the existing index")
        var present = Set(0..<ids.count)
        for _ in 0..<2500 {
            let i = rng.int(ids.count)
            if present.remove(i) != nil { t.remove(ids[i], keys) }
        }
        XCTAssertEqual(t.count, present.count)
        for (i, id) in ids.enumerated() {
            XCTAssertEqual(t.find(id, keys), present.contains(i) ? Int32(i) : nil, id)
        }
        XCTAssertNil(t.find("absent", keys))
    }
}
