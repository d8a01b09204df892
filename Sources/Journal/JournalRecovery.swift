import Glibc
import SchedulerCore

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
    /// Acknowledged records that are missing (only with salvage: without it recovery throws
    /// `JournalError.lost`). The caller marks the runs they touched as damaged.
    public var loss: JournalLoss?
}

/// Acknowledged records that recovery found missing: the durable mark (or the next segment's header)
/// says they were written and synced before clients were told, but the segment ends short of them.
public struct JournalLoss: Sendable, Equatable, CustomStringConvertible {
    /// The segment they were in (its path) and the offset where what was recovered of it ends.
    public var file: String
    public var offset: Int
    /// How many records and bytes are missing (nil: not known, e.g. a version 1 segment).
    public var records: UInt64?
    public var bytes: Int?
    /// What the check found, in words.
    public var reason: String
    /// Of the lost records still readable (set aside by salvage): the runs they submitted to or whose
    /// operations they named, and the operations they submitted, finished, cancelled or reprioritised.
    /// Empty when the bytes are gone (truncated, zeroed).
    public var runs: [String] = []
    public var operations: [String] = []
    /// Whether `runs` and `operations` are everything the lost records touched.
    public var complete = false

    public init(file: String, offset: Int, records: UInt64?, bytes: Int?, complete: Bool = false, reason: String) {
        self.file = file
        self.offset = offset
        self.records = records
        self.bytes = bytes
        self.complete = complete
        self.reason = reason
    }

    public var description: String {
        var parts: [String] = []
        if let records { parts.append("\(records) acknowledged record\(records == 1 ? "" : "s")") }
        if let bytes { parts.append("\(bytes) bytes") }
        var text = "\(lastComponent(of: file)) lost \(parts.isEmpty ? "acknowledged records" : parts.joined(separator: ", ")) after offset \(offset): \(reason)"
        if complete {
            text += runs.isEmpty ? "; they touched no named run" : "; runs they touched: \(Self.list(runs))"
            if !operations.isEmpty { text += "; operations they named (\(operations.count)): \(Self.list(operations))" }
        } else {
            if !runs.isEmpty || !operations.isEmpty {
                text += "; of what could still be read, runs touched: \(runs.isEmpty ? "none named" : Self.list(runs))"
                    + (operations.isEmpty ? "" : ", operations (\(operations.count)): \(Self.list(operations))")
            }
            text += "; \(runs.isEmpty && operations.isEmpty ? "the bytes are gone, so which" : "beyond that, which") runs and operations they touched is not known"
        }
        return text
    }

