import Glibc
import ThreadMonitor

/// Recovery with decoding on its own thread (`JournalStore.recover(salvage:pipelined:)`): the decoder
/// hands over chunks of entries through a small bounded queue while the caller replays the previous
/// ones, so a large state recovers in about the longer of the two instead of their sum.
final class RecoveryPipeline: @unchecked Sendable {
    /// A chunk goes to the caller at 256 entries or 4,096 operations (a submitted batch counts its
    /// operations), so the two threads overlap from the first batch on; at most 8 chunks wait.
    static let chunkEntries = 256
    static let chunkWeight = 4096
    static let queuedChunks = 8

    private let monitor = Monitor()
    private var chunks: [[JournalEntry]] = []   // guarded by monitor
    private var finished = false
    private var cancelled = false
    private var outcome: Result<Recoverer.Result, Error>?

    /// Runs `recover` on a new thread, giving it a sink for entries; returns at once.
    func start(_ recover: @escaping @Sendable (_ deliver: (JournalEntry) throws -> Void) throws -> Recoverer.Result) throws {
        let started = startThread(name: "opq-recover") { [self] in
            var chunk: [JournalEntry] = []
            var weight = 0
            let result = Result { () throws -> Recoverer.Result in
                let r = try recover { entry in
                    chunk.append(entry)
                    if case .submitted(_, _, let ops, _, _) = entry.record { weight += ops.count } else { weight += 1 }
                    if chunk.count >= Self.chunkEntries || weight >= Self.chunkWeight {
                        try self.put(chunk)
                        chunk = []
                        weight = 0
                    }
                }
                if !chunk.isEmpty { try self.put(chunk) }
                return r
            }
            monitor.withLock { outcome = result; finished = true; monitor.broadcast() }
        }
        if case .failure(let e) = started { throw e }
    }

    private struct Cancelled: Error {}

    private func put(_ chunk: [JournalEntry]) throws {
        try monitor.withLock {
            while chunks.count >= Self.queuedChunks && !cancelled { monitor.wait() }
            if cancelled { throw Cancelled() }
            chunks.append(chunk)
            monitor.broadcast()
        }
    }

    /// The next chunk, or nil once the decoder is done (then `result()`).
    func take() -> [JournalEntry]? {
        monitor.withLock {
            while chunks.isEmpty && !finished { monitor.wait() }
            guard !chunks.isEmpty else { return nil }
            let c = chunks.removeFirst()
            monitor.broadcast()
            return c
        }
    }

    /// The consumer failed: the decoder stops at its next chunk; wait for it with `take` until nil.
    func cancel() {
        monitor.withLock { cancelled = true; chunks.removeAll(); monitor.broadcast() }
    }

    func result() throws -> Recoverer.Result {
        try monitor.withLock { try outcome!.get() }
    }
}
