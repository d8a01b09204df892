import Foundation

// DISPATCH carries every operation the coordinator starts, and SwiftProtobuf encodes its repeated records
// through generic visitors (a size pass and a write pass, each a type-erased call per field): the largest
// part of the coordinator's encoding per operation (docs/BENCHMARKS.md, "Instructions per op"). This
// writes the same bytes directly — fields in number order, defaults left out, as SwiftProtobuf does — for
// every DISPATCH without unknown fields (the coordinator builds none); one with them is left to
// SwiftProtobuf. `DispatchEncodingTests` checks the bytes are SwiftProtobuf's for random dispatches.

enum DispatchEncoding {
    /// DISPATCH's body, or nil: encode it the general way.
    static func body(_ m: WireDispatch) -> [UInt8]? {
        guard m.unknownFields.data.isEmpty else { return nil }
        // The records are read in place: `for r in m.records` copied each one, twice (a retain per field
        // and its release; docs/BENCHMARKS.md "Dispatch records read in place").
        return m.records.withUnsafeBufferPointer { records -> [UInt8]? in
            var size = 0
            var recordSizes: [Int] = []
            recordSizes.reserveCapacity(records.count)
            for i in records.indices {
                guard records[i].unknownFields.data.isEmpty, records[i].inputs.allSatisfy({ $0.unknownFields.data.isEmpty }) else { return nil }
                let n = recordSize(records[i])
                recordSizes.append(n)
                size += ProtobufWriter.lengthDelimitedSize(1, n)
            }
            if m.epoch != 0 { size += ProtobufWriter.varintSize(90 << 3) + ProtobufWriter.varintSize(m.epoch) }
            var w = ProtobufWriter(capacity: size)
            for i in records.indices {
                w.tag(1, 2)
                w.varint(UInt64(recordSizes[i]))
                record(records[i], &w)
            }
            if m.epoch != 0 { w.tag(90, 0); w.varint(m.epoch) }
            return w.bytes
        }
    }

    private static func record(_ r: WireDispatchRecord, _ w: inout ProtobufWriter) {
        if !r.opID.isEmpty { w.string(1, r.opID) }
        if r.part != 0 { w.tag(2, 0); w.varint(UInt64(r.part)) }
        if r.attempt != 0 { w.tag(3, 0); w.varint(UInt64(r.attempt)) }
        if !r.kind.isEmpty { w.string(4, r.kind) }
        if !r.payload.isEmpty { w.bytes(5, r.payload) }
        for i in r.inputs {
            w.tag(6, 2)
            w.varint(UInt64(inputSize(i)))
            if !i.dependencyID.isEmpty { w.string(1, i.dependencyID) }
            if !i.result.isEmpty { w.bytes(2, i.result) }
        }
        if r.priority != 0 { w.tag(7, 0); w.varint(UInt64(ProtobufWriter.zigzag(r.priority))) }
        if r.qos != .unspecified { w.tag(8, 0); w.varint(UInt64(bitPattern: Int64(r.qos.rawValue))) }
        if !r.name.isEmpty { w.string(9, r.name) }
        if r.token != 0 { w.tag(10, 0); w.varint(r.token) }
    }

    private static func recordSize(_ r: WireDispatchRecord) -> Int {
        var n = 0
        if !r.opID.isEmpty { n += ProtobufWriter.lengthDelimitedSize(1, r.opID.utf8.count) }
        if r.part != 0 { n += 1 + ProtobufWriter.varintSize(UInt64(r.part)) }
        if r.attempt != 0 { n += 1 + ProtobufWriter.varintSize(UInt64(r.attempt)) }
        if !r.kind.isEmpty { n += ProtobufWriter.lengthDelimitedSize(4, r.kind.utf8.count) }
        if !r.payload.isEmpty { n += ProtobufWriter.lengthDelimitedSize(5, r.payload.count) }
        for i in r.inputs { n += ProtobufWriter.lengthDelimitedSize(6, inputSize(i)) }
        if r.priority != 0 { n += 1 + ProtobufWriter.varintSize(UInt64(ProtobufWriter.zigzag(r.priority))) }
        if r.qos != .unspecified { n += 1 + ProtobufWriter.varintSize(UInt64(bitPattern: Int64(r.qos.rawValue))) }
        if !r.name.isEmpty { n += ProtobufWriter.lengthDelimitedSize(9, r.name.utf8.count) }
        if r.token != 0 { n += 1 + ProtobufWriter.varintSize(r.token) }
        return n
    }

    private static func inputSize(_ i: WireInput) -> Int {
        (i.dependencyID.isEmpty ? 0 : ProtobufWriter.lengthDelimitedSize(1, i.dependencyID.utf8.count))
            + (i.result.isEmpty ? 0 : ProtobufWriter.lengthDelimitedSize(2, i.result.count))
    }
}

/// Protobuf's wire format written directly into one buffer sized beforehand.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    @inline(__always) mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inline(__always) mutating func tag(_ field: Int, _ wireType: Int) { varint(UInt64(field << 3 | wireType)) }

    mutating func string(_ field: Int, _ s: String) {
        tag(field, 2)
        varint(UInt64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    mutating func bytes(_ field: Int, _ d: Data) {
        tag(field, 2)
        varint(UInt64(d.count))
        bytes.append(contentsOf: d)
    }

    @inline(__always) static func varintSize(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// A length-delimited field of `length` bytes, with its tag (fields < 16: one byte) and length.
    @inline(__always) static func lengthDelimitedSize(_ field: Int, _ length: Int) -> Int {
        varintSize(UInt64(field << 3 | 2)) + varintSize(UInt64(length)) + length
    }

    @inline(__always) static func zigzag(_ n: Int32) -> UInt32 { UInt32(bitPattern: (n << 1) ^ (n >> 31)) }
}

extension WireDispatchRecord {
    /// A record with every field given at once, each argument moved in: the coordinator makes one per
    /// dispatch, and setting the fields of a default record one by one copied every string (a retain and
    /// a release each; docs/BENCHMARKS.md, "The shell's feed without copies").
    public init(opID: String, part: UInt32, attempt: UInt32, kind: String, payload: Data, inputs: [WireInput],
                priority: Int32, qos: WireQoS, name: String, token: UInt64) {
        self.opID = opID
        self.part = part
        self.attempt = attempt
        self.kind = kind
        self.payload = payload
        self.inputs = inputs
        self.priority = priority
        self.qos = qos
        self.name = name
        self.token = token
    }
}
