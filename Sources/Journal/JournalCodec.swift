// The binary encoding of one `JournalEntry` (the payload of a journal record; framing and files are in
// JournalStore.swift). Hand-written rather than protobuf or Codable: it sits on the coordinator's hot
// path (one record per accepted batch and per finished op) and in recovery (a million records per second).
//
// Payload, version 1 (all multi-byte values little-endian):
//
//   Entry      = u8 version (1) · svarint at · u8 tag · fields of the record, by tag:
//     1 submitted        str run · str submitter · uvarint n · Op × n · uvarint m · Queue × m · Key?
//     2 cancelRequested  uvarint n · str id × n · bool cascade · str reason
//     3 cancelAll        str queue · str reason
//     4 cancelRun        str run · str reason
//     5 queueSettings    Queue
//     6 priorityChanged  str id · svarint priority · bool inherit
//     7 finished         str id · Outcome · svarint at
//     8 workerJoined     str name
//     9 workerLeft       str name
//    10 runNumber        svarint next
//    11 evictedRun       str name · svarint finishedAt · svarint evictedAt
//    12 submissionKey    str run · Key · svarint count
//   Op         = str id · u8 flags · [str name] · str queue · str kind · bytes payload · uvarint n · str after × n
//                · svarint priority · [u8 qos] · svarint parts · u8 policy · svarint retries · svarint lossRetries
//                · [svarint timeoutMicros] · uvarint n · str requires × n · svarint retryDelayMicros
//                · svarint retryDelayMaxMicros
//                flags: bit 0 name present, bit 1 qos present, bit 2 timeout present, bit 3 barrier; other bits 0.
//                A field in [brackets] is there only when its flag is set, so nil and "" / 0 stay distinct.
//   Queue      = str name · svarint maxConcurrent · u8 qos · bool suspended
//   Key?       = u8 0 (nil) | u8 1 · Key
//   Key        = str key · u64 digest (fixed 8 bytes: a hash is as long as a varint would be, and slower)
//   Outcome    = u8 kind · payload: 1 succeeded bytes result | 2 failed str error | 3 cancelled str reason
//   qos        = QoS raw value 0...4;  policy = DependencyPolicy raw value 0...1;  bool = u8 0 or 1
//   uvarint    = LEB128, 7 bits a byte, low group first, at most 10 bytes
//   svarint    = zigzag ((v << 1) ^ (v >> 63)) then uvarint: small negatives (-1 = unlimited) stay short
//   str        = uvarint byte length · UTF-8 (validated on decode);  bytes = uvarint length · raw bytes
//
// Decoding is total: every read is bounds-checked, every enum and bool value and flag bit checked, a count
// or length larger than the bytes left is an error before anything is allocated, and the payload must
// end exactly where the entry does. Anything else throws `JournalCodecError`, never traps.

import SchedulerCore

public enum JournalCodec {
    /// The payload format version, the first byte of every payload.
    public static let version: UInt8 = 1

    enum Tag: UInt8 {
        case submitted = 1, cancelRequested, cancelAll, cancelRun, queueSettings, priorityChanged, finished,
             workerJoined, workerLeft, runNumber, evictedRun, submissionKey
    }

    enum OpFlag {
        static let name: UInt8 = 1, qos: UInt8 = 2, timeout: UInt8 = 4, barrier: UInt8 = 8
        static let all: UInt8 = 15
    }

    // MARK: Encoding