    static func list(_ names: [String], limit: Int = 20) -> String {
        names.count <= limit ? names.joined(separator: ", ") : names.prefix(limit).joined(separator: ", ") + ", … (\(names.count - limit) more)"
    }
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
        /// Records in the kept segments and before them, as the version 2 headers count them.
        var records: UInt64
    }

    /// Where salvage cuts the journal: everything from here on is set aside.
    private enum Cut {
        /// The record (or header, at 0) at `offset` in this file is damaged.
        case damaged(JournalFormat.Kind, number: Int, offset: Int, reason: String)
        /// This segment is missing.
        case missing(segment: Int)
        /// Acknowledged records after `offset` of this segment are missing (the file may go on with
        /// bytes that are not records: cut there).
        case lost(segment: Int, offset: Int)
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
        var mark: DurableMark?
        switch try DurableMark.read(directory) {
        case .success(let m)?: mark = m
        case .failure(let problem)?:
            report.notes.append("\(JournalFormat.markName) is unreadable (\(problem.reason)): a short newest segment cannot be told from a torn write this time")
        case nil: break
        }
        var loss: JournalLoss?
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
        // Records counted as the version 2 headers count them: before the segment, and read in it.
        var records: UInt64?
        for n in tail {
            let file = try MappedFile(path(.segment, n))
            report.bytesRead += file.bytes.count
            var problem: (offset: Int, reason: String)?
            var found: JournalLoss?
            if let bad = JournalFormat.headerProblem(file.bytes, .segment, n) {
                problem = (0, "bad file header: \(bad)")
            } else {
                // A version 2 header counts the records before it: fewer before it than expected means
                // the end of the previous segment was lost (cut short, or cut back to its header).
                let before = JournalFormat.recordsBefore(file.bytes)
                if let before, let expected = records, let last = kept.last, before != expected {
                    let previous = path(.segment, last.number)
                    if before > expected {
                        found = JournalLoss(file: previous, offset: last.size, records: before - expected, bytes: nil,
                                            reason: "\(JournalFormat.name(.segment, n)) says \(before) records were durable before it, its predecessor ends after record \(expected)")
                    } else {
                        problem = (0, "the header says \(before) records come before this segment, but the segments before it hold \(expected)")
                    }
                }
                if found == nil && problem == nil {
                    records = before
                    var read: UInt64 = 0
                    let end = try JournalFormat.scan(file.bytes, from: JournalFormat.recordsStart(file.bytes, .segment)) { _, payload in
                        let entry: JournalEntry
                        do throws(JournalCodecError) { entry = try JournalCodec.decode(payload) } catch { return error.description }
                        try deliver(entry)
                        report.tailEntries += 1
                        read += 1
                        return nil
                    }
                    records = records.map { $0 + read }
                    // Where the good records end, and whether what follows may be an interrupted write.
                    let goodEnd: Int
                    switch end {
                    case .clean:
                        goodEnd = file.bytes.count
                    case .torn(let offset):
                        goodEnd = offset
                        if n != segments.last {
                            problem = (offset, tornDescription(file.bytes, offset)
                                + " (an interrupted write can only be at the end of the newest segment, and this is not it)")
                        }
                    case .corrupt(let offset, let reason):
                        goodEnd = offset
                        problem = (offset, reason)
                    }
                    // The durable mark says where acknowledged records reach: short of it is loss.
                    if let mark, mark.segment == n, goodEnd < mark.offset, let damaged = problem {
                        // Damage inside what was acknowledged: corruption, and say what it costs.
                        let missing = records.map { mark.records > $0 ? " (\(mark.records - $0) acknowledged records from here on)" : "" } ?? ""
                        problem = (damaged.offset, damaged.reason + missing)
                    } else if let mark, mark.segment == n, goodEnd < mark.offset {
                        let missing = records.map { mark.records > $0 ? mark.records - $0 : 0 }
                        found = JournalLoss(file: file.path, offset: goodEnd, records: missing, bytes: mark.offset - goodEnd,
                                            complete: file.bytes.count >= mark.offset, reason: "\(JournalFormat.markName) says acknowledged records reach offset \(mark.offset), "
                                                + (goodEnd == file.bytes.count ? "but the file ends at \(goodEnd)" : "but from \(goodEnd) on there are no records (\(tornDescription(file.bytes, goodEnd)))"))
                    } else if problem == nil {
                        kept.append((n, goodEnd))
                        if goodEnd < file.bytes.count { torn = (n, goodEnd, file.bytes.count - goodEnd) }
                    }
                    if found != nil { kept.append((n, goodEnd)) }
                }
            }
            if let found {
                guard salvage else { throw JournalError.lost(found) }
                let at = found.file == file.path ? (n, found.offset) : (kept.last!.number, kept.last!.size)
                loss = found
                cut = .lost(segment: at.0, offset: at.1)
                break
            }
            if let problem {
                guard salvage else { throw JournalError.corrupt(file: file.path, offset: problem.offset, reason: problem.reason) }
                cut = .damaged(.segment, number: n, offset: problem.offset, reason: problem.reason)
                if problem.offset > 0 { kept.append((n, problem.offset)) }
                break
            }
        }
        // The newest segments missing altogether: the mark points past every segment there is.
        let lastKept = kept.last?.number ?? base
        if cut == nil, let mark, mark.segment > lastKept, mark.segment > base {
            let missing = records.map { mark.records > $0 ? mark.records - $0 : 0 }
            let where_ = kept.last.map { (path(.segment, $0.number), $0.size) } ?? (path(.segment, base + 1), 0)
            let found = JournalLoss(file: where_.0, offset: where_.1, records: missing, bytes: nil,
                                    reason: "\(JournalFormat.markName) says acknowledged records reach offset \(mark.offset) of \(JournalFormat.name(.segment, mark.segment)), which is missing")
            guard salvage else { throw JournalError.lost(found) }
            loss = found
            cut = .lost(segment: lastKept, offset: kept.last?.size ?? 0)
        }
        report.segments = kept.map(\.number)
        // Salvage gives records up: say which, as far as they can still be read.
        if let cut {
            var at: (segment: Int, offset: Int)?
            switch cut {
            case .lost(let n, let offset): at = (n, offset)
            case .damaged(.segment, let n, let offset, let reason):
                at = (n, offset)
                let missing = mark.flatMap { m in records.map { m.records > $0 ? m.records - $0 : 0 } }
                loss = JournalLoss(file: path(.segment, n), offset: offset, records: missing, bytes: nil, complete: true,
                                   reason: "the record at offset \(offset) is damaged (\(reason))")
            case .missing(let n):
                at = (n, 0)
                loss = JournalLoss(file: path(.segment, n), offset: 0, records: nil, bytes: nil,
                                   reason: "\(JournalFormat.name(.segment, n)) is missing")
            case .damaged(.snapshot, _, _, _): break
            }
            if let at, var found = loss {
                let summary = lostSummary(segment: at.segment, from: at.offset, later: segments.filter { $0 > at.segment })
                found.runs = summary.runs
                found.operations = summary.operations
                found.complete = found.complete && summary.complete
                loss = found
            }
        }
        report.loss = loss

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
        if let loss {
            report.notes.append("ACKNOWLEDGED RECORDS LOST: \(loss); started anyway (--salvage)")
        }
        removeLeftovers(names: names, base: base, notes: &report.notes)
        // The mark now points at what was kept: the next recovery checks against that, not the loss.
        let total = records ?? UInt64(report.tailEntries)
        try writeMark(kept.last.map { DurableMark(segment: $0.number, offset: $0.size, records: total) })
        if salvageDirectory != nil || torn != nil { FileSystem.syncDirectory(directory) }

        report.duration = clock.now - started
        // A segment moved aside or missing leaves its number free: the kept ones end just before it.
        let last = max(base, kept.last?.number ?? 0)
        return Result(report: report, nextSegment: last + 1, journalBytes: kept.reduce(0) { $0 + $1.size },
                      snapshotBytes: cutSnapshotSize(cut) ?? snapshotBytes, records: total)
    }

    /// Replaces the durable mark (synced: it describes the directory as recovery left it); nil removes it.
    private func writeMark(_ mark: DurableMark?) throws {
        let file = directory + "/" + JournalFormat.markName
        guard let mark else {
            unlink(file)
            return
        }
        let fd = try FileSystem.open(file, O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(fd) }
        let e = mark.write(to: fd)
        guard e == 0 else { throw JournalError.io(path: file, operation: "write", errno: e) }
        guard fsync(fd) == 0 else { throw JournalError.io(path: file, operation: "fsync", errno: errno) }
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
        case .lost(let n, let offset):
            let name = JournalFormat.name(.segment, n)
            let file = path(.segment, n)
            if let size = FileSystem.size(file), size > offset {
                try FileSystem.copy(file, into + "/" + name)
                try FileSystem.truncate(file, to: offset)
                notes.append("\(name): kept the records before offset \(offset); the \(size - offset) bytes from there on were cut off (\(into)/\(name) is a copy of the whole file as it was)")
            }
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

extension Recoverer {
    /// What the records past a salvage cut touched, as far as they can still be read: from `offset` of
    /// segment `n` to its end (a damaged record is skipped when its length can be trusted), then every
    /// later segment. `complete`: every byte read as a record (nothing skipped, nothing unreadable).
    func lostSummary(segment n: Int, from offset: Int, later: [Int]) -> (runs: [String], operations: [String], complete: Bool) {
        var runs: [String] = [], operations: [String] = []
        var seenRuns = Set<String>(), seenOps = Set<String>()
        var complete = true
        func op(_ id: String) {
            guard seenOps.insert(id).inserted else { return }
            operations.append(id)
            if let run = RunNames.split(id)?.run, seenRuns.insert(String(run)).inserted { runs.append(String(run)) }
        }
        func walk(_ bytes: UnsafeRawBufferPointer, from start: Int) {
            var at = start
            while at < bytes.count {
                let left = bytes.count - at
                guard left >= JournalFormat.frameHeaderSize, !JournalFormat.isZero(bytes, from: at) else { complete = false; return }
                let length = Int(JournalFormat.loadLE(bytes, at))
                guard JournalFormat.loadLE(bytes, at) ^ JournalFormat.loadLE(bytes, at + 4) == 0xFFFF_FFFF,
                      length <= left - JournalFormat.frameHeaderSize else { complete = false; return }
                let payload = UnsafeRawBufferPointer(rebasing: bytes[(at + JournalFormat.frameHeaderSize)..<(at + JournalFormat.frameHeaderSize + length)])
                at += JournalFormat.frameHeaderSize + length
                guard CRC32C.checksum(payload) == JournalFormat.loadLE(bytes, at - length - 4),
                      let entry = try? JournalCodec.decode(payload) else { complete = false; continue }
                switch entry.record {
                case .submitted(let run, _, let ops, _, _):
                    if seenRuns.insert(run).inserted { runs.append(run) }
                    for o in ops { op(o.id) }
                case .finished(let id, _, _, _): op(id)
                case .cancelRequested(let ids, _, _): ids.forEach(op)
                case .priorityChanged(let id, _, _): op(id)
                default: break
                }
            }
        }
        if let file = try? MappedFile(path(.segment, n)), offset < file.bytes.count { walk(file.bytes, from: offset) }
        for m in later {
            guard let file = try? MappedFile(path(.segment, m)), JournalFormat.headerProblem(file.bytes, .segment, m) == nil else {
                complete = false
                continue
            }
            walk(file.bytes, from: JournalFormat.recordsStart(file.bytes, .segment))
        }
        return (runs, operations, complete)
    }
}
