import DistributedOperationQueue
import DistributedOperationWorker
import Foundation

// The Swift API against Foundation's OperationQueue (issue 5), and typed operations against the bytes
// API in the same run (issue 24), on a real coordinator and worker.
// Usage: apibench [--coordinator tcp://HOST:PORT] [--ops N] [--only independent|chain|layered] [--json] [--rounds N]
//        apibench worker [opworker options]   (the worker `scripts/bench api` starts: opworker + Tick, Touch, Pause)
//        apibench micro [ROW [N]]             (the typed API's per-operation costs, no cluster)
// $APIBENCH_PAIR: only the typed rows whose name contains it (no encoding rows); $APIBENCH_PHASES: each
// run's make / add / finish times on stderr; $APIBENCH_AA: an A/A run (the bytes operation on both sides).
// Build with -c release for meaningful figures.

/// Edges of each workload: op i depends on `deps(i)` (indices < i).
struct Workload {
    var name: String
    var count: Int
    var deps: (Int) -> [Int]
    /// Also run typed (the issue's rows: independent and layered).
    var typed: Bool
}

@main @MainActor
struct APIBench {
    static func main() async throws {
        var args = Array(CommandLine.arguments.dropFirst())
        if args.first == "micro" { try await Micro.run(Array(args.dropFirst())); return }
        if args.first == "worker" {
            // The bytes counterparts of Tick and Touch, as a user writes them: async handlers (each part
            // a task, as the typed ones; the built-in noop and echo run inline, without one).
            let bytes: [any OperationHandler] = [
                ClosureHandler(kind: "bench.bytes.tick") { $0.payload },
                ClosureHandler(kind: "bench.bytes.touch") { _ in [] },
            ]
            try await OpWorker.main(operations: [Tick.self, Touch.self, Pause.self], handlers: bytes, arguments: Array(args.dropFirst()))
            return
        }
        var endpoint = ProcessInfo.processInfo.environment["OPCOORD"] ?? "tcp://127.0.0.1:7600"
        var n = 20_000
        var only: String?
        var json = false
        var rounds = 4
        while !args.isEmpty {
            let a = args.removeFirst()
            switch a {
            case "--coordinator": endpoint = args.isEmpty ? endpoint : args.removeFirst()
            case "--ops": n = Int(args.isEmpty ? "" : args.removeFirst()) ?? n
            case "--only": only = args.isEmpty ? nil : args.removeFirst()
            case "--json": json = true
            case "--rounds": rounds = max(1, Int(args.isEmpty ? "" : args.removeFirst()) ?? rounds)
            default:
                print("usage: apibench [--coordinator ENDPOINT] [--ops N] [--only independent|chain|layered] [--json] [--rounds N] | apibench worker [opworker options]")
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
        let fetching = try RemoteCoordinator(endpoint: endpoint, fetchResults: true)
        if !json { print("workload      ops    Swift API ops/s   Foundation ops/s   API / Foundation") }
        var typedRows: [(String, String, Int, Double, Double, Double, (Double, Double))] = []
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
            // Each typed row against the bytes operation that does the same, in the same run, alternated
            // over `rounds` rounds (the median of each kind), so load drifts hit both alike:
            // Void output ↔ `noop` (no result), Int output ↔ `echo` whose result is fetched and read.
            var pairs: [String: (typed: [Double], bytes: [Double])] = [:]
            // CPU seconds of client + worker + coordinator in each run (load moves it far less than ops/s).
            var cpu: [String: (typed: [Double], bytes: [Double])] = [:]
            func timed(_ run: () async throws -> Double) async throws -> (Double, Double) {
                let before = CPUTime.total()
                let seconds = try await run()
                return (seconds, CPUTime.total() - before)
            }
            func payload(_ i: Int, _ label: String) -> [UInt8] { Array(#"{"index":\#(i),"label":"\#(label) \#(i)"}"#.utf8) }
            /// One typed run and its bytes counterpart, the typed one first in odd rounds, so neither
            /// side is always the later one (the coordinator keeps finished runs: later can be slower).
            func pair(_ what: String, _ round: Int, bytes: () async throws -> Double, typed: () async throws -> Double) async throws {
                if let only = ProcessInfo.processInfo.environment["APIBENCH_PAIR"], !what.contains(only) { return }
                // $APIBENCH_AA: the bytes operation on both sides, so each row's ratio shows the machine's noise.
                let typed = ProcessInfo.processInfo.environment["APIBENCH_AA"] != nil ? bytes : typed
                func side(_ isTyped: Bool) async throws {
                    let (seconds, cpuSeconds) = try await timed(isTyped ? typed : bytes)
                    if isTyped {
                        pairs[what, default: ([], [])].typed.append(seconds)
                        cpu[what, default: ([], [])].typed.append(cpuSeconds)
                    } else {
                        pairs[what, default: ([], [])].bytes.append(seconds)
                        cpu[what, default: ([], [])].bytes.append(cpuSeconds)
                    }
                }
                try await side(round % 2 == 1)
                try await side(round % 2 == 0)
            }
            for round in 0..<rounds {
                // The input's bytes and a result read, through handlers of each kind.
                try await pair("Int output: Tick vs bytes handler", round,
                    bytes: { try await remote(w, fetching) { i in RemoteOperation(kind: "bench.bytes.tick", payload: payload(i, "tick")) } },
                    typed: { try await remote(w, fetching) { i in TypedRemoteOperation(Tick(index: i, label: "tick \(i)")) } })
                try await pair("Void output: Touch vs bytes handler", round,
                    bytes: { try await remote(w, coordinator) { i in RemoteOperation(kind: "bench.bytes.touch", payload: payload(i, "touch")) } },
                    typed: { try await remote(w, coordinator) { i in TypedRemoteOperation(Touch(index: i, label: "touch \(i)")) } })
                // The floor: the built-in noop, run inline on the worker with no payload.
                try await pair("Void output: Touch vs built-in noop", round,
                    bytes: { try await remote(w, coordinator) { _ in RemoteOperation(kind: "noop") } },
                    typed: { try await remote(w, coordinator) { i in TypedRemoteOperation(Touch(index: i, label: "touch \(i)")) } })
                // A little real work: 1 ms per operation (2 slots: at most 2,000 ops/s).
                try await pair("1 ms of work: Pause vs built-in sleep", round,
                    bytes: { try await remote(w, coordinator) { _ in RemoteOperation(kind: "sleep", payload: Array("1".utf8)) } },
                    typed: { try await remote(w, coordinator) { _ in TypedRemoteOperation(Pause(milliseconds: 1)) } })
                // The client's share: typed on the client, the built-in noop on the worker, same payload.
                try await pair("client only: typed noop vs noop", round,
                    bytes: { try await remote(w, coordinator) { i in RemoteOperation(kind: "noop", payload: payload(i, "noop")) } },
                    typed: { try await remote(w, coordinator) { i in TypedRemoteOperation(NoopTyped(index: i, label: "noop \(i)")) } })
            }
            for (what, p) in pairs.sorted(by: { $0.key > $1.key }) {
                // Also each round's typed/bytes (its two runs were adjacent, so they share the machine's load):
                // their median moves less with other builds' bursts than the ratio of the medians.
                let paired = median(zip(p.typed, p.bytes).map { typed, bytes in bytes / typed })
                let c = cpu[what] ?? ([0], [0])
                let perOp = (median(c.typed) / Double(w.count) * 1e6, median(c.bytes) / Double(w.count) * 1e6)
                typedRows.append((w.name, what, w.count, Double(w.count) / median(p.typed), Double(w.count) / median(p.bytes), paired, perOp))
            }
        }
        fetching.close()
        coordinator.close()
        if !typedRows.isEmpty && !json {
            print("\nworkload      ops  typed (median of \(rounds))                 typed ops/s   bytes ops/s   typed / bytes   paired   CPU µs/op typed / bytes")
        }
        for (name, what, count, typed, bytes, paired, perOp) in typedRows {
            if json {
                emit(["workload": name, "typed": what, "ops": count, "typed_ops_per_s": typed, "bytes_ops_per_s": bytes, "typed_over_bytes": typed / bytes,
                      "typed_over_bytes_paired": paired, "rounds": rounds,
                      "typed_cpu_us_per_op": perOp.0, "bytes_cpu_us_per_op": perOp.1])
            } else {
                print(name.padding(toLength: 12, withPad: " ", startingAt: 0)
                      + String(format: " %6d  ", count) + what.padding(toLength: 38, withPad: " ", startingAt: 0)
                      + String(format: " %12.0f %13.0f %14.2f× %7.2f×   %6.1f / %5.1f", typed, bytes, typed / bytes, paired, perOp.0, perOp.1))
            }
        }
        // Encoded size of the benchmark's own input, and the encoders on a representative value.
        let tickBytes = TypedRemoteOperation(Tick(index: n / 2, label: "tick \(n / 2)")).payload.count
        let rows = ProcessInfo.processInfo.environment["APIBENCH_PAIR"] != nil ? [] : try EncodingBench.run(count: 100_000)
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

    static func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }

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
        let made = Date()
        try { try queue.addOperations(ops, waitUntilFinished: false) }()     // the blocking form, as before
        let added = Date()
        await queue.waitUntilAllOperationsAreFinished()
        // Typed ones: every value is read (decoded), as a program would; a failure stops the bench.
        for op in ops {
            if let t = op as? TypedRemoteOperation<Tick> { _ = try await t.value }
            if let t = op as? TypedRemoteOperation<Touch> { try await t.value }
            if let t = op as? TypedRemoteOperation<NoopTyped> { try await t.value }
            if let t = op as? TypedRemoteOperation<Pause> { try await t.value }
            if op.kind == "bench.bytes.tick", Int(String(decoding: op.result ?? [], as: UTF8.self).split(separator: ",")[0].dropFirst(9)) == nil {
                throw CocoaError(.coderReadCorrupt)      // the bytes counterpart reads its result too
            }
        }
        if ProcessInfo.processInfo.environment["APIBENCH_PHASES"] != nil {
            let s = { (d: TimeInterval) in String(format: "%.0f ms", d * 1000) }
            FileHandle.standardError.write(Data("\(w.name) \(type(of: ops[0])): make \(s(made.timeIntervalSince(start))), add \(s(added.timeIntervalSince(made))), finish+values \(s(Date().timeIntervalSince(added)))\n".utf8))
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

/// CPU time of this process and of the worker and coordinator `scripts/bench api` started ($APIBENCH_WORKER_PID,
/// $APIBENCH_COORDINATOR_PID; each process's CPU clock, nanosecond resolution), in seconds.
enum CPUTime {
    static let pids: [pid_t] = ["APIBENCH_WORKER_PID", "APIBENCH_COORDINATOR_PID"].compactMap {
        ProcessInfo.processInfo.environment[$0].flatMap { pid_t($0) }
    }

    static func total() -> Double {
        var sum = seconds(CLOCK_PROCESS_CPUTIME_ID)
        for pid in pids {
            var clock = clockid_t()
            if clock_getcpuclockid(pid, &clock) == 0 { sum += seconds(clock) }
        }
        return sum
    }

    private static func seconds(_ clock: clockid_t) -> Double {
        var t = timespec()
        clock_gettime(clock, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