    /// Appends the encoding of `entry` to `out`.
    public static func encode(_ entry: JournalEntry, into out: inout [UInt8]) {
        out.append(version)
        putSigned(entry.at, &out)
        switch entry.record {
        case .submitted(let run, let submitter, let ops, let queues, let key):
            out.append(Tag.submitted.rawValue)
            putString(run, &out)
            putString(submitter, &out)
            putUnsigned(UInt64(ops.count), &out)
            for op in ops { putOp(op, &out) }
            putUnsigned(UInt64(queues.count), &out)
            for queue in queues { putQueue(queue, &out) }
            if let key {
                out.append(1)
                putKey(key, &out)
            } else {
                out.append(0)
            }
        case .cancelRequested(let ids, let cascade, let reason):
            out.append(Tag.cancelRequested.rawValue)
            putStrings(ids, &out)
            out.append(cascade ? 1 : 0)
            putString(reason, &out)
        case .cancelAll(let queue, let reason):
            out.append(Tag.cancelAll.rawValue)
            putString(queue, &out)
            putString(reason, &out)
        case .cancelRun(let run, let reason):
            out.append(Tag.cancelRun.rawValue)
            putString(run, &out)
            putString(reason, &out)
        case .queueSettings(let queue):
            out.append(Tag.queueSettings.rawValue)
            putQueue(queue, &out)
        case .priorityChanged(let id, let priority, let inherit):
            out.append(Tag.priorityChanged.rawValue)
            putString(id, &out)
            putSigned(Int64(priority), &out)
            out.append(inherit ? 1 : 0)
        case .finished(let id, let outcome, let at):
            out.append(Tag.finished.rawValue)
            putString(id, &out)
            switch outcome {
            case .succeeded(let result):
                out.append(OutcomeKind.succeeded.rawValue)
                putBytes(result, &out)
            case .failed(let error):
                out.append(OutcomeKind.failed.rawValue)
                putString(error, &out)
            case .cancelled(let reason):
                out.append(OutcomeKind.cancelled.rawValue)
                putString(reason, &out)
            }
            putSigned(at, &out)
        case .workerJoined(let name):
            out.append(Tag.workerJoined.rawValue)
            putString(name, &out)
        case .workerLeft(let name):
            out.append(Tag.workerLeft.rawValue)
            putString(name, &out)
        case .runNumber(let next):
            out.append(Tag.runNumber.rawValue)
            putSigned(Int64(next), &out)
        case .evictedRun(let name, let finishedAt, let evictedAt):
            out.append(Tag.evictedRun.rawValue)
            putString(name, &out)
            putSigned(finishedAt, &out)
            putSigned(evictedAt, &out)
        case .submissionKey(let run, let key, let count):
            out.append(Tag.submissionKey.rawValue)
            putString(run, &out)
            putKey(key, &out)
            putSigned(Int64(count), &out)
        }
    }

    private static func putOp(_ op: OperationSpec, _ out: inout [UInt8]) {
        putString(op.id, &out)
        var flags: UInt8 = 0
        if op.name != nil { flags |= OpFlag.name }
        if op.qos != nil { flags |= OpFlag.qos }
        if op.timeoutMicros != nil { flags |= OpFlag.timeout }
        if op.barrier { flags |= OpFlag.barrier }
        out.append(flags)
        if let name = op.name { putString(name, &out) }
        putString(op.queue, &out)
        putString(op.kind, &out)
        putBytes(op.payload, &out)
        putStrings(op.after, &out)
        putSigned(Int64(op.priority), &out)
        if let qos = op.qos { out.append(qos.rawValue) }
        putSigned(Int64(op.parts), &out)
        out.append(op.policy.rawValue)
        putSigned(Int64(op.retries), &out)
        putSigned(Int64(op.lossRetries), &out)
        if let timeout = op.timeoutMicros { putSigned(timeout, &out) }
        putStrings(op.requires, &out)
        putSigned(op.retryDelayMicros, &out)
        putSigned(op.retryDelayMaxMicros, &out)
    }

    private static func putQueue(_ queue: QueueSpec, _ out: inout [UInt8]) {
        putString(queue.name, &out)
        putSigned(Int64(queue.maxConcurrent), &out)
        out.append(queue.qos.rawValue)
        out.append(queue.suspended ? 1 : 0)
    }

