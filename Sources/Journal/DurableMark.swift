import Glibc

/// The durable mark (`DURABLE` in the state directory): where the last group commit known durable ended.
/// The writer rewrites it after every fdatasync, before the batches are acknowledged, so at recovery
/// anything missing before it is loss of acknowledged records, not a torn write (format in
/// JournalStore.swift). It is not synced itself: after a power loss it may lag (then recovery can only
/// under-report), never lead, since it is written after the records it points past are durable.
struct DurableMark: Equatable {
    /// The segment the commit went to, the byte its records end at, and how many records the journal
    /// had written in all by then (counted as the version 2 segment headers count them).
    var segment: Int
    var offset: Int
    var records: UInt64

    func encoded() -> [UInt8] {
        var b = JournalFormat.markMagic
        JournalFormat.appendLE(1, &b)
        JournalFormat.appendLE(UInt32(truncatingIfNeeded: segment), &b)
        JournalFormat.appendLE64(UInt64(offset), &b)
        JournalFormat.appendLE64(records, &b)
        JournalFormat.appendLE(CRC32C.checksum(b), &b)
        JournalFormat.appendLE(0, &b)
        return b
    }

    /// The mark in `bytes`, or why it cannot be used.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<DurableMark, MarkProblem> {
        guard bytes.count == JournalFormat.markSize else { return .failure(MarkProblem(reason: "it is \(bytes.count) bytes, not \(JournalFormat.markSize)")) }
        guard bytes.prefix(8).elementsEqual(JournalFormat.markMagic) else { return .failure(MarkProblem(reason: "bad magic")) }
        guard JournalFormat.loadLE(bytes, 8) == 1 else { return .failure(MarkProblem(reason: "unknown version \(JournalFormat.loadLE(bytes, 8))")) }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[..<32]))
        guard crc == JournalFormat.loadLE(bytes, 32) else { return .failure(MarkProblem(reason: "CRC mismatch")) }
        return .success(DurableMark(segment: Int(JournalFormat.loadLE(bytes, 12)), offset: Int(JournalFormat.loadLE64(bytes, 16)),
                                    records: JournalFormat.loadLE64(bytes, 24)))
    }

    struct MarkProblem: Error { var reason: String }

    /// Reads the mark of `directory`: nil when there is none (a journal written before version 2).
    static func read(_ directory: String) throws -> Result<DurableMark, MarkProblem>? {
        let path = directory + "/" + JournalFormat.markName
        guard FileSystem.exists(path) else { return nil }
        let file = try MappedFile(path)
        return decode(file.bytes)
    }

    /// Writes the mark at the start of an open `fd` (one pwrite; returns errno or 0).
    func write(to fd: Int32) -> Int32 {
        encoded().withUnsafeBytes { FileSystem.writeAll(fd, $0, at: 0) }
    }
}
