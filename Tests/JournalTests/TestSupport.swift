import Glibc
@testable import Journal
import Testing
import ThreadMonitor

/// A fresh directory under /tmp, removed (recursively) when the value goes away.
final class TemporaryDirectory {
    let path: String

    init(_ label: String = "journal") {
        var template = Array("/tmp/opq-\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp: \(String(cString: strerror(errno)))")
        path = String(cString: made!)
    }

    deinit { removeTree(path) }

    /// The state directory inside it (created by the store).
    var state: String { path + "/state" }
}

func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR {
        for name in (try? FileSystem.list(path)) ?? [] { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// Polls `condition` until it holds or `seconds` pass (a bounded wait, never a fixed sleep).
func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNanos() + UInt64(seconds * 1e9)
    while !condition() {
        if monotonicNanos() > deadline { return false }
        usleep(1000)
    }
    return true
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = try? MappedFile(path) else { return [] }
    return Array(file.bytes)
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
    if !bytes.isEmpty { _ = bytes.withUnsafeBytes { FileSystem.writeAll(fd, $0, at: 0) } }
    close(fd)
}

/// The regular files at the top of a directory, by name.
func saveFiles(_ directory: String) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for name in (try? FileSystem.list(directory)) ?? [] {
        var st = stat()
        if stat(directory + "/" + name, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
            files[name] = readFile(directory + "/" + name)
        }
    }
    return files
}

/// Makes `directory` hold exactly `files` again (salvage directories and all).
func restoreFiles(_ directory: String, _ files: [String: [UInt8]]) {
    removeTree(directory)
    mkdir(directory, 0o700)
    for (name, bytes) in files { writeFile(directory + "/" + name, bytes) }
}

func segmentNumbers(_ directory: String) -> [Int] {
    ((try? FileSystem.list(directory)) ?? []).compactMap { JournalFormat.number(of: $0, .segment) }.sorted()
}

func snapshotNumbers(_ directory: String) -> [Int] {
    ((try? FileSystem.list(directory)) ?? []).compactMap { JournalFormat.number(of: $0, .snapshot) }.sorted()
}

/// (offset, total length) of every record in a segment or snapshot file.
func recordSpans(_ bytes: [UInt8]) -> [(offset: Int, length: Int)] {
    var spans: [(Int, Int)] = []
    let end = bytes.withUnsafeBytes { raw in
        JournalFormat.scan(raw, from: recordsStart(raw)) { offset, payload in
            spans.append((offset, JournalFormat.frameHeaderSize + payload.count))
            return nil
        }
    }
    precondition(end == .clean, "test fixture is not a clean file: \(end)")
    return spans
}

/// Appends `batches` batches of 1…`perBatch` random entries; returns the entries in order and the
/// last batch's sequence number.
func appendRandom(_ store: JournalStore, _ random: inout RandomEntries, batches: Int, perBatch: Int = 4)
    -> (entries: [JournalEntry], last: UInt64) {
    var entries: [JournalEntry] = []
    var last: UInt64 = 0
    for _ in 0..<batches {
        var batch = JournalBatch()
        for _ in 0..<(1 + random.rng.int(perBatch)) {
            let e = random.entry()
            entries.append(e)
            batch.add(e)
        }
        last = store.append(batch)
    }
    return (entries, last)
}

let noSync = JournalOptions(segmentBytes: 2048, retryInterval: .milliseconds(50), fsync: false)

/// Where the records of a segment or snapshot file start (a version 2 segment's header is longer).
func recordsStart(_ raw: UnsafeRawBufferPointer) -> Int {
    JournalFormat.recordsStart(raw, raw.prefix(8).elementsEqual(JournalFormat.segmentMagic) ? .segment : .snapshot)
}

func recordsStart(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { recordsStart($0) } }

/// Rewrites the durable mark as if the last acknowledged group commit had ended at `offset` of segment
/// `n` (what the writer leaves when a later commit's write is cut short by a crash).
func markDurable(_ directory: String, segment n: Int, offset: Int) {
    let bytes = readFile(directory + "/" + JournalFormat.name(.segment, n))
    let before = bytes.withUnsafeBytes { JournalFormat.recordsBefore($0) } ?? 0
    let records = recordSpans(Array(bytes[..<offset])).count
    writeFile(directory + "/" + JournalFormat.markName,
              DurableMark(segment: n, offset: offset, records: before + UInt64(records)).encoded())
}
