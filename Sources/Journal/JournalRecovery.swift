import Glibc

/// What `JournalStore.recover` found. Replay `entries` (or what `forEach` was given) in order: the
/// snapshot's, then every later segment's.
public struct JournalRecovery: Sendable {
    /// The entries to replay, in order (empty when they went to a `forEach` callback instead).
    public var entries: [JournalEntry] = []
    /// What recovery did besides reading, for the caller to log: torn tails truncated, salvaged files,
    /// leftovers of an interrupted snapshot removed.
    public var notes: [String] = []
    /// The snapshot replayed first (nil: none, the journal starts from nothing).
    public var snapshot: Int?
    /// Entries from that snapshot, and from the segments after it.
    public var snapshotEntries = 0
    public var tailEntries = 0
    /// The numbers of the segments replayed after the snapshot.
    public var segments: [Int] = []
    public var bytesRead = 0
    public var duration: Duration = .zero
}

/// One recovery pass over a state directory (rules in JournalStore.swift). Reads the snapshot and
/// segments, hands each entry to `deliver` as it is decoded, and only when everything has been read
/// changes the directory: truncates a torn tail, sets aside what salvage gave up, removes leftovers.
struct Recoverer {
    let directory: String
    let salvage: Bool

    /// The writer's starting point after recovery.
    struct Result {
        var report: JournalRecovery
        var nextSegment: Int
        var journalBytes: Int
        var snapshotBytes: Int
    }

    /// Where salvage cuts the journal: everything from here on is set aside.
    private enum Cut {
        /// The record (or header, at 0) at `offset` in this file is damaged.
        case damaged(JournalFormat.Kind, number: Int, offset: Int, reason: String)
        /// This segment is missing.
        case missing(segment: Int)
    }

    private func path(_ kind: JournalFormat.Kind, _ n: Int) -> String { directory + "/" + JournalFormat.name(kind, n) }

