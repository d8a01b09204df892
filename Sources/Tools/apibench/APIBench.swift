import DistributedOperationQueue
import DistributedOperationWorker
import Foundation

// The Swift API against Foundation's OperationQueue (issue 5), and typed operations against the bytes
// API in the same run (issue 24), on a real coordinator and worker.
// Usage: apibench [--coordinator tcp://HOST:PORT] [--ops N] [--only independent|chain|layered] [--json]
//        apibench worker [opworker options]   (the worker `scripts/bench api` starts: opworker + Tick, Touch)
// Build with -c release for meaningful figures.

/// Edges of each workload: op i depends on `deps(i)` (indices < i).
struct Workload {
    var name: String
    var count: Int
    var deps: (Int) -> [Int]
    /// Also run typed (the rows: independent and layered).
    var typed: Bool
}

@main @MainActor
struct APIBench {
    static func main() async throws {
        var args = Array(CommandLine.arguments.dropFirst())
        if args.first == "worker" {
            try await OpWorker.main(operations: [Tick.self, Touch.self], arguments: Array(args.dropFirst()))
            return
        }
        var endpoint = ProcessInfo.processInfo.environment["OPCOORD"] ?? "tcp://127.0.0.1:7600"
        var n = 20_000
        var only: String?
        var json = false
        while !args.isEmpty {
            let a = args.removeFirst()
            switch a {
            case "--coordinator": endpoint = args.isEmpty ? endpoint : args.removeFirst()
            case "--ops": n = Int(args.isEmpty ? "" : args.removeFirst()) ?? n
            case "--only": only = args.isEmpty ? nil : args.removeFirst()
            case "--json": json = true
            default:
                print("usage: apibench [--coordinator ENDPOINT] [--ops N] [--only independent|chain|layered] [--json] | apibench worker [opworker options]")
                exit(2)
            }
        }
        let width = 100
        let workloads = [
            Workload(name: "independent", count: n, deps: { _ in [] }, typed: true),
            Workload(name: "chain", count: n, deps: { i in i == 0 ? [] : [i - 1] }, typed: false),
            // layers of `width`; each op depends on 4 ops of the layer before
            Workload(name: "layered", count: n, deps: { i in
                let layer = i / width
                guard layer > 0 else { return [] }
                return (0..<4).map { (layer - 1) * width + (i + $0 * 25) % width }
            }, typed: true),
        ].filter { only == nil || $0.name == only }

        let coordinator = try RemoteCoordinator(endpoint: endpoint, fetchResults: false)
        if !json { print("workload      ops    Swift API ops/s   Foundation ops/s   API / Foundation") }
        var typedRows: [(String, String, Int, Double, Double)] = []
        for w in workloads {
            let r = try await remote(w, coordinator) { _ in RemoteOperation(kind: "noop") }
            let f = foundation(w)
            let (ra, fa) = (Double(w.count) / r, Double(w.count) / f)
            if json {
                emit(["workload": w.name, "ops": w.count, "api_ops_per_s": ra, "foundation_ops_per_s": fa, "ratio": ra / fa])
            } else {
                print(w.name.padding(toLength: 12, withPad: " ", startingAt: 0) + String(format: " %6d %17.0f %18.0f %17.2f×", w.count, ra, fa, ra / fa))
            }
            guard w.typed else { continue }
            // Typed rows next to a bytes row of the same run: alternated, so load drifts hit both alike.
            let bytes = try await remote(w, coordinator) { _ in RemoteOperation(kind: "noop") }
            let tick = try await remote(w, coordinator) { i in TypedRemoteOperation(Tick(index: i, label: "tick \(i)")) }
            let touch = try await remote(w, coordinator) { i in TypedRemoteOperation(Touch(index: i, label: "touch \(i)")) }
            let bytesRate = Double(w.count) / ((r + bytes) / 2)
            typedRows.append((w.name, "typed Int output (Tick)", w.count, Double(w.count) / tick, bytesRate))
            typedRows.append((w.name, "typed Void output (Touch)", w.count, Double(w.count) / touch, bytesRate))
        }
        coordinator.close()
        if !typedRows.isEmpty && !json {
            print("\nworkload      ops  typed                        typed ops/s   bytes ops/s   typed / bytes")
        }
        for (name, what, count, typed, bytes) in typedRows {
            if json {
                emit(["workload": name, "typed": what, "ops": count, "typed_ops_per_s": typed, "bytes_ops_per_s": bytes, "typed_over_bytes": typed / bytes])
            } else {
                print(name.padding(toLength: 12, withPad: " ", startingAt: 0)
                      + String(format: " %6d  ", count) + what.padding(toLength: 26, withPad: " ", startingAt: 0)
                      + String(format: " %12.0f %13.0f %14.2f×", typed, bytes, typed / bytes))
            }
        }
        // Encoded size of the benchmark's own input, and the encoders on a representative value.
        let tickBytes = TypedRemoteOperation(Tick(index: n / 2, label: "tick \(n / 2)")).payload.count
        let rows = try EncodingBench.run(count: 100_000)
        if json {
            emit(["encoding": "tick_input_json", "bytes": tickBytes])
            for e in rows { emit(["encoding": e.name, "bytes": e.bytes, "encode_ns": e.encodeNs, "decode_ns": e.decodeNs]) }
        } else {
            print("\nencoding (one representative value)   bytes   encode ns   decode ns   (the bench's Tick input: \(tickBytes) B of JSON)")
            for e in rows {
                print(e.name.padding(toLength: 36, withPad: " ", startingAt: 0) + String(format: " %7d %11.0f %11.0f", e.bytes, e.encodeNs, e.decodeNs))
            }
        }
    }

    static func emit(_ object: [String: Any]) {
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    /// Adds the workload's graph of `make(i)` operations and waits for all; seconds.
    static func remote(_ w: Workload, _ coordinator: RemoteCoordinator, _ make: (Int) -> RemoteOperation) async throws -> Double {
        let queue = RemoteOperationQueue(name: "apibench-\(w.name)-\(UUID().uuidString.prefix(6))", coordinator: coordinator)
        let start = Date()
        var ops: [RemoteOperation] = []
        ops.reserveCapacity(w.count)
        for i in 0..<w.count {
            let op = make(i)
            for d in w.deps(i) { try op.addDependency(ops[d]) }
            ops.append(op)
        }
        try { try queue.addOperations(ops, waitUntilFinished: false) }()     // the blocking form, as before
        await queue.waitUntilAllOperationsAreFinished()
        // Typed ones: every value is read (decoded), as a program would; a failure stops the bench.
        for op in ops {
            if let t = op as? TypedRemoteOperation<Tick> { _ = try await t.value }
            if let t = op as? TypedRemoteOperation<Touch> { try await t.value }
        }
        return Date().timeIntervalSince(start)
    }

    static func foundation(_ w: Workload) -> Double {
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
}
