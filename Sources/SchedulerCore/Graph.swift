// Cycle detection for one submitted batch (edges to already accepted ops cannot close a cycle).

enum Graph {
    /// Every cycle found among in-batch dependencies, each named by the ops on it in dependency order.
    /// `resolved[starts[i]..<starts[i+1]]` are op i's dependencies as global indices; in-batch ones are ≥ base.
    static func cycles(_ specs: [OperationSpec], base: Int32, _ resolved: [Int32], _ starts: [Int32]) -> [SubmitProblem] {
        let n = specs.count
        var deps = [[Int]](repeating: [], count: n)
        var dependents = [[Int]](repeating: [], count: n)
        var indeg = [Int](repeating: 0, count: n)
        for i in 0..<n {
            for g in resolved[Int(starts[i])..<Int(starts[i + 1])] where g >= base {
                let j = Int(g - base)
                deps[i].append(j); dependents[j].append(i); indeg[i] += 1
            }
        }
        // Kahn's algorithm removes everything not on or behind a cycle.
        var stack = (0..<n).filter { indeg[$0] == 0 }
        var removed = [Bool](repeating: false, count: n)
        while let i = stack.popLast() {
            removed[i] = true
            for k in dependents[i] {
                indeg[k] -= 1
                if indeg[k] == 0 { stack.append(k) }
            }
        }
        // Each remaining node has a remaining dependency: following them must revisit a node.
        var mark = [Int](repeating: -1, count: n)   // walk that visited the node
        var problems: [SubmitProblem] = []
        for start in 0..<n where !removed[start] && mark[start] < 0 {
            var path: [Int] = []
            var v = start
            while mark[v] < 0 {
                mark[v] = start
                path.append(v)
                guard let next = deps[v].first(where: { !removed[$0] }) else { break }
                v = next
            }
            if mark[v] == start, let at = path.firstIndex(of: v) {
                problems.append(.cycle(path[at...].map { specs[$0].id }))
            }
        }
        return problems
    }
}
