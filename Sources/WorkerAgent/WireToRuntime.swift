import Foundation
import OpClient
import OpSpec
import WireProtocol
import WorkerRuntime

// Translations between wire records and the worker runtime's value types.

extension DispatchedPart {
    init(wire r: WireDispatchRecord) {
        self.init(key: PartKey(opID: r.opID, part: Int(r.part), attempt: Int(r.attempt)),
                  name: r.name.isEmpty ? nil : r.name,
                  kind: r.kind,
                  payload: [UInt8](r.payload),
                  inputs: r.inputs.map { Input(id: $0.dependencyID, result: [UInt8]($0.result)) },
                  priority: OperationPriority(rawValue: Int(r.priority)) ?? .normal,
                  qos: OperationQoS(wire: r.qos) ?? .default)
    }
}

extension WireFinishedRecord {
    /// `at`: when it finished, on this worker's monotonic clock (µs).
    init(key: PartKey, outcome: OperationOutcome, at: Int64) {
        self.init()
        opID = key.opID
        part = UInt32(key.part)
        attempt = UInt32(key.attempt)
        atUs = at
        switch outcome {
        case .succeeded(let bytes): succeeded = Data(bytes)
        case .failed(let text): failed = text
        case .cancelled(let reason): cancelled = reason
        }
    }
}

extension WireFinishedRecord {
    /// (1.5) The part's output tails, each within `WireLimits.maxLogTailSize` (more is dropped from the
    /// front and counted).
    mutating func setOutput(_ output: PartOutput) {
        let limit = WireLimits.maxLogTailSize
        stdoutTail = Data(output.stdout.suffix(limit))
        stderrTail = Data(output.stderr.suffix(limit))
        stdoutDropped = UInt64(output.stdoutDropped + max(0, output.stdout.count - limit))
        stderrDropped = UInt64(output.stderrDropped + max(0, output.stderr.count - limit))
    }
}

extension WirePartRef {
    /// `at`: when its handler started, on this worker's monotonic clock (µs).
    init(key: PartKey, at: Int64) {
        self.init()
        opID = key.opID
        part = UInt32(key.part)
        attempt = UInt32(key.attempt)
        atUs = at
    }
}
