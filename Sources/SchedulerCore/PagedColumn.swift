/// A per-op column in pages of `pageSize` elements (issue 25, a loop with a bound). One contiguous array
/// per column held the loop twice as the core grew: doubling copied every element at once (at 524,288
/// ops, ≈ 70 MB over the eleven columns in one SUBMIT), and after a snapshot request (the snapshot
/// thread reads a copy of the core) the first mutation of each column copied all of it — 45–64 ms of the
/// loop thread's CPU at 1M ops, measured. In pages, growth appends a page and copy-on-write copies only
/// the pages the loop touches (a page of `OpHot` is 224 KiB), each once.
struct PagedColumn<Element> {
    static var pageShift: Int { 12 }
    static var pageSize: Int { 1 << pageShift }
    static var pageMask: Int { pageSize - 1 }

    private var pages: [[Element]] = []
    private(set) var count = 0

    init() {}

    init<S: Sequence>(_ elements: S) where S.Element == Element {
        for e in elements { append(e) }
    }

    subscript(i: Int) -> Element {
        @inline(__always) get {
            // (The pages' own bounds checks catch an index out of range.)
            return pages[i &>> Self.pageShift][i & Self.pageMask]
        }
        @inline(__always) _modify {
            yield &pages[i &>> Self.pageShift][i & Self.pageMask]
        }
    }

    var isEmpty: Bool { count == 0 }
    var indices: Range<Int> { 0..<count }

    @inline(__always) mutating func append(_ e: Element) {
        if count & Self.pageMask == 0 {
            var page: [Element] = []
            page.reserveCapacity(Self.pageSize)
            pages.append(page)
        }
        pages[count &>> Self.pageShift].append(e)
        count += 1
    }

    /// Reserves room in the page list only: pages are allocated whole as they are needed.
    mutating func reserveCapacity(_ n: Int) {
        pages.reserveCapacity((n + Self.pageSize - 1) >> Self.pageShift)
    }

    /// The elements in `range`, as an array.
    subscript(range: Range<Int>) -> [Element] {
        range.map { self[$0] }
    }
}

extension PagedColumn: Sendable where Element: Sendable {}
