/// A pre-parse walk over the protobuf wire format of a body that counts repeated
/// elements before SwiftProtobuf allocates them. Without it a 16 MiB body of
/// 2-byte empty records would expand into ~8 M structs (about 1 GB). It knows,
/// per message, which field numbers are repeated or nested messages; everything
/// else is skipped by wire type. SUBMIT, STARTED and FINISHED come here only when their direct decoders
/// (SubmitDecoding, ReportDecoding) leave the body to the general path: those count the same lists
/// against the same limits as they decode, so a list added here for them is counted there too.
struct ScanNode: Sendable {
    struct Field: Sendable {
        let name: String
        let limit: Int
        let child: ScanNode?
        /// Which of the node's (at most 4) counters this field uses.
        var slot = 0

        static func list(_ name: String, limit: Int = WireLimits.maxBatchRecords, _ child: ScanNode? = nil) -> Field {
            Field(name: name, limit: limit, child: child)
        }
    }
    /// Indexed by field number (small schemas: numbers stay below 16).
    let fields: [Field?]

    init(_ list: [(Int, Field)]) {
        precondition(list.count <= 4, "ScanNode counts at most 4 repeated fields")
        var f = [Field?](repeating: nil, count: (list.map(\.0).max() ?? 0) + 1)
        for (slot, (n, field)) in list.enumerated() {
            var field = field
            field.slot = slot
            f[n] = field
        }
        fields = f
    }
}

enum StructureScan {
    static let leaf = ScanNode([])
    // HELLO: tags, kinds, and (1.3) the attempts a re-registering worker holds and finished.
    static let hello = ScanNode([(4, .list("tags")), (5, .list("kinds")), (7, .list("running")), (8, .list("finished"))])
    static let workerInfo = ScanNode([(4, .list("tags")), (5, .list("kinds"))])
    static let dispatchRecord = ScanNode([(6, .list("inputs", limit: WireLimits.maxInputsPerRecord))])
    static let dispatch = ScanNode([(1, .list("records", dispatchRecord))])
    static let records = ScanNode([(1, .list("records"))])
    static let started = ScanNode([(1, .list("parts"))])
    static let operation = ScanNode([(6, .list("after")), (14, .list("requires"))])
    static let submit = ScanNode([(1, .list("queues")), (2, .list("operations", operation))])
    static let submitError = ScanNode([(5, .list("related"))])
    static let submitReply = ScanNode([(3, .list("errors", submitError))])
    static let opIDs = ScanNode([(1, .list("op_ids"))])
    static let ack = ScanNode([(2, .list("not_found"))])
    static let statusReply = ScanNode([(1, .list("queues")), (2, .list("ops")), (4, .list("not_found"))])
    static let whyReply = ScanNode([(4, .list("waiting_on")), (5, .list("reasons"))])
    static let workersReply = ScanNode([(1, .list("workers", workerInfo))])
    static let events = ScanNode([(1, .list("events"))])
    static let waitReply = ScanNode([(3, .list("outcomes")), (4, .list("pending")), (5, .list("not_found"))])
    static let runsReply = ScanNode([(1, .list("runs"))])
    static let logsReply = ScanNode([(3, .list("attempts"))])
    static let storyReply = ScanNode([(3, .list("entries"))])

    static func node(for command: Command) -> ScanNode {
        switch command {
        case .hello: hello
        case .dispatch: dispatch
        case .started: started
        case .progress, .finished, .cancel: records
        case .submit: submit
        case .submitReply: submitReply
        case .cancelOps, .setPriority, .status, .watch, .wait, .runs: opIDs
        case .ack: ack
        case .statusReply: statusReply
        case .whyReply: whyReply
        case .workersReply: workersReply
        case .event: events
        case .waitReply: waitReply
        case .runsReply: runsReply
        case .logsReply: logsReply
        case .storyReply: storyReply
        case .welcome, .reject, .credit, .heartbeat, .disconnect, .queue, .why, .workers, .error, .logs, .story, .ha, .haReply,
             .follow, .journal, .snapshot, .replicaAck, .promote: leaf
        }
    }

    /// Throws `batchTooLarge` (top-level list), `fieldTooLarge` (nested list),
    /// `tooManyElements` (total) or `malformedBody` (broken wire format).
    static func check(_ body: [UInt8], command: Command) throws(WireError) {
        var scanner = Scanner(command: command)
        let node = node(for: command)
        // Bodies with no repeated field are walked too: that is what rejects groups (§3.1) everywhere.
        try body.withUnsafeBufferPointer { (buf) throws(WireError) in
            try scanner.scan(buf, 0, buf.count, node: node, path: nil)
        }
    }

    struct Scanner {
        let command: Command
        var total = 0

        mutating func scan(_ buf: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int,
                           node: ScanNode, path: String?) throws(WireError) {
            // Four counters in registers: an array here would cost a malloc per record.
            var counts: (Int, Int, Int, Int) = (0, 0, 0, 0)
            var i = start
            while i < end {
                let key = try varint(buf, &i, end)
                let number = key >> 3
                switch key & 7 {
                case 0: _ = try varint(buf, &i, end)
                case 1: try skip(8, &i, end)
                case 5: try skip(4, &i, end)
                case 2:
                    let len = try varint(buf, &i, end)
                    guard len <= UInt64(end - i) else { throw malformed("length past the end of the body") }
                    let fieldStart = i
                    i += Int(len)
                    guard number < UInt64(node.fields.count), let field = node.fields[Int(number)] else { continue }
                    let n: Int
                    switch field.slot {
                    case 0: counts.0 += 1; n = counts.0
                    case 1: counts.1 += 1; n = counts.1
                    case 2: counts.2 += 1; n = counts.2
                    default: counts.3 += 1; n = counts.3
                    }
                    total += 1
                    if n > field.limit {
                        let name = path.map { "\($0).\(field.name)" } ?? field.name
                        if path == nil { throw .batchTooLarge(command, count: n, limit: field.limit) }
                        throw .fieldTooLarge(command, field: name, size: n, limit: field.limit)
                    }
                    if total > WireLimits.maxElements {
                        throw .tooManyElements(command, count: total, limit: WireLimits.maxElements)
                    }
                    if let child = field.child {
                        try scan(buf, fieldStart, i, node: child, path: path.map { "\($0).\(field.name)" } ?? field.name)
                    }
                default:
                    throw malformed("wire type \(key & 7) is not used by this protocol")
                }
            }
        }

        func malformed(_ detail: String) -> WireError { .malformedBody(command, detail: detail) }

        @inline(__always)
        func skip(_ n: Int, _ i: inout Int, _ end: Int) throws(WireError) {
            guard end - i >= n else { throw malformed("truncated fixed-width field") }
            i += n
        }

        @inline(__always)
        func varint(_ buf: UnsafeBufferPointer<UInt8>, _ i: inout Int, _ end: Int) throws(WireError) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while i < end {
                let b = buf[i]
                i += 1
                value |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return value }
                shift += 7
                if shift >= 64 { throw malformed("varint longer than 10 bytes") }
            }
            throw malformed("truncated varint")
        }
    }
}
