import DequeModule

// Everything the core keeps per op, in one value: the columns (struct-of-arrays, paged), the dependency
// and dependents lists, the side tables of the few ops that have a name, a timeout, a result, an error…,
// and the multi-part records. It owns their compaction: `compactEvicted` drops the evicted rows from all
// of them at once and returns the `OpRemap` every other table that stores op indices applies
// (Eviction.swift, `Scheduler.compact`), so a per-op table added here cannot be forgotten there.

/// Per-op storage. The hot record plus colder columns; rarely used fields live in side dictionaries.
/// Columns are paged (PagedColumn.swift): growing and the copy-on-write copy after a snapshot request
/// take a page at a time, not the whole column.
struct OpStore {
    var hot = PagedColumn<OpHot>()
    var ids = PagedColumn<String>()
    var payloads = PagedColumn<[UInt8]>()
    var cold = PagedColumn<OpCold>()

    /// Every op's dependencies, `cold[op].depStart ..< depStart + depCount` (Dependents.swift).
    var depList: [Int32] = []
    /// Each op's dependents, a list from `hot[op].firstOut` (Dependents.swift).
    var dependents = DependentLists()

    /// Side tables: only ops that have one are keyed.
    var names: [Int32: String] = [:]
    var timeouts: [Int32: Int64] = [:]
    var results: [Int32: [UInt8]] = [:]
    var reasons: [Int32: String] = [:]          // error text or cancel reason
    var attemptErrors: [Int32: [String]] = [:]  // every failed attempt's error (capped), oldest first
    var retryDelays: [Int32: RetryDelay] = [:]  // ops with retries and non-default delays
    /// Per-part records of unfinished multi-part ops (Storage.swift).
    var multi = MultiPartTable()

    var count: Int { ids.count }

    mutating func reserve(_ n: Int) {
        hot.reserveCapacity(n); ids.reserveCapacity(n); payloads.reserveCapacity(n); cold.reserveCapacity(n)
    }

    /// An evicted op's retained data goes (its row stays, dead, until `compactEvicted`).
    mutating func forgetEvicted(_ op: Int32) {
        hot[Int(op)].flags |= Flag.evicted
        payloads[Int(op)] = []
        if !names.isEmpty { names[op] = nil }
        if !results.isEmpty { results[op] = nil }
        if !reasons.isEmpty { reasons[op] = nil }
        if !attemptErrors.isEmpty { attemptErrors[op] = nil }
    }

    /// Renumbers the ops that are not evicted into fresh columns, in order, and rewrites every op index
    /// this store holds; returns the renumbering for the tables outside it.
    mutating func compactEvicted() -> OpRemap {
        let n = count
        var newIndex = [Int32](repeating: -1, count: n)
        var live = 0
        for i in 0..<n where hot[i].flags & Flag.evicted == 0 {
            newIndex[i] = Int32(live)
            live += 1
        }
        let remap = OpRemap(newIndex: newIndex)

        var fresh = OpStore()
        fresh.reserve(live)
        fresh.depList.reserveCapacity(live)
        for i in 0..<n where newIndex[i] >= 0 {
            var h = hot[i]
            // Dependents lists: kept in order, each edge of its kind.
            var e = h.firstOut
            var head: Int32 = -1, tail: Int32 = -1
            while e >= 0 {
                let edge = dependents.edges[Int(e)]
                let to = remap[edge.dependent]
                if to >= 0 { fresh.dependents.append(edge.to(to), head: &head, tail: &tail) }
                e = dependents.next[Int(e)]
            }
            h.firstOut = head
            fresh.hot.append(h)
            fresh.ids.append(ids[i])
            fresh.payloads.append(payloads[i])
            var c = cold[i]
            let s = Int(c.depStart)
            c.depStart = Int32(fresh.depList.count)
            for d in depList[s..<s + Int(c.depCount)] where newIndex[Int(d)] >= 0 { fresh.depList.append(newIndex[Int(d)]) }
            c.depCount = Int32(fresh.depList.count) - c.depStart
            fresh.cold.append(c)
        }
        fresh.names = remap.rekeyed(names)
        fresh.timeouts = remap.rekeyed(timeouts)
        fresh.results = remap.rekeyed(results)
        fresh.reasons = remap.rekeyed(reasons)
        fresh.attemptErrors = remap.rekeyed(attemptErrors)
        fresh.retryDelays = remap.rekeyed(retryDelays)
        fresh.multi = multi
        fresh.multi.renumberOps(remap)
        self = fresh
        return remap
    }

