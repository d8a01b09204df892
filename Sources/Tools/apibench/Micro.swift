@_spi(Benchmarks) import DistributedOperationQueue
import DistributedOperationWorker
import Foundation

/// `apibench micro [ROW [N]]`: the typed API's per-operation costs without a cluster (ns of CPU per operation);
/// with ROW, only the rows whose name contains it, N times each (for instruction counts: run under
/// `valgrind --tool=callgrind` at two N and divide the difference by 1.1 × the difference of N).
enum Micro {
    /// The process's CPU time (not wall time: the machine is shared, and time others take is not ours).
    static func cpuNanoseconds() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    nonisolated(unsafe) static var only: String?
    nonisolated(unsafe) static var count = 100_000

    static func time(_ name: String, _ n: Int, _ body: (Int) throws -> Void) rethrows {
        if let only, !name.contains(only) { return }
        let n = only == nil ? n : count
        for i in 0..<n / 10 { try body(i) }
        let start = cpuNanoseconds()
        for i in 0..<n { try body(i) }
        let ns = Double(cpuNanoseconds() - start) / Double(n)
        print(name.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%8.0f ns", ns))
    }

    static func timeAsync(_ name: String, _ n: Int, _ body: (Int) async throws -> Void) async rethrows {
        if let only, !name.contains(only) { return }
        let n = only == nil ? n : count
        for i in 0..<n / 10 { try await body(i) }
        let start = cpuNanoseconds()
        for i in 0..<n { try await body(i) }
        let ns = Double(cpuNanoseconds() - start) / Double(n)
        print(name.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%8.0f ns", ns))
    }

    static func run(_ args: [String] = []) async throws {
        only = args.first
        if args.count > 1, let c = Int(args[1]) { count = c }
        let n = 100_000
        var keep: [RemoteOperation] = []
        keep.reserveCapacity(2 * n)
        time("RemoteOperation(kind: echo, payload:)", n) { i in keep.append(RemoteOperation(kind: "echo", payload: Array("tick \(i)".utf8))) }
        time("TypedRemoteOperation(Tick)", n) { i in keep.append(TypedRemoteOperation(Tick(index: i, label: "tick \(i)"))) }
        time("TypedRemoteOperation(NoopTyped)", n) { i in keep.append(TypedRemoteOperation(NoopTyped(index: i, label: "tick \(i)"))) }
        keep = []
        time("generated id + kind", n) { i in _ = "NoopTyped" + ":" + "swift-1234abcd-\(i)" }
        time("encode NoopTyped to [UInt8]", n) { i in _ = Array(try! JSONEncoder().encode(NoopTyped(index: i, label: "tick"))) }
        let objs: [RemoteOperation] = (0..<100).map { _ in TypedRemoteOperation(Tick(index: 1, label: "")) }
        time("as? TypedRemoteOperation<Touch> (fails)", n) { i in _ = objs[i % 100] as? TypedRemoteOperation<Touch> }
        let enc = JSONEncoder(), dec = JSONDecoder()
        let tick = try enc.encode(Tick(index: 5, label: "tick 5"))
        let five = try enc.encode(5)
        try time("JSONEncoder Tick", n) { i in _ = try enc.encode(Tick(index: i, label: "tick")) }
        try time("JSONDecoder Tick", n) { _ in _ = try dec.decode(Tick.self, from: tick) }
        try time("JSONEncoder Int", n) { i in _ = try enc.encode(i) }
        try time("JSONDecoder Int", n) { _ in _ = try dec.decode(Int.self, from: five) }
        time("String(describing: Tick.self)", n) { _ in _ = String(describing: Tick.self) }

        // Each side of the bench's Int row, typed against its bytes counterpart (what APIBench makes).
        print("-- the Int row's steps: typed | bytes")
        func payload(_ i: Int) -> [UInt8] { Array(#"{"index":\#(i),"label":"tick \#(i)"}"#.utf8) }
        time("client: make TypedRemoteOperation(Tick)", n) { i in keep.append(TypedRemoteOperation(Tick(index: i, label: "tick \(i)"))) }
        keep = []
        time("client: make RemoteOperation(bytes.tick)", n) { i in keep.append(RemoteOperation(kind: "bench.bytes.tick", payload: payload(i))) }
        keep = []
        let tickPayload = try TypedCodingSteps.encode(Tick(index: 5000, label: "tick 5000"))
        let typed = TypedOperationHandler(Tick.self)
        let bytes = ClosureHandler(kind: "bench.bytes.tick") { $0.payload }
        func context(_ i: Int) -> OperationContext {
            OperationContext(part: DispatchedPart(key: PartKey(opID: "t\(i)"), kind: "k", payload: tickPayload))
        }
        try await timeAsync("worker: context + TypedOperationHandler<Tick>.run", n) { i in _ = try await typed.run(context(i)) }
        try await timeAsync("worker: context + ClosureHandler { $0.payload }.run", n) { i in _ = try await bytes.run(context(i)) }
        let fiveThousand = Array("5000".utf8)
        try time("client: decode Int output (TypedCoding)", n) { _ in _ = try TypedCodingSteps.decode(Int.self, from: fiveThousand) }
        time("client: read bytes result (as APIBench)", n) { _ in
            _ = Int(String(decoding: tickPayload, as: UTF8.self).split(separator: ",")[0].dropFirst(9))
        }
        print("-- coders: TypedCoding (quick) | Foundation")
        try time("encode Tick: TypedCoding", n) { i in _ = try TypedCodingSteps.encode(Tick(index: i, label: "tick \(i)")) }
        try time("encode Tick: JSONEncoder", n) { i in _ = try TypedCodingSteps.foundationEncode(Tick(index: i, label: "tick \(i)")) }
        try time("decode Tick: TypedCoding", n) { _ in _ = try TypedCodingSteps.decode(Tick.self, from: tickPayload) }
        try time("decode Tick: JSONDecoder", n) { _ in _ = try TypedCodingSteps.foundationDecode(Tick.self, from: tickPayload) }
        try time("encode Int: TypedCoding", n) { i in _ = try TypedCodingSteps.encode(i) }
        try time("encode Int: JSONEncoder", n) { i in _ = try TypedCodingSteps.foundationEncode(i) }
        try time("decode Int: JSONDecoder", n) { _ in _ = try TypedCodingSteps.foundationDecode(Int.self, from: fiveThousand) }
        let sample = try TypedCodingSteps.foundationEncode(EncodingBench.sample)
        try time("encode Sample (6 fields): TypedCoding", n) { _ in _ = try TypedCodingSteps.encode(EncodingBench.sample) }
        try time("encode Sample (6 fields): JSONEncoder", n) { _ in _ = try TypedCodingSteps.foundationEncode(EncodingBench.sample) }
        try time("decode Sample (6 fields): TypedCoding", n) { _ in _ = try TypedCodingSteps.decode(Sample.self, from: sample) }
        try time("decode Sample (6 fields): JSONDecoder", n) { _ in _ = try TypedCodingSteps.foundationDecode(Sample.self, from: sample) }
    }
}
