/// Keeps the last `limit` bytes of a stream and counts all of them, so a chatty child
/// cannot make the worker's memory grow.
struct TailBuffer: Sendable {
    let limit: Int
    private var bytes: [UInt8] = []
    private(set) var total: Int = 0

    init(limit: Int) { self.limit = max(0, limit) }

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        total += chunk.count
        if chunk.count >= limit {
            bytes = Array(chunk.suffix(limit))
            return
        }
        bytes.append(contentsOf: chunk)
        // Trim in bulk (at 2× the limit) so appends stay amortised O(1).
        if bytes.count > 2 * limit { bytes.removeFirst(bytes.count - limit) }
    }

    /// The last `limit` bytes.
    var tail: [UInt8] { bytes.count > limit ? Array(bytes.suffix(limit)) : bytes }
    var truncated: Bool { total > limit }

    /// The last `n` (≤ `limit`) bytes, and how many bytes of the stream came before them.
    func last(_ n: Int) -> (bytes: [UInt8], dropped: Int) {
        let kept = Array(bytes.suffix(max(0, min(n, limit))))
        return (kept, total - kept.count)
    }
}