    func run(_ deliver: (JournalEntry) throws -> Void) throws -> Result {
        let clock = ContinuousClock()
        let started = clock.now
        var report = JournalRecovery()
        let names = try FileSystem.list(directory)
        let segments = names.compactMap { JournalFormat.number(of: $0, .segment) }.sorted()
        let snapshots = names.compactMap { JournalFormat.number(of: $0, .snapshot) }.sorted(by: >)
        let present = Set(segments)
        var cut: Cut?
        var damagedSnapshots: [(number: Int, offset: Int, reason: String)] = []

        // The newest snapshot that reads back whole. A damaged one is skipped only if the segments it
        // replaced are still there (its deletion step had not run); otherwise that is corruption.
        var base = 0
        var baseFile: MappedFile?
        for (i, n) in snapshots.enumerated() {
            let file = try MappedFile(path(.snapshot, n))
            report.bytesRead += file.bytes.count
            guard let problem = snapshotProblem(file, n) else {
                base = n
                baseFile = file
                break
            }
            let previous = i + 1 < snapshots.count ? snapshots[i + 1] : 0
            if (previous + 1...n).allSatisfy(present.contains) {
                damagedSnapshots.append((n, problem.offset, problem.reason))
                continue
            }
            guard salvage else { throw JournalError.corrupt(file: path(.snapshot, n), offset: problem.offset, reason: problem.reason) }
            base = n
            baseFile = file
            cut = .damaged(.snapshot, number: n, offset: problem.offset, reason: problem.reason)
            break
        }

        // The segments after it must be consecutive, starting right after the snapshot.
        var tail = segments.filter { $0 > base }
        if cut == nil {
            for (k, n) in tail.enumerated() where n != base + 1 + k {
                let missing = base + 1 + k
                let reason = k == 0 && base == 0
                    ? "\(JournalFormat.name(.segment, missing)) is missing and no snapshot covers the records before \(JournalFormat.name(.segment, n))"
                    : "\(JournalFormat.name(.segment, missing)) is missing; the segments after it cannot be replayed without it"
                guard salvage else { throw JournalError.corrupt(file: path(.segment, missing), offset: 0, reason: reason) }
                cut = .missing(segment: missing)
                tail = Array(tail[..<k])
                break
            }
        } else {
            tail = []
        }

        // Replay the snapshot. Its frames were checked above; a payload that does not decode is
        // corruption (no fallback: entries were already delivered).
        if let baseFile {
            report.snapshot = base
            let end = try JournalFormat.scan(baseFile.bytes, from: JournalFormat.fileHeaderSize) { _, payload in
                let entry: JournalEntry
                do throws(JournalCodecError) { entry = try JournalCodec.decode(payload) } catch { return error.description }
                try deliver(entry)
                report.snapshotEntries += 1
                return nil
            }
            if case .corrupt(let offset, let reason) = end {
                guard salvage else { throw JournalError.corrupt(file: baseFile.path, offset: offset, reason: reason) }
                cut = .damaged(.snapshot, number: base, offset: offset, reason: reason)  // before any gap
                tail = []
            }
        }
        let snapshotBytes = baseFile?.bytes.count ?? 0
        baseFile = nil

        // Replay the segments. Only the newest may end in an interrupted write.
        var kept: [(number: Int, size: Int)] = []
        var torn: (number: Int, offset: Int, bytes: Int)?
        for n in tail {
            let file = try MappedFile(path(.segment, n))
            report.bytesRead += file.bytes.count
            var problem: (offset: Int, reason: String)?
            if let bad = JournalFormat.headerProblem(file.bytes, .segment, n) {
                problem = (0, "bad file header: \(bad)")
            } else {
                let end = try JournalFormat.scan(file.bytes, from: JournalFormat.fileHeaderSize) { _, payload in
                    let entry: JournalEntry
                    do throws(JournalCodecError) { entry = try JournalCodec.decode(payload) } catch { return error.description }
                    try deliver(entry)
                    report.tailEntries += 1
                    return nil
                }
                switch end {
                case .clean:
                    kept.append((n, file.bytes.count))
                case .torn(let offset) where n == segments.last:
                    torn = (n, offset, file.bytes.count - offset)
                    kept.append((n, offset))
                case .torn(let offset):
                    problem = (offset, tornDescription(file.bytes, offset)
                        + " (an interrupted write can only be at the end of the newest segment, and this is not it)")
                case .corrupt(let offset, let reason):
                    problem = (offset, reason)
                }
            }
            if let problem {
                guard salvage else { throw JournalError.corrupt(file: file.path, offset: problem.offset, reason: problem.reason) }
                cut = .damaged(.segment, number: n, offset: problem.offset, reason: problem.reason)
                if problem.offset > 0 { kept.append((n, problem.offset)) }
                break
            }
        }
        report.segments = kept.map(\.number)

        // Everything read back: now change the directory.
        var salvageDirectory: String?
        func salvaged() throws -> String {
            if let salvageDirectory { return salvageDirectory }
            let made = try makeSalvageDirectory()
            salvageDirectory = made
            return made
        }
        for damaged in damagedSnapshots {
            let name = JournalFormat.name(.snapshot, damaged.number)
            let into = try salvaged()
            try FileSystem.rename(path(.snapshot, damaged.number), into + "/" + name)
            let from = base > 0 ? JournalFormat.name(.snapshot, base) + " and the segments after it" : "the segments"
            report.notes.append("\(name) is damaged at offset \(damaged.offset) (\(damaged.reason)); recovered from \(from) instead; the damaged snapshot was moved to \(into)/")
        }
        if let torn {  // the newest segment was read to its end, so nothing after it was cut
            let name = JournalFormat.name(.segment, torn.number)
            try FileSystem.truncate(path(.segment, torn.number), to: torn.offset)
            report.notes.append("\(name): torn tail of \(torn.bytes) bytes at offset \(torn.offset) truncated")
        }
        if let cut {
            try setAside(cut, segments: segments, base: base, into: try salvaged(), notes: &report.notes)
        }
        removeLeftovers(names: names, base: base, notes: &report.notes)
        if salvageDirectory != nil || torn != nil { FileSystem.syncDirectory(directory) }

        report.duration = clock.now - started
        // A segment moved aside or missing leaves its number free: the kept ones end just before it.
        let last = max(base, kept.last?.number ?? 0)
        return Result(report: report, nextSegment: last + 1, journalBytes: kept.reduce(0) { $0 + $1.size },
                      snapshotBytes: cutSnapshotSize(cut) ?? snapshotBytes)
    }

    private func cutSnapshotSize(_ cut: Cut?) -> Int? {
        if case .damaged(.snapshot, _, let offset, _)? = cut { return offset }
        return nil
    }

