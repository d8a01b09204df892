/// The one rule for dependency cycles, used by the core's submit check, graph validation (OpSpec) and
/// the Swift API's check of operations not yet sent.
public enum DependencyCycles {
    /// One cycle for every strongly connected component that has one (a node that depends on itself
    /// is one), ordered by the component's lowest index. Each lists node indices in "runs after" order:
    /// it starts at that lowest index and follows dependencies depth first, in the order listed and
    /// within the component, until one leads back to the start (the first such path). So it names a
    /// cycle through the lowest node, and callers choose the walk by the order of their lists.
    ///
    /// `dependencies[i]`: node i's dependencies as indices (duplicates allowed). Iterative (Tarjan's
    /// algorithm), so a chain of any length cannot overflow the stack; O(nodes + edges).
    public static func find(_ dependencies: [[Int]]) -> [[Int]] {
        let count = dependencies.count
        var order = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var component = [Int](repeating: -1, count: count)
        var lowest: [Int] = []          // per component, its lowest node
        var cyclic: [Int] = []          // components that have a cycle
        var counter = 0
        for root in 0..<count where order[root] < 0 {
            var work: [(node: Int, edge: Int)] = [(root, 0)]
            order[root] = counter; low[root] = counter; counter += 1
            stack.append(root); onStack[root] = true
            while let (node, edge) = work.last {
                if edge < dependencies[node].count {
                    work[work.count - 1].edge += 1
                    let next = dependencies[node][edge]
                    if order[next] < 0 {
                        order[next] = counter; low[next] = counter; counter += 1
                        stack.append(next); onStack[next] = true
                        work.append((next, 0))
                    } else if onStack[next] {
                        low[node] = min(low[node], order[next])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                guard low[node] == order[node] else { continue }
                let id = lowest.count
                var least = node, size = 0
                while let top = stack.popLast() {
                    onStack[top] = false
                    component[top] = id
                    least = min(least, top)
                    size += 1
                    if top == node { break }
                }
                lowest.append(least)
                if size > 1 || dependencies[node].contains(node) { cyclic.append(id) }
            }
        }
        var visited = [Bool](repeating: false, count: count)
        return cyclic.map { lowest[$0] }.sorted().map { cycle(from: $0, dependencies, component, &visited) }
    }

    /// The first path, depth first in list order, from `start` back to it within its component.
    private static func cycle(from start: Int, _ dependencies: [[Int]], _ component: [Int], _ visited: inout [Bool]) -> [Int] {
        let id = component[start]
        visited[start] = true
        var path: [(node: Int, edge: Int)] = [(start, 0)]
        while let (node, edge) = path.last {
            guard edge < dependencies[node].count else { path.removeLast(); continue }
            path[path.count - 1].edge += 1
            let next = dependencies[node][edge]
            if next == start { break }
            if component[next] == id && !visited[next] {
                visited[next] = true
                path.append((next, 0))
            }
        }
        return path.map(\.node)
    }
}
