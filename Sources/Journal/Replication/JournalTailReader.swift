import Glibc

/// Reads a leader's journal records back from its segment files for a standby that is behind what
/// the `ReplicationFeed` keeps (it joined late, or fell behind): from any record position, in pieces
/// of whole records, up to a limit (issue 29). One per standby: it keeps its place in the segment it
/// read last, so reading on costs no search. Read-only; the writer may append and the snapshot
/// thread delete segments meanwhile (a mapped file stays readable; a deleted one is `gone`).
public final class JournalTailReader {
    public enum Read: Equatable {
        /// `count` records from `first`, framed as on disk.
        case records(first: UInt64, count: Int, bytes: [UInt8])
        /// No segment holds that position any more (a snapshot replaced it) or it is not a record
        /// boundary this journal knows: the standby needs the snapshot.
        case gone
        /// Nothing to read before the limit.
        case nothing
    }

    private let directory: String
    /// Where reading goes on: segment, its mapping, the byte offset and the record index there.
    private var segment = 0
    private var file: MappedFile?
    private var offset = 0
    private var position: UInt64 = 0

    public init(directory: String) { self.directory = directory }

    /// Records from `from` (exclusive of nothing: `from` is the next record wanted) up to but not
    /// including `limit`, at most about `maxBytes` (at least one record).
    public func read(from: UInt64, upTo limit: UInt64, maxBytes: Int) -> Read {
        guard from < limit else { return .nothing }
        if file == nil || position != from {
            guard locate(from) else { return .gone }
        }
        var out: [UInt8] = []
        var count = 0
        while position < limit && (out.isEmpty || out.count < maxBytes) {
            guard let f = file else { return .gone }
            if let end = frameEnd(f.bytes, at: offset) {
                if !out.isEmpty && out.count + (end - offset) > maxBytes { break }
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: f.bytes[offset..<end]))
                offset = end
                position += 1
                count += 1
                continue
            }
            // The end of what is mapped: the file may have grown (the current segment), or the writer
            // moved on to the next segment.
            if let grown = try? MappedFile(path(segment)), grown.bytes.count > f.bytes.count {
                file = grown
                continue
            }
            guard moveToNextSegment() else { break }
        }
        if count == 0 {
            return file == nil ? .gone : .nothing
        }
        return .records(first: from, count: count, bytes: out)
    }

    private func path(_ n: Int) -> String { directory + "/" + JournalFormat.name(.segment, n) }

    /// The end of the whole record at `at`, or nil if none is there (end of file, or a record not
    /// completely written yet: the caller reads only durable positions, so that is the file's end).
    private func frameEnd(_ bytes: UnsafeRawBufferPointer, at: Int) -> Int? {
        guard bytes.count - at >= JournalFormat.frameHeaderSize else { return nil }
        let length = JournalFormat.loadLE(bytes, at)
        guard length ^ JournalFormat.loadLE(bytes, at + 4) == 0xFFFF_FFFF else { return nil }
        let end = at + JournalFormat.frameHeaderSize + Int(length)
        return end <= bytes.count ? end : nil
    }

    private func recordsBefore(_ n: Int) -> UInt64? {
        let fd = Glibc.open(path(n), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: JournalFormat.segmentHeaderSize)
        let got = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard got == header.count else { return nil }
        return header.withUnsafeBytes { b in
            JournalFormat.headerProblem(b, .segment, n) == nil ? JournalFormat.recordsBefore(b) : nil
        }
    }

    /// Finds the segment holding record `target` and the offset of that record in it.
    private func locate(_ target: UInt64) -> Bool {
        file = nil
        guard let names = try? FileSystem.list(directory) else { return false }
        let numbers = names.compactMap { JournalFormat.number(of: $0, .segment) }.sorted(by: >)
        for n in numbers {
            guard let before = recordsBefore(n) else { return false }   // version 1, or damaged: use the snapshot
            guard before <= target else { continue }
            guard let f = try? MappedFile(path(n)) else { return false }
            var at = JournalFormat.segmentHeaderSize
            var index = before
            while index < target, let end = frameEnd(f.bytes, at: at) {
                at = end
                index += 1
            }
            guard index == target else { return false }
            segment = n
            file = f
            offset = at
            position = target
            return true
        }
        return false
    }

    /// At the end of a segment's records: go on in the next one, if it exists and starts here.
    private func moveToNextSegment() -> Bool {
        guard let before = recordsBefore(segment + 1) else { return false }
        guard before == position, let f = try? MappedFile(path(segment + 1)) else {
            file = nil
            return false
        }
        segment += 1
        file = f
        offset = JournalFormat.segmentHeaderSize
        return true
    }
}

/// The newest snapshot of a journal directory, mapped, for a standby that needs it (issue 29).
public final class SnapshotFile {
    public let number: Int
    /// Records the journal held when it was taken: the standby's stream goes on from there.
    public let recordsAfter: UInt64
    private let file: MappedFile
    public var size: Int { file.bytes.count }

    init(number: Int, recordsAfter: UInt64, file: MappedFile) {
        self.number = number
        self.recordsAfter = recordsAfter
        self.file = file
    }

    /// The newest snapshot whose next segment says how many records precede it; nil if there is none.
    public static func newest(in directory: String) -> SnapshotFile? {
        guard let names = try? FileSystem.list(directory) else { return nil }
        for n in names.compactMap({ JournalFormat.number(of: $0, .snapshot) }).sorted(by: >) {
            let next = directory + "/" + JournalFormat.name(.segment, n + 1)
            guard let seg = try? MappedFile(next), JournalFormat.headerProblem(seg.bytes, .segment, n + 1) == nil,
                  let after = JournalFormat.recordsBefore(seg.bytes),
                  let snap = try? MappedFile(directory + "/" + JournalFormat.name(.snapshot, n)) else { continue }
            return SnapshotFile(number: n, recordsAfter: after, file: snap)
        }
        return nil
    }

    /// Bytes `offset ..< offset + count` of the file.
    public func bytes(_ offset: Int, _ count: Int) -> [UInt8] {
        let end = min(size, offset + count)
        guard offset < end else { return [] }
        return Array(UnsafeRawBufferPointer(rebasing: file.bytes[offset..<end]))
    }
}

extension JournalTailReader {
    /// The CRC-32C of record `index` as framed in the segments (nil: no segment holds it, or it is not
    /// written yet). A standby and its leader compare their record before the standby's position: the
    /// same count on another history (a leader that lost its tail and went on) shows as another CRC.
    public func crc(ofRecord index: UInt64) -> UInt32? {
        guard case .records(_, 1, let bytes) = read(from: index, upTo: index + 1, maxBytes: 1), bytes.count >= JournalFormat.frameHeaderSize else {
            return nil
        }
        return bytes.withUnsafeBytes { JournalFormat.loadLE($0, 8) }
    }
}
