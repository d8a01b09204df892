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
//    13 finished+history str id · Outcome · svarint at · History    (`finished` with `history`; tag 7 without)
//    14 workerSession    u64 id · str name · str owner
//    15 resultsEvicted   str run
//   History    = uvarint worker (session id, 0 none) · u8 flags · [svarint at − readyAt] · [svarint at − dispatchedAt]
//                · [svarint at − startedAt] · uvarint attempts · [uvarint n · str error × n]
//                flags: bit 0 ready, bit 1 dispatched, bit 2 started (the time is not 0), bit 3 errors; other bits 0.
//                Times are differences from the finish (a few bytes each, where absolute times take eight).
//   Op         = str id · u8 flags · [str name] · str queue · str kind · bytes payload · uvarint n · str after × n
//                · svarint priority · [u8 qos] · svarint parts · u8 policy · svarint retries · svarint lossRetries
//                · [svarint timeoutMicros] · uvarint n · str requires × n · svarint retryDelayMicros
//                · svarint retryDelayMaxMicros · [str share] · [str concurrencyKey]
//                flags: bit 0 name present, bit 1 qos present, bit 2 timeout present, bit 3 barrier, bit 4 share
//                present, bit 5 concurrencyKey present (A11; bits 4 and 5 added with fair share, protocol 1.8); other bits 0.
//                A field in [brackets] is there only when its flag is set, so nil and "" / 0 stay distinct.
//   Queue      = str name · svarint maxConcurrent · u8 qos · u8 queueFlags · [Fairness]
//                queueFlags: bit 0 suspended, bit 1 fairness present (added with fair share, protocol 1.8: before, this byte was the
//                bool `suspended`, so every older record reads as "no fairness", i.e. keep the current settings).
//   Fairness   = u8 share (0 submitter, 1 run, 2 key, 3 fifo) · uvarint n · (str share · uvarint weight) × n
//                · uvarint keyLimit · u8 keyStrategy (0 wait, 1 cancel-newest, 2 cancel-in-progress)
//                · u8 fairnessFlags · [f64 perSecond (IEEE 754 bits, fixed 8 bytes) · uvarint burst] · [svarint ageingMicros]
//                · [f64 keyPerSecond · uvarint keyBurst]
//                fairnessFlags: bit 0 rate present, bit 1 ageing present (added with ageing: before, this byte was the
//                bool `rate present`, so older records read as "no ageing"), bit 2 key rate present (added with
//                per-key rates: older records read as "no key rate"); other bits 0.
//                Weights in name order, so one setting always encodes to the same bytes.
//   Key?       = u8 0 (nil) | u8 1 · Key
//   Key        = str key · u64 digest (fixed 8 bytes: a hash is as long as a varint would be, and slower)
//   Outcome    = u8 kind · payload: 1 succeeded bytes result | 2 failed str error | 3 cancelled str reason
//   qos        = OperationQoS.rank 0...4;  policy = 0 finished, 1 succeeded;  bool = u8 0 or 1
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
             workerJoined, workerLeft, runNumber, evictedRun, submissionKey, finishedWithHistory, workerSession, resultsEvicted
    }

    enum HistoryFlag {
        static let ready: UInt8 = 1, dispatched: UInt8 = 2, started: UInt8 = 4, errors: UInt8 = 8
        static let all: UInt8 = 15
    }

    enum OpFlag {
        static let name: UInt8 = 1, qos: UInt8 = 2, timeout: UInt8 = 4, barrier: UInt8 = 8
        static let share: UInt8 = 16, concurrencyKey: UInt8 = 32
        static let all: UInt8 = 63
    }

    enum QueueFlag {
        static let suspended: UInt8 = 1, fairness: UInt8 = 2
        static let all: UInt8 = 3
    }

    enum FairnessFlag {
        static let rate: UInt8 = 1, ageing: UInt8 = 2, keyRate: UInt8 = 4
        static let all: UInt8 = 7
    }

    /// The bytes of a share mode and a key strategy, and back (nil for any other byte).
    static let shareModes: [QueueFairness.ShareMode] = [.submitter, .run, .key, .fifo]
    static let keyStrategies: [QueueFairness.KeyStrategy] = [.wait, .cancelNewest, .cancelInProgress]
    static func code(_ mode: QueueFairness.ShareMode) -> UInt8 { UInt8(shareModes.firstIndex(of: mode)!) }
    static func code(_ strategy: QueueFairness.KeyStrategy) -> UInt8 { UInt8(keyStrategies.firstIndex(of: strategy)!) }

    /// The byte of a QoS: its rank (dispatch order), 0...4.
    @inline(__always) static func code(_ qos: OperationQoS) -> UInt8 { UInt8(truncatingIfNeeded: qos.rank) }

    /// The byte of a dependency policy, and back (nil for any other byte).
    @inline(__always) static func code(_ policy: DependencyPolicy) -> UInt8 { policy == .succeeded ? 1 : 0 }
    static func policy(_ code: UInt8) -> DependencyPolicy? { code == 0 ? .finished : code == 1 ? .succeeded : nil }

    // MARK: Encoding

    /// Appends the encoding of `entry` to `out`.
    public static func encode(_ entry: JournalEntry, into out: inout [UInt8]) {
        append(entry, to: &out, frameHeader: 0)
    }

    /// Appends `entry` as a framed record: length, length check, CRC-32C, payload (JournalStore.swift).
    static func appendRecord(_ entry: JournalEntry, to out: inout [UInt8]) {
        append(entry, to: &out, frameHeader: JournalFormat.frameHeaderSize)
    }

    private static let zeros = [UInt8](repeating: 0, count: 4096)

    /// Grows `out` once by an upper bound of the size, writes through a pointer, trims the rest: byte-wise
    /// `Array.append` spent more time on uniqueness and capacity checks than on encoding.
    @inline(__always)
    private static func append(_ entry: JournalEntry, to out: inout [UInt8], frameHeader: Int) {
        let bound = frameHeader + JournalEncoder.bound(entry)
        let start = out.count
        // Grown by copying zeros (a memcpy), not by `repeatElement`, which Array appends byte by byte.
        var left = bound
        while left > 0 {
            let n = min(left, zeros.count)
            out.append(contentsOf: zeros[..<n])
            left -= n
        }
        let used = out.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress! + start
            var writer = JournalEncoder(base + frameHeader)
            writer.entry(entry)
            let length = (base + frameHeader).distance(to: writer.position)
            precondition(frameHeader + length <= bound, "JournalEncoder.bound is too small for \(entry.record)")
            if frameHeader > 0 { JournalFormat.writeFrameHeader(at: base, payloadLength: length) }
            return frameHeader + length
        }
        out.removeLast(bound - used)
    }

    // MARK: Decoding

    /// Decodes one entry that fills `bytes` exactly.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(JournalCodecError) -> JournalEntry {
        var decoder = JournalDecoder(bytes)
        let entry = try decoder.entry()
        guard decoder.remaining == 0 else {
            throw JournalCodecError(reason: "\(decoder.remaining) bytes after the end of the entry", offset: decoder.offset)
        }
        return entry
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
