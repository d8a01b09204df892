import Foundation
import SwiftProtobuf

// SUBMIT carries every operation a client sends, and SwiftProtobuf decodes its repeated `Operation`
// records through generic code (a metadata lookup and a type-erased call per field): the largest part of
// the coordinator's decoding per operation (docs/BENCHMARKS.md, "Instructions per op"). This decodes the
// operations directly, as ReportDecoding does the reports, for what every well-formed SUBMIT is: known
// fields with their wire types. Anything else — an unknown or future field, a
// wrong wire type, a malformed varint or length, invalid UTF-8 — returns nil, and the caller decodes the
// body with SwiftProtobuf, which accepts or refuses it as before. Queue settings (rare, nested three deep)
// are decoded by SwiftProtobuf inside the fast path. `SubmitDecodingTests` checks both give equal messages
// for random and damaged submissions.

enum SubmitDecoding {
    /// SUBMIT: `queues` (1), `operations` (2), `run` (3), `append` (4), `submitter` (5),
    /// `submission_key` (6); nil: decode it the general way.
    static func submit(_ body: [UInt8]) -> WireSubmit? {
        body.withUnsafeBufferPointer { buffer -> WireSubmit? in
            var reader = ProtobufReader(buffer)
            var message = WireSubmit()
            var operations: [WireOperation] = []
            // List elements so far, counted as StructureScan counts them (queues, operations, and each
            // operation's `after` and `requires`): past a limit, nil, and the scan refuses the body.
            var elements = 0
            while !reader.atEnd {
                guard let (field, wireType) = reader.tag() else { return nil }
                switch (field, wireType) {
                case (1, 2):
                    guard let sub = reader.lengthDelimited(),
                          let q = try? WireQueueSettings(serializedBytes: [UInt8](sub), partial: true, options: WireCodec.decodingOptions)
                    else { return nil }
                    message.queues.append(q)
                    elements += 1
                    guard message.queues.count <= WireLimits.maxBatchRecords, elements <= WireLimits.maxElements else { return nil }
                case (2, 2):
                    guard operations.count < WireLimits.maxBatchRecords,
                          let sub = reader.lengthDelimited(), let o = operation(sub, elements: &elements) else { return nil }
                    if operations.isEmpty { operations.reserveCapacity(min(buffer.count / 16, WireLimits.maxBatchRecords)) }
                    operations.append(o)
                case (3, 2): guard let s = reader.string() else { return nil }; message.run = s
                case (4, 0): guard let v = reader.varint() else { return nil }; message.append = v != 0
                case (5, 2): guard let s = reader.string() else { return nil }; message.submitter = s
                case (6, 2): guard let s = reader.string() else { return nil }; message.submissionKey = s
                default: return nil
                }
            }
            message.operations = operations
            return message
        }
    }

    /// One `Operation`, built in locals and stored once: it is one of SwiftProtobuf's storage-backed
    /// messages, whose repeated fields appended one by one would be copied each time.
    private static func operation(_ bytes: UnsafeBufferPointer<UInt8>, elements: inout Int) -> WireOperation? {
        elements += 1
        guard elements <= WireLimits.maxElements else { return nil }
        var reader = ProtobufReader(bytes)
        var o = WireOperation()
        var after: [String] = []
        var requires: [String] = []
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2): guard let s = reader.string() else { return nil }; o.id = s
            case (2, 2): guard let s = reader.string() else { return nil }; o.name = s
            case (3, 2): guard let s = reader.string() else { return nil }; o.queue = s
            case (4, 2): guard let s = reader.string() else { return nil }; o.kind = s
            case (5, 2): guard let d = reader.data() else { return nil }; o.payload = d
            case (6, 2):
                guard let s = reader.string(), after.count < WireLimits.maxBatchRecords, elements < WireLimits.maxElements else { return nil }
                after.append(s)
                elements += 1
            case (7, 0):
                // sint32: zigzag over the low 32 bits, as SwiftProtobuf reads it.
                guard let v = reader.varint() else { return nil }
                let t = UInt32(truncatingIfNeeded: v)
                o.priority = Int32(bitPattern: t >> 1) ^ -Int32(bitPattern: t & 1)
            case (8, 0): guard let v = reader.varint() else { return nil }; o.qos = WireQoS(rawValue: enumValue(v)) ?? .UNRECOGNIZED(enumValue(v))
            case (9, 0): guard let v = reader.varint() else { return nil }; o.parts = UInt32(truncatingIfNeeded: v)
            case (10, 0):
                guard let v = reader.varint() else { return nil }
                o.policy = WireDependencyPolicy(rawValue: enumValue(v)) ?? .UNRECOGNIZED(enumValue(v))
            case (11, 0): guard let v = reader.varint() else { return nil }; o.retries = UInt32(truncatingIfNeeded: v)
            case (12, 0): guard let v = reader.varint() else { return nil }; o.lossRetries = UInt32(truncatingIfNeeded: v)
            case (13, 0): guard let v = reader.varint() else { return nil }; o.timeoutUs = Int64(bitPattern: v)
            case (14, 2):
                guard let s = reader.string(), requires.count < WireLimits.maxBatchRecords, elements < WireLimits.maxElements else { return nil }
                requires.append(s)
                elements += 1
            case (15, 0): guard let v = reader.varint() else { return nil }; o.barrier = v != 0
            case (16, 0): guard let v = reader.varint() else { return nil }; o.retryDelayUs = Int64(bitPattern: v)
            case (17, 0): guard let v = reader.varint() else { return nil }; o.retryDelayMaxUs = Int64(bitPattern: v)
            case (18, 2): guard let s = reader.string() else { return nil }; o.share = s
            case (19, 2): guard let s = reader.string() else { return nil }; o.concurrencyKey = s
            default: return nil
            }
        }
        if !after.isEmpty { o.after = after }
        if !requires.isEmpty { o.requires = requires }
        return o
    }

    /// An enum's number as SwiftProtobuf reads it: the varint's low 32 bits, signed.
    @inline(__always) private static func enumValue(_ v: UInt64) -> Int { Int(Int32(truncatingIfNeeded: v)) }
}
