import DistributedOperationQueue
import Foundation

// The issue-5 benchmark: the same workloads through the Swift API (a real coordinator and workers)
// and through Foundation's in-process OperationQueue, with the ratio.
// Usage: apibench --coordinator tcp://HOST:PORT [--ops N] [--only independent|chain|layered]
// (start opcoord and opworker first; build with -c release for meaningful figures).

var endpoint = ProcessInfo.processInfo.environment["OPCOORD"] ?? "tcp://127.0.0.1:7600"
var n = 20_000
var only: String?
var it = CommandLine.arguments.dropFirst().makeIterator()
while let a = it.next() {
    switch a {
    case "--coordinator": endpoint = it.next() ?? endpoint
    case "--ops": n = Int(it.next() ?? "") ?? n
    case "--only": only = it.next()
    default: print("usage: apibench [--coordinator ENDPOINT] [--ops N] [--only independent|chain|layered]"); exit(2)
    }
}

/// Edges of each workload: op i depends on `deps(i)` (indices < i).
struct Workload {
    var name: String
    var count: Int
    var deps: (Int) -> [Int]
}
let width = 100
let workloads = [
    Workload(name: "independent", count: n) { _ in [] },
    Workload(name: "chain", count: n) { i in i == 0 ? [] : [i - 1] },
    // layers of `width`; each op depends on 4 ops of the layer before
    Workload(name: "layered", count: n) { i in
        let layer = i / width
        guard layer > 0 else { return [] }
        return (0..<4).map { (layer - 1) * width + (i + $0 * 25) % width }
    },
].filter { only == nil || $0.name == only }

func remote(_ w: Workload, _ coordinator: RemoteCoordinator) throws -> Double {
    let queue = RemoteOperationQueue(name: "apibench-\(w.name)-\(UUID().uuidString.prefix(6))", coordinator: coordinator)
    let start = Date()
    var ops: [RemoteOperation] = []
    ops.reserveCapacity(w.count)
    for i in 0..<w.count {
        let op = RemoteOperation(kind: "noop")
        for d in w.deps(i) { try op.addDependency(ops[d]) }
        ops.append(op)
    }
    try queue.addOperations(ops, waitUntilFinished: false)
    guard queue.waitUntilAllOperationsAreFinished(timeout: .seconds(600)) else { throw CocoaError(.featureUnsupported) }
    return Date().timeIntervalSince(start)
}

func foundation(_ w: Workload) -> Double {
    let queue = OperationQueue()
    let start = Date()
    var ops: [Operation] = []
    ops.reserveCapacity(w.count)
    for i in 0..<w.count {
        let op = BlockOperation {}
        for d in w.deps(i) { op.addDependency(ops[d]) }
        ops.append(op)
    }
    queue.addOperations(ops, waitUntilFinished: true)
    return Date().timeIntervalSince(start)
}

let coordinator = try RemoteCoordinator(endpoint: endpoint, fetchResults: false)
print("workload      ops    Swift API ops/s   Foundation ops/s   API / Foundation")
for w in workloads {
    let r = try remote(w, coordinator)
    let f = foundation(w)
    let (ra, fa) = (Double(w.count) / r, Double(w.count) / f)
    print(w.name.padding(toLength: 12, withPad: " ", startingAt: 0) + String(format: " %6d %17.0f %18.0f %17.2f×", w.count, ra, fa, ra / fa))
}
coordinator.close()
