import Foundation
import OpSpec
import WireProtocol

/// The workloads `oploadtest run` knows. Each is a graph built from the seed and sizes alone.
enum Workload: String, CaseIterable {
    case independent   // N ops, no edges: throughput and dispatch latency
    case chain         // each op after the previous one: dependency hop latency
    case layered       // L layers × width, each op after 2 of the layer before
    case fan           // stages of root → width ops → sink (fan-out and fan-in)
    case priority      // a mixed-priority backlog saturates the cluster; veryHigh probes measure their wait
    case sleep         // independent `sleep` ops of --op-ms: slot utilisation
    case burn          // independent `burn` (CPU) ops of --op-ms
    case cancel        // `sleep` ops; a seeded random part is cancelled at random moments
    case queued        // N ops held in a suspended queue (coordinator memory), then drained

    /// The kind of operation it uses unless `--op-kind` says otherwise.
    var defaultKind: String {
        switch self {
        case .sleep, .priority, .cancel: BuiltinKind.sleep
        case .burn: BuiltinKind.burn
        default: BuiltinKind.noop
        }
    }

    var defaultOpMs: Int {
        switch self {
        case .priority: 50
        case .cancel: 100
        case .sleep, .burn: 10
        default: 0
        }
    }
}

/// What every generated operation shares.
struct OpTemplate {
    var queue: String
    var idPrefix: String
    var kind: String
    var opMs: Int

    func op(_ name: String, after: [String] = [], priority: Int32 = 0) -> WireOperation {
        var o = WireOperation()
        o.id = idPrefix + name
        o.kind = kind
        o.queue = queue
        o.after = after
        o.priority = priority
        if kind == BuiltinKind.sleep || kind == BuiltinKind.burn { o.payload = Data(SleepPayload(milliseconds: opMs).encoded()) }
        return o
    }
}

enum Graphs {
    static func independent(_ t: OpTemplate, n: Int) -> [WireOperation] {
        (0..<n).map { t.op("i\($0)") }
    }

    static func chain(_ t: OpTemplate, n: Int) -> [WireOperation] {
        (0..<n).map { t.op("c\($0)", after: $0 == 0 ? [] : [t.idPrefix + "c\($0 - 1)"]) }
    }

    /// ⌈n / width⌉ layers; op i of layer l > 0 runs after ops i and i+1 (mod width) of layer l − 1.
    static func layered(_ t: OpTemplate, n: Int, width: Int) -> [WireOperation] {
        let w = max(1, min(width, n))
        let layers = max(1, (n + w - 1) / w)
        var ops: [WireOperation] = []
        ops.reserveCapacity(layers * w)
        for l in 0..<layers {
            for i in 0..<w {
                let after = l == 0 ? [] : Array(Set([i, (i + 1) % w])).sorted().map { t.idPrefix + "l\(l - 1)-\($0)" }
                ops.append(t.op("l\(l)-\(i)", after: after))
            }
        }
        return ops
    }

    /// Stages root_k → width children → sink_k, root_k after sink_{k−1}: ≈ n ops in all.
    static func fan(_ t: OpTemplate, n: Int, width: Int) -> (ops: [WireOperation], sinks: [String]) {
        let w = max(1, min(width, n))
        let stages = max(1, n / (w + 2))
        var ops: [WireOperation] = []
        var sinks: [String] = []
        for k in 0..<stages {
            let root = "f\(k)-root"
            ops.append(t.op(root, after: sinks.last.map { [$0] } ?? []))
            let children = (0..<w).map { "f\(k)-\($0)" }
            for c in children { ops.append(t.op(c, after: [t.idPrefix + root])) }
            ops.append(t.op("f\(k)-sink", after: children.map { t.idPrefix + $0 }))
            sinks.append(t.idPrefix + "f\(k)-sink")
        }
        return (ops, sinks)
    }
}

/// SplitMix64: a small seeded generator, so a run's cancels and probe times replay from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
