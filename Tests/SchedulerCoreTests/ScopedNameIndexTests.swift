import Testing
@testable import SchedulerCore

@Suite struct ScopedNameIndexTests {
    /// Names in several queues (the same name in two queues is two keys), through many doublings, checked
    /// against a Dictionary after every insert and update; `filter` keeps exactly what it accepts.
    @Test func lookupsAgreeWithADictionaryThroughGrowthAndFilter() {
        var rng = SplitMix64(seed: 5)
        var index = ScopedNameIndex<Int32>()
        var model: [String: Int32] = [:]   // "queue/name"
        func key(_ q: Int, _ n: String) -> QueueScopedName { QueueScopedName(queue: QueueIndex(raw: Int32(q)), name: n) }
        for i in 0..<3_000 {
            let q = rng.int(3), name = "k\(rng.int(1_500))"
            index[key(q, name)] = Int32(i)
            model["\(q)/\(name)"] = Int32(i)
            if i % 97 == 0 || i == 2_999 {
                for q in 0..<3 { for n in 0..<1_500 {
                    #expect(index[key(q, "k\(n)")] == model["\(q)/k\(n)"], "\(q)/k\(n) after \(i) inserts")
                } }
            }
        }
        #expect(index.count == model.count)
        let kept = index.filter { $0.queue.raw != 1 }
        #expect(kept.count == model.keys.filter { !$0.hasPrefix("1/") }.count)
        for (k, v) in model {
            let parts = k.split(separator: "/")
            let q = Int(parts[0])!
            #expect(kept[key(q, String(parts[1]))] == (q == 1 ? nil : v))
        }
        #expect(index[key(0, "absent")] == nil)
        #expect(index[key(0, "")] == nil)
    }
}
