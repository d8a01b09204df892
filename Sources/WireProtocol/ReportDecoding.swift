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
            var reader = Reader(buffer)
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
            var reader = Reader(buffer)
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
        var reader = Reader(bytes)
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
        var reader = Reader(bytes)
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

    /// Protobuf's wire format over a buffer; every read checks its bounds and returns nil past them.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var atEnd: Bool { position >= bytes.count }

        /// A base-128 varint of at most 10 bytes (the 10th may only carry the top bit).
        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if shift == 63 && byte > 1 { return nil }
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
                if shift > 63 { return nil }
            }
            return nil
        }

        /// (field number, wire type); nil for a malformed tag or field number 0.
        mutating func tag() -> (Int, Int)? {
            guard let key = varint(), key <= UInt64(UInt32.max) else { return nil }
            let field = Int(key >> 3)
            guard field > 0 else { return nil }
            return (field, Int(key & 7))
        }

        mutating func lengthDelimited() -> UnsafeBufferPointer<UInt8>? {
            guard let length = varint(), length <= UInt64(bytes.count - position) else { return nil }
            let start = position
            position += Int(length)
            return UnsafeBufferPointer(rebasing: bytes[start..<position])
        }

        mutating func data() -> Data? {
            lengthDelimited().map { Data(buffer: $0) }
        }

        /// Valid UTF-8 only (what SwiftProtobuf requires of a string field). Ids are ASCII: checked byte by
        /// byte, they take String's fast initializer (the generic validating one cost ≈ 950 instructions
        /// for a 20-byte id); other text is validated in full.
        mutating func string() -> String? {
            guard let raw = lengthDelimited() else { return nil }
            for byte in raw where byte >= 0x80 { return String(validating: raw, as: UTF8.self) }
            return String(decoding: raw, as: UTF8.self)
        }
    }
}