    private static func putKey(_ key: SubmissionKey, _ out: inout [UInt8]) {
        putString(key.key, &out)
        withUnsafeBytes(of: key.digest.littleEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func putUnsigned(_ value: UInt64, _ out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    @inline(__always)
    static func putSigned(_ value: Int64, _ out: inout [UInt8]) {
        putUnsigned(UInt64(bitPattern: (value << 1) ^ (value >> 63)), &out)
    }

    @inline(__always)
    private static func putString(_ s: String, _ out: inout [UInt8]) {
        var s = s  // withUTF8 is mutating; a native string is not copied
        s.withUTF8 { utf8 in
            putUnsigned(UInt64(utf8.count), &out)
            out.append(contentsOf: utf8)
        }
    }

    private static func putStrings(_ list: [String], _ out: inout [UInt8]) {
        putUnsigned(UInt64(list.count), &out)
        for s in list { putString(s, &out) }
    }

    @inline(__always)
    private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        putUnsigned(UInt64(bytes.count), &out)
        out.append(contentsOf: bytes)
    }

    // MARK: Decoding

    /// Decodes one entry that fills `bytes` exactly.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(JournalCodecError) -> JournalEntry {
        var r = ByteReader(bytes)
        let v = try r.byte("version")
        guard v == version else {
            throw JournalCodecError(reason: "payload version \(v) (this build reads version \(version))", offset: 0)
        }
        let at = try r.signed("at")
        let tagOffset = r.offset
        let tagByte = try r.byte("record tag")
        guard let tag = Tag(rawValue: tagByte) else {
            throw JournalCodecError(reason: "unknown record tag \(tagByte)", offset: tagOffset)
        }
        let record: JournalRecord
        switch tag {
        case .submitted:
            let run = try r.string("run")
            let submitter = try r.string("submitter")
            let opCount = try r.count("ops", minimumElementSize: minimumOpSize)
            var ops: [OperationSpec] = []
            ops.reserveCapacity(opCount)
            for _ in 0..<opCount { ops.append(try r.op()) }
            let queueCount = try r.count("queues", minimumElementSize: minimumQueueSize)
            var queues: [QueueSpec] = []
            queues.reserveCapacity(queueCount)
            for _ in 0..<queueCount { queues.append(try r.queue()) }
            let key: SubmissionKey? = try r.bool("submission key present") ? try r.key() : nil
            record = .submitted(run: run, submitter: submitter, ops: ops, queues: queues, key: key)
        case .cancelRequested:
            let ids = try r.strings("cancel ids")
            let cascade = try r.bool("cascade")
            record = .cancelRequested(ids: ids, cascade: cascade, reason: try r.string("reason"))
        case .cancelAll:
            let queue = try r.string("queue")
            record = .cancelAll(queue: queue, reason: try r.string("reason"))
        case .cancelRun:
            let run = try r.string("run")
            record = .cancelRun(run: run, reason: try r.string("reason"))
        case .queueSettings:
            record = .queueSettings(try r.queue())
        case .priorityChanged:
            let id = try r.string("id")
            let priority = try r.int("priority")
            record = .priorityChanged(id: id, priority: priority, inherit: try r.bool("inherit"))
        case .finished:
            let id = try r.string("id")
            let kindOffset = r.offset
            let kind = try r.byte("outcome kind")
            let outcome: Outcome
            switch kind {
            case OutcomeKind.succeeded.rawValue: outcome = .succeeded(try r.bytes("result"))
            case OutcomeKind.failed.rawValue: outcome = .failed(try r.string("error"))
            case OutcomeKind.cancelled.rawValue: outcome = .cancelled(try r.string("cancel reason"))
            default: throw JournalCodecError(reason: "unknown outcome kind \(kind)", offset: kindOffset)
            }
            record = .finished(id: id, outcome: outcome, at: try r.signed("finished at"))
        case .workerJoined:
            record = .workerJoined(name: try r.string("worker name"))
        case .workerLeft:
            record = .workerLeft(name: try r.string("worker name"))
        case .runNumber:
            record = .runNumber(next: try r.int("next run number"))
        case .evictedRun:
            let name = try r.string("run")
            let finishedAt = try r.signed("finished at")
            record = .evictedRun(name: name, finishedAt: finishedAt, evictedAt: try r.signed("evicted at"))
        case .submissionKey:
            let run = try r.string("run")
            let key = try r.key()
            record = .submissionKey(run: run, key: key, count: try r.int("count"))
        }
        guard r.remaining == 0 else {
            throw JournalCodecError(reason: "\(r.remaining) bytes after the end of the entry", offset: r.offset)
        }
        return JournalEntry(at: at, record: record)
    }

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(JournalCodecError) -> JournalEntry {
        let result: Result<JournalEntry, JournalCodecError> = bytes.withUnsafeBytes { raw in
            do throws(JournalCodecError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The fewest bytes an op or a queue can take (one byte per field, none of the optional ones):
    /// a count larger than the bytes left allow is rejected before anything is reserved for it.
    static let minimumOpSize = 14
    static let minimumQueueSize = 4
}

/// Why a payload could not be decoded; `offset` is the byte within the payload.
public struct JournalCodecError: Error, Equatable, CustomStringConvertible {
    public var reason: String
    public var offset: Int
    public init(reason: String, offset: Int) { self.reason = reason; self.offset = offset }
    public var description: String { "\(reason) (payload byte \(offset))" }
}

/// A bounds-checked cursor over a payload. `what` names the field in error messages.
struct ByteReader {
    private let base: UnsafeRawPointer?
    let count: Int
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress
        count = bytes.count
    }

    var remaining: Int { count - offset }

    private func truncated(_ what: StaticString) -> JournalCodecError {
        JournalCodecError(reason: "truncated: the payload ends inside \(what)", offset: offset)
    }

    @inline(__always)
    mutating func byte(_ what: StaticString) throws(JournalCodecError) -> UInt8 {
        guard offset < count, let base else { throw truncated(what) }
        let b = base.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        return b
    }

    @inline(__always)
    mutating func unsigned(_ what: StaticString) throws(JournalCodecError) -> UInt64 {
        let first = try byte(what)
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            let b = try byte(what)
            if shift == 63 && b > 1 {
                throw JournalCodecError(reason: "varint of \(what) longer than 64 bits", offset: offset - 1)
            }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always)
    mutating func signed(_ what: StaticString) throws(JournalCodecError) -> Int64 {
        let u = try unsigned(what)
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    @inline(__always)
    mutating func int(_ what: StaticString) throws(JournalCodecError) -> Int {
        Int(truncatingIfNeeded: try signed(what))  // Int is 64 bits on every platform we build for
    }

    mutating func bool(_ what: StaticString) throws(JournalCodecError) -> Bool {
        let b = try byte(what)
        guard b <= 1 else { throw JournalCodecError(reason: "\(what): \(b) is not a boolean (0 or 1)", offset: offset - 1) }
        return b == 1
    }

    mutating func qos(_ what: StaticString) throws(JournalCodecError) -> QoS {
        let b = try byte(what)
        guard let q = QoS(rawValue: b) else { throw JournalCodecError(reason: "\(what): unknown QoS \(b)", offset: offset - 1) }
        return q
    }

    /// A count of elements each at least `minimumElementSize` bytes long, checked against the bytes left.
    mutating func count(_ what: StaticString, minimumElementSize: Int) throws(JournalCodecError) -> Int {
        let start = offset
        let n = try unsigned(what)
        guard n <= UInt64(remaining / minimumElementSize) else {
            throw JournalCodecError(reason: "\(what): count \(n) does not fit in the \(remaining) bytes left", offset: start)
        }
        return Int(n)
    }

    @inline(__always)
    mutating func raw(_ what: StaticString) throws(JournalCodecError) -> UnsafeRawBufferPointer {
        let start = offset
        let n = try unsigned(what)
        guard n <= UInt64(remaining) else {
            throw JournalCodecError(reason: "\(what): length \(n) exceeds the \(remaining) bytes left", offset: start)
        }
        guard n > 0, let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let slice = UnsafeRawBufferPointer(start: base + offset, count: Int(n))
        offset += Int(n)
        return slice
    }

    @inline(__always)
    mutating func string(_ what: StaticString) throws(JournalCodecError) -> String {
        let start = offset
        let utf8 = try raw(what)
        if utf8.isEmpty { return "" }
        guard let s = String(validating: utf8.assumingMemoryBound(to: UInt8.self), as: UTF8.self) else {
            throw JournalCodecError(reason: "\(what): invalid UTF-8", offset: start)
        }
        return s
    }

    mutating func strings(_ what: StaticString) throws(JournalCodecError) -> [String] {
        let n = try count(what, minimumElementSize: 1)
        if n == 0 { return [] }
        var list: [String] = []
        list.reserveCapacity(n)
        for _ in 0..<n { list.append(try string(what)) }
        return list
    }

    mutating func bytes(_ what: StaticString) throws(JournalCodecError) -> [UInt8] {
        let r = try raw(what)
        return r.isEmpty ? [] : [UInt8](r)
    }

    mutating func fixed64(_ what: StaticString) throws(JournalCodecError) -> UInt64 {
        guard remaining >= 8, let base else { throw truncated(what) }
        let v = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
        return v
    }

    mutating func key() throws(JournalCodecError) -> SubmissionKey {
        let key = try string("submission key")
        return SubmissionKey(key: key, digest: try fixed64("submission key digest"))
    }

    mutating func queue() throws(JournalCodecError) -> QueueSpec {
        let name = try string("queue name")
        let maxConcurrent = try int("queue maxConcurrent")
        let qos = try qos("queue qos")
        return QueueSpec(name: name, maxConcurrent: maxConcurrent, qos: qos, suspended: try bool("queue suspended"))
    }

    mutating func op() throws(JournalCodecError) -> OperationSpec {
        let id = try string("op id")
        let flagsOffset = offset
        let flags = try byte("op flags")
        guard flags & ~JournalCodec.OpFlag.all == 0 else {
            throw JournalCodecError(reason: "op flags 0x\(String(flags, radix: 16)) has unknown bits", offset: flagsOffset)
        }
        let name: String? = flags & JournalCodec.OpFlag.name != 0 ? try string("op name") : nil
        let queue = try string("op queue")
        let kind = try string("op kind")
        let payload = try bytes("op payload")
        let after = try strings("op dependencies")
        let priority = try int("op priority")
        let qos: QoS? = flags & JournalCodec.OpFlag.qos != 0 ? try self.qos("op qos") : nil
        let parts = try int("op parts")
        let policyByte = try byte("op policy")
        guard let policy = DependencyPolicy(rawValue: policyByte) else {
            throw JournalCodecError(reason: "unknown dependency policy \(policyByte)", offset: offset - 1)
        }
        let retries = try int("op retries")
        let lossRetries = try int("op lossRetries")
        let timeout: Int64? = flags & JournalCodec.OpFlag.timeout != 0 ? try signed("op timeout") : nil
        let requires = try strings("op requires")
        let retryDelay = try signed("op retryDelay")
        let retryDelayMax = try signed("op retryDelayMax")
        return OperationSpec(
            id: id, name: name, queue: queue, kind: kind, payload: payload, after: after, priority: priority,
            qos: qos, parts: parts, policy: policy, retries: retries, lossRetries: lossRetries,
            timeoutMicros: timeout, requires: requires, barrier: flags & JournalCodec.OpFlag.barrier != 0,
            retryDelayMicros: retryDelay, retryDelayMaxMicros: retryDelayMax)
    }
}
