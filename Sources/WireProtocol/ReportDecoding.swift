import Foundation

// STARTED and FINISHED carry every operation's reports, and SwiftProtobuf decodes their repeated records
// through generic code (a metadata lookup and a type-erased call per record): about half of the
// coordinator's decoding per operation (docs/BENCHMARKS.md, "Instructions per op"). These decode the two
// messages directly, for the case that is every well-formed report: known fields with their wire types.
// Anything else — an unknown or future field, a wrong wire type, a malformed varint or length, invalid
// UTF-8 — returns nil, and the caller decodes with SwiftProtobuf, which accepts or refuses it as before.
// So the fast path never accepts what SwiftProtobuf would refuse, and `ReportDecodingTests` checks that
// both give equal messages for random and mutated reports. A list past its limit (`WireLimits`) returns nil
// too, before it grows further: the caller skips `StructureScan` for what these decode, so the scan's
// refusal (and its bound on memory) comes from the general path.

enum ReportDecoding {
    /// FINISHED: `records` (1), `credit` (2), `sent_us` (3); nil: decode it the general way.
    static func finished(_ body: [UInt8]) -> WireFinished? {
        body.withUnsafeBufferPointer { buffer -> WireFinished? in
            var reader = ProtobufReader(buffer)
            var message = WireFinished()
            while !reader.atEnd {
                guard let (field, wireType) = reader.tag() else { return nil }
                switch (field, wireType) {
                case (1, 2):
                    guard message.records.count < WireLimits.maxBatchRecords,   // past it: the scan refuses it
                          let sub = reader.lengthDelimited() else { return nil }
                    if message.records.isEmpty { message.records.reserveCapacity(min(buffer.count / 16, WireLimits.maxBatchRecords)) }
                    // Decoded in its place in the array: a record returned from a function was copied
                    // (a retain per field, and a release).
                    message.records.append(WireFinishedRecord())
                    guard finishedRecord(sub, into: &message.records[message.records.count - 1]) else { return nil }
                case (2, 0):
                    guard let v = reader.varint() else { return nil }
                    message.credit = UInt32(truncatingIfNeeded: v)
                case (3, 0):
                    guard let v = reader.varint() else { return nil }
                    message.sentUs = Int64(bitPattern: v)
                default:
                    return nil
                }
            }
            return message
        }
    }

    /// STARTED: `parts` (1), `sent_us` (2); nil: decode it the general way.
    static func started(_ body: [UInt8]) -> WireStarted? {
        body.withUnsafeBufferPointer { buffer -> WireStarted? in
            var reader = ProtobufReader(buffer)
            var message = WireStarted()
            while !reader.atEnd {
                guard let (field, wireType) = reader.tag() else { return nil }
                switch (field, wireType) {
                case (1, 2):
                    guard message.parts.count < WireLimits.maxBatchRecords,   // past it: the scan refuses it
                          let sub = reader.lengthDelimited(), let ref = partRef(sub) else { return nil }
                    message.parts.append(ref)
                case (2, 0):
                    guard let v = reader.varint() else { return nil }
                    message.sentUs = Int64(bitPattern: v)
                default:
                    return nil
                }
            }
            return message
        }
    }

    /// False: decode the body the general way.
    private static func finishedRecord(_ bytes: UnsafeBufferPointer<UInt8>, into r: inout WireFinishedRecord) -> Bool {
        var reader = ProtobufReader(bytes)
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return false }
            switch (field, wireType) {
            case (1, 2): guard let s = reader.string() else { return false }; r.opID = s
            case (2, 0): guard let v = reader.varint() else { return false }; r.part = UInt32(truncatingIfNeeded: v)
            case (3, 0): guard let v = reader.varint() else { return false }; r.attempt = UInt32(truncatingIfNeeded: v)
            case (4, 2): guard let d = reader.data() else { return false }; r.outcome = .succeeded(d)
            case (5, 2): guard let s = reader.string() else { return false }; r.outcome = .failed(s)
            case (6, 2): guard let s = reader.string() else { return false }; r.outcome = .cancelled(s)
            case (7, 0): guard let v = reader.varint() else { return false }; r.atUs = Int64(bitPattern: v)
            case (8, 0): guard let v = reader.varint() else { return false }; r.startedAtUs = Int64(bitPattern: v)
            case (9, 2): guard let d = reader.data() else { return false }; r.stdoutTail = d
            case (10, 2): guard let d = reader.data() else { return false }; r.stderrTail = d
            case (11, 0): guard let v = reader.varint() else { return false }; r.stdoutDropped = v
            case (12, 0): guard let v = reader.varint() else { return false }; r.stderrDropped = v
            case (13, 0): guard let v = reader.varint() else { return false }; r.token = v
            default: return false
            }
        }
        return true
    }

    private static func partRef(_ bytes: UnsafeBufferPointer<UInt8>) -> WirePartRef? {
        var reader = ProtobufReader(bytes)
        var p = WirePartRef()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2): guard let s = reader.string() else { return nil }; p.opID = s
            case (2, 0): guard let v = reader.varint() else { return nil }; p.part = UInt32(truncatingIfNeeded: v)
            case (3, 0): guard let v = reader.varint() else { return nil }; p.attempt = UInt32(truncatingIfNeeded: v)
            case (4, 0): guard let v = reader.varint() else { return nil }; p.atUs = Int64(bitPattern: v)
            case (5, 0): guard let v = reader.varint() else { return nil }; p.token = v
            default: return nil
            }
        }
        return p
    }
}
