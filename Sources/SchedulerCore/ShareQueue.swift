import HeapModule

/// One share key's ready ops in a sharing lane, in S6's order (the max goes first), and the version of
/// the share's current front in `Lane.fronts` (a front with another version is stale).
///
/// With many share keys most shares hold one ready op at a time (it is dispatched before its share's
/// next one is ready), so that op is kept inline and the heap is used from the second on: an insert into
/// HeapModule's heap and a pop from it cost ≈ 100 instructions an op that the inline entry does not.
struct ShareQueue {
    /// The only entry while `heap` is empty (`op < 0`: none); never set while `heap` has entries.
    private var single = ShareQueue.none
    private var heap = Heap<ReadyEntry>()
    var frontVersion: UInt32 = 0

    private static let none = ReadyEntry(key: .min, op: -1)

    init() {}

    init(_ entries: [ReadyEntry]) {
        if entries.count == 1 { single = entries[0] } else { heap = Heap(entries) }
    }

    @inline(__always) var isEmpty: Bool { single.op < 0 && heap.isEmpty }
    @inline(__always) var max: ReadyEntry? { single.op >= 0 ? single : heap.max }
    /// Every entry (stale ones included), in no order.
    var unordered: [ReadyEntry] { single.op >= 0 ? [single] : heap.unordered }

    /// Inserts `e`; returns the key of the head before it, Int64.min when the queue was empty.
    @inline(__always) mutating func insert(_ e: ReadyEntry) -> Int64 {
        if single.op >= 0 {
            // A second entry: both go to the heap.
            let first = single
            single = ShareQueue.none
            heap.insert(first)
            heap.insert(e)
            return first.key
        }
        guard let head = heap.max else {
            single = e
            return .min
        }
        heap.insert(e)
        return head.key
    }

    @inline(__always) mutating func popMax() -> ReadyEntry? {
        if single.op >= 0 {
            let e = single
            single = ShareQueue.none
            return e
        }
        return heap.popMax()
    }
}
