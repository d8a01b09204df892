// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of every journal record.
// Castagnoli rather than zlib's CRC-32: better error detection for our record sizes, and the same
// function as iSCSI, ext4 and LevelDB, so external tools can check our files.

import CCRC32C

public enum CRC32C {
    /// CRC-32C of `bytes`, continuing from `crc` (pass the previous result to checksum in pieces).
    /// Check value: checksum("123456789") == 0xE3069283.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        checksum(bytes, continuing: crc, byInstruction: hardware)
    }

    /// The processor's own instruction (SSE 4.2 on x86-64, through CCRC32C) where it has one: far fewer
    /// instructions than the table loop (the coordinator's loop thread: −205 per op, docs/BENCHMARKS.md).
    static let hardware = opq_crc32c_hardware_available() != 0

    /// By the instruction (only where `hardware`), or by the table loop whatever the processor has
    /// (tests compare the two).
    @inline(__always)
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0, byInstruction: Bool) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        let state = byInstruction ? opq_crc32c_hardware_update(~crc, base, bytes.count) : update(~crc, base, bytes.count)
        return state ^ 0xFFFF_FFFF
    }

    public static func checksum(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0), continuing: crc) }) {
            return result
        }
        return checksum(Array(bytes), continuing: crc)
    }

    /// Slicing-by-8: eight table lookups per 8 bytes instead of one per byte (≈ 5× faster than the
    /// byte-wise loop), where the processor has no CRC-32C instruction.
    @inline(__always)
    private static func update(_ start: UInt32, _ base: UnsafeRawPointer, _ count: Int) -> UInt32 {
        let t = table
        var crc = start
        var p = base
        var n = count
        while n >= 8 {
            let lo = crc ^ UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
            let hi = UInt32(littleEndian: (p + 4).loadUnaligned(as: UInt32.self))
            crc = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
            p += 8
            n -= 8
        }
        while n > 0 {
            crc = t[Int((crc ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (crc >> 8)
            p += 1
            n -= 1
        }
        return crc
    }

    /// 8 × 256 entries: table k gives the CRC of a byte followed by k zero bytes. Allocated once and
    /// never freed (a pointer, not an Array, so the hot loop has no bounds checks or retains).
    private nonisolated(unsafe) static let table: UnsafePointer<UInt32> = {
        let t = UnsafeMutablePointer<UInt32>.allocate(capacity: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
            }
        }
        return UnsafePointer(t)
    }()
}
