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

    /// Two copies both written after the copy: neither sees the other's writes or appends (the store
    /// left behind marks its pages shared too), and a page no other copy holds any more is not copied.
    @Test func testBothCopiesWrite() {
        let size = PagedColumn<Int>.pageSize
        var a = PagedColumn<Int>()
        for i in 0..<(size + 10) { a.append(i) }
        var b = a
        a[1] = -1                  // a takes its own page list
        b[2] = -2                  // b's pages are shared with a's: copied on its write
        b[size + 1] = -3
        a.append(99)
        b.append(77)
        #expect(a[1] == -1 && a[2] == 2 && a[size + 1] == size + 1 && a[size + 10] == 99)
        #expect(b[1] == 1 && b[2] == -2 && b[size + 1] == -3 && b[size + 10] == 77)
        var c = PagedColumn<[UInt8]>()
        c.append([1, 2])
        do {
            let snapshot = c
            c[0].append(3)
            #expect(snapshot[0] == [1, 2])
        }
        c[0].append(4)             // the snapshot is gone: written in place
        #expect(c[0] == [1, 2, 3, 4] && c.count == 1)
    }
}
