// Each op's dependents, as singly linked lists in two flat arrays (no array per op): an op's list
// starts at `OpHot.firstOut`, -1 when empty; lists keep insertion order reversed (newest first).

/// One entry of an op's dependents list: the dependent, and whether it is a real dependency or an
/// implicit barrier edge (the dependent is a barrier, or an op after one: ordering only — it neither
/// receives the result nor is cancelled by a cascade). One Int32, the ordering edges stored as ~op.
struct DependentEdge: Equatable {
    private var encoded: Int32

    /// `dependent` declared a dependency on the list's op.
    @inline(__always) static func dependency(_ dependent: Int32) -> DependentEdge { DependentEdge(encoded: dependent) }
    /// `dependent` is ordered after the list's op by a barrier only.
    @inline(__always) static func barrierOrder(_ dependent: Int32) -> DependentEdge { DependentEdge(encoded: ~dependent) }

    /// The op at the edge's end (index into the op table).
    @inline(__always) var dependent: Int32 { encoded < 0 ? ~encoded : encoded }
    /// An implicit barrier edge: ordering only.
    @inline(__always) var isBarrierOrder: Bool { encoded < 0 }

    /// The same kind of edge to `dependent` renumbered (compaction).
    @inline(__always) func to(_ dependent: Int32) -> DependentEdge {
        isBarrierOrder ? .barrierOrder(dependent) : .dependency(dependent)
    }
}

/// Every op's dependents list.
struct DependentLists {
    /// Edge `e`'s entry and the next edge of the same list (-1: the list's end).
    private(set) var edges: [DependentEdge] = []
    private(set) var next: [Int32] = []

    /// Puts `edge` first in the list starting at `head`.
    @inline(__always) mutating func push(_ edge: DependentEdge, onto head: inout Int32) {
        let e = Int32(edges.count)
        edges.append(edge)
        next.append(head)
        head = e
    }

    /// Appends `edge` at the end of a list being built in order (`tail`: its last edge, -1 none yet),
    /// for compaction, which rebuilds every list.
    mutating func append(_ edge: DependentEdge, head: inout Int32, tail: inout Int32) {
        let e = Int32(edges.count)
        edges.append(edge)
        next.append(-1)
        if tail >= 0 { next[Int(tail)] = e } else { head = e }
        tail = e
    }
}
