import Foundation

// STARTED and FINISHED carry every operation's reports, and SwiftProtobuf decodes their repeated records
// through generic code (a metadata lookup and a type-erased call per record): about half of the
// coordinator's decoding per operation (docs/BENCHMARKS.md, "Instructions per op"). These decode the two
// messages directly, for the case that is every well-formed report: known fields with their wire types.
// Anything else — an unknown or future field, a wrong wire type, a malformed varint or length, invalid
// UTF-8 — returns nil, and the caller decodes with SwiftProtobuf, which accepts or refuses it as before.
// So the fast path never accepts what SwiftProtobuf would refuse, and `ReportDecodingTests` checks that
// both give equal messages for random and mutated reports.

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
                    guard let sub = reader.lengthDelimited(), let record = finishedRecord(sub) else { return nil }
                    message.records.append(record)
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
                    guard let sub = reader.lengthDelimited(), let ref = partRef(sub) else { return nil }
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

    private static func finishedRecord(_ bytes: UnsafeBufferPointer<UInt8>) -> WireFinishedRecord? {
        var reader = ProtobufReader(bytes)
        var r = WireFinishedRecord()
        while !reader.atEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (1, 2): guard let s = reader.string() else { return nil }; r.opID = s
            case (2, 0): guard let v = reader.varint() else { return nil }; r.part = UInt32(truncatingIfNeeded: v)
            case (3, 0): guard let v = reader.varint() else { return nil }; r.attempt = UInt32(truncatingIfNeeded: v)
            case (4, 2): guard let d = reader.data() else { return nil }; r.outcome = .succeeded(d)
            case (5, 2): guard let s = reader.string() else { return nil }; r.outcome = .failed(s)
            case (6, 2): guard let s = reader.string() else { return nil }; r.outcome = .cancelled(s)
            case (7, 0): guard let v = reader.varint() else { return nil }; r.atUs = Int64(bitPattern: v)
            case (8, 0): guard let v = reader.varint() else { return nil }; r.startedAtUs = Int64(bitPattern: v)
            case (9, 2): guard let d = reader.data() else { return nil }; r.stdoutTail = d
            case (10, 2): guard let d = reader.data() else { return nil }; r.stderrTail = d
            case (11, 0): guard let v = reader.varint() else { return nil }; r.stdoutDropped = v
            case (12, 0): guard let v = reader.varint() else { return nil }; r.stderrDropped = v
            case (13, 0): guard let v = reader.varint() else { return nil }; r.token = v
            default: return nil
            }
        }
        return r
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
