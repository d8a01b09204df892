import DistributedOperationQueue
import Foundation

/// `apibench micro`: the typed API's per-operation costs without a cluster (ns per operation).
enum Micro {
    static func time(_ name: String, _ n: Int, _ body: (Int) throws -> Void) rethrows {
        let clock = ContinuousClock()
        for i in 0..<n / 10 { try body(i) }
        let start = clock.now
        for i in 0..<n { try body(i) }
        let d = clock.now - start
        let ns = (Double(d.components.seconds) * 1e9 + Double(d.components.attoseconds) / 1e9) / Double(n)
        print(name.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%8.0f ns", ns))
    }

    static func run() async throws {
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
    }
}
