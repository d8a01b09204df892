import Foundation
import OpSpec
import Synchronization
import WorkerRuntime

/// `opbench worker`: the worker's local queue against Foundation's OperationQueue, the cancel
/// latency of a running `sleep`, and the cost of a `shell` part.
func runWorkerBench(json: Bool) async {
    var results: [BenchResult] = []
    let count = 100_000
    // Other work shares these 2 cores: alternate the two queues and keep each one's best of 5.
    var local: [BenchResult] = [], foundation: [BenchResult] = [], local2: [BenchResult] = [], tasks: [BenchResult] = []
    for _ in 0..<5 {
        local.append(await localQueueNoops(count: count, slots: 1))
        tasks.append(await localQueueNoops(count: count, slots: 1, kind: "asyncNoop"))
        foundation.append(foundationQueueNoops(count: count))
        local2.append(await localQueueNoops(count: count, slots: 2))
    }
    func best(_ runs: [BenchResult]) -> BenchResult {
        var result = runs.max { ($0["ops_per_s"] ?? 0) < ($1["ops_per_s"] ?? 0) }!
        let sorted = runs.compactMap { $0["ops_per_s"] }.sorted()
        result.fields.append(("median_ops_per_s", sorted[sorted.count / 2]))
        return result
    }
    results += [best(local), best(tasks), best(foundation), best(local2)]
    results.append(await sleepCancelLatency(runs: 300))
    results.append(await shellParts(runs: 200))
    BenchReport.emit(results, json: json)
}

private let levels = OperationPriority.allCases

/// 100,000 noop parts submitted as one batch, priorities mixed; submit → last finished.
/// `kind` "noop" takes the synchronous fast path; "asyncNoop" (a closure handler) gets a task per part.
private func localQueueNoops(count: Int, slots: Int, kind: String = "noop") async -> BenchResult {
    let done = Mutex(0)
    let lastStarted = Mutex<(priority: Int, inOrder: Bool)>((Int.max, true))
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    var registry = HandlerRegistry()
    registry.register(kind: "asyncNoop") { _ in [] }
    let queue = LocalOperationQueue(slots: slots, registry: registry) { event in
        switch event {
        case .started(let key) where slots == 1:
            let priority = levels[key.part % levels.count].rawValue
            lastStarted.withLock { $0 = (priority, $0.inOrder && priority <= $0.priority) }
        case .finished:
            if done.withLock({ $0 += 1; return $0 }) == count { continuation.yield(); continuation.finish() }
        default: break
        }
    }
    let parts = (0..<count).map { DispatchedPart(key: PartKey(opID: "n", part: $0), kind: kind, priority: levels[$0 % levels.count]) }
    let start = BenchProbe.nowNanos()
    queue.submit(contentsOf: parts)
    for await _ in stream { break }
    let seconds = Double(BenchProbe.nowNanos() - start) / 1e9
    let order = slots == 1 ? (lastStarted.withLock { $0.inOrder } ? "priority order held" : "PRIORITY ORDER BROKEN") : ""
    return BenchResult(suite: "worker", name: (kind == "noop" ? "local-noop-" : "local-task-noop-") + "\(slots)slot",
                       fields: [("ops", Double(count)), ("ops_per_s", (Double(count) / seconds).rounded())], note: order)
}

/// The same workload on Foundation's OperationQueue (maxConcurrent 1, queuePriority set,
/// empty synchronous blocks — the best case for it; async handlers would need more).
private func foundationQueueNoops(count: Int) -> BenchResult {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let foundationLevels: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
    // One op runs at a time (maxConcurrent 1), so a plain counter records the start order.
    final class Order: @unchecked Sendable { var levels: [Int8] = []; init(_ n: Int) { levels.reserveCapacity(n) } }
    let order = Order(count)
    let operations = (0..<count).map { i -> Operation in
        let level = foundationLevels[i % foundationLevels.count]
        let op = BlockOperation { order.levels.append(Int8(level.rawValue)) }
        op.queuePriority = level
        return op
    }
    let start = BenchProbe.nowNanos()
    queue.addOperations(operations, waitUntilFinished: true)
    let seconds = Double(BenchProbe.nowNanos() - start) / 1e9
    let inOrder = zip(order.levels, order.levels.dropFirst()).allSatisfy { $0 >= $1 }
    return BenchResult(suite: "worker", name: "foundation-noop-1slot",
                       fields: [("ops", Double(count)), ("ops_per_s", (Double(count) / seconds).rounded())],
                       note: "Foundation OperationQueue; " + (inOrder ? "priority order held" : "priority order NOT held"))
}

/// Time from `cancel` to the `finished(cancelled)` event of a running `sleep`.
private func sleepCancelLatency(runs: Int) async -> BenchResult {
    let (stream, continuation) = AsyncStream<WorkerEvent>.makeStream()
    let queue = LocalOperationQueue(slots: 1) { continuation.yield($0) }
    var iterator = stream.makeAsyncIterator()
    var samples: [Double] = []
    for run in 0..<runs {
        let key = PartKey(opID: "s\(run)")
        queue.submit(DispatchedPart(key: key, kind: "sleep", payload: SleepPayload(milliseconds: 60_000).encoded()))
        while let event = await iterator.next(), event != .started(key) {}
        let start = BenchProbe.nowNanos()
        queue.cancel(opID: key.opID, reason: "bench")
        while let event = await iterator.next() {
            if case .finished(key, _, _) = event { break }
        }
        samples.append(Double(BenchProbe.nowNanos() - start) / 1000)
    }
    return BenchResult(suite: "worker", name: "sleep-cancel",
                       fields: [("runs", Double(runs)), ("p50_us", BenchProbe.quantile(samples, 0.5).rounded()),
                                ("p99_us", BenchProbe.quantile(samples, 0.99).rounded())],
                       note: "cancel() → finished(cancelled)")
}

/// `shell` parts running `true` one after another: spawn, wait, reap, temp dir.
private func shellParts(runs: Int) async -> BenchResult {
    let (stream, continuation) = AsyncStream<WorkerEvent>.makeStream()
    let queue = LocalOperationQueue(slots: 1) { continuation.yield($0) }
    var iterator = stream.makeAsyncIterator()
    var samples: [Double] = []
    let payload = ShellCommand.argv(["true"]).encoded()
    for run in 0..<runs {
        let key = PartKey(opID: "sh\(run)")
        let start = BenchProbe.nowNanos()
        queue.submit(DispatchedPart(key: key, kind: "shell", payload: payload, qos: .userInteractive))
        while let event = await iterator.next() {
            if case .finished(key, _, _) = event { break }
        }
        samples.append(Double(BenchProbe.nowNanos() - start) / 1000)
    }
    return BenchResult(suite: "worker", name: "shell-true",
                       fields: [("runs", Double(runs)), ("p50_us", BenchProbe.quantile(samples, 0.5).rounded()),
                                ("p99_us", BenchProbe.quantile(samples, 0.99).rounded())],
                       note: "submit → finished, sequential")
}