    /// Why snapshot `n` cannot be used as it is (nil: every frame checks out). A snapshot is written
    /// whole and renamed into place, so unlike a segment it may not end in a torn record.
    private func snapshotProblem(_ file: MappedFile, _ n: Int) -> (offset: Int, reason: String)? {
        if let bad = JournalFormat.headerProblem(file.bytes, .snapshot, n) { return (0, "bad file header: \(bad)") }
        switch JournalFormat.scan(file.bytes, from: JournalFormat.fileHeaderSize, visit: { _, _ in nil }) {
        case .clean: return nil
        case .torn(let offset): return (offset, tornDescription(file.bytes, offset) + " (a snapshot is written whole, so it is damaged)")
        case .corrupt(let offset, let reason): return (offset, reason)
        }
    }

    private func tornDescription(_ file: UnsafeRawBufferPointer, _ offset: Int) -> String {
        let left = file.count - offset
        if left < JournalFormat.frameHeaderSize { return "the file ends \(left) bytes into a record header" }
        if JournalFormat.isZero(file, from: offset) { return "the last \(left) bytes are zeros" }
        let length = JournalFormat.loadLE(file, offset)
        return "the record's length \(length) runs past the end of the file (\(left - JournalFormat.frameHeaderSize) bytes present)"
    }

    private func makeSalvageDirectory() throws -> String {
        let stamp = String(time(nil))
        var candidate = directory + "/salvaged-" + stamp
        var n = 2
        while FileSystem.exists(candidate) {
            candidate = directory + "/salvaged-" + stamp + "-\(n)"
            n += 1
        }
        guard mkdir(candidate, 0o700) == 0 else { throw JournalError.io(path: candidate, operation: "create directory", errno: errno) }
        return candidate
    }

    /// Salvage: keeps what is before the cut, moves the rest into `into` and says exactly what.
    private func setAside(_ cut: Cut, segments: [Int], base: Int, into: String, notes: inout [String]) throws {
        let firstLater: Int
        switch cut {
        case .damaged(let kind, let n, let offset, let reason):
            let name = JournalFormat.name(kind, n)
            let file = path(kind, n)
            let size = FileSystem.size(file) ?? 0
            if offset == 0 {
                try FileSystem.rename(file, into + "/" + name)
                notes.append("\(name) is damaged at offset 0 (\(reason)): the whole file (\(size) bytes) was moved to \(into)/")
            } else {
                try FileSystem.copy(file, into + "/" + name)
                try FileSystem.truncate(file, to: offset)
                notes.append("\(name) is damaged at offset \(offset) (\(reason)): kept the records before it; the \(size - offset) bytes from there on were cut off (\(into)/\(name) is a copy of the whole file as it was)")
            }
            firstLater = kind == .snapshot ? base + 1 : n + 1
        case .missing(let n):
            notes.append("\(JournalFormat.name(.segment, n)) is missing: kept the segments before it")
            firstLater = n + 1
        }
        let later = segments.filter { $0 >= firstLater }
        for n in later { try FileSystem.rename(path(.segment, n), into + "/" + JournalFormat.name(.segment, n)) }
        if let first = later.first, let last = later.last {
            let bytes = later.reduce(0) { $0 + (FileSystem.size(into + "/" + JournalFormat.name(.segment, $1)) ?? 0) }
            let which = first == last ? JournalFormat.name(.segment, first)
                : "\(JournalFormat.name(.segment, first)) … \(JournalFormat.name(.segment, last))"
            notes.append("set aside \(later.count) later segment\(later.count == 1 ? "" : "s") (\(which), \(bytes) bytes) in \(into)/: their records are not recovered")
        }
        FileSystem.syncDirectory(into)
    }

    /// Files an interrupted snapshot or rotation left: segments and snapshots the base snapshot covers,
    /// and temporary files. Best effort (they are ignored at the next recovery too).
    private func removeLeftovers(names: [String], base: Int, notes: inout [String]) {
        var removed: [String] = []
        for name in names {
            let stale: Bool
            if let n = JournalFormat.number(of: name, .segment) {
                stale = n <= base
            } else if let n = JournalFormat.number(of: name, .snapshot) {
                stale = n < base
            } else {
                stale = name.hasSuffix(".tmp") && (name.hasPrefix("journal-") || name.hasPrefix("snapshot-"))
            }
            if stale && unlink(directory + "/" + name) == 0 { removed.append(name) }
        }
        if !removed.isEmpty {
            notes.append("removed \(removed.count) file\(removed.count == 1 ? "" : "s") left by an interrupted snapshot or segment switch: \(removed.sorted().joined(separator: ", "))")
            FileSystem.syncDirectory(directory)
        }
    }
}
