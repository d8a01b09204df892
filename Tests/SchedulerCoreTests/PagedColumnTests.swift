import Testing
@testable import SchedulerCore

@Suite struct PagedColumnTests {
    /// Appends across several pages; reads and in-place writes agree with an array model.
    @Test func testAppendReadWriteAcrossPages() {
        let n = PagedColumn<Int>.pageSize * 3 + 17
        var c = PagedColumn<Int>()
        var model: [Int] = []
        c.reserveCapacity(n)
        for i in 0..<n { c.append(i * 3); model.append(i * 3) }
        #expect(c.count == n && c.indices == 0..<n && !c.isEmpty)
        for i in stride(from: 0, to: n, by: 97) { c[i] += 1; model[i] += 1 }
        #expect(c.indices.allSatisfy { c[$0] == model[$0] })
        #expect(c[PagedColumn<Int>.pageSize - 1..<PagedColumn<Int>.pageSize + 2] == Array(model[PagedColumn<Int>.pageSize - 1..<PagedColumn<Int>.pageSize + 2]))
    }

    /// A copy (the snapshot's) keeps its values while the original is written and grown: pages are
    /// copied on write, each independently.
    @Test func testCopyIsIndependent() {
        let size = PagedColumn<String>.pageSize
        var c = PagedColumn<String>()
        for i in 0..<(size * 2) { c.append("v\(i)") }
        let snapshot = c
        c[3] = "changed"
        c[size + 5] = "changed too"
        c.append("new")
        #expect(snapshot.count == size * 2 && c.count == size * 2 + 1)
        #expect(snapshot[3] == "v3" && snapshot[size + 5] == "v\(size + 5)")
        #expect(c[3] == "changed" && c[size + 5] == "changed too" && c[size * 2] == "new")
    }

    /// A struct element is modified in place through the subscript (the core's `ops.hot[i].field = …`).
    @Test func testFieldWritesInPlace() {
        struct Pair { var a = 0, b = 0 }
        var c = PagedColumn<Pair>()
        for _ in 0..<(PagedColumn<Pair>.pageSize + 1) { c.append(Pair()) }
        c[PagedColumn<Pair>.pageSize].b = 7
        c[0].a = 5
        #expect(c[PagedColumn<Pair>.pageSize].b == 7 && c[0].a == 5 && c[1].a == 0)
    }
}
