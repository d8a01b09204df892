/// A per-op column in pages of `pageSize` elements (issue 25, a loop with a bound). One contiguous array
/// per column held the loop twice as the core grew: doubling copied every element at once (at 524,288
/// ops, ≈ 70 MB over the eleven columns in one SUBMIT), and after a snapshot request (the snapshot
/// thread reads a copy of the core) the first mutation of each column copied all of it — 45–64 ms of the
/// loop thread's CPU at 1M ops, measured. In pages, growth appends a page and copy-on-write copies only
/// the pages the loop touches (a page of `OpHot` is 224 KiB), each once.
///
/// Cost on the core's hot path: a write checks that the page list is not shared (one uniqueness check,
/// as an array's write does) and reads the page's shared flag; a read is two dependent loads. Nested
/// arrays (`[[Element]]`) cost a second uniqueness check per write: 0.85× on the core benchmark.
struct PagedColumn<Element> {
    static var pageShift: Int { 12 }
    static var pageSize: Int { 1 << pageShift }
    static var pageMask: Int { pageSize - 1 }

    private var store = PageStore<Element>()
    private(set) var count = 0

    init() {}

    init<S: Sequence>(_ elements: S) where S.Element == Element {
        for e in elements { append(e) }
    }

    subscript(i: Int) -> Element {
        @inline(__always) get {
            precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "PagedColumn index out of range")
            return store.bases[i &>> Self.pageShift][i & Self.pageMask]
        }
        @inline(__always) _modify {
            precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "PagedColumn index out of range")
            let k = i &>> Self.pageShift
            if !isKnownUniquelyReferenced(&store) { store = store.copy() }
            if store.shared[k] { store.unshare(k) }
            yield &store.bases[k][i & Self.pageMask]
        }
    }

    var isEmpty: Bool { count == 0 }
    var indices: Range<Int> { 0..<count }

    @inline(__always) mutating func append(_ e: Element) {
        if _slowPath(!isKnownUniquelyReferenced(&store)) { store = store.copy() }
        let k = count &>> Self.pageShift
        if count & Self.pageMask == 0 {
            store.append(PagedColumnPage(capacity: Self.pageSize))
        } else if _slowPath(store.shared[k]) {
            store.unshare(k)
        }
        store.appendToTail(e)
        count += 1
    }

    /// Reserves room in the page list only: pages are allocated whole as they are needed.
    mutating func reserveCapacity(_ n: Int) {
        if !isKnownUniquelyReferenced(&store) { store = store.copy() }
        store.reserve((n + Self.pageSize - 1) >> Self.pageShift)
    }

    /// The elements in `range`, as an array.
    subscript(range: Range<Int>) -> [Element] {
        range.map { self[$0] }
    }
}

extension PagedColumn: @unchecked Sendable where Element: Sendable {}

/// One page: up to `capacity` elements, the first `count` initialized. Shared between column copies
/// until one of them writes it (`PageStore.unshare`).
final class PagedColumnPage<Element> {
    let base: UnsafeMutablePointer<Element>
    let capacity: Int
    @exclusivity(unchecked) private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    @inline(__always) func append(_ e: Element) {
        (base + count).initialize(to: e)
        count += 1
    }

    func clone() -> PagedColumnPage {
        let c = PagedColumnPage(capacity: capacity)
        c.base.initialize(from: base, count: count)
        c.count = count
        return c
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }
}

/// The page list of one column value: the pages (owned), their element addresses (so an access loads
/// no page object), and per page whether another column value may hold it too. A copy of the column
/// shares the store until its first write, which gives it its own store with every page marked shared
/// — in the store left behind as well, since either may write next. (`bases` and `shared` are read on
/// every access: exempt from the runtime's exclusivity check, a call per access otherwise; only the
/// value holding the store writes them.)
final class PageStore<Element> {
    @exclusivity(unchecked) var pages: [PagedColumnPage<Element>] = []
    @exclusivity(unchecked) private(set) var bases: UnsafeMutablePointer<UnsafeMutablePointer<Element>>
    @exclusivity(unchecked) private(set) var shared: UnsafeMutablePointer<Bool>
    private var capacity: Int

    init(capacity: Int = 16) {
        self.capacity = capacity
        bases = .allocate(capacity: capacity)
        shared = .allocate(capacity: capacity)
    }

    deinit {
        bases.deallocate()
        shared.deallocate()
    }

    func reserve(_ n: Int) {
        guard n > capacity else { return }
        let b = UnsafeMutablePointer<UnsafeMutablePointer<Element>>.allocate(capacity: n)
        let s = UnsafeMutablePointer<Bool>.allocate(capacity: n)
        b.moveInitialize(from: bases, count: pages.count)
        s.moveInitialize(from: shared, count: pages.count)
        bases.deallocate()
        shared.deallocate()
        bases = b
        shared = s
        capacity = n
    }

    /// The last page (also in `pages`), written by appends without a lookup.
    @exclusivity(unchecked) private var tail: PagedColumnPage<Element>?

    func append(_ page: PagedColumnPage<Element>) {
        if pages.count == capacity { reserve(capacity * 2) }
        bases[pages.count] = page.base
        shared[pages.count] = false
        pages.append(page)
        tail = page
    }

    /// Appends to the last page, which the caller made sure is this store's alone.
    @inline(__always) func appendToTail(_ e: Element) {
        tail.unsafelyUnwrapped.append(e)
    }

    /// A store for a column value that was shared: the same pages, all marked shared here and in self.
    func copy() -> PageStore {
        let c = PageStore(capacity: max(capacity, 16))
        c.pages = pages
        c.tail = tail
        c.bases.initialize(from: bases, count: pages.count)
        c.shared.initialize(repeating: true, count: pages.count)
        shared.update(repeating: true, count: pages.count)
        return c
    }

    /// Page `k` is written: a copy of it unless no other store holds it any more.
    func unshare(_ k: Int) {
        if !isKnownUniquelyReferenced(&pages[k]) {
            let c = pages[k].clone()
            pages[k] = c
            bases[k] = c.base
            if k == pages.count - 1 { tail = c }
        }
        shared[k] = false
    }
}
