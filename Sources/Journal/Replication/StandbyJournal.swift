import Glibc

/// What a standby does to its own state directory with what its leader sends (issue 29): check and
/// decode the records of a JOURNAL message, and install a snapshot in place of everything it had.
public enum StandbyJournal {
    public enum Problem: Error, Equatable, CustomStringConvertible {
        case badRecords(String)
        case badSnapshot(String)
        public var description: String {
            switch self {
            case .badRecords(let r): "journal records from the leader are damaged: \(r)"
            case .badSnapshot(let r): "snapshot from the leader is damaged: \(r)"
            }
        }
    }

    /// The entries of `count` framed records (as a segment holds them), every frame and CRC checked.
    public static func entries(framed bytes: [UInt8], count: Int) throws(Problem) -> [JournalEntry] {
        var out: [JournalEntry] = []
        out.reserveCapacity(count)
        let end: JournalFormat.End = bytes.withUnsafeBytes { b in
            JournalFormat.scan(b, from: 0) { _, payload in
                do throws(JournalCodecError) { out.append(try JournalCodec.decode(payload)) } catch { return error.description }
                return nil
            }
        }
        switch end {
        case .clean: break
        case .torn(let offset): throw .badRecords("cut short at byte \(offset)")
        case .corrupt(let offset, let reason): throw .badRecords("at byte \(offset): \(reason)")
        }
        guard out.count == count else { throw .badRecords("\(out.count) records where \(count) were announced") }
        return out
    }

    /// Replaces the journal in `directory` (no store may have it open) by snapshot `number`, whose
    /// bytes are `snapshot`, standing for `recordsAfter` records: every segment, snapshot and mark
    /// there is moved to `replaced-<unix time>/` (the state the standby had, kept for a person to look
    /// at), the snapshot is written and synced, and an empty segment `number + 1` whose header counts
    /// `recordsAfter`, so recovery replays the snapshot and the journal's position goes on from there.
    /// Returns the directory the old files went to (nil: there were none).
    @discardableResult
    public static func install(snapshot: [UInt8], number: Int, recordsAfter: UInt64, in directory: String) throws -> String? {
        let problem: String? = snapshot.withUnsafeBytes { b in
            if let p = JournalFormat.headerProblem(b, .snapshot, number) { return p }
            switch JournalFormat.scan(b, from: JournalFormat.fileHeaderSize, visit: { _, _ in nil }) {
            case .clean: return nil
            case .torn(let offset): return "cut short at byte \(offset)"
            case .corrupt(let offset, let reason): return "at byte \(offset): \(reason)"
            }
        }
        if let problem { throw Problem.badSnapshot(problem) }
        try FileSystem.makeDirectory(directory)
        let names = try FileSystem.list(directory)
        let old = names.filter {
            JournalFormat.number(of: $0, .segment) != nil || JournalFormat.number(of: $0, .snapshot) != nil
                || $0 == JournalFormat.markName || $0.hasSuffix(".tmp")
        }
        var moved: String?
        if !old.isEmpty {
            var into = directory + "/replaced-" + String(time(nil))
            var k = 2
            while FileSystem.exists(into) { into = directory + "/replaced-" + String(time(nil)) + "-\(k)"; k += 1 }
            guard mkdir(into, 0o700) == 0 else { throw JournalError.io(path: into, operation: "create directory", errno: errno) }
            for name in old { try FileSystem.rename(directory + "/" + name, into + "/" + name) }
            FileSystem.syncDirectory(into)
            moved = into
        }
        try writeFile(directory + "/" + JournalFormat.name(.snapshot, number), snapshot)
        try writeFile(directory + "/" + JournalFormat.name(.segment, number + 1),
                      JournalFormat.header(.segment, number + 1, recordsBefore: recordsAfter))
        FileSystem.syncDirectory(directory)
        return moved
    }

    /// Written under a .tmp name, synced, renamed into place (a final name always has whole content).
    private static func writeFile(_ path: String, _ bytes: [UInt8]) throws(JournalError) {
        let tmp = path + ".tmp"
        let fd = try FileSystem.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, operation: "create")
        let e = bytes.withUnsafeBytes { FileSystem.writeAll(fd, $0, at: 0) }
        if e != 0 { close(fd); throw .io(path: tmp, operation: "write", errno: e) }
        if fsync(fd) != 0 { let e = errno; close(fd); throw .io(path: tmp, operation: "fsync", errno: e) }
        close(fd)
        try FileSystem.rename(tmp, path)
    }
}
