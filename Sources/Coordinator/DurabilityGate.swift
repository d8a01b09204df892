import WireProtocol

/// Client-bound messages wait here until the journal has made durable everything they could reveal
/// (A5: a client is told of a change only once a crash can no longer undo it). A pure value: the loop
/// asks `tag` for each message, holds it when the tag is not durable yet, and sends what `release`
/// hands back once the journal's durable sequence moves.
///
/// A message's tag is the sequence of the last journal batch it may depend on: the batch being built
/// in this loop pass when that has records, else the last one appended. Tags only grow, so messages
/// leave in the order they were made, and a later message never overtakes an earlier one to the same
/// client.
struct DurabilityGate {
    struct Held {
        var tag: UInt64
        var routing: [UInt8]
        var message: Message
        var requestID: UInt32
        /// Its encoded body, when it was made as bytes (EVENT).
        var body: SharedBody? = nil
        /// The client whose WATCH stream it belongs to (an EVENT).
        var watcher: UInt64? = nil
    }

    private(set) var appended: UInt64 = 0
    private var held: [Held] = []
    private var head = 0

    var isEmpty: Bool { head == held.count }
    var count: Int { held.count - head }

    /// The tag of a message made now.
    func tag(batchHasRecords: Bool) -> UInt64 { batchHasRecords ? appended + 1 : appended }

    /// A batch with sequence `sequence` went to the journal.
    mutating func appended(_ sequence: UInt64) { appended = sequence }

    /// Whether a message tagged `tag` may go now (nothing held before it, and its tag durable).
    func mayPass(_ tag: UInt64, durable: UInt64) -> Bool { isEmpty && tag <= durable }

    mutating func hold(_ h: Held) { held.append(h) }

    /// The held messages whose tags are durable, in order.
    mutating func release(durable: UInt64) -> [Held] {
        let start = head
        while head < held.count && held[head].tag <= durable { head += 1 }
        let out = Array(held[start..<head])
        if head == held.count {
            held.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > held.count {
            held.removeFirst(head)
            head = 0
        }
        return out
    }
}
