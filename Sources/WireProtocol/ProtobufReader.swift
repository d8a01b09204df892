import Foundation

// Protobuf's wire format read directly (the fast decoders: ReportDecoding, SubmitDecoding). Every read
// checks its bounds and returns nil past them, so a caller can leave anything unusual to SwiftProtobuf.

struct ProtobufReader {
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
