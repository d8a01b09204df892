// File names, file headers and record frames of the on-disk format (specified in JournalStore.swift),
// and the one routine that walks a file's records and applies the torn-tail / corruption rules.

enum JournalFormat {
    static let segmentMagic: [UInt8] = Array("OPQJRNL1".utf8)
    static let snapshotMagic: [UInt8] = Array("OPQSNAP1".utf8)
    /// Segments are written in version 2 (a 32-byte header that also counts the records before the
    /// segment); version 1 segments (16-byte header) are still read. Snapshots are version 1.
    static let segmentVersion: UInt32 = 2
    static let snapshotVersion: UInt32 = 1
    /// The version 1 header, and the common part of every header.
    static let fileHeaderSize = 16
    static let segmentHeaderSize = 32
    static let frameHeaderSize = 12
    /// No record comes near this (a SUBMIT is at most 16 MiB on the wire); the bound keeps a length in u32.
    static let maxPayload = 1 << 30

    enum Kind {
        case segment, snapshot
        var magic: [UInt8] { self == .segment ? segmentMagic : snapshotMagic }
        var prefix: String { self == .segment ? "journal-" : "snapshot-" }
        var suffix: String { self == .segment ? ".log" : ".snap" }
        var version: UInt32 { self == .segment ? segmentVersion : snapshotVersion }
    }

    /// The durable mark: where the last acknowledged group commit ended (format in JournalStore.swift).
    static let markName = "DURABLE"
    static let markMagic: [UInt8] = Array("OPQMARK1".utf8)
    static let markSize = 40

    /// `journal-00000007.log`, `snapshot-00000007.snap` (8 digits, more once past 99,999,999).
    static func name(_ kind: Kind, _ number: Int) -> String {
        let digits = String(number)
        return kind.prefix + String(repeating: "0", count: max(0, 8 - digits.count)) + digits + kind.suffix
    }

    /// The number in a file name of that kind, or nil for any other name (temporary files included).
    static func number(of name: String, _ kind: Kind) -> Int? {
        guard name.hasPrefix(kind.prefix), name.hasSuffix(kind.suffix) else { return nil }
        let digits = name.dropFirst(kind.prefix.count).dropLast(kind.suffix.count)
        guard digits.count >= 8, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    /// The header of file `number`; a segment's also says how many records the journal held before it.
    static func header(_ kind: Kind, _ number: Int, recordsBefore: UInt64 = 0) -> [UInt8] {
        var h = kind.magic
        appendLE(kind.version, &h)
        appendLE(UInt32(truncatingIfNeeded: number), &h)
        if kind == .segment {
            appendLE64(recordsBefore, &h)
            appendLE64(0, &h)  // reserved
        }
        return h
    }

    /// Where a file's records start: after its header (whose version `headerProblem` has checked).
    static func recordsStart(_ file: UnsafeRawBufferPointer, _ kind: Kind) -> Int {
        kind == .segment && file.count >= fileHeaderSize && loadLE(file, 8) == 2 ? segmentHeaderSize : fileHeaderSize
    }

    /// The records written before this segment (version 2), nil for a version 1 segment.
    static func recordsBefore(_ file: UnsafeRawBufferPointer) -> UInt64? {
        recordsStart(file, .segment) == segmentHeaderSize ? loadLE64(file, 16) : nil
    }

    /// Why `file` does not start with the header of file `number` of this kind, or nil if it does.
    static func headerProblem(_ file: UnsafeRawBufferPointer, _ kind: Kind, _ number: Int) -> String? {
        guard file.count >= fileHeaderSize else {
            return "file is \(file.count) bytes, shorter than its \(fileHeaderSize)-byte header"
        }
        guard file.prefix(8).elementsEqual(kind.magic) else {
            return "bad magic (expected \(String(decoding: kind.magic, as: UTF8.self)))"
        }
        let version = loadLE(file, 8)
        guard version >= 1 && version <= kind.version else {
            return "format version \(version) (this build reads versions 1 to \(kind.version))"
        }
        let size = recordsStart(file, kind)
        guard file.count >= size else {
            return "file is \(file.count) bytes, shorter than its \(size)-byte version \(version) header"
        }
        let stored = loadLE(file, 12)
        guard stored == UInt32(truncatingIfNeeded: number) else {
            return "header says file number \(stored), the name says \(number)"
        }
        return nil
    }

    // MARK: Frames

    /// Writes the frame header at `base` for the `length` payload bytes that follow it.
    @inline(__always)
    static func writeFrameHeader(at base: UnsafeMutableRawPointer, payloadLength length: Int) {
        precondition(length <= maxPayload, "journal record of \(length) bytes exceeds the \(maxPayload)-byte limit")
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(start: base + frameHeaderSize, count: length))
        let l = UInt32(length)
        base.storeBytes(of: l.littleEndian, as: UInt32.self)
        base.storeBytes(of: (~l).littleEndian, toByteOffset: 4, as: UInt32.self)
        base.storeBytes(of: crc.littleEndian, toByteOffset: 8, as: UInt32.self)
    }

    /// How a walk over a file's records ended.
    enum End: Equatable {
        /// Every byte is part of a good record.
        case clean
        /// From `offset` on, the bytes look like an interrupted write (see `scan`).
        case torn(offset: Int)
        /// The record at `offset` is damaged.
        case corrupt(offset: Int, reason: String)
    }

    /// Walks the records of `file` from `start` (just after the header), calling `visit` with each good
    /// record's offset and payload; `visit` returns a reason to treat that record as corrupt (an
    /// undecodable payload), or nil. The rules (see JournalStore.swift):
    ///  - fewer than 12 bytes left, a consistent length pair whose payload runs past the end of the file,
    ///    or nothing but zero bytes left: torn;
    ///  - an inconsistent length pair, a CRC mismatch, or a payload `visit` rejects: corrupt.
    static func scan(_ file: UnsafeRawBufferPointer, from start: Int,
                     visit: (_ offset: Int, _ payload: UnsafeRawBufferPointer) throws -> String?) rethrows -> End {
        var offset = start
        let end = file.count
        while offset < end {
            let left = end - offset
            if left < frameHeaderSize { return .torn(offset: offset) }
            let length = loadLE(file, offset)
            let check = loadLE(file, offset + 4)
            if length ^ check != 0xFFFF_FFFF {
                if isZero(file, from: offset) { return .torn(offset: offset) }
                return .corrupt(offset: offset, reason: "length check failed (length \(hex32(length)), check \(hex32(check)))")
            }
            if Int(length) > left - frameHeaderSize { return .torn(offset: offset) }
            let payload = UnsafeRawBufferPointer(rebasing: file[(offset + frameHeaderSize)..<(offset + frameHeaderSize + Int(length))])
            let stored = loadLE(file, offset + 8)
            let computed = CRC32C.checksum(payload)
            if stored != computed {
                return .corrupt(offset: offset, reason: "CRC mismatch (stored \(hex32(stored)), computed \(hex32(computed)))")
            }
            if let problem = try visit(offset, payload) {
                return .corrupt(offset: offset, reason: "undecodable record: \(problem)")
            }
            offset += frameHeaderSize + Int(length)
        }
        return .clean
    }

    static func isZero(_ file: UnsafeRawBufferPointer, from offset: Int) -> Bool {
        file[offset...].allSatisfy { $0 == 0 }
    }

    @inline(__always)
    static func loadLE(_ p: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    static func loadLE64(_ p: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    static func appendLE64(_ v: UInt64, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    static func appendLE(_ v: UInt32, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }
}

/// "0x0000abcd".
func hex32(_ v: UInt32) -> String {
    let digits = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