    /// Broken invariants of the store's own structure (`Scheduler.validate` checks the rest).
    func validate() -> [String] {
        var bad: [String] = []
        let n = count
        for (name, c) in [("payloads", payloads.count), ("hot", hot.count), ("cold", cold.count)] where c != n {
            bad.append("column \(name) has \(c) rows, expected \(n)")
        }
        if !bad.isEmpty { return bad }
        func inRange(_ op: Int32) -> Bool { op >= 0 && Int(op) < n }
        for (table, keys) in [("names", Array(names.keys)), ("timeouts", Array(timeouts.keys)), ("results", Array(results.keys)),
                              ("reasons", Array(reasons.keys)), ("attemptErrors", Array(attemptErrors.keys)),
                              ("retryDelays", Array(retryDelays.keys)), ("multi", multi.ops)] {
            for op in keys where !inRange(op) { bad.append("\(table) keys op \(op), beyond the \(n) rows") }
        }
        for i in 0..<n {
            let c = cold[i]
            if c.depStart < 0 || c.depCount < 0 || Int(c.depStart) + Int(c.depCount) > depList.count {
                bad.append("\(ids[i]): dependencies \(c.depStart)+\(c.depCount) beyond the list's \(depList.count)")
                continue
            }
            for d in depList[Int(c.depStart)..<Int(c.depStart + c.depCount)] where !inRange(d) {
                bad.append("\(ids[i]): depends on op \(d), beyond the \(n) rows")
            }
            var e = hot[i].firstOut, steps = 0
            while e >= 0 && steps <= dependents.edges.count {
                guard Int(e) < dependents.edges.count else { bad.append("\(ids[i]): dependents list leaves the edges at \(e)"); break }
                if !inRange(dependents.edges[Int(e)].dependent) { bad.append("\(ids[i]): a dependent beyond the \(n) rows") }
                e = dependents.next[Int(e)]
                steps += 1
            }
            if steps > dependents.edges.count { bad.append("\(ids[i]): dependents list loops") }
        }
        return bad
    }
}

/// How `OpStore.compactEvicted` renumbered the ops: each old index's new one, or -1 for a dropped
/// (evicted) op. Renumbering keeps the order, so sorted lists stay sorted.
struct OpRemap {
    private let newIndex: [Int32]

    /// `newIndex[old]`: the op's new index, -1 when it is dropped.
    init(newIndex: [Int32]) { self.newIndex = newIndex }

    /// `op`'s new index; -1 for a dropped op, and for -1 (the tables' "none").
    @inline(__always) subscript(_ op: Int32) -> Int32 { op < 0 ? -1 : newIndex[Int(op)] }

    /// The new index of an op that stays (every op a caller knows to be unfinished stays).
    func kept(_ op: Int32) -> Int32 {
        let to = self[op]
        precondition(to >= 0, "op \(op) was dropped by compaction")
        return to
    }

    /// A table keyed by op, rekeyed; dropped ops' entries go.
    func rekeyed<V>(_ table: [Int32: V]) -> [Int32: V] {
        var r: [Int32: V] = [:]
        r.reserveCapacity(table.count)
        for (op, v) in table where self[op] >= 0 { r[self[op]] = v }
        return r
    }

    /// A list of ops, renumbered in order; dropped ops go.
    func renumbered(_ list: [Int32]) -> [Int32] { list.compactMap { self[$0] >= 0 ? self[$0] : nil } }

    func renumbered(_ list: Deque<Int32>) -> Deque<Int32> { Deque(list.compactMap { self[$0] >= 0 ? self[$0] : nil }) }
}
