/// A binary max-heap of waiting parts: higher priority first, then higher QoS, then earlier
/// arrival (FIFO). Small and allocation-free per entry; swift-collections' Heap would do too,
/// but this keeps the runtime's dependencies to the three it was given.
struct PartHeap {
    struct Entry {
        var priority: Int8
        var qos: Int8
        var seq: UInt64
        var key: PartKey

        func runsBefore(_ other: Entry) -> Bool {
            if priority != other.priority { return priority > other.priority }
            if qos != other.qos { return qos > other.qos }
            return seq < other.seq
        }
    }

    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].runsBefore(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popFirst() -> Entry? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let first = entries.removeLast()
        var parent = 0
        let count = entries.count
        while true {
            let left = 2 * parent + 1, right = left + 1
            var best = parent
            if left < count, entries[left].runsBefore(entries[best]) { best = left }
            if right < count, entries[right].runsBefore(entries[best]) { best = right }
            if best == parent { break }
            entries.swapAt(parent, best)
            parent = best
        }
        return first
    }

    mutating func removeAll() { entries.removeAll() }
}
